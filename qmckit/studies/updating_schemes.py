"""Study 003 (Uejima & Maezono 2012), issue 7 item 4: the updating schemes of a Slater–Jastrow VMC on a
model with an exact answer, and the bias of each against it.

Model (units: bohr, hartree). N = 2 n electrons (n spin-up, n spin-down, a closed shell of the simple
cubic lattice of plane waves) in a periodic cube of side L, at density r_s (4π r_s³/3 = L³/N):

    Ψ(R) = exp(J) D↑ D↓,    D_σ = det[φ_l(r_i)] (n × n),    J = −Σ_{i<j} u(r_ij),
    u(r) = A (1 − r/r_c)³  for r < r_c (else 0),  r_ij the minimum-image distance, r_c ≤ L/2,

with the n real plane waves of :func:`~qmckit.systems.bspline_orbitals.plane_wave_orbitals` (1, cos G·r,
sin G·r) per spin, exact (default) or through their periodic cubic B-spline interpolant (study 003's
orbital representation, ``orbitals="bspline"``). u, u′ and u″ vanish at r_c, so E_L is continuous. The
Hamiltonian is that of jellium, H = −½ Σ ∇²_i + V_Ewald(R) (electron–electron Coulomb energy of the
periodic system with its neutralising background, Ewald sum), so the energy samples the exchange hole.

Exact answers (A = 0, exact plane waves). |D|² is a determinantal process: with c(G) = #{k ∈ occ :
k + G ∈ occ} (the same for both spins, complex plane waves k),

    S(G) = ⟨|ρ_G|²⟩ / N = 1 − c(G)/n          (G ≠ 0; ρ_G = Σ_i e^{iG·r_i}, all N electrons)

[⟨|ρ_G|²⟩ = N + ∫∫ ρ₂(r, r′) e^{iG·(r−r′)} and, per spin, ρ₂ = K(r,r)K(r′,r′) − |K(r,r′)|², K = Ω⁻¹ Σ_k
e^{ik·(r−r′)}: the first term has no G ≠ 0 component, the second integrates to −c(G); the spins are
uncorrelated and each has a uniform density, so the cross terms vanish]. The local kinetic energy is
the constant T = Σ_σ Σ_l |G_l|²/2 (every orbital is an eigenfunction of −∇²/2, and Σ_i ∇²_i D / D
is then −Σ_l |G_l|²) — zero variance for every configuration. The Ewald energy is a sum over pairs of
a pair potential plus N ξ/2 (ξ the Madelung constant of the cube), so

    ⟨V⟩ = N ξ/2 + (2π/Ω) Σ_{G≠0} ⟨|ρ_G|² − N⟩ / |G|²  =  N ξ/2 − (4π/Ω) Σ_{G≠0} c(G)/|G|²,

a finite sum (c(G) = 0 beyond 2k_F): the exact Hartree–Fock energy of this finite jellium. For A ≠ 0
the exact answer is the expectation under |Ψ|², which particle-by-particle Metropolis samples exactly;
there the reference is an independent, longer particle-by-particle run (its own error bar enters σ).

Updating schemes (study 003 §IV.A, its notes §2.2–2.3). One sweep proposes one Gaussian move
r_j → r_j + δ η_j (η standard normal per axis) for each electron j = 0 … N−1 (spin up first), all drawn
before the sweep, with one uniform number per electron (the first also serves configuration moves):

``pbp``         particle by particle (Eq. 10): electron j is accepted with min(1, |Ψ(R′_j)/Ψ(R)|²) against
                the CURRENT configuration (earlier moves of the sweep applied); its orbital row is
                evaluated at its turn; the inverse Slater matrix follows by Sherman–Morrison. Exact.
``qs_batched``  Q.S., reading C: the orbital rows of all N trial positions are evaluated first in one
                batch (003's Eq. 12 / GPU kernel; a trial row depends only on the trial position), then
                accepted sequentially exactly as ``pbp`` (Sherman–Morrison, current Jastrow). With the
                same random numbers it is ``pbp`` bit for bit. Exact.
``qs_literal``  Q.S., reading A, literal Eq. 11: each electron is accepted with min(1, ξ_j), ξ_j computed
                against the OLD configuration R (every other electron at its old position), and the
                accepted moves are applied together; the inverses are then recomputed from scratch.
                Not a Metropolis–Hastings kernel for |Ψ|² when |Ψ|² does not factorise: biased at any
                finite δ (the bias vanishes as δ → 0).
``cbc``         configuration by configuration (Eq. 9): all N electrons move, one accept/reject with the
                full ratio |Ψ(R′)/Ψ(R)|² (determinants by LU, inverses recomputed). Exact but slow to
                decorrelate (needs a step ~ N^{-1/2} smaller).

Equal cost: every scheme runs the same number of sweeps, i.e. the same N orbital-row evaluations per
sweep (study 003's unit of work, N × L values), and measures at the same sweeps.

Energies per primitive cell (study 003 §5.6: 1e-3 Ha per primitive cell). Bias per electron × the
electrons per primitive cell of the solid whose valence density the model mimics: 8 for Si (r_s = 2.0
matches diamond Si, a = 10.26 bohr, 8 valence electrons per 2-atom fcc cell: the system of 003's Table IX,
the default) or 24 for cubic TiO2 (003's other system; the same per-electron bias × 24, a stricter
conversion at this density).

Kernels (numba, ``cache=True``, no argument checks): :func:`run_sweeps` (all four schemes, measurements
included), :func:`measure` (local energy T and V, and S(G) per shell), :func:`fresh_inverse`. Random
numbers are drawn on the host (numpy ``default_rng(seed)``) per block and passed in, so a run is a pure
function of (model, scheme, step, seed, sizes).
"""
from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numba as nb
import numpy as np

from ..stats import estimate
from ..systems.bspline_orbitals import electron_values, evaluate_electron, plane_wave_orbitals
from ..systems.slater import invert

