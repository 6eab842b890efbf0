# The teacher's solutions of notebooks/exercises/p2_quantum_dots.ipynb, one section per task cell ("# %% task NAME").
# With QMCKIT_EXERCISE_SOLUTIONS=1 (the tests), qmckit.teach.start runs each section in place of the notebook's
# cell that begins "# task NAME".

# %% task p2.a
def free_local_energy(R, p):
    """E_L = 2αω + ½ω²(1 − α²) Σ r² for ψ_T = exp(−αω Σ r²/2), two electrons in 2D."""
    alpha, omega = p[0], p[1]
    return 2 * alpha * omega + 0.5 * omega ** 2 * (1 - alpha ** 2) * np.sum(R * R)

# %% task p2.b
def dot_local_energy(R, p):
    """E_L of ψ_T = exp(−αω Σ r²/2 + r₁₂/(1 + βr₁₂)) with V = ½ω² Σ r² + 1/r₁₂ (two electrons, 2D)."""
    alpha, beta, omega = p[0], p[1], p[2]
    d = R[0] - R[1]
    r12 = np.sqrt(np.sum(d * d))
    u = 1 / (1 + beta * r12) ** 2  # dJ/dr₁₂ of J = r₁₂/(1 + βr₁₂)
    u2 = -2 * beta / (1 + beta * r12) ** 3  # d²J/dr₁₂²
    # ∇₁ ln ψ = −αω r₁ + u r̂₁₂, ∇₂ ln ψ = −αω r₂ − u r̂₁₂; ∇² in 2D of J(r₁₂) for each electron: u'' + u/r₁₂
    g1 = -alpha * omega * R[0] + u * d / r12
    g2 = -alpha * omega * R[1] - u * d / r12
    laplacian = -4 * alpha * omega + 2 * (u2 + u / r12)
    kinetic = -0.5 * (laplacian + np.sum(g1 * g1) + np.sum(g2 * g2))
    return kinetic + 0.5 * omega ** 2 * np.sum(R * R) + 1 / r12

# %% task p2.c
alpha, beta = 0.99, 0.40  # near the minimum of E(α, β) (see the scan above)

# %% task p2.d
def r12(R, p):
    """|r₁ − r₂| (a.u.)."""
    return np.sqrt(np.sum((R[0] - R[1]) ** 2))


def virial(kinetic, trap, coulomb):
    """2T − (2V_trap − V_ee): V_trap ∝ r² (n = 2), V_ee ∝ r⁻¹ (n = −1)."""
    return 2 * kinetic - (2 * trap - coulomb)

# %% task p2.e
def density(rho, omega):
    """(ω/π) exp(−ωρ²): |exp(−ωρ²/2)|² per electron, ∫ 2πρ n dρ = 1."""
    return omega / np.pi * np.exp(-omega * rho ** 2)
