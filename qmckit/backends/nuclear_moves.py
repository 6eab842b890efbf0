"""Single-electron moves near nuclei (Umrigar, Nightingale & Runge, J. Chem. Phys. 99, 2865 (1993), §III.C).

Close to a nucleus of charge Z the drift v = ∇ ln|ψ| points at the nucleus and grows like Z, so a Gaussian
move of variance τ centred on r + τv overshoots it, and with a trial function that has the e–n cusp the
walkers pile up in a region the short-time Green's function treats badly: the DMC time-step error of
all-electron atoms comes mostly from there. The UNR move, for an electron at r whose nearest nucleus is at
R (z = |r − R|, ẑ = (r − R)/z):

* the drift is limited with an a that depends on the geometry,

      a = ½(1 + v̂·ẑ) + Z²z²/(10(4 + Z²z²)),      v̄ = v (√(1 + 2 a v² τ) − 1)/(a v² τ),

  so that a drift toward the nucleus is cut to about the distance, and one away from it (or far from
  any nucleus) to about √(2τ/a);
* the drifted point r'' keeps the side of the nucleus: its distance z'' = max(z + v̄·ẑ τ, 0) and its
  sideways drift (v̄ − (v̄·ẑ)ẑ) τ shrunk by 2z''/(z + z'');
* the proposal mixes a Gaussian of variance τ around r'' with a hydrogenic 1s density around the
  nucleus, (ζ³/π) exp(−2ζ|r' − R|) with ζ = √(Z² + 1/τ), the second with weight
  p = ½ erfc((z + v̄·ẑ τ)/√(2τ)), the probability that the Gaussian would have crossed the nucleus.

The Green's function of the move is that mixture,

    G(r → r') = (1 − p)(2πτ)^(−3/2) exp(−|r' − r''|²/(2τ)) + p (ζ³/π) exp(−2ζ|r' − R|),

and the reverse move is built the same way from r' (its own nearest nucleus and drift), so
Metropolis–Hastings with G(r' → r)/G(r → r') stays exact: VMC samples |ψ|² whatever the move, and the
move changes only DMC's time-step error.

These functions are plain numba functions of one electron, compiled into the CPU sweep template
(:mod:`qmckit.backends.cpu_kernels`) and, from the same source, as CUDA device functions for the atoms'
GPU sweep (:mod:`qmckit.backends.cuda_atom`), where ``_rng`` names the device generator. ``nuclei`` is the
system's (M, 4) array of [x, y, z, Z] (:meth:`qmckit.systems.protocol.System.nuclei`); three dimensions only.
"""
from __future__ import annotations

import math

import numba as nb

from .. import rng as _rng

TINY = 1e-300


@nb.njit(cache=True)
def nuclear_drift(r, v, dt, nuclei, drifted):
    """The UNR drift of an electron at ``r`` (3,) with drift velocity ``v`` (3,) = ∇ ln|ψ| for time step ``dt``:
    writes the drifted point r'' into ``drifted`` (3,) and returns (the nearest nucleus's row k, p, ζ)."""
    k = 0
    best = math.inf
    for m in range(nuclei.shape[0]):
        d2 = 0.0
        for c in range(3):
            t = r[c] - nuclei[m, c]
            d2 += t * t
        if d2 < best:
            best = d2
            k = m
    charge = nuclei[k, 3]
    z = math.sqrt(best)
    e0, e1, e2 = 0.0, 0.0, 1.0  # ẑ; any unit vector at the nucleus itself
    if z > 0.0:
        e0 = (r[0] - nuclei[k, 0]) / z
        e1 = (r[1] - nuclei[k, 1]) / z
        e2 = (r[2] - nuclei[k, 2]) / z
    v2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
    vz = v[0] * e0 + v[1] * e1 + v[2] * e2
    zz = charge * charge * z * z
    a = 0.5 * (1.0 + (vz / math.sqrt(v2) if v2 > 0.0 else 0.0)) + zz / (10.0 * (4.0 + zz))
    av2dt = a * v2 * dt
    scale = 1.0 if av2dt < 1e-12 else (math.sqrt(1.0 + 2.0 * av2dt) - 1.0) / av2dt
    z_drift = z + scale * vz * dt  # where the drift alone would take the distance (negative: past the nucleus)
    z_new = max(z_drift, 0.0)
    side = 2.0 * z_new / (z + z_new) if z + z_new > 0.0 else 0.0
    drifted[0] = nuclei[k, 0] + z_new * e0 + side * scale * dt * (v[0] - vz * e0)
    drifted[1] = nuclei[k, 1] + z_new * e1 + side * scale * dt * (v[1] - vz * e1)
    drifted[2] = nuclei[k, 2] + z_new * e2 + side * scale * dt * (v[2] - vz * e2)
    p = 0.5 * math.erfc(z_drift / math.sqrt(2.0 * dt))
    zeta = math.sqrt(charge * charge + 1.0 / dt)
    return k, p, zeta