SCHEMES = ("pbp", "qs_batched", "qs_literal", "cbc")
SCHEME_CODES = {"pbp": 0, "qs_batched": 1, "qs_literal": 2, "cbc": 3}
SCHEME_LABELS = {
    "pbp": "particle-by-particle (Eq. 10)",
    "qs_batched": "Q.S. reading C: batched rows, sequential acceptance",
    "qs_literal": "Q.S. reading A: literal Eq. 11, simultaneous acceptance",
    "cbc": "configuration-by-configuration (Eq. 9)",
}
# Target acceptance of the step tuning: ~50 % for single-electron moves (CASINO's usual choice, 003's
# notes §7.2), 25 % for all-electron moves (near the optimum of a high-dimensional random walk).
TARGET_ACCEPTANCE = {"pbp": 0.5, "cbc": 0.25}

CHEMICAL_ACCURACY = 1e-3  # hartree per primitive cell (003 §5.6)
ELECTRONS_PER_CELL = {"Si": 8, "TiO2": 24}  # valence electrons per primitive cell (003 notes §1.1)
SI_RS = 2.0  # bohr: r_s of Si's valence density (a = 10.26 bohr: (3 · a³/4 / (4π · 8))^{1/3} = 2.006)


# --------------------------------------------------------------------------------------------
# closed shells and exact answers
# --------------------------------------------------------------------------------------------
def _millers_within(m2_max: int) -> np.ndarray:
    """Integer vectors m (K, 3) with |m|² ≤ m2_max."""
    r = int(math.isqrt(m2_max))
    rng = np.arange(-r, r + 1)
    m = np.stack(np.meshgrid(rng, rng, rng, indexing="ij"), axis=-1).reshape(-1, 3)
    return m[np.sum(m * m, axis=1) <= m2_max]


def closed_shells(max_n: int = 300) -> list:
    """Closed-shell electron counts per spin of the simple cubic plane-wave lattice up to ``max_n``:
    [1, 7, 19, 27, 33, 57, 81, 93, 123, …]."""
    out, m2 = [], 0
    while True:
        k = len(_millers_within(m2))
        if k > max_n:
            return out
        if not out or k != out[-1]:
            out.append(k)
        m2 += 1


def overlap_count(occupied, g) -> np.ndarray:
    """c(G) = #{k ∈ occupied : k + G ∈ occupied} for each G: occupied (K, 3) and g (M, 3) integer
    vectors (any k set, closed shell or not). Returns (M,) int."""
    occupied = np.asarray(occupied, dtype=np.int64).reshape(-1, 3)
    g = np.asarray(g, dtype=np.int64).reshape(-1, 3)
    occ = {tuple(k) for k in occupied.tolist()}
    return np.array([sum((k[0] + d[0], k[1] + d[1], k[2] + d[2]) in occ for k in occupied.tolist())
                     for d in g.tolist()], dtype=np.int64)


def exact_structure_factor(occupied, g) -> np.ndarray:
    """S(G) = 1 − c(G)/n of a Slater determinant of the n complex plane waves e^{ik·r}, k ∈ ``occupied``
    (integer vectors, (n, 3)), at the integer vectors ``g`` (M, 3), G ≠ 0 (G = 0 gives 1 − n/n = 0, not
    the N of ⟨|ρ_0|²⟩/N). Holds for either spin alone and for the sum of two identical spin species."""
    occupied = np.asarray(occupied, dtype=np.int64).reshape(-1, 3)
    return 1.0 - overlap_count(occupied, g) / len(occupied)


def madelung_constant(box: float) -> float:
    """ξ (hartree) of a simple cubic lattice of side ``box`` bohr: twice the Ewald energy of one electron
    per cell in a neutralising background, ξ · L = −2.837297479…"""
    kappa = 2.0 * 6.0 / box  # κ L/2 = 6: erfc(6) ~ 2e-17
    vol = box ** 3
    n = np.arange(-4, 5)
    m = np.stack(np.meshgrid(n, n, n, indexing="ij"), -1).reshape(-1, 3)
    m = m[np.any(m != 0, axis=1)]
    r = np.linalg.norm(m, axis=1) * box
    real = float(np.sum([math.erfc(kappa * x) / x for x in r]))
    g2 = np.sum((2.0 * np.pi / box * _millers_within(24 * 24)) ** 2, axis=1)
    g2 = g2[g2 > 0]
    recip = float(np.sum(4.0 * np.pi / vol * np.exp(-g2 / (4 * kappa * kappa)) / g2))
    return real + recip - 2.0 * kappa / math.sqrt(math.pi) - math.pi / (vol * kappa * kappa)


