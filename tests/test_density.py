"""One-body densities against the exact Gaussian of non-interacting bosons."""
import math

import numpy as np
import pytest

from qmckit import RunConfig
from qmckit.observables import DensityHistogram
from qmckit.runs import make_run


def gaussian_x(x, alpha):
    # |ψ|² ∝ exp(−2α x²): normalised P(x)
    return math.sqrt(2 * alpha / math.pi) * np.exp(-2 * alpha * x**2)


@pytest.mark.parametrize("method", ["vmc", "dmc"])
def test_x_density_of_noninteracting_bosons(method):
    alpha = 0.5
    run = make_run(RunConfig(system="bec", params=dict(n=8, lam=1.0, a=0.0, alpha=alpha), method=method,
                             walkers=100, steps=1000, block=50, dt=0.1, seed=4, density="x", density_bins=30))
    out = run.run()["density"]
    edges, density, error = (np.array(out[k]) for k in ("edges", "density", "error"))
    assert np.sum(density * np.diff(edges)) == pytest.approx(1.0, abs=2e-3)  # nothing outside the range
    centers = 0.5 * (edges[1:] + edges[:-1])
    # the bin average of the exact density, against the estimate in units of its error
    fine = np.linspace(edges[0], edges[-1], 3001)
    exact = np.array([gaussian_x(fine[(fine >= lo) & (fine < hi)], alpha).mean() for lo, hi in zip(edges[:-1], edges[1:])])
    seen = error > 0
    assert np.all(exact[~seen] < 2e-3)  # only far-tail bins can stay empty
    pulls = (density - exact)[seen] / error[seen]
    assert np.mean(np.abs(pulls) < 2) > 0.85 and np.max(np.abs(pulls)) < 5, pulls
    assert centers[np.argmax(density)] == pytest.approx(0.0, abs=0.3)


def test_radial_normalisation():
    hist = DensityHistogram("r", bins=40, upper=6.0)
    rng = np.random.default_rng(0)
    hist.add(rng.normal(size=(2000, 5, 3)) * 0.7)
    density = hist.take_block()
    r = hist.centers
    shells = 4 / 3 * np.pi * np.diff(hist.edges**3)
    assert np.sum(density * shells) == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(ValueError, match="density must be one of"):
        DensityHistogram("theta")


def test_the_pair_distance_distribution_of_non_interacting_bosons_is_maxwells():
    # ψ² ∝ exp(−Σ r²) at α = ½, λ = 1: each coordinate of r_i − r_l is normal with variance 1, so |r_i − r_l| has the
    # Maxwell distribution P(r) = √(2/π) r² e^{−r²/2}; compared bin by bin with its exact bin averages (CDF differences)
    result = make_run(RunConfig(system="bec", params=dict(n=4, lam=1.0, a=0.0, alpha=0.5), walkers=100, steps=1000,
                                seed=3, density="pair", density_bins=30)).run()
    d = result["density"]
    edges = np.array(d["edges"])
    cdf = np.array([math.erf(x / np.sqrt(2)) - np.sqrt(2 / np.pi) * x * np.exp(-x * x / 2) for x in edges])
    exact = np.diff(cdf) / np.diff(edges)
    mean, error = np.array(d["density"]), np.array(d["error"])
    assert edges[-1] == pytest.approx(2 * 5 / np.sqrt(2))  # twice the trap's range
    assert np.sum(mean * np.diff(edges)) == pytest.approx(cdf[-1], abs=1e-3)  # normalised per pair
    where = exact > 0.02
    assert np.max(np.abs(mean[where] - exact[where]) / error[where]) < 4.0


def test_pair_distances_in_a_periodic_box_are_minimum_image():
    # two particles uniform in a periodic cube of side L: the minimum-image distance has P(r) = 4πr²/L³ up to L/2
    # (a sphere inside the cube); the plain distance falls short of that by 3r/2L and more, beyond ten error bars here
    L, bins = 3.0, 15
    positions = np.random.default_rng(5).uniform(0.0, L, size=(200_000, 2, 3))
    exact = 4 / 3 * np.pi * np.diff(np.linspace(0.0, L / 2, bins + 1) ** 3) / L**3 / (L / 2 / bins)
    for box, agrees in ((L, True), (0.0, False)):
        hist = DensityHistogram("pair", bins=bins, upper=L / 2, box=box)
        hist.add(positions)
        counts = hist._counts.copy()
        density = hist.take_block()
        error = density / np.sqrt(np.maximum(counts, 1.0))  # Poisson error of each bin
        assert bool(np.max(np.abs(density - exact) / error) < 4.0) is agrees


def test_a_periodic_systems_pair_histogram_covers_half_its_box():
    run = make_run(RunConfig(system="helium", params=dict(n=8), walkers=2, steps=2, equilibration=0, density="pair"))
    assert run.density.box == pytest.approx(run.system.box)
    assert run.density.hi == pytest.approx(run.system.box / 2)
    with pytest.raises(ValueError, match="box must be"):
        DensityHistogram("pair", box=-1.0)
