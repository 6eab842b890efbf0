"""Per-walker random streams: xoroshiro128+ written as plain functions.

Every walker owns one row ``states[w] = (s0, s1)`` of a ``(W, 2)`` uint64 array. The generator
functions below are plain numba functions so that the same source can be compiled for the CPU
(``numba.njit``) and later for CUDA device functions; a walker's stream never depends on how
walkers are scheduled over threads, which makes every run reproducible from its seed.

The streams are seeded from one integer through ``numpy.random.SeedSequence``: walker ``w``
gets child ``w`` of the sequence, so streams are statistically independent and adding walkers
does not change the streams of the existing ones.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

_ROT_A = np.uint64(24)
_ROT_B = np.uint64(37)
_SHIFT = np.uint64(16)
_W64 = np.uint64(64)
_MANTISSA_SHIFT = np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53

# Under numba's CUDA simulator these functions run as Python on numpy uint64 scalars, where the
# intended wrap-around of s0 + s1 raises an overflow RuntimeWarning. A module's first warning creates
# its __warningregistry__ global; if that happens while another simulated thread walks this module's
# globals (the simulator swaps `cuda` in and out of them), that thread fails with "dictionary changed
# size during iteration" (seen once in CI, in tests/test_molecule_speedup.py). The registry made here
# removes the race.
__warningregistry__: dict = {}


def seed_states(seed: int | np.random.SeedSequence, n_walkers: int) -> np.ndarray:
    """Return a ``(n_walkers, 2)`` uint64 state array, one independent stream per walker."""
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    states = np.empty((n_walkers, 2), dtype=np.uint64)
    for w, child in enumerate(seq.spawn(n_walkers)):
        s = child.generate_state(2, dtype=np.uint64)
        if s[0] == 0 and s[1] == 0:  # the all-zero state is the generator's one fixed point
            s[0] = np.uint64(0x9E3779B97F4A7C15)
        states[w] = s
    return states


@nb.njit(inline="always", cache=True)
def _rotl(x, k):
    return (x << k) | (x >> (_W64 - k))


@nb.njit(inline="always", cache=True)
def next_uint64(states, w):
    """Advance stream ``w`` and return its next 64-bit output."""
    s0 = states[w, 0]
    s1 = states[w, 1]
    result = s0 + s1
    s1 ^= s0
    states[w, 0] = _rotl(s0, _ROT_A) ^ s1 ^ (s1 << _SHIFT)
    states[w, 1] = _rotl(s1, _ROT_B)
    return result


@nb.njit(inline="always", cache=True)
def uniform_from_bits(bits):
    """The uniform float64 in [0, 1) that one draw of :func:`next_uint64` gives (its top 53 bits)."""
    return float(bits >> _MANTISSA_SHIFT) * _TWO_M53


@nb.njit(inline="always", cache=True)
def uniform(states, w):
    """Uniform float64 in [0, 1) with 53 random bits."""
    return uniform_from_bits(next_uint64(states, w))


@nb.njit(inline="always", cache=True)
def box_muller(first, second):
    """Two independent standard normal deviates from two uniforms in [0, 1), drawn in this order."""
    radius = math.sqrt(-2.0 * math.log(1.0 - first))  # 1 − first in (0, 1]: log is finite
    angle = 2.0 * math.pi * second
    return radius * math.cos(angle), radius * math.sin(angle)


@nb.njit(inline="always", cache=True)
def normal_pair_u(states, w):
    """Two independent standard normal deviates (Box–Muller) and the uniform that set their angle.

    The angle uniform is returned only so that study 002's flawed reuse of it as the
    Metropolis uniform can be reproduced on request (its doubt D2).
    """
    first = uniform(states, w)
    second = uniform(states, w)
    z0, z1 = box_muller(first, second)
    return z0, z1, second


@nb.njit(inline="always", cache=True)
def normal_pair(states, w):
    """Two independent standard normal deviates (Box–Muller)."""
    z0, z1, _ = normal_pair_u(states, w)
    return z0, z1


@nb.njit(cache=True)
def uniforms(states, w, out):
    """Fill ``out`` with uniforms from stream ``w`` (used by tests and host code)."""
    for k in range(out.shape[0]):
        out[k] = uniform(states, w)


def jump_masks(steps: int) -> np.ndarray:
    """The generator's state ``steps`` draws on as a linear map over GF(2): a (128, 2) uint64 array whose
    row r holds two masks (over s0, s1) such that bit r of the new state (bits 0–63: s0, 64–127: s1) is the
    parity of ``(masks[r, 0] & s0) ^ (masks[r, 1] & s1)`` (xoroshiro128+'s step is xors, shifts and
    rotations: linear). Lets lanes of a GPU warp start a stream ``steps`` draws ahead without stepping
    there one draw at a time (``lattice_cuda.parse_batch``)."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    full = (1 << 64) - 1

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & full

    masks = np.zeros((128, 2), dtype=np.uint64)
    for j in range(128):  # column j: the image of unit state j
        s0, s1 = (1 << j, 0) if j < 64 else (0, 1 << (j - 64))
        for _ in range(int(steps)):
            s1 ^= s0
            s0, s1 = rotl(s0, 24) ^ s1 ^ ((s1 << 16) & full), rotl(s1, 37)
        bits = s0 | (s1 << 64)
        for r in range(128):
            if bits >> r & 1:
                masks[r, j >> 6] |= np.uint64(1 << (j & 63))
    return masks


def jumped_state(masks: np.ndarray, s0: int, s1: int) -> tuple[int, int]:
    """The state (s0, s1) that :func:`jump_masks`'s ``masks`` map (s0, s1) to (host reference)."""
    bits = 0
    for r in range(128):
        x = (int(masks[r, 0]) & int(s0)) ^ (int(masks[r, 1]) & int(s1))
        bits |= (bin(x).count("1") & 1) << r
    return bits & ((1 << 64) - 1), bits >> 64


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@nb.njit(inline="always", cache=True)
def _splitmix64(x):
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True)
def fork_from(source, states, children):
    """Give each row ``children[k]`` of ``states`` a new stream seeded from stream 0 of ``source``.

    Used when DMC branching copies a walker: the copy must not replay its parent's random
    numbers. The new state is SplitMix64 of two outputs of the source stream (the seeding recipe
    the xoroshiro authors recommend), so it is deterministic and cheap.
    """
    for k in range(children.shape[0]):
        c = children[k]
        s0 = _splitmix64(next_uint64(source, 0))
        s1 = _splitmix64(next_uint64(source, 0))
        if s0 == 0 and s1 == 0:
            s0 = _GOLDEN
        states[c, 0] = s0
        states[c, 1] = s1


@nb.njit(cache=True)
def branch_counts(states, q, counts):
    """counts[w] = ⌊q[w] + u_w⌋ with the u_w drawn in turn from stream 0 of ``states`` (DMC branching)."""
    for w in range(q.shape[0]):
        counts[w] = int(math.floor(q[w] + uniform(states, 0)))