# --------------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FreeElectronModel:
    """Free-electron Slater–Jastrow model in a periodic cube (see the module docstring).

    n_per_spin   electrons per spin n, a closed shell (:func:`closed_shells`); N = 2n
    rs           density parameter r_s in bohr (box side L = (4π N/3)^{1/3} r_s)
    jastrow_a    Jastrow strength A (dimensionless; u(0) = A); 0 gives the bare determinant
    jastrow_rc   Jastrow cutoff r_c in bohr, ≤ L/2 (default L/2)
    orbitals     "exact" plane waves or "bspline" (their cubic B-spline interpolant on ``grid``³ points,
                 study 003's representation; answers are then exact only up to the spline error)
    grid         B-spline grid points per axis
    ewald_x      Ewald accuracy κ L/2 (real-space terms beyond L/2 ~ erfc(x), reciprocal ~ e^{−x²})
    electrons_per_cell  electrons per primitive cell for the hartree-per-cell conversion (8: Si)
    """

    n_per_spin: int = 19
    rs: float = SI_RS
    jastrow_a: float = 0.0
    jastrow_rc: float | None = None
    orbitals: str = "exact"
    grid: int = 32
    ewald_x: float = 3.6
    electrons_per_cell: int = ELECTRONS_PER_CELL["Si"]

    def __post_init__(self):
        shells = closed_shells(max(self.n_per_spin, 1) + 1) if isinstance(self.n_per_spin, (int, np.integer)) else []
        if isinstance(self.n_per_spin, bool) or self.n_per_spin not in shells:
            raise ValueError(f"n_per_spin must be a closed shell ({', '.join(map(str, closed_shells(200)))}, …), "
                             f"got {self.n_per_spin!r}")
        if not (isinstance(self.rs, (int, float)) and self.rs > 0 and math.isfinite(self.rs)):
            raise ValueError(f"rs must be a positive number of bohr, got {self.rs!r}")
        if not (isinstance(self.jastrow_a, (int, float)) and math.isfinite(self.jastrow_a)):
            raise ValueError(f"jastrow_a must be a finite number, got {self.jastrow_a!r}")
        if self.jastrow_rc is not None and not (0 < self.jastrow_rc <= self.box / 2 * (1 + 1e-12)):
            raise ValueError(f"jastrow_rc must lie in (0, L/2 = {self.box / 2:.6g}] bohr, got {self.jastrow_rc!r}")
        if self.orbitals not in ("exact", "bspline"):
            raise ValueError(f"orbitals must be 'exact' or 'bspline', got {self.orbitals!r}")
        if not (isinstance(self.grid, (int, np.integer)) and self.grid >= 4):
            raise ValueError(f"grid must be an integer ≥ 4, got {self.grid!r}")
        if not (isinstance(self.ewald_x, (int, float)) and 2.0 <= self.ewald_x <= 8.0):
            raise ValueError(f"ewald_x must lie in [2, 8], got {self.ewald_x!r}")
        if not (isinstance(self.electrons_per_cell, (int, np.integer)) and self.electrons_per_cell >= 1):
            raise ValueError(f"electrons_per_cell must be a positive integer, got {self.electrons_per_cell!r}")

    # ---- geometry ----
    @property
    def n_electrons(self) -> int:
        return 2 * self.n_per_spin

    @property
    def box(self) -> float:
        """Side L of the cube in bohr."""
        return (4.0 * math.pi * self.n_electrons / 3.0) ** (1.0 / 3.0) * self.rs

    @property
    def volume(self) -> float:
        return self.box ** 3

    @property
    def rc(self) -> float:
        return self.box / 2 if self.jastrow_rc is None else float(self.jastrow_rc)

    @property
    def cusp_jastrow_a(self) -> float:
        """A = r_c/6, for which u′(0) = −3A/r_c = −½: the antiparallel electron–electron cusp."""
        return self.rc / 6.0

    @cached_property
    def fermi_m2(self) -> int:
        """Largest occupied |m|² (G = 2π m / L)."""
        m2 = 0
        while len(_millers_within(m2)) < self.n_per_spin:
            m2 += 1
        return m2

    @cached_property
    def occupied_millers(self) -> np.ndarray:
        """Integer vectors (n, 3) of the occupied complex plane waves of one spin."""
        return _millers_within(self.fermi_m2)

    @cached_property
    def plane_waves(self):
        pw = plane_wave_orbitals(self.box * np.eye(3), self.n_per_spin, complex=False)
        # the real set spans the closed shell: same G's (up to sign) as the complex one
        assert int(np.max(np.sum(pw.millers ** 2, axis=1))) == self.fermi_m2
        return pw

    @cached_property
    def bspline(self):
        return self.plane_waves.bspline(self.grid)

    # ---- structure-factor shells ----
    @cached_property
    def shell_m2(self) -> np.ndarray:
        """|m|² of the measured S(G) shells: every nonempty shell 0 < |m|² ≤ 4 m²_F + 4 (S = 1 beyond 2k_F;
        a few such shells are kept because a biased sampler need not respect that)."""
        m = _millers_within(4 * self.fermi_m2 + 4)
        return np.unique(np.sum(m * m, axis=1))[1:]

    @cached_property
    def shell_g(self) -> np.ndarray:
        """|G| (bohr⁻¹) of each shell."""
        return 2.0 * np.pi / self.box * np.sqrt(self.shell_m2)

    @cached_property
    def exact_shell_s(self) -> np.ndarray:
        """Exact S(G) per shell (A = 0, exact plane waves): the shell average of 1 − c(G)/n."""
        m = _millers_within(int(self.shell_m2[-1]))
        m2 = np.sum(m * m, axis=1)
        s = exact_structure_factor(self.occupied_millers, m)
        return np.array([s[m2 == q].mean() for q in self.shell_m2])

    # ---- exact energies (A = 0, exact plane waves) ----
    @cached_property
    def madelung(self) -> float:
        return madelung_constant(self.box)

    def exact_kinetic(self) -> float:
        """T (hartree, all N electrons) of the determinant: Σ_σ Σ_k |k|²/2."""
        k2 = np.sum((2.0 * np.pi / self.box * self.occupied_millers) ** 2, axis=1)
        return float(np.sum(k2))  # 2 spins × ½

    def exact_potential(self) -> float:
        """⟨V_Ewald⟩ (hartree, all N electrons) of the bare determinant: N ξ/2 − (4π/Ω) Σ_{G≠0} c(G)/|G|²."""
        m = _millers_within(4 * self.fermi_m2)
        m = m[np.any(m != 0, axis=1)]
        c = overlap_count(self.occupied_millers, m)
        g2 = np.sum((2.0 * np.pi / self.box * m) ** 2, axis=1)
        return self.n_electrons * self.madelung / 2 - 4.0 * math.pi / self.volume * float(np.sum(c / g2))

    def exact_energy_per_electron(self) -> float:
        """Exact ⟨E_L⟩/N in hartree of the bare determinant (A = 0): the Hartree–Fock energy per electron."""
        return (self.exact_kinetic() + self.exact_potential()) / self.n_electrons

    @property
    def has_exact_answer(self) -> bool:
        return self.jastrow_a == 0.0 and self.orbitals == "exact"

    # ---- kernel arguments ----
    @cached_property
    def ewald(self):
        """(kappa, constant, millers (K, 3) of the half-space G list, weights (K,), m_max, shell index (K,))."""
        x = float(self.ewald_x)
        box, vol, n = self.box, self.volume, self.n_electrons
        kappa = 2.0 * x / box
        m_cut2 = max((2.0 * x * x / math.pi) ** 2, float(self.shell_m2[-1]))
        m = _millers_within(int(math.floor(m_cut2)))
        first = np.where(m[:, 0] != 0, m[:, 0], np.where(m[:, 1] != 0, m[:, 1], m[:, 2]))
        m = m[first > 0]  # one of each ±G, G ≠ 0
        m2 = np.sum(m * m, axis=1)
        order = np.lexsort((m[:, 2], m[:, 1], m[:, 0]))  # m1, m2 slowest (measure reuses their product)
        m, m2 = np.ascontiguousarray(m[order]), m2[order]
        g2 = (2.0 * math.pi / box) ** 2 * m2
        weights = 4.0 * math.pi / vol * np.exp(-g2 / (4 * kappa * kappa)) / g2  # ×2 for ±G
        shell = np.searchsorted(self.shell_m2, m2)
        shell = np.where((shell < len(self.shell_m2)) & (self.shell_m2[np.minimum(shell, len(self.shell_m2) - 1)] == m2),
                         shell, -1).astype(np.int64)
        # self-interaction with the images of each electron (real space) and the two constant terms
        nn = np.arange(-2, 3)
        lat = np.stack(np.meshgrid(nn, nn, nn, indexing="ij"), -1).reshape(-1, 3)
        dist = np.linalg.norm(lat[np.any(lat != 0, axis=1)], axis=1) * box
        images = 0.5 * n * sum(math.erfc(kappa * d) / d for d in dist)
        const = images - kappa * n / math.sqrt(math.pi) - math.pi * n * n / (2 * vol * kappa * kappa)
        return kappa, const, m.astype(np.int64), weights, int(np.abs(m).max()), shell

    @cached_property
    def shell_sizes(self) -> np.ndarray:
        """Number of half-space G vectors in each shell (the S(G) estimator averages over them)."""
        shell = self.ewald[5]
        return np.bincount(shell[shell >= 0], minlength=len(self.shell_m2)).astype(np.int64)

    def kernel_orbitals(self):
        """(mode, gvec (n, 3), kind (n,), coeffs (n1, n2, n3, n), cell_inverse (3, 3)) for the kernels."""
        pw = self.plane_waves
        if self.orbitals == "exact":
            return 0, np.ascontiguousarray(pw.g_vectors), pw.kinds.astype(np.int64), np.zeros((1, 1, 1, 1)), np.eye(3)
        b = self.bspline
        return (1, np.ascontiguousarray(pw.g_vectors), pw.kinds.astype(np.int64),
                np.ascontiguousarray(b.coefficients, dtype=np.float64), np.ascontiguousarray(b.cell_inverse))

    def kernel_args(self):
        """The model part of the kernels' argument list (after the state arrays)."""
        mode, gvec, kind, coeffs, cinv = self.kernel_orbitals()
        kappa, const, gm, gw, m_max, shell = self.ewald
        return (mode, gvec, kind, coeffs, cinv, float(self.box), float(self.jastrow_a), float(self.rc),
                kappa, const, gm, gw, m_max, shell, self.shell_sizes)


