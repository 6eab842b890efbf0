# The teacher's solutions of notebooks/exercises/p1_bosons.ipynb, one section per task cell ("# %% task NAME").
# With QMCKIT_EXERCISE_SOLUTIONS=1 (the tests), qmckit.teach.start runs each section in place of the notebook's
# cell that begins "# task NAME".

# %% task p1.a
def local_energy(R, p):
    """E_L = −½ ∇²ψ/ψ + V for ψ = exp(−α Σ r²) in the trap ½ Σ r² (ħω)."""
    alpha = p[0]
    n, dim = R.shape
    return n * dim * alpha + (0.5 - 2 * alpha ** 2) * np.sum(R * R)


def drift(R, p):
    """∇_i ln ψ = −2α r_i, (N, d)."""
    return -2 * p[0] * R

# %% task p1.b
def metropolis(alpha, n, dim, steps, seed=0, step=1.0):
    """Brute-force Metropolis: one walker, every particle moved at once by a uniform step in [−step/2, step/2)."""
    rng = np.random.default_rng(seed)
    p = np.array([alpha])
    R = rng.normal(size=(n, dim)) * 0.5
    log_psi = -alpha * np.sum(R * R)
    energies, accepted = np.empty(steps), 0
    for k in range(steps):
        trial = R + step * (rng.random((n, dim)) - 0.5)
        log_trial = -alpha * np.sum(trial * trial)
        if rng.random() < np.exp(2 * (log_trial - log_psi)):  # |ψ(R′)/ψ(R)|²
            R, log_psi, accepted = trial, log_trial, accepted + 1
        energies[k] = local_energy(R, p)  # after every step, accepted or not
    return energies, accepted / steps

# %% task p1.c
def importance(alpha, n, dim, steps, seed=0, dt=0.05):
    """Langevin walk R′ = R + D F δt + √(2Dδt) χ with D = ½, F = 2∇ln ψ, and the Metropolis–Hastings acceptance
    |ψ(R′)/ψ(R)|² G(R←R′)/G(R′←R), G(R′←R) ∝ exp(−|R′ − R − DδtF(R)|²/(4Dδt))."""
    rng = np.random.default_rng(seed)
    p = np.array([alpha])
    R = rng.normal(size=(n, dim)) * 0.5
    log_psi, force = -alpha * np.sum(R * R), 2 * drift(R, p)
    energies, accepted = np.empty(steps), 0
    for k in range(steps):
        trial = R + 0.5 * force * dt + np.sqrt(dt) * rng.normal(size=(n, dim))
        log_trial, force_trial = -alpha * np.sum(trial * trial), 2 * drift(trial, p)
        forward = np.sum((trial - R - 0.5 * dt * force) ** 2)
        backward = np.sum((R - trial - 0.5 * dt * force_trial) ** 2)
        log_ratio = 2 * (log_trial - log_psi) + (forward - backward) / (2 * dt)
        if rng.random() < np.exp(log_ratio):
            R, log_psi, force, accepted = trial, log_trial, force_trial, accepted + 1
        energies[k] = local_energy(R, p)
    return energies, accepted / steps

# %% task p1.d
def energy_gradient(local_energies, dlnpsi):
    """dE/dα = 2(⟨E_L ∂_α ln ψ⟩ − ⟨E_L⟩⟨∂_α ln ψ⟩)."""
    return 2 * (np.mean(local_energies * dlnpsi) - np.mean(local_energies) * np.mean(dlnpsi))

# %% task p1.e
def blocking(series):
    """The error of the mean by blocking: halve the series until the error stops growing (the plateau)."""
    x = np.asarray(series, dtype=float)
    errors = []
    while x.size >= 32:
        errors.append(x.std(ddof=1) / np.sqrt(x.size))
        x = 0.5 * (x[: x.size // 2 * 2 : 2] + x[1 : x.size // 2 * 2 : 2])
    for k in range(1, len(errors)):  # the first level whose next is within 3 % of it
        if errors[k] < 1.03 * errors[k - 1] and (k + 1 == len(errors) or errors[k + 1] < 1.03 * errors[k]):
            return errors[k]
    return errors[-1]

# %% task p1.f
def merge(means, errors, counts):
    """Independent runs: the mean weighted by their samples, the errors in quadrature."""
    weights = counts / np.sum(counts)
    return np.sum(weights * means), np.sqrt(np.sum((weights * errors) ** 2))

# %% task p1.g
def log_psi_interacting(R, p):
    """ln ψ_T = −α Σ (x² + y² + β z²) + Σ_{i<j} ln(1 − a/r_ij), −inf when two bosons overlap."""
    alpha, beta, a = p[0], p[1], p[2]
    total = -alpha * (np.sum(R[:, :2] ** 2) + beta * np.sum(R[:, 2] ** 2))
    for i in range(R.shape[0]):
        for j in range(i + 1, R.shape[0]):
            r = np.sqrt(np.sum((R[i] - R[j]) ** 2))
            if r <= a:
                return -np.inf
            total += np.log(1 - a / r)
    return total


def potential_interacting(R, p):
    """V = ½ Σ (x² + y² + β² z²), +inf when two bosons overlap."""
    beta, a = p[1], p[2]
    for i in range(R.shape[0]):
        for j in range(i + 1, R.shape[0]):
            if np.sum((R[i] - R[j]) ** 2) <= a * a:
                return np.inf
    return 0.5 * (np.sum(R[:, :2] ** 2) + beta ** 2 * np.sum(R[:, 2] ** 2))

# %% task p1.h
def radial_density(positions, bins, r_max):
    """ρ(r) at the bin centres: particles per configuration and unit volume, Σ ρ 4πr² Δr = N."""
    r = np.sqrt(np.sum(positions ** 2, axis=-1)).ravel()
    counts, edges = np.histogram(r, bins=bins, range=(0.0, r_max))
    centres = 0.5 * (edges[1:] + edges[:-1])
    shells = 4 * np.pi / 3 * (edges[1:] ** 3 - edges[:-1] ** 3)
    return centres, counts / (positions.shape[0] * shells)
