"""A one-dimensional harmonic oscillator written as a user would write a system: for tests of the protocol.

H = Σ_i (−½ d²/dx_i² + ½ x_i²) for N independent particles; ψ_T = exp(−α Σ x_i²/2)... as exp(−α Σ x_i²),
E(α) = N (α/2 + 1/(8α)), exact (½ per particle, zero variance) at α = ½.
"""
import math
from dataclasses import asdict, dataclass

import numba as nb
import numpy as np

from qmckit.systems.protocol import Capabilities, Kernels, System, no_other_drift_change, parameter, validate


@dataclass(frozen=True)
class ToyParams:
    n: int = parameter(3, help="number of particles", low=1)
    alpha: float = parameter(0.5, help="Gaussian exponent α", low=0.0, low_open=True, variational=True)
    trap: str = parameter("harmonic", help="trap shape", choices=("harmonic",))
    label: bool = parameter(False, help="a switch that does nothing")

    def __post_init__(self):
        validate(self)

    def as_dict(self):
        return asdict(self)


@nb.njit(cache=False)
def log_psi(R, p):
    return -p[0] * np.sum(R * R)


@nb.njit(cache=False)
def recompute(R, p, cache):
    pass


@nb.njit(cache=False)
def gradient(R, p, cache, i, out):
    out[0] = -2.0 * p[0] * R[i, 0]


@nb.njit(cache=False)
def test_move(R, p, cache, i, r_new, grad_new):
    grad_new[0] = -2.0 * p[0] * r_new[0]
    return -p[0] * (r_new[0] ** 2 - R[i, 0] ** 2)


@nb.njit(cache=False)
def accept_move(R, p, cache, i, r_new, grad_new):
    R[i, 0] = r_new[0]


@nb.njit(cache=False)
def local_energy(R, p, cache):
    a = p[0]
    return np.sum(a - 2.0 * a * a * R[:, 0] ** 2 + 0.5 * R[:, 0] ** 2)


@nb.njit(cache=False)
def potential(R, p):
    return 0.5 * np.sum(R * R)


class Toy(System):
    name = "toy1d"
    title = "a one-dimensional harmonic oscillator (test system)"
    description = "N particles in ½x²; ψ = exp(−α Σ x²); energies in ħω."
    Params = ToyParams
    dim = 1
    energy_unit = "ħω"
    kernels = Kernels(recompute, gradient, test_move, accept_move, local_energy, log_psi, no_other_drift_change,
                      potential)
    capabilities = Capabilities()
    exact_cases = ((dict(n=3, alpha=0.5), 1.5),)

    @property
    def n_particles(self):
        return self.params.n

    @property
    def kernel_params(self):
        return np.array([self.params.alpha])

    def cache_size(self):
        return 1

    def density_range(self):
        return 4.0 / math.sqrt(self.params.alpha)

    def initial_positions(self, n_walkers, rng):
        return rng.normal(size=(n_walkers, self.params.n, 1))
