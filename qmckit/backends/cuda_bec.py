"""GPU (numba-cuda) VMC sweep for trapped hard-sphere bosons (:mod:`qmckit.systems.bec`).

The sweep is the one of :class:`qmckit.samplers.cpu.CpuSampler` — and the drift–diffusion part of DMC —
step for step, so that the CPU driver is this kernel's twin: for every walker, particles
0, 1, …, N−1 in turn get a single-particle proposal, drawn from the walker's own xoroshiro128+
stream (:mod:`qmckit.backends.cuda_rng` compiles :mod:`qmckit.rng`'s own source for the GPU):

* ``"drift"``: two ``normal_pair`` calls (three of the four normals used, x, y, z), proposal
  r' = r + Δt·s(g)·g + √Δt·χ with the Umrigar drift cap s(g), exact Metropolis–Hastings with the
  moved particle's Green's function only;
* ``"brute"``: three uniforms, r' = r + step·(u − ½) in each component;

then one fresh uniform decides acceptance, a hard-core overlap is rejected. After every sweep the
walker's local energy (O(N²)) is written to ``energies[sweep, walker]``. Same initial walkers and
RNG states give the CPU's numbers: float64 to round-off (summation order, FMA contraction and the
last bits of libdevice's log/sin/cos differ), and the same accept/reject decisions.

Two layouts
-----------
``"thread"`` (:func:`sweep_thread_per_walker`), for small N (default N ≤ 64): one thread per
walker. Positions live in global memory as ``pos[k, i, w]`` (component, particle, walker — the
thesis's "arraylinear off"), so the 32 threads of a warp read 32 neighbouring addresses. ∇ ln ψ is
*not stored*: the gradient of the particle about to move is recomputed in O(N), fused into the
previous move's pair loop (the loop over j that evaluates the ratio and the new gradient of
particle i also sums particle i+1's pair gradient over j ∉ {i, i+1}; the (i+1, i) term is added
once the decision on i is known). That costs one extra square root and division per pair but no
gradient traffic to global memory (a stored gradient would need a read-modify-write of 3N values
and the per-pair scratch of every accepted move), so every move reads the 3N coordinates once.

``"block"`` (:func:`sweep_block_per_walker`), for N in the hundreds: one thread block per walker
(B threads, a power of two). The walker's x, y, z, its cached gradient ∇_j ln ψ (3 arrays) and the
pair scratch u'(r)/r before/after the move (2 arrays) sit in shared memory: 8N values plus 5B for
the reductions. For each move thread 0 draws the random numbers and writes the proposal to
shared memory; all threads split the O(N) pair loop (j = t, t+B, …), each reduces its partial
ratio product, gradient sums and overlap count, a shared-memory tree reduction with
``cuda.syncthreads()`` at every level combines them (no warp-synchronous tricks: every exchange
between threads crosses a barrier); thread 0 takes the log of the product, draws the acceptance
uniform and decides; on acceptance all threads update the cached gradients of their particles
(as ``accept_move`` does on the CPU) and thread 0 writes the new position. The gradients are
rebuilt from scratch at the start of every launch (every ``sweep`` call), so incremental
round-off never accumulates across calls. The local energy splits its O(N²) loop over threads
likewise. Shared memory per block: (8N + 5B + 8) · sizeof(dtype) — 37 KB for N = 500, B = 128,
float64; at most 48 KB (the limit without the opt-in attribute), i.e. N ≤ 687 (float64, B = 128)
or N ≤ 1455 (float32). B is at most 512 (the kernel uses about 120 registers per thread).

Precision
---------
``dtype=np.float32`` compiles separate kernels in which positions, pair terms and every
reduction are float32 (all constants are cast, so nothing is silently promoted). The random
numbers stay the float64 ones of the stream (the uniform and the Box–Muller normals are computed
in float64 and then rounded), so a float32 run sees the same random numbers as its float64/CPU
twin. Observed under the simulator (tests/test_cuda_bec.py and benchmarks/bec_throughput.py --quick,
N = 4–5, 2–3 sweeps): relative |ΔE_L| ≤ 4e-7 (absolute ≤ 6e-6 on E_L ≈ 20), positions ≤ 3e-7,
identical decisions; float64: |ΔE_L| ≤ 1e-14, positions ≤ 1e-15. On a GPU,
benchmarks/bec_throughput.py measures the same at N = 10 and 100.

The drift factor is evaluated as 2/(√(1 + 2v²Δt) + 1), algebraically the CPU's
(√(1 + 2v²Δt) − 1)/(v²Δt) without its cancellation (which would cost float32 most of its digits
for small v²Δt).

Importing this module never needs CUDA: ``numba.cuda`` is imported on first use.
:func:`available` tells whether a real GPU can be used.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import cuda_import
from .cuda_import import available, simulated  # noqa: F401  (this module's GPU questions, answered once)

SAMPLERS = ("brute", "drift")
LAYOUTS = ("auto", "thread", "block")
_BRUTE, _DRIFT = 0, 1
THREAD_MAX_N = 64  # layout="auto": thread per walker up to this N, block per walker above
SHARED_LIMIT_BYTES = 48 * 1024  # static per-block limit without the opt-in attribute

cuda = None  # numba.cuda, imported on first use; a module global so that the simulator can swap it


def _cuda():
    return cuda_import.bind(globals())


def shared_bytes(n_particles: int, threads: int, dtype=np.float64) -> int:
    """Dynamic shared memory of one block of :func:`sweep_block_per_walker`."""
    return (8 * n_particles + 5 * threads + 8) * np.dtype(dtype).itemsize


def default_block_threads(n_particles: int, dtype=np.float64) -> int:
    """Threads per block for the block layout: about N/2 (two pairs per thread per move), 32…128."""
    threads = 32
    while threads < 128 and 2 * threads < n_particles:
        threads *= 2
    while threads > 1 and shared_bytes(n_particles, threads, dtype) > SHARED_LIMIT_BYTES:
        threads //= 2
    return threads


# --------------------------------------------------------------------------------------------
# kernels, compiled once per dtype
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _kernels(dtype_name: str, track_diffusion: bool = False):
    """Device functions and the two sweep kernels for one floating-point type; ``track_diffusion`` compiles in
    the diffusion sums (see :func:`kernels`)."""
    import numba

    c = _cuda()
    from . import cuda_rng

    F = np.float32 if dtype_name == "float32" else np.float64
    nbF = numba.from_dtype(np.dtype(F))
    u64 = numba.uint64
    dev = c.jit(**cuda_rng._DEVICE_KW)
    uniform = cuda_rng.uniform
    normal_pair = cuda_rng.normal_pair
    ZERO, HALF, ONE, TWO = F(0.0), F(0.5), F(1.0), F(2.0)
    TINY = F(1e-12)
    NEG_INF = F(-np.inf)
    BRUTE = _BRUTE
    TRACK = bool(track_diffusion)  # a compile-time constant: without it the tracking code is dead

    @dev
    def drift_scale(vx, vy, vz, dt, cap):
        # qmckit.backends.cpu_kernels.drift_scale: (√(1 + 2v²Δt) − 1)/(v²Δt), written without cancellation
        if cap == 0:
            return ONE
        v2dt = (vx * vx + vy * vy + vz * vz) * dt
        if v2dt < TINY:
            return ONE
        return TWO / (math.sqrt(ONE + TWO * v2dt) + ONE)

    @dev
    def propose(st, sampler, xo, yo, zo, gx, gy, gz, step, dt, sqrt_dt, cap):
        """The proposal and the old drift factor; draws exactly what the CPU driver draws."""
        if sampler == BRUTE:
            xn = xo + step * F(uniform(st, 0) - 0.5)
            yn = yo + step * F(uniform(st, 0) - 0.5)
            zn = zo + step * F(uniform(st, 0) - 0.5)
            return xn, yn, zn, ONE
        scale = drift_scale(gx, gy, gz, dt, cap)
        z0, z1 = normal_pair(st, 0)
        z2, _ = normal_pair(st, 0)
        xn = xo + dt * scale * gx + sqrt_dt * F(z0)
        yn = yo + dt * scale * gy + sqrt_dt * F(z1)
        zn = zo + dt * scale * gz + sqrt_dt * F(z2)
        return xn, yn, zn, scale

    @dev
    def log_acceptance(sampler, log_ratio, xo, yo, zo, xn, yn, zn, gox, goy, goz, gnx, gny, gnz,
                       scale_old, dt, cap):
        """ln of the Metropolis–Hastings acceptance ratio (moved particle's Green's function only)."""
        if sampler == BRUTE:
            return TWO * log_ratio
        scale_new = drift_scale(gnx, gny, gnz, dt, cap)
        fx = xn - xo - dt * scale_old * gox
        fy = yn - yo - dt * scale_old * goy
        fz = zn - zo - dt * scale_old * goz
        bx = xo - xn - dt * scale_new * gnx
        by = yo - yn - dt * scale_new * gny
        bz = zo - zn - dt * scale_new * gnz
        forward = fx * fx + fy * fy + fz * fz
        backward = bx * bx + by * by + bz * bz
        return TWO * log_ratio + (forward - backward) / (TWO * dt)

    @dev
    def diffusion_r2(xo, yo, zo, xn, yn, zn, gox, goy, goz, scale_old, dt):
        """|r' − r − Δt s v|²: the squared diffusion displacement of a drift move (log_acceptance's ``forward``)."""
        fx = xn - xo - dt * scale_old * gox
        fy = yn - yo - dt * scale_old * goy
        fz = zn - zo - dt * scale_old * goz
        return fx * fx + fy * fy + fz * fz

    @dev
    def pair_gradient(X, Y, Z, i, skip, N, a):
        """Σ_{j ∉ {i, skip}} u'(r_ij) r̂_ij: the pair part of ∇_i ln ψ (X, Y, Z any 1-D views)."""
        xi, yi, zi = X[i], Y[i], Z[i]
        gx = ZERO
        gy = ZERO
        gz = ZERO
        for j in range(N):
            if j == i or j == skip:
                continue
            dx = xi - X[j]
            dy = yi - Y[j]
            dz = zi - Z[j]
            r = math.sqrt(dx * dx + dy * dy + dz * dz)
            cr = a / (r * r * (r - a))  # u'(r)/r
            gx += cr * dx
            gy += cr * dy
            gz += cr * dz
        return gx, gy, gz

    @dev
    def particle_energy(X, Y, Z, i, N, alpha, lam, a):
        """Particle i's share of E_L without the constant α(2 + λ):
        ½ Σ_j u'(r_ij)² − ½ |∇_i ln ψ|² + ½ (x² + y² + λ² z²)."""
        x, y, z = X[i], Y[i], Z[i]
        two_alpha = TWO * alpha
        gx = -two_alpha * x
        gy = -two_alpha * y
        gz = -two_alpha * lam * z
        lap = ZERO
        if a > ZERO:
            for j in range(N):
                if j == i:
                    continue
                dx = x - X[j]
                dy = y - Y[j]
                dz = z - Z[j]
                r = math.sqrt(dx * dx + dy * dy + dz * dz)
                cr = a / (r * r * (r - a))  # u'(r)/r
                du = cr * r
                gx += cr * dx
                gy += cr * dy
                gz += cr * dz
                lap += du * du
        return HALF * lap + HALF * (x * x + y * y + lam * lam * z * z) - HALF * (gx * gx + gy * gy + gz * gz)

    # ---------------------------------------------------------------- one thread per walker
    @c.jit
    def sweep_thread_per_walker(pos, states, alpha, lam, a, n_sweeps, sampler, step, dt, cap, measure,
                                energies, accepted, diffusion):
        """pos (3, N, W) [k, i, w]; states (2, W) uint64; energies (≥ n_sweeps if measure, W); accepted (W,);
        diffusion (3, W): Σ R² proposed, Σ R² accepted, this move's R², written only by the ``track_diffusion``
        variant."""
        w = cuda.grid(1)
        if w >= pos.shape[2]:
            return
        N = pos.shape[1]
        X = pos[0, :, w]
        Y = pos[1, :, w]
        Z = pos[2, :, w]
        st = cuda.local.array((1, 2), u64)
        st[0, 0] = states[0, w]
        st[0, 1] = states[1, w]
        drift = sampler != BRUTE
        interacting = a > ZERO
        sqrt_dt = math.sqrt(dt)
        two_alpha = TWO * alpha
        e_const = F(N) * alpha * (TWO + lam)
        n_acc = 0
        if TRACK:  # summed in global memory (row 2: the current move's R²), so no register lives across a move
            diffusion[0, w] = ZERO
            diffusion[1, w] = ZERO
            diffusion[2, w] = ZERO
        # gradient of the particle about to move (particle 0 first)
        gx = ZERO
        gy = ZERO
        gz = ZERO
        if drift:
            gx = -two_alpha * X[0]
            gy = -two_alpha * Y[0]
            gz = -two_alpha * lam * Z[0]
            if interacting:
                px, py, pz = pair_gradient(X, Y, Z, 0, 0, N, a)
                gx += px
                gy += py
                gz += pz
        for s in range(n_sweeps):
            for i in range(N):
                xo = X[i]
                yo = Y[i]
                zo = Z[i]
                xn, yn, zn, scale_old = propose(st, sampler, xo, yo, zo, gx, gy, gz, step, dt, sqrt_dt, cap)
                nxt = i + 1 if i + 1 < N else 0
                xq = X[nxt]
                yq = Y[nxt]
                zq = Z[nxt]
                log_ratio = -alpha * ((xn * xn + yn * yn + lam * zn * zn) - (xo * xo + yo * yo + lam * zo * zo))
                gnx = -two_alpha * xn
                gny = -two_alpha * yn
                gnz = -two_alpha * lam * zn
                qx = ZERO  # pair part of the next particle's gradient, all j but i and nxt
                qy = ZERO
                qz = ZERO
                if interacting:
                    ratio = ONE
                    px = ZERO
                    py = ZERO
                    pz = ZERO
                    overlaps = 0
                    for j in range(N):
                        if j == i:
                            continue
                        xj = X[j]
                        yj = Y[j]
                        zj = Z[j]
                        dxo = xo - xj
                        dyo = yo - yj
                        dzo = zo - zj
                        dxn = xn - xj
                        dyn = yn - yj
                        dzn = zn - zj
                        ro = math.sqrt(dxo * dxo + dyo * dyo + dzo * dzo)
                        rn = math.sqrt(dxn * dxn + dyn * dyn + dzn * dzn)
                        if rn <= a:
                            overlaps += 1
                        # f(rn)/f(ro) and u'(rn)/rn from one division (as bec._pair_move)
                        big_a = rn * (rn - a)
                        big_b = ro * (ro - a)
                        ro_sq = ro * ro
                        q = ONE / (rn * rn * big_a * ro_sq * big_b)
                        cn = a * q * rn * ro_sq * big_b
                        ratio *= q * big_a * big_a * ro_sq * ro_sq
                        px += cn * dxn
                        py += cn * dyn
                        pz += cn * dzn
                        if drift and j != nxt:
                            dxq = xq - xj
                            dyq = yq - yj
                            dzq = zq - zj
                            rq = math.sqrt(dxq * dxq + dyq * dyq + dzq * dzq)
                            cq = a / (rq * rq * (rq - a))
                            qx += cq * dxq
                            qy += cq * dyq
                            qz += cq * dzq
                    if overlaps > 0:
                        log_ratio = NEG_INF
                    else:
                        log_ratio += math.log(ratio)
                        gnx += px
                        gny += py
                        gnz += pz
                log_accept = log_acceptance(sampler, log_ratio, xo, yo, zo, xn, yn, zn, gx, gy, gz,
                                            gnx, gny, gnz, scale_old, dt, cap)
                if TRACK and drift:
                    forward = diffusion_r2(xo, yo, zo, xn, yn, zn, gx, gy, gz, scale_old, dt)
                    diffusion[0, w] += forward
                    diffusion[2, w] = forward
                u = uniform(st, 0)
                xi = xo
                yi = yo
                zi = zo
                if log_ratio > NEG_INF and u < math.exp(min(log_accept, ZERO)):
                    X[i] = xn
                    Y[i] = yn
                    Z[i] = zn
                    xi = xn
                    yi = yn
                    zi = zn
                    n_acc += 1
                    if TRACK:
                        diffusion[1, w] += diffusion[2, w]
                if drift:
                    if nxt == i:  # N = 1
                        gx = -two_alpha * xi
                        gy = -two_alpha * yi
                        gz = -two_alpha * lam * zi
                    else:
                        gx = -two_alpha * xq + qx
                        gy = -two_alpha * yq + qy
                        gz = -two_alpha * lam * zq + qz
                        if interacting:  # the (nxt, i) pair with i where it ended up
                            dx = xq - xi
                            dy = yq - yi
                            dz = zq - zi
                            r = math.sqrt(dx * dx + dy * dy + dz * dz)
                            cr = a / (r * r * (r - a))
                            gx += cr * dx
                            gy += cr * dy
                            gz += cr * dz
            if measure != 0:
                energy = e_const
                for i in range(N):
                    energy += particle_energy(X, Y, Z, i, N, alpha, lam, a)
                energies[s, w] = energy
        states[0, w] = st[0, 0]
        states[1, w] = st[0, 1]
        accepted[w] = n_acc

    # ---------------------------------------------------------------- one block per walker
    @dev
    def tree_sum(buf, t, B):
        """buf[0] ← Σ buf[0:B] (B a power of two); every level ends with a barrier."""
        h = B // 2
        while h > 0:
            if t < h:
                buf[t] += buf[t + h]
            cuda.syncthreads()
            h //= 2

    @c.jit
    def sweep_block_per_walker(pos, states, alpha, lam, a, n_sweeps, sampler, step, dt, cap, measure,
                               energies, accepted, diffusion):
        """Same arguments as the thread kernel; grid = W blocks of B threads (B a power of two),
        dynamic shared memory shared_bytes(N, B, dtype)."""
        w = cuda.blockIdx.x
        t = cuda.threadIdx.x
        B = cuda.blockDim.x
        N = pos.shape[1]
        sh = cuda.shared.array(0, nbF)
        X = sh[0:N]
        Y = sh[N:2 * N]
        Z = sh[2 * N:3 * N]
        GX = sh[3 * N:4 * N]
        GY = sh[4 * N:5 * N]
        GZ = sh[5 * N:6 * N]
        CO = sh[6 * N:7 * N]
        CN = sh[7 * N:8 * N]
        base = 8 * N
        RP = sh[base:base + B]  # ratio product
        RX = sh[base + B:base + 2 * B]  # pair gradient sums
        RY = sh[base + 2 * B:base + 3 * B]
        RZ = sh[base + 3 * B:base + 4 * B]
        RO = sh[base + 4 * B:base + 5 * B]  # overlap count
        M = sh[base + 5 * B:base + 5 * B + 8]  # proposal (0–2), new gradient (3–5), decision (6)
        st = cuda.local.array((1, 2), u64)
        drift = sampler != BRUTE
        interacting = a > ZERO
        sqrt_dt = math.sqrt(dt)
        two_alpha = TWO * alpha
        n_acc = 0
        if t == 0:
            st[0, 0] = states[0, w]
            st[0, 1] = states[1, w]
            if TRACK:  # summed in global memory (thread 0 decides every move; row 2: the current move's R²)
                diffusion[0, w] = ZERO
                diffusion[1, w] = ZERO
                diffusion[2, w] = ZERO
        for j in range(t, N, B):
            X[j] = pos[0, j, w]
            Y[j] = pos[1, j, w]
            Z[j] = pos[2, j, w]
        cuda.syncthreads()
        if drift:  # the gradient cache, from scratch
            for j in range(t, N, B):
                gx = -two_alpha * X[j]
                gy = -two_alpha * Y[j]
                gz = -two_alpha * lam * Z[j]
                if interacting:
                    px, py, pz = pair_gradient(X, Y, Z, j, j, N, a)
                    gx += px
                    gy += py
                    gz += pz
                GX[j] = gx
                GY[j] = gy
                GZ[j] = gz
        cuda.syncthreads()
        for s in range(n_sweeps):
            for i in range(N):
                scale_old = ONE
                if t == 0:
                    xn, yn, zn, scale_old = propose(st, sampler, X[i], Y[i], Z[i], GX[i], GY[i], GZ[i],
                                                    step, dt, sqrt_dt, cap)
                    M[0] = xn
                    M[1] = yn
                    M[2] = zn
                cuda.syncthreads()
                xo = X[i]
                yo = Y[i]
                zo = Z[i]
                xn = M[0]
                yn = M[1]
                zn = M[2]
                if interacting:
                    ratio = ONE
                    px = ZERO
                    py = ZERO
                    pz = ZERO
                    overlaps = ZERO
                    for j in range(t, N, B):
                        if j == i:
                            continue
                        dxo = xo - X[j]
                        dyo = yo - Y[j]
                        dzo = zo - Z[j]
                        dxn = xn - X[j]
                        dyn = yn - Y[j]
                        dzn = zn - Z[j]
                        ro = math.sqrt(dxo * dxo + dyo * dyo + dzo * dzo)
                        rn = math.sqrt(dxn * dxn + dyn * dyn + dzn * dzn)
                        if rn <= a:
                            overlaps += ONE
                        big_a = rn * (rn - a)
                        big_b = ro * (ro - a)
                        ro_sq = ro * ro
                        q = ONE / (rn * rn * big_a * ro_sq * big_b)
                        cn = a * q * rn * ro_sq * big_b
                        ratio *= q * big_a * big_a * ro_sq * ro_sq
                        if drift:
                            CO[j] = a * q * ro * rn * rn * big_a
                            CN[j] = cn
                            px += cn * dxn
                            py += cn * dyn
                            pz += cn * dzn
                    RP[t] = ratio
                    RX[t] = px
                    RY[t] = py
                    RZ[t] = pz
                    RO[t] = overlaps
                    cuda.syncthreads()
                    h = B // 2
                    while h > 0:
                        if t < h:
                            RP[t] *= RP[t + h]
                            RX[t] += RX[t + h]
                            RY[t] += RY[t + h]
                            RZ[t] += RZ[t + h]
                            RO[t] += RO[t + h]
                        cuda.syncthreads()
                        h //= 2
                if t == 0:
                    log_ratio = -alpha * ((xn * xn + yn * yn + lam * zn * zn) - (xo * xo + yo * yo + lam * zo * zo))
                    gnx = -two_alpha * xn
                    gny = -two_alpha * yn
                    gnz = -two_alpha * lam * zn
                    if interacting:
                        if RO[0] > ZERO:
                            log_ratio = NEG_INF
                        else:
                            log_ratio += math.log(RP[0])
                            gnx += RX[0]
                            gny += RY[0]
                            gnz += RZ[0]
                    log_accept = log_acceptance(sampler, log_ratio, xo, yo, zo, xn, yn, zn, GX[i], GY[i], GZ[i],
                                                gnx, gny, gnz, scale_old, dt, cap)
                    if TRACK and drift:
                        forward = diffusion_r2(xo, yo, zo, xn, yn, zn, GX[i], GY[i], GZ[i], scale_old, dt)
                        diffusion[0, w] += forward
                        diffusion[2, w] = forward
                    u = uniform(st, 0)
                    M[6] = ZERO
                    if log_ratio > NEG_INF and u < math.exp(min(log_accept, ZERO)):
                        M[6] = ONE
                        M[3] = gnx
                        M[4] = gny
                        M[5] = gnz
                        n_acc += 1
                        if TRACK:
                            diffusion[1, w] += diffusion[2, w]
                cuda.syncthreads()
                if M[6] != ZERO:
                    if drift and interacting:  # bec._pair_accept, j ≠ i split over the threads
                        for j in range(t, N, B):
                            if j == i:
                                continue
                            co = CO[j]
                            cn = CN[j]
                            GX[j] += cn * (X[j] - xn) - co * (X[j] - xo)
                            GY[j] += cn * (Y[j] - yn) - co * (Y[j] - yo)
                            GZ[j] += cn * (Z[j] - zn) - co * (Z[j] - zo)
                    if t == 0:
                        X[i] = xn
                        Y[i] = yn
                        Z[i] = zn
                        GX[i] = M[3]
                        GY[i] = M[4]
                        GZ[i] = M[5]
                cuda.syncthreads()
            if measure != 0:
                part = ZERO
                for j in range(t, N, B):
                    part += particle_energy(X, Y, Z, j, N, alpha, lam, a)
                RP[t] = part
                cuda.syncthreads()
                tree_sum(RP, t, B)
                if t == 0:
                    energies[s, w] = F(N) * alpha * (TWO + lam) + RP[0]
                cuda.syncthreads()
        for j in range(t, N, B):
            pos[0, j, w] = X[j]
            pos[1, j, w] = Y[j]
            pos[2, j, w] = Z[j]
        if t == 0:
            states[0, w] = st[0, 0]
            states[1, w] = st[0, 1]
            accepted[w] = n_acc

    return {"dtype": F, "thread": sweep_thread_per_walker, "block": sweep_block_per_walker}