@nb.njit(cache=True)
def nuclear_propose(states, w, drifted, k, p, zeta, nuclei, dt, r_new):
    """Draw r' (into ``r_new`` (3,)) from the UNR mixture around ``drifted`` and nucleus ``k`` on stream ``w``:
    a uniform picks the part, two normal pairs give χ (three used), and the 1s part draws its radius from three
    more uniforms (a Γ(3) variate) along χ/|χ|. Returns |r' − r''|², the move's squared diffusion displacement."""
    pick = _rng.uniform(states, w)
    z0, z1 = _rng.normal_pair(states, w)
    z2, _ = _rng.normal_pair(states, w)
    if pick < p:
        radius = -(math.log(1.0 - _rng.uniform(states, w)) + math.log(1.0 - _rng.uniform(states, w))
                   + math.log(1.0 - _rng.uniform(states, w))) / (2.0 * zeta)
        norm = math.sqrt(z0 * z0 + z1 * z1 + z2 * z2) + TINY
        r_new[0] = nuclei[k, 0] + radius * z0 / norm
        r_new[1] = nuclei[k, 1] + radius * z1 / norm
        r_new[2] = nuclei[k, 2] + radius * z2 / norm
    else:
        sqrt_dt = math.sqrt(dt)
        r_new[0] = drifted[0] + sqrt_dt * z0
        r_new[1] = drifted[1] + sqrt_dt * z1
        r_new[2] = drifted[2] + sqrt_dt * z2
    d0 = r_new[0] - drifted[0]
    d1 = r_new[1] - drifted[1]
    d2 = r_new[2] - drifted[2]
    return d0 * d0 + d1 * d1 + d2 * d2


@nb.njit(cache=True)
def nuclear_log_green(x, drifted, k, p, zeta, nuclei, dt):
    """ln G of the UNR move whose drifted point is ``drifted`` (nucleus ``k``, weight ``p``, exponent ``zeta``),
    evaluated at ``x`` (3,): ln[(1 − p)(2πτ)^(−3/2) e^(−|x − r''|²/2τ) + p (ζ³/π) e^(−2ζ|x − R_k|)]."""
    g2 = 0.0
    s2 = 0.0
    for c in range(3):
        t = x[c] - drifted[c]
        g2 += t * t
        t = x[c] - nuclei[k, c]
        s2 += t * t
    gauss = -math.inf if p >= 1.0 else math.log1p(-p) - 1.5 * math.log(2.0 * math.pi * dt) - g2 / (2.0 * dt)
    slater = (-math.inf if p <= 0.0 else
              math.log(p) + 3.0 * math.log(zeta) - math.log(math.pi) - 2.0 * zeta * math.sqrt(s2))
    top = max(gauss, slater)
    return top + math.log(math.exp(gauss - top) + math.exp(slater - top))