# --------------------------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _orbital_values(mode, gvec, kind, coeffs, cinv, r, out):
    """Orbital values (n,) at one position r (3,) bohr: exact plane waves (mode 0) or B-splines (mode 1,
    study 003's per-electron value kernel, the body of its batched kernel ``evaluate_values``)."""
    if mode == 0:
        for l in range(out.shape[0]):
            ph = gvec[l, 0] * r[0] + gvec[l, 1] * r[1] + gvec[l, 2] * r[2]
            out[l] = math.sin(ph) if kind[l] == 1 else math.cos(ph)
    else:
        electron_values(coeffs, cinv, r, out)


@nb.njit(cache=True)
def _orbital_all(mode, gvec, kind, coeffs, cinv, r, val, grad, lap):
    """Values (n,), gradients (3, n) (bohr⁻¹) and Laplacians (n,) (bohr⁻²) at one position."""
    if mode == 0:
        for l in range(val.shape[0]):
            ph = gvec[l, 0] * r[0] + gvec[l, 1] * r[1] + gvec[l, 2] * r[2]
            c, s = math.cos(ph), math.sin(ph)
            v, d = (s, c) if kind[l] == 1 else (c, -s)  # value and d/dphase
            val[l] = v
            for k in range(3):
                grad[k, l] = gvec[l, k] * d
            lap[l] = -(gvec[l, 0] ** 2 + gvec[l, 1] ** 2 + gvec[l, 2] ** 2) * v
    else:
        evaluate_electron(coeffs, cinv, r, val, grad, lap)


@nb.njit(cache=True)
def _min_image(d, box):
    return d - box * math.floor(d / box + 0.5)


@nb.njit(cache=True)
def _u(r, a, rc):
    if r >= rc:
        return 0.0
    t = 1.0 - r / rc
    return a * t * t * t


@nb.njit(cache=True)
def _jastrow_delta(pos, i, trial, box, a, rc):
    """J(R with r_i → trial) − J(R), J = −Σ_{i<j} u(r_ij). O(N)."""
    if a == 0.0:
        return 0.0
    dj = 0.0
    for k in range(pos.shape[0]):
        if k == i:
            continue
        r_old = 0.0
        r_new = 0.0
        for d in range(3):
            x = _min_image(pos[i, d] - pos[k, d], box)
            y = _min_image(trial[d] - pos[k, d], box)
            r_old += x * x
            r_new += y * y
        dj += _u(math.sqrt(r_old), a, rc) - _u(math.sqrt(r_new), a, rc)
    return dj


@nb.njit(cache=True)
def _jastrow_total(pos, box, a, rc):
    """J(R) = −Σ_{i<j} u(r_ij). O(N²)."""
    if a == 0.0:
        return 0.0
    j = 0.0
    n = pos.shape[0]
    for i in range(n):
        for k in range(i + 1, n):
            r2 = 0.0
            for d in range(3):
                x = _min_image(pos[i, d] - pos[k, d], box)
                r2 += x * x
            j -= _u(math.sqrt(r2), a, rc)
    return j