@functools.lru_cache(maxsize=None)
def gather_kernel():
    """dst[k, i, w] = src[k, i, index[w]] for component-major (3, N, W) positions."""
    _cuda()  # sets the module global ``cuda`` that the kernel body names (the simulator swaps it)

    @cuda.jit
    def gather(src, index, dst):
        w = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        i = cuda.blockIdx.y
        k = cuda.blockIdx.z
        if w < dst.shape[2]:
            dst[k, i, w] = src[k, i, index[w]]

    return gather


@functools.lru_cache(maxsize=None)
def put_kernel():
    """dst[k, i, start + w] = src[k, i, w] for positions with the walker axis last (appending walkers on the device)."""
    _cuda()

    @cuda.jit
    def put(dst, start, src):
        w = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        i = cuda.blockIdx.y
        k = cuda.blockIdx.z
        if w < src.shape[2]:
            dst[k, i, start + w] = src[k, i, w]

    return put


def kernels(dtype=np.float64, track_diffusion: bool = False):
    """The compiled-on-demand kernels for ``dtype`` (float64 or float32) as a dict
    ``{"thread": sweep_thread_per_walker, "block": sweep_block_per_walker, "dtype": ...}``.

    ``track_diffusion``: the sweeps also write ``diffusion[0|1, w]`` (the last argument, (3, W); row 2 is scratch),
    Σ squared diffusion displacements of the proposed | accepted drift moves (DMC's effective time step); without it that code is
    compiled out, so VMC runs the kernels it always ran."""
    name = np.dtype(dtype).name
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    return _kernels(name, bool(track_diffusion))


