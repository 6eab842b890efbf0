"""Observables measured on walker positions, for any continuum system.

:class:`DensityHistogram` accumulates the one-body density along one coordinate (``"x"``,
``"y"``, ``"z"``: P(x), normalised so that ∫ P dx = 1, the quantity of study 002's Fig. 7.8),
the radial density (``"r"``: n(r) with ∫ 4π r² n(r) dr = 1) or the cylindrical density
(``"rho"``: n(ρ) integrated over z, with ∫ 2π ρ n(ρ) dρ = 1), or the distribution of the distance between
two particles (``"pair"``: P(r₁₂) over all pairs, with ∫ P dr = 1 in open space; in a periodic box the
minimum-image distances up to half the box, where pairs farther apart are left out but counted in the normalisation;
O(N²) per walker, the heavy analysis of study 004). Histograms are collected per block;
the error bars are the standard errors of the block histograms, so blocks should be longer than
the correlation time. In DMC the walkers sample the mixed distribution ψ_T ψ₀, so the density is
a mixed estimate.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

KINDS = ("x", "y", "z", "r", "rho", "pair")


@nb.njit(cache=True, nogil=True)
def _accumulate(positions, weights, kind, lo, hi, counts):
    """Every particle's coordinate ``kind`` (x, y, z, r, rho: an index into ``KINDS``) of every walker into
    ``counts``. Releases the GIL, as ``_accumulate_pairs`` does."""
    W, N, d = positions.shape
    nbins = counts.shape[0]
    scale = nbins / (hi - lo)
    for w in range(W):
        for i in range(N):
            if kind < 3:
                value = positions[w, i, kind]
            elif kind == 3:
                value = math.sqrt(positions[w, i, 0] ** 2 + positions[w, i, 1] ** 2 + positions[w, i, 2] ** 2)
            else:
                value = math.sqrt(positions[w, i, 0] ** 2 + positions[w, i, 1] ** 2)
            k = int(math.floor((value - lo) * scale))
            if 0 <= k < nbins:
                counts[k] += weights[w]


@nb.njit(cache=True, nogil=True)
def _accumulate_pairs(positions, weights, lo, hi, box, counts):
    """Every pair distance |r_i − r_l| (i < l) of every walker into ``counts``; with ``box`` > 0 (a periodic cube of
    that side) the minimum-image distance. Releases the GIL: an analysis thread runs it beside the sampler."""
    W, N, d = positions.shape
    nbins = counts.shape[0]
    scale = nbins / (hi - lo)
    for w in range(W):
        for i in range(N):
            for l in range(i + 1, N):
                s = 0.0
                for c in range(d):
                    t = positions[w, i, c] - positions[w, l, c]
                    if box > 0.0:
                        t -= box * math.floor(t / box + 0.5)
                    s += t * t
                k = int(math.floor((math.sqrt(s) - lo) * scale))
                if 0 <= k < nbins:
                    counts[k] += weights[w]


class DensityHistogram:
    """Per-block histograms of one coordinate of every particle.

    kind   one of ``KINDS``;  bins  number of bins;  upper  histogram range [−upper, upper] for
    x/y/z and [0, upper] for r/rho/pair, in the system's length unit;  box  the side of a periodic cube
    (0: open space): pair distances are then minimum-image distances, and ``upper`` should be at most box/2,
    where P(r) of an ideal gas is 4πr²/box³. Pairs beyond ``upper`` stay in the normalisation (∫ P dr < 1).
    """

    def __init__(self, kind: str = "x", bins: int = 60, upper: float = 4.0, box: float = 0.0):
        if kind not in KINDS:
            raise ValueError(f"density must be one of {', '.join(KINDS)}, got {kind!r}")
        if not (isinstance(bins, (int, np.integer)) and bins >= 2):
            raise ValueError(f"density_bins must be an integer ≥ 2, got {bins!r}")
        if not (upper > 0 and math.isfinite(upper)):
            raise ValueError(f"density_range must be positive, got {upper!r}")
        if not (box >= 0 and math.isfinite(box)):
            raise ValueError(f"box must be a non-negative length, got {box!r}")
        self.kind = kind
        self.box = float(box)
        self.lo = 0.0 if kind in ("r", "rho", "pair") else -float(upper)
        self.hi = float(upper)
        self.edges = np.linspace(self.lo, self.hi, bins + 1)
        self._counts = np.zeros(bins)
        self._total_weight = 0.0

    @property
    def centers(self) -> np.ndarray:
        return 0.5 * (self.edges[1:] + self.edges[:-1])

    def add(self, positions: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Add every particle of every walker; ``positions`` (W, N, d), ``weights`` (W,)."""
        W, N, _ = positions.shape
        weights = np.ones(W) if weights is None else np.asarray(weights, dtype=float)
        if self.kind == "pair":
            _accumulate_pairs(positions, weights, self.lo, self.hi, self.box, self._counts)
            self._total_weight += float(weights.sum()) * N * (N - 1) / 2
            return
        _accumulate(positions, weights, KINDS.index(self.kind), self.lo, self.hi, self._counts)
        self._total_weight += float(weights.sum()) * N

    def _normalise(self, counts: np.ndarray, total: float) -> np.ndarray:
        width = np.diff(self.edges)
        if self.kind == "r":
            volume = 4.0 / 3.0 * np.pi * (self.edges[1:] ** 3 - self.edges[:-1] ** 3)
        elif self.kind == "rho":
            volume = np.pi * (self.edges[1:] ** 2 - self.edges[:-1] ** 2)
        else:
            volume = width
        return counts / (total * volume)

    def take_block(self) -> np.ndarray:
        """The normalised density of the samples added since the last call; resets the counts."""
        density = self._normalise(self._counts, self._total_weight) if self._total_weight else \
            np.full(self._counts.shape, np.nan)
        self._counts[:] = 0.0
        self._total_weight = 0.0
        return density


def density_summary(histogram: DensityHistogram, blocks: np.ndarray) -> dict:
    """Mean and standard error over block densities ``blocks`` (n_blocks, bins), JSON-ready."""
    blocks = np.asarray(blocks, dtype=float)
    mean = blocks.mean(axis=0)
    error = blocks.std(axis=0, ddof=1) / math.sqrt(len(blocks)) if len(blocks) > 1 else np.full(mean.shape, np.nan)
    return {"kind": histogram.kind, "edges": histogram.edges.tolist(), "density": mean.tolist(),
            "error": error.tolist()}