@nb.njit(cache=True)
def lu_inverse(a, out):
    """log|det a| and the sign of det a (n, n), and a⁻¹ into ``out`` (n, n); ``a`` is left unchanged.
    A singular matrix gives (−inf, 0.0). (:func:`qmckit.systems.slater.invert` on a copy: it overwrites
    its input.)"""
    return invert(a.copy(), out)


@nb.njit(cache=True)
def fresh_inverse(pos, rows, inv, mode, gvec, kind, coeffs, cinv):
    """Recompute the orbital rows (N, n) at ``pos`` (N, 3) and the inverse Slater matrices inv (2, n, n)
    from scratch: inv[s, l, c] = (M_s⁻¹)[l, c], M_s[c, l] = φ_l(r of electron s·n + c)."""
    n = inv.shape[1]
    for i in range(pos.shape[0]):
        _orbital_values(mode, gvec, kind, coeffs, cinv, pos[i], rows[i])
    for s in range(2):
        lu_inverse(rows[s * n:(s + 1) * n], inv[s])


@nb.njit(cache=True)
def _sherman_morrison(inv_s, c, row, q, w):
    """Row c of M replaced by ``row`` with ratio q = row · inv_s[:, c]: inv_s ← inv_s − inv_s[:, c] (row ·
    inv_s − e_c)ᵀ / q, O(n²)."""
    n = inv_s.shape[0]
    for j in range(n):
        acc = 0.0
        for l in range(n):
            acc += row[l] * inv_s[l, j]
        w[j] = acc
    w[c] -= 1.0
    inv_q = 1.0 / q
    for l in range(n):
        f = inv_s[l, c] * inv_q
        if f != 0.0:
            for j in range(n):
                inv_s[l, j] -= f * w[j]


@nb.njit(cache=True)
def measure(pos, inv, mode, gvec, kind, coeffs, cinv, box, a, rc, kappa, const, gm, gw, m_max, shell,
            shell_sizes, out_e, out_s):
    """Local energy and S(G) at one configuration.

    out_e (2,): kinetic T_L and Ewald potential V (hartree, all N electrons); out_s (n_shells,): S(G) =
    |ρ_G|²/N averaged over each shell's half-space G vectors. Uses the current inverses ``inv``.
    """
    npart = pos.shape[0]
    n = inv.shape[1]
    val = np.empty(n)
    grad = np.empty((3, n))
    lap = np.empty(n)
    # ---- kinetic: −½ Σ_i [∇²D/D + 2 ∇log D · ∇J + ∇²J + |∇J|²] ----
    t = 0.0
    for i in range(npart):
        s = i // n
        c = i - s * n
        _orbital_all(mode, gvec, kind, coeffs, cinv, pos[i], val, grad, lap)
        gd0 = 0.0
        gd1 = 0.0
        gd2 = 0.0
        ld = 0.0
        for l in range(n):
            w = inv[s, l, c]
            gd0 += grad[0, l] * w
            gd1 += grad[1, l] * w
            gd2 += grad[2, l] * w
            ld += lap[l] * w
        j0 = 0.0
        j1 = 0.0
        j2 = 0.0
        lj = 0.0
        if a != 0.0:
            for k in range(npart):
                if k == i:
                    continue
                x0 = _min_image(pos[i, 0] - pos[k, 0], box)
                x1 = _min_image(pos[i, 1] - pos[k, 1], box)
                x2 = _min_image(pos[i, 2] - pos[k, 2], box)
                r = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
                if r < rc:
                    tt = 1.0 - r / rc
                    du = -3.0 * a / rc * tt * tt  # u'(r)
                    d2u = 6.0 * a / (rc * rc) * tt  # u''(r)
                    f = -du / r  # ∇_i J = −u'(r) r̂
                    j0 += f * x0
                    j1 += f * x1
                    j2 += f * x2
                    lj -= d2u + 2.0 * du / r
        t += -0.5 * (ld + 2.0 * (gd0 * j0 + gd1 * j1 + gd2 * j2) + lj + j0 * j0 + j1 * j1 + j2 * j2)
    out_e[0] = t
    # ---- Ewald: real space (minimum image; terms beyond L/2 are below erfc(κL/2)) ----
    v = const
    for i in range(npart):
        for k in range(i + 1, npart):
            x0 = _min_image(pos[i, 0] - pos[k, 0], box)
            x1 = _min_image(pos[i, 1] - pos[k, 1], box)
            x2 = _min_image(pos[i, 2] - pos[k, 2], box)
            r = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
            v += math.erfc(kappa * r) / r
    # ---- reciprocal space: ρ_G from per-axis phase tables e^{i 2π m x/L}, m = −m_max … m_max ----
    # (G sorted by m1, m2, m3: the product of the first two tables is reused along m3)
    nm = 2 * m_max + 1
    pc = np.empty((3, nm, npart))
    ps = np.empty((3, nm, npart))
    for d in range(3):
        for i in range(npart):
            th = 2.0 * math.pi * pos[i, d] / box
            for m in range(-m_max, m_max + 1):
                pc[d, m + m_max, i] = math.cos(m * th)
                ps[d, m + m_max, i] = math.sin(m * th)
    qc = np.empty(npart)
    qs = np.empty(npart)
    last0 = -nm - 1
    last1 = -nm - 1
    out_s[:] = 0.0
    for g in range(gm.shape[0]):
        m0 = gm[g, 0] + m_max
        m1 = gm[g, 1] + m_max
        if m0 != last0 or m1 != last1:
            for i in range(npart):
                qc[i] = pc[0, m0, i] * pc[1, m1, i] - ps[0, m0, i] * ps[1, m1, i]
                qs[i] = pc[0, m0, i] * ps[1, m1, i] + ps[0, m0, i] * pc[1, m1, i]
            last0 = m0
            last1 = m1
        c2 = pc[2, gm[g, 2] + m_max]
        s2 = ps[2, gm[g, 2] + m_max]
        re = 0.0
        im = 0.0
        for i in range(npart):
            re += qc[i] * c2[i] - qs[i] * s2[i]
            im += qc[i] * s2[i] + qs[i] * c2[i]
        r2 = re * re + im * im
        v += gw[g] * r2
        sh = shell[g]
        if sh >= 0:
            out_s[sh] += r2
    for sh in range(out_s.shape[0]):
        out_s[sh] /= npart * shell_sizes[sh]
    out_e[1] = v


