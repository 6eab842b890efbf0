# The teacher's solutions of notebooks/exercises/dmc_intro.ipynb, one section per task cell ("# %% task NAME").
# With QMCKIT_EXERCISE_SOLUTIONS=1 (the tests), qmckit.teach.start runs each section in place of the notebook's
# cell that begins "# task NAME".

# %% task dmc.a
def branching_weight(e_old, e_new, e_trial, dt):
    """The expected number of copies of each walker after a step: exp(−Δτ (½(E_L + E_L′) − E_T))."""
    return np.exp(-dt * (0.5 * (e_old + e_new) - e_trial))

# %% task dmc.b
settings = dict(dt=0.01, walkers=200, steps=2000, dmc_equilibration=300)  # 3 time units to project, then 20

# %% task dmc.c
def extrapolate(dts, energies, errors):
    """E(Δτ) = E(0) + k Δτ by least squares weighted with 1/σ²: E(0) and its error from the fit's covariance."""
    design = np.stack([np.ones_like(dts), dts], axis=1) / errors[:, None]
    covariance = np.linalg.inv(design.T @ design)
    coefficients = covariance @ design.T @ (energies / errors)
    return coefficients[0], np.sqrt(covariance[0, 0])
