"""A system written the way a student writes one (qmckit.UserSystem, plain NumPy functions), registered so that the
conformance suite (tests/test_conformance.py) runs it like every built-in system: two particles in a 3D harmonic
trap with a soft pair repulsion g/(1 + r²), ψ_T = exp(−α Σ r²); exact (3, zero variance) at α = ½, g = 0."""
import numpy as np

import qmckit
from qmckit.systems import adopt


def log_psi(R, p):
    return -p[0] * np.sum(R * R)


def drift(R, p):
    return -2.0 * p[0] * R


def pair(R, p):
    d = R[0] - R[1]
    return p[1] / (1.0 + np.sum(d * d))


def local_energy(R, p):  # the pair term written out: a helper called from here would need @numba.njit
    a = p[0]
    d = R[0] - R[1]
    return R.shape[0] * R.shape[1] * a + (0.5 - 2.0 * a * a) * np.sum(R * R) + p[1] / (1.0 + np.sum(d * d))


def trap(R, p):
    return 0.5 * np.sum(R * R)


oscillator = qmckit.UserSystem(n=2, dim=3, params={"alpha": 0.5, "g": 0.0}, log_psi=log_psi, drift=drift,
                               local_energy=local_energy, potential={"trap": trap, "pair": pair},
                               bounds={"alpha": (0, None), "g": (0, None)}, name="student_oscillator",
                               exact_cases=((dict(alpha=0.5, g=0.0), 3.0),),
                               examples=(dict(alpha=0.5, g=0.0), dict(alpha=0.4, g=0.7)))
adopt(oscillator)