@nb.njit(cache=True)
def run_sweeps(scheme, pos, inv, rows, step, normals, uniforms, measure_every, out_e, out_s, counts,
               mode, gvec, kind, coeffs, cinv, box, a, rc, kappa, const, gm, gw, m_max, shell, shell_sizes):
    """Run normals.shape[0] sweeps of ``scheme`` (0 pbp, 1 qs_batched, 2 qs_literal, 3 cbc) in place.

    State: pos (N, 3) bohr, inv (2, n, n) inverse Slater matrices, rows (N, n) orbital values at pos.
    Random numbers: normals (S, N, 3) (trial move r + step·η), uniforms (S, N) in [0, 1) (cbc uses
    uniforms[t, 0]). Every ``measure_every`` sweeps (0: never) :func:`measure` writes out_e[m] (2,)
    and out_s[m] (n_shells,). counts (2,) int: attempted and accepted moves (cbc: configuration moves).
    Returns the number of measurements written.
    """
    npart = pos.shape[0]
    n = npart // 2
    trials = np.empty((npart, 3))
    trial_rows = np.empty((npart, n))
    w = np.empty(n)
    accepted = np.zeros(npart, dtype=np.bool_)
    w_mat = np.empty((2, n, n))
    w_old = np.empty((n, n))
    batched = scheme != 0
    n_meas = 0
    for t in range(normals.shape[0]):
        for i in range(npart):
            for d in range(3):
                x = pos[i, d] + step * normals[t, i, d]
                trials[i, d] = x - box * math.floor(x / box)
        for i in range(npart):
            # Trial rows: pbp evaluates electron i's row at its turn; the other schemes evaluate all N rows
            # in one batch before the first decision (study 003's Eq. 12, N × n values). This order is the
            # only difference between pbp and qs_batched. (One call site keeps the compile time down.)
            lo, hi = i, i + 1
            if batched:
                lo, hi = (0, npart) if i == 0 else (0, 0)
            for k in range(lo, hi):
                _orbital_values(mode, gvec, kind, coeffs, cinv, trials[k], trial_rows[k])
            if scheme == 3:
                continue
            s = i // n
            c = i - s * n
            q = 0.0  # determinant ratio: trial row · column c of the inverse
            for l in range(n):
                q += trial_rows[i, l] * inv[s, l, c]
            # Jastrow change against the current positions: for qs_literal these are still all OLD (Eq. 11),
            # for pbp/qs_batched they include this sweep's accepted moves (Eq. 10)
            dj = _jastrow_delta(pos, i, trials[i], box, a, rc)
            counts[0] += 1
            ok = uniforms[t, i] < q * q * math.exp(2.0 * dj)
            if scheme == 2:
                accepted[i] = ok  # applied after every electron has been decided
            elif ok:
                _sherman_morrison(inv[s], c, trial_rows[i], q, w)
                for d in range(3):  # (explicit loops: slice assignment costs compile time)
                    pos[i, d] = trials[i, d]
                for l in range(n):
                    rows[i, l] = trial_rows[i, l]
                counts[1] += 1
        if scheme == 2:
            # literal Eq. 11: the accepted moves are applied together
            for s in range(2):
                changed = False
                for i in range(s * n, (s + 1) * n):
                    if accepted[i]:
                        for d in range(3):
                            pos[i, d] = trials[i, d]
                        for l in range(n):
                            rows[i, l] = trial_rows[i, l]
                        counts[1] += 1
                        changed = True
                if changed:  # several rows changed at once: full recomputation
                    lu_inverse(rows[s * n:(s + 1) * n], inv[s])
        elif scheme == 3:
            # configuration by configuration (Eq. 9): one decision for all N moves
            log_ratio = 0.0
            for s in range(2):
                ld_new, sign_new = lu_inverse(trial_rows[s * n:(s + 1) * n], w_mat[s])
                ld_old, sign_old = lu_inverse(rows[s * n:(s + 1) * n], w_old)
                log_ratio += 2.0 * (ld_new - ld_old)  # −inf for a singular trial matrix
            log_ratio += 2.0 * (_jastrow_total(trials, box, a, rc) - _jastrow_total(pos, box, a, rc))
            counts[0] += 1
            if uniforms[t, 0] < math.exp(min(log_ratio, 0.0)):
                for i in range(npart):
                    for d in range(3):
                        pos[i, d] = trials[i, d]
                    for l in range(n):
                        rows[i, l] = trial_rows[i, l]
                for s in range(2):  # the trial inverses, from the same factorisations
                    for l in range(n):
                        for j in range(n):
                            inv[s, l, j] = w_mat[s, l, j]
                counts[1] += 1
        if measure_every > 0 and (t + 1) % measure_every == 0:
            measure(pos, inv, mode, gvec, kind, coeffs, cinv, box, a, rc, kappa, const, gm, gw, m_max, shell,
                    shell_sizes, out_e[n_meas], out_s[n_meas])
            n_meas += 1
    return n_meas