def sweep_thread_per_walker(dtype=np.float64):
    """The thread-per-walker sweep kernel for ``dtype`` (see the module docstring)."""
    return kernels(dtype)["thread"]


def sweep_block_per_walker(dtype=np.float64):
    """The block-per-walker sweep kernel for ``dtype`` (see the module docstring)."""
    return kernels(dtype)["block"]


# --------------------------------------------------------------------------------------------
# host side
# --------------------------------------------------------------------------------------------
class CudaBosonSweeper:
    """VMC sweeps of trapped bosons on the GPU, mirroring :meth:`qmckit.samplers.cpu.CpuSampler.sweep`.

    The walkers' positions (as ``(3, N, W)``, component-major) and RNG states (as ``(2, W)``) are
    copied to the device once and stay there between :meth:`sweep` calls; :meth:`to_host` copies
    them back into the :class:`~qmckit.walkers.Walkers` object, :meth:`from_host` re-uploads
    (e.g. after DMC branching on the host).

    Parameters
    ----------
    system : :class:`qmckit.systems.bec.TrappedBosons`
    walkers : :class:`qmckit.walkers.Walkers` with positions (W, N, 3)
    sampler : "drift" | "brute"
    dt, step, drift_cap : as for :class:`~qmckit.samplers.cpu.CpuSampler`
    layout : "auto" (thread for N ≤ 64, else block) | "thread" | "block"
    dtype : np.float64 | np.float32
    threads_per_block : thread layout: threads per block (default 128); block layout: threads per
        walker, a power of two ≤ 512 (default :func:`default_block_threads`)
    """

    DEVICE_AXES = (2, 1, 0)  # the device positions are the host's (W, N, 3) transposed so: (3, N, W)

    def __init__(self, system, walkers, sampler: str = "drift", dt: float = 0.05, step: float = 1.0,
                 drift_cap: bool = True, layout: str = "auto", dtype=np.float64, threads_per_block=None):
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be a positive time step, got {dt!r}")
        if not (step > 0 and math.isfinite(step)):
            raise ValueError(f"step must be positive, got {step!r}")
        if walkers.dim != 3 or walkers.n_particles != system.n_particles:
            raise ValueError(f"walkers must have shape (W, {system.n_particles}, 3), got {walkers.positions.shape}")
        self.system = system
        self.walkers = walkers
        self.sampler = sampler
        self.dt = float(dt)
        self.step = float(step)
        self.drift_cap = bool(drift_cap)
        self._k = kernels(dtype)
        self.dtype = np.dtype(self._k["dtype"])
        N, W = walkers.n_particles, walkers.n_walkers
        if layout == "auto":
            layout = "thread" if N <= THREAD_MAX_N else "block"
        self.layout = layout
        if layout == "block":
            B = int(threads_per_block) if threads_per_block else default_block_threads(N, self.dtype)
            if B < 1 or B > 512 or B & (B - 1):
                raise ValueError(f"threads_per_block must be a power of two in 1…512, got {B}")
            self.shared_bytes = shared_bytes(N, B, self.dtype)
            if self.shared_bytes > SHARED_LIMIT_BYTES:
                raise ValueError(f"N = {N} needs {self.shared_bytes} B of shared memory per block with B = {B} "
                                 f"({self.dtype.name}); the limit is {SHARED_LIMIT_BYTES} B: use fewer threads, "
                                 f"float32 or layout='thread'")
            self.threads = B
            self.blocks = W
        else:
            self.threads = int(threads_per_block) if threads_per_block else 128
            self.shared_bytes = 0
            self.blocks = (W + self.threads - 1) // self.threads
        p = system.params
        F = self._k["dtype"]
        self._scalars = (F(p.alpha), F(p.lam), F(p.a))
        self._energies = {}
        self.last_accepted = np.zeros(W, dtype=np.int64)
        self.track_diffusion = False  # True: sweeps run the kernel variant that fills last_diffusion (DMC)
        self.last_diffusion = None
        self.from_host()

    # --- data movement -------------------------------------------------------------------------
    def from_host(self) -> None:
        """(Re)upload positions and RNG states from the Walkers object."""
        c = _cuda()
        w = self.walkers
        self._pos = c.to_device(np.ascontiguousarray(w.positions.transpose(2, 1, 0), dtype=self.dtype))
        self._states = c.to_device(np.ascontiguousarray(w.rng_states.T, dtype=np.uint64))
        self._accepted = c.device_array(w.n_walkers, dtype=np.int64)
        self._no_diffusion = c.device_array((3, 1), dtype=self.dtype)  # the VMC kernels never touch it

    def to_host(self, recompute_caches: bool = True):
        """Copy positions (as float64) and RNG states back into the Walkers object and return it.

        With ``recompute_caches`` the CPU caches are rebuilt from the new positions, so a CPU
        :class:`~qmckit.samplers.cpu.CpuSampler` can continue from here.
        """
        w = self.walkers
        w.positions[...] = self._pos.copy_to_host().transpose(2, 1, 0)
        w.rng_states[...] = self._states.copy_to_host().T
        if recompute_caches and w.caches.shape[1] == self.system.cache_size():
            from .cpu_kernels import kernels_for

            kernels_for(type(self.system)).recompute_all(w.positions, w.caches, self.system.kernel_params)
        return w

    def branch(self, index: np.ndarray, states: np.ndarray) -> None:
        """Replace the walkers by ``walkers[index]`` on the device (DMC branching).

        ``index`` (W',) picks the parents; ``states`` (W', 2) are the new random states (forked
        for copies on the host). The positions are gathered on the device; the host
        :class:`~qmckit.walkers.Walkers` gets the new size with positions that are stale until
        :meth:`to_host`.
        """
        c = _cuda()
        index = np.ascontiguousarray(index, dtype=np.int64)
        W_new, N = index.size, self.walkers.n_particles
        new_pos = c.device_array((3, N, W_new), dtype=self.dtype)
        threads = 128
        gather_kernel()[((W_new + threads - 1) // threads, N, 3), threads](self._pos, c.to_device(index), new_pos)
        self._pos = new_pos
        self._states = c.to_device(np.ascontiguousarray(states.T, dtype=np.uint64))
        self._accepted = c.device_array(W_new, dtype=np.int64)
        self._energies = {}
        w = self.walkers
        self.walkers = type(w)(np.empty((W_new, N, 3)), np.zeros((W_new, 0)), np.ones(W_new),
                               np.ascontiguousarray(states, dtype=np.uint64))
        self.blocks = W_new if self.layout == "block" else (W_new + self.threads - 1) // self.threads
        self.last_accepted = np.zeros(W_new, dtype=np.int64)

    def rng_states(self) -> np.ndarray:
        """The walkers' random states (W, 2), fetched from the device (16 bytes per walker)."""
        return np.ascontiguousarray(self._states.copy_to_host().T)

    # --- sweeps --------------------------------------------------------------------------------
    def launch(self, n_sweeps: int, measure: bool = True):
        """Start ``n_sweeps`` sweeps on the device and return the device energy array
        ``(max(n_sweeps, 1), W)`` without waiting (for timing; rows are valid only if ``measure``); with
        ``track_diffusion`` three more rows follow, the kernel's ``diffusion`` (one copy brings both back)."""
        c = _cuda()
        W = self.walkers.n_walkers
        rows = max(int(n_sweeps), 1)
        extra = 3 if self.track_diffusion else 0
        if (rows, extra) not in self._energies:
            block = c.device_array((rows + extra, W), dtype=self.dtype)
            self._energies[rows, extra] = (block, block[rows:] if extra else self._no_diffusion)
        energies, diffusion = self._energies[rows, extra]
        F = self._k["dtype"]
        args = (self._pos, self._states, *self._scalars, int(n_sweeps), _BRUTE if self.sampler == "brute" else _DRIFT,
                F(self.step), F(self.dt), int(self.drift_cap), int(bool(measure)), energies, self._accepted,
                diffusion)
        kernel = (kernels(self.dtype, True) if extra else self._k)[self.layout]
        if self.layout == "block":
            kernel[self.blocks, self.threads, 0, self.shared_bytes](*args)
        else:
            kernel[self.blocks, self.threads](*args)
        return energies

    def sweep(self, n_sweeps: int, measure: bool = True):
        """Run ``n_sweeps`` sweeps of N single-particle moves on every walker.

        Returns ``(energies (n_sweeps or 0, W) float64, acceptance)`` like ``VMC.sweep``; the
        per-walker accepted counts of this call are in ``last_accepted``, and with ``track_diffusion`` the
        diffusion sums (2, W) in ``last_diffusion`` (float64).
        """
        W, N = self.walkers.n_walkers, self.walkers.n_particles
        if getattr(self, "_launch_events", None) is None:
            self._launch_events = cuda_import.LaunchEvents()
        self._launch_events.start()
        energies = self.launch(n_sweeps, measure)
        self._launch_events.stop()
        self.last_accepted = self._accepted.copy_to_host()
        rows = max(int(n_sweeps), 1)
        host = energies.copy_to_host() if (measure and n_sweeps > 0) or self.track_diffusion else None
        if self.track_diffusion:
            self.last_diffusion = host[rows:rows + 2].astype(np.float64)
        out = host[:n_sweeps].astype(np.float64) if measure and n_sweeps > 0 else np.empty((0, W))
        self.last_kernel_s = self._launch_events.seconds()  # the copies above waited for the kernel anyway
        proposed = n_sweeps * W * N
        return out, (self.last_accepted.sum() / proposed if proposed else 0.0)

    last_kernel_s = None  # seconds the last sweep's kernel took on the device (CUDA events; None under the simulator)

    def __repr__(self):
        return (f"CudaBosonSweeper({self.system!r}, W={self.walkers.n_walkers}, sampler={self.sampler!r}, "
                f"layout={self.layout!r}, dtype={self.dtype.name}, threads={self.threads})")