# --------------------------------------------------------------------------------------------
# host side: a chain, step tuning, the comparison table
# --------------------------------------------------------------------------------------------
class Chain:
    """One Markov chain of ``scheme`` on ``model`` with host-drawn random numbers (numpy default_rng(seed)).

    The positions start uniform in the cube. :meth:`advance` runs sweeps in blocks of ``block`` sweeps
    (rounded to a multiple of the measurement interval), drawing each block's random numbers first; the
    orbital rows and inverse Slater matrices are recomputed from scratch at the start of every block, so
    the Sherman–Morrison updates of ``pbp``/``qs_batched`` drift only within a block. State: ``pos`` (N, 3)
    bohr, ``rows`` (N, n), ``inv`` (2, n, n), ``counts`` (attempted, accepted).
    """

    def __init__(self, model: FreeElectronModel, scheme: str, step: float, seed: int = 0, block: int = 200):
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
        if not (step > 0 and math.isfinite(step)):
            raise ValueError(f"step must be a positive number of bohr, got {step!r}")
        self.model, self.scheme, self.step, self.block = model, scheme, float(step), int(block)
        self.rng = np.random.default_rng(seed)
        npart, n = model.n_electrons, model.n_per_spin
        self.pos = self.rng.random((npart, 3)) * model.box
        self.inv = np.empty((2, n, n))
        self.rows = np.empty((npart, n))
        self.counts = np.zeros(2, dtype=np.int64)
        self._args = model.kernel_args()
        self.refresh()

    def refresh(self):
        """Recompute the orbital rows and inverses from scratch."""
        mode, gvec, kind, coeffs, cinv = self._args[:5]
        fresh_inverse(self.pos, self.rows, self.inv, mode, gvec, kind, coeffs, cinv)

    def advance(self, sweeps: int, measure_every: int = 0, refresh: bool = True):
        """Run ``sweeps`` sweeps; returns (energies (M, 2): T and V in hartree for all N electrons,
        S (M, n_shells)) of the measurements taken every ``measure_every`` sweeps (0: none)."""
        npart = self.model.n_electrons
        n_shells = len(self.model.shell_m2)
        m_total = sweeps // measure_every if measure_every > 0 else 0
        out_e = np.empty((m_total, 2))
        out_s = np.empty((m_total, n_shells))
        done = 0
        m = 0
        code = SCHEME_CODES[self.scheme]
        block = self.block if measure_every <= 0 else max(measure_every, self.block - self.block % measure_every)
        while done < sweeps:
            b = min(block, sweeps - done)  # whole blocks are multiples of measure_every
            normals = self.rng.standard_normal((b, npart, 3))
            uniforms = self.rng.random((b, npart))
            if refresh:
                self.refresh()
            k = run_sweeps(code, self.pos, self.inv, self.rows, self.step, normals, uniforms, measure_every,
                           out_e[m:], out_s[m:], self.counts, *self._args)
            m += k
            done += b
        return out_e[:m], out_s[:m]

    @property
    def acceptance(self) -> float:
        return float(self.counts[1] / self.counts[0]) if self.counts[0] else float("nan")

    def log_psi(self) -> float:
        """log |Ψ| at the current positions (from scratch; for checks)."""
        box, a, rc = self._args[5:8]
        n = self.model.n_per_spin
        return float(sum(np.linalg.slogdet(self.rows[s * n:(s + 1) * n])[1] for s in range(2))
                     + _jastrow_total(self.pos, box, a, rc))


def tune_step(model: FreeElectronModel, scheme: str = "pbp", target: float | None = None, seed: int = 12345,
              sweeps: int = 200, iterations: int = 8, start: float | None = None) -> float:
    """Step δ (bohr) giving acceptance ≈ ``target`` (default :data:`TARGET_ACCEPTANCE`; ``pbp`` for the
    single-electron schemes) by bisection on log δ over short deterministic pilot runs."""
    target = TARGET_ACCEPTANCE["cbc" if scheme == "cbc" else "pbp"] if target is None else target
    step = (model.rs if scheme != "cbc" else model.rs / math.sqrt(model.n_electrons)) if start is None else start
    lo, hi = None, None
    chain = Chain(model, scheme, step, seed=seed)
    chain.advance(sweeps)  # equilibrate at the first guess
    for _ in range(iterations):
        chain.step = step
        chain.counts[:] = 0
        chain.advance(sweeps)
        if chain.acceptance > target:
            lo = step
        else:
            hi = step
        step = math.sqrt(lo * hi) if lo is not None and hi is not None else (step * 2 if hi is None else step / 2)
    return float(step)


def _estimate(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # short fast-mode series: error still reported
        return estimate(np.asarray(x))


@dataclass
class SchemeRun:
    """Series of one chain: energies per electron (hartree), S(G) per shell, acceptance, wall time."""

    scheme: str
    step: float
    seed: int
    energy: np.ndarray  # (M,) E_L / N, hartree
    potential: np.ndarray  # (M,) V / N, hartree
    kinetic: np.ndarray  # (M,) T_L / N, hartree
    s: np.ndarray  # (M, n_shells)
    acceptance: float
    wall_s: float
    sweeps: int
    extra: dict = field(default_factory=dict)


def run_scheme(model: FreeElectronModel, scheme: str, step: float, sweeps: int, equil: int = 500,
               measure_every: int = 2, seed: int = 0, block: int = 200) -> SchemeRun:
    """Equilibrate ``equil`` sweeps, then ``sweeps`` sweeps measuring every ``measure_every``."""
    t0 = time.perf_counter()
    chain = Chain(model, scheme, step, seed=seed, block=block)
    chain.advance(equil)
    chain.counts[:] = 0
    e, s = chain.advance(sweeps, measure_every)
    npart = model.n_electrons
    return SchemeRun(scheme, float(step), int(seed), (e[:, 0] + e[:, 1]) / npart, e[:, 1] / npart, e[:, 0] / npart,
                     s, chain.acceptance, time.perf_counter() - t0, int(sweeps))


def _seed(seed: int, scheme: str, salt: int = 0) -> int:
    return int(np.random.SeedSequence([seed, SCHEME_CODES[scheme], salt]).generate_state(1)[0])


def compare_schemes(model: FreeElectronModel | None = None, sweeps: int | None = None, equil: int | None = None,
                    measure_every: int = 2, seed: int = 2026, steps: dict | None = None,
                    reference_factor: int = 2, fast: bool | None = None, schemes=SCHEMES, executor=None) -> dict:
    """Run every scheme at equal cost (the same sweeps and measurements) and tabulate its bias.

    ``steps``: {scheme: δ bohr}; missing ones are tuned (:func:`tune_step`: ``pbp``'s δ for the three
    single-electron schemes, its own for ``cbc``). Exact reference: the closed forms when the model has
    one (A = 0, exact plane waves); otherwise an independent ``pbp`` run of ``reference_factor`` × sweeps.
    ``fast`` (default: env QMCKIT_FAST) shrinks the default sizes for CI. ``executor`` (a
    concurrent.futures executor) runs the chains in parallel; the numbers do not depend on it.

    Returns {"model", "reference", "steps", "rows"}: each row has scheme, label, step (bohr),
    acceptance, energy/error (hartree per electron; energy_sd the spread of E_L/N, tau its autocorrelation in
    measurements), bias/bias_error (hartree per electron), bias_sigma,
    bias_per_cell/bias_per_cell_error (hartree per primitive cell, × electrons_per_cell), the same for
    TiO2 (× 24), within_chemical_accuracy (|bias| + 2σ < 1e-3 per cell), S(G) deviation (max over
    shells of |ΔS|/σ and |ΔS| at that shell, rms of ΔS/σ), tau (energy autocorrelation, in
    measurements) and wall_s.
    """
    if fast is None:
        fast = os.environ.get("QMCKIT_FAST", "") not in ("", "0")
    if model is None:
        model = FreeElectronModel(n_per_spin=7 if fast else 19)
    sweeps = (2000 if fast else 40000) if sweeps is None else int(sweeps)
    equil = (200 if fast else 1000) if equil is None else int(equil)
    steps = dict(steps or {})
    if "pbp" not in steps:
        steps["pbp"] = tune_step(model, "pbp", sweeps=100 if fast else 300)
    for s in ("qs_batched", "qs_literal"):
        steps.setdefault(s, steps["pbp"])
    if "cbc" in schemes and "cbc" not in steps:
        steps["cbc"] = tune_step(model, "cbc", sweeps=100 if fast else 300)

    jobs = {s: (model, s, steps[s], sweeps, equil, measure_every, _seed(seed, s)) for s in schemes}
    if not model.has_exact_answer:
        jobs["reference"] = (model, "pbp", steps["pbp"], reference_factor * sweeps, equil, measure_every,
                             _seed(seed, "pbp", salt=1))
    if executor is None:
        runs = {k: run_scheme(*job) for k, job in jobs.items()}
    else:
        futures = {k: executor.submit(run_scheme, *job) for k, job in sorted(jobs.items(), key=lambda kv: -kv[1][3])}
        runs = {k: f.result() for k, f in futures.items()}
    npart = model.n_electrons
    if model.has_exact_answer:
        reference = {"kind": "exact", "energy": model.exact_energy_per_electron(), "error": 0.0,
                     "potential": model.exact_potential() / npart, "kinetic": model.exact_kinetic() / npart,
                     "s": model.exact_shell_s, "s_error": np.zeros(len(model.shell_m2))}
    else:
        ref = runs.pop("reference")
        e = _estimate(ref.energy)
        s_est = [_estimate(ref.s[:, k]) for k in range(ref.s.shape[1])]
        reference = {"kind": f"pbp, {reference_factor * sweeps} sweeps, independent seed", "energy": e.mean,
                     "error": e.error, "s": np.array([x.mean for x in s_est]),
                     "s_error": np.array([x.error for x in s_est]), "wall_s": ref.wall_s}

    rows = []
    for s in schemes:
        r = runs[s]
        e = _estimate(r.energy)
        bias = e.mean - reference["energy"]
        err = math.hypot(e.error, reference["error"])
        s_est = [_estimate(r.s[:, k]) for k in range(r.s.shape[1])]
        ds = np.array([x.mean for x in s_est]) - reference["s"]
        ds_err = np.hypot([x.error for x in s_est], reference["s_error"])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(ds_err > 0, ds / ds_err, np.where(ds == 0, 0.0, np.inf))
        worst = int(np.argmax(np.abs(z)))
        cell = model.electrons_per_cell
        rows.append({
            "scheme": s, "label": SCHEME_LABELS[s], "step": r.step, "acceptance": r.acceptance,
            "energy": e.mean, "error": e.error, "tau": e.tau, "energy_sd": float(np.std(r.energy)),
            "bias": bias, "bias_error": err, "bias_sigma": bias / err if err > 0 else float("inf"),
            "bias_per_cell": bias * cell, "bias_per_cell_error": err * cell,
            "bias_per_cell_tio2": bias * ELECTRONS_PER_CELL["TiO2"],
            "bias_per_cell_tio2_error": err * ELECTRONS_PER_CELL["TiO2"],
            "within_chemical_accuracy": bool(abs(bias * cell) + 2 * err * cell < CHEMICAL_ACCURACY),
            "s_max_dev_sigma": float(z[worst]), "s_max_dev": float(ds[worst]),
            "s_max_dev_g": float(model.shell_g[worst]), "s_rms_dev_sigma": float(np.sqrt(np.mean(z * z))),
            "s_first_shell": float(r.s[:, 0].mean()), "s_first_shell_error": float(s_est[0].error),
            "wall_s": r.wall_s,
        })
    return {"model": model, "reference": reference, "steps": steps, "rows": rows, "sweeps": sweeps,
            "equil": equil, "measure_every": measure_every, "seed": seed, "runs": runs}


def format_table(result: dict) -> str:
    """Markdown table of :func:`compare_schemes`'s rows."""
    from ..stats import format_value_error as fve

    model = result["model"]
    cell = model.electrons_per_cell
    lines = [
        f"| scheme | δ (bohr) | acceptance | E/N (Ha) | bias/N (Ha) | bias/σ | bias (Ha per cell, ×{cell}) "
        f"| bias (Ha per TiO2 cell, ×24) | S(G) worst shell: ΔS/σ (ΔS, \\|G\\|) | S(G) rms ΔS/σ |",  # escaped: a bare | ends a cell
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['scheme']} | {r['step']:.4f} | {r['acceptance']:.3f} | {fve(r['energy'], r['error'])} "
            f"| {fve(r['bias'], r['bias_error'])} | {r['bias_sigma']:+.2f} "
            f"| {fve(r['bias_per_cell'], r['bias_per_cell_error'])} "
            f"| {fve(r['bias_per_cell_tio2'], r['bias_per_cell_tio2_error'])} "
            f"| {r['s_max_dev_sigma']:+.1f} ({r['s_max_dev']:+.4f}, {r['s_max_dev_g']:.3f}) "
            f"| {r['s_rms_dev_sigma']:.2f} |")
    return "\n".join(lines)
