"""Study 003's B-spline orbital evaluation on a GPU (numba-cuda): the twins of the CPU kernels of
:mod:`qmckit.systems.bspline_orbitals`.

One MC step of study 003's quasi-simultaneous (Q.S.) update evaluates all L orbitals at all N trial
positions: N × L × 64 coefficient reads, a bandwidth-bound gather. Kernels (one thread block per
electron j; the block's threads run over the orbital index; blocks of ``threads`` threads, each
thread looping over l = t, t + T, …):

``values_coalesced``    coefficients (n1, n2, n3, L') with the orbital index fastest: consecutive
                        threads read consecutive addresses of the 64 rows (study 003's
                        implementation (3)); values only (its Eq. 6). CPU twin: ``evaluate_values``.
``values_pairs``        ``values_coalesced`` reading (re, im) pairs of neighbouring real orbitals as one
                        8-byte (float32) or 16-byte (float64) complex load per thread.
``values_uncoalesced``  the same work on (L, n1, n2, n3, P): each thread walks its own orbital's 64
                        scattered coefficients, neighbouring threads read addresses a whole grid
                        (n1 n2 n3 P elements) apart. This keeps 003's layout of implementations
                        (1)/(2) but not their thread mapping (thread = grid point s plus a
                        reduction). CPU twin: the values of ``evaluate_uncoalesced``.
``vgl_coalesced``       values, Cartesian gradients and Laplacians (5 sums per coefficient),
                        coalesced. CPU twin: ``evaluate``.
per-electron            ``values_coalesced`` launched once per electron (grid of one block, a host
                        loop over j): 003's particle-by-particle GPU use, to show launch overhead
                        (003's implementation (1) used one launch per j too, with thread = s).

Complex orbitals are evaluated as real arrays with the orbital axis doubled (L' = 2L, (re, im)
interleaved), exactly as the CPU path does (``BsplineOrbitals._real_views``): a real weight times
(re, im) is the complex product. For the uncoalesced layout the complex array (L, n1, n2, n3) is
viewed as real (L, n1, n2, n3, 2) (P = 2; P = 1 for real orbitals), and thread t handles
l = t // P, part p = t % P, so outputs land in the same interleaved order.

Spline weights: per block, threads 0–2 compute the grid indices and 1-D B-spline weights of one
axis each (float64, in shared memory); then threads 0–63 form the 64 × 5 point weights (value,
∂x, ∂y, ∂z, ∇²) in float64 with the CPU's formulas and round them to the coefficients' real type
(shared memory). Sums run over the 64 points in the CPU's order (a, b, c) and accumulate in the
coefficients' type, so GPU and CPU agree to rounding (FMA contraction on the GPU is the only
difference; under the simulator results are identical).

:class:`CudaBspline` uploads the coefficients once and offers ``values``, ``values_uncoalesced``,
``values_per_electron``, ``evaluate`` (host arrays back) and ``time`` (CUDA events).

Importing this module never needs CUDA.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..systems import bspline_orbitals as bo
from . import cuda_import

cuda = None  # numba.cuda, imported on first use

KINDS = ("values", "values_pairs", "values_uncoalesced", "values_per_electron", "vgl")


def _cuda():
    return cuda_import.bind(globals())


from .cuda_import import available, simulated  # noqa: E402,F401  (this module's GPU questions, answered once)


def default_threads(n_real_orbitals: int) -> int:
    """Threads per block: the real orbital count L' rounded up to a warp, between 64 and 256."""
    return int(min(256, max(64, 32 * ((n_real_orbitals + 31) // 32))))


@functools.lru_cache(maxsize=None)
def kernels(single: bool) -> dict:
    """The GPU kernels for float32 (``single``) or float64 coefficients (compiled on first launch)."""
    import numba

    # The weights live in a float64 shared array and are rounded to the coefficient type where they are
    # used (the CPU twin's rounding): with a float32 (5, 64) shared array the float32 kernels wrote out of
    # bounds on an H100 (compute-sanitizer: invalid __shared__ writes), although the simulator was clean.
    c = _cuda()
    real_np = np.float32 if single else np.float64
    f64 = numba.float64
    i64 = numba.int64

    @c.jit(device=True)
    def point_weights(cell_inverse, positions, j, n1, n2, n3, idx, wax, w):
        """Fill idx (3, 4), wax (3, 3, 4) (1-D weights) and w (5, 64) for electron j; ends with a barrier."""
        t = cuda.threadIdx.x
        if t < 3:
            n = n1 if t == 0 else (n2 if t == 1 else n3)
            u = (positions[j, 0] * cell_inverse[0, t] + positions[j, 1] * cell_inverse[1, t]
                 + positions[j, 2] * cell_inverse[2, t])
            tt = n * u
            i0 = math.floor(tt)
            f = tt - i0
            base = int(i0) - 1
            for a in range(4):
                idx[t, a] = ((base + a) % n + n) % n
            g = 1.0 - f
            f2 = f * f
            f3 = f2 * f
            wax[t, 0, 0] = g * g * g / 6.0
            wax[t, 0, 1] = (3.0 * f3 - 6.0 * f2 + 4.0) / 6.0
            wax[t, 0, 2] = (-3.0 * f3 + 3.0 * f2 + 3.0 * f + 1.0) / 6.0
            wax[t, 0, 3] = f3 / 6.0
            wax[t, 1, 0] = -0.5 * g * g
            wax[t, 1, 1] = 1.5 * f2 - 2.0 * f
            wax[t, 1, 2] = -1.5 * f2 + f + 0.5
            wax[t, 1, 3] = 0.5 * f2
            wax[t, 2, 0] = g
            wax[t, 2, 1] = 3.0 * f - 2.0
            wax[t, 2, 2] = 1.0 - 3.0 * f
            wax[t, 2, 3] = f
        cuda.syncthreads()
        jac = cuda.local.array((3, 3), f64)
        metric = cuda.local.array((3, 3), f64)
        for k in range(3):
            jac[k, 0] = n1 * cell_inverse[k, 0]
            jac[k, 1] = n2 * cell_inverse[k, 1]
            jac[k, 2] = n3 * cell_inverse[k, 2]
        for d in range(3):
            for e in range(3):
                metric[d, e] = jac[0, d] * jac[0, e] + jac[1, d] * jac[1, e] + jac[2, d] * jac[2, e]
        for s in range(t, 64, cuda.blockDim.x):
            a = s // 16
            b = (s // 4) % 4
            cc = s % 4
            v0 = wax[0, 0, a]
            v1 = wax[1, 0, b]
            v2 = wax[2, 0, cc]
            g0 = wax[0, 1, a]
            g1 = wax[1, 1, b]
            g2 = wax[2, 1, cc]
            t0 = g0 * v1 * v2
            t1 = v0 * g1 * v2
            t2 = v0 * v1 * g2
            w[0, s] = v0 * v1 * v2
            for k in range(3):
                w[1 + k, s] = jac[k, 0] * t0 + jac[k, 1] * t1 + jac[k, 2] * t2
            lap = (metric[0, 0] * wax[0, 2, a] * v1 * v2 + metric[1, 1] * v0 * wax[1, 2, b] * v2
                   + metric[2, 2] * v0 * v1 * wax[2, 2, cc])
            lap += 2.0 * (metric[0, 1] * g0 * g1 * v2 + metric[0, 2] * g0 * v1 * g2 + metric[1, 2] * v0 * g1 * g2)
            w[4, s] = lap
        cuda.syncthreads()

    @c.jit
    def values_coalesced(coeffs, cell_inverse, positions, first, chunk, out):
        """out[j, l] for j = first + blockIdx.x and l in blockIdx.y's chunk of ``chunk`` orbitals;
        coeffs (n1, n2, n3, L') real."""
        n1, n2, n3, n_orb = coeffs.shape
        j = first + cuda.blockIdx.x
        l_begin = cuda.blockIdx.y * chunk
        l_end = min(n_orb, l_begin + chunk)
        idx = cuda.shared.array((3, 4), i64)
        wax = cuda.shared.array((3, 3, 4), f64)
        w = cuda.shared.array((5, 64), f64)  # rounded to the coefficient type at use (see kernels())
        point_weights(cell_inverse, positions, j, n1, n2, n3, idx, wax, w)
        k0 = idx[2, 0]
        k1 = idx[2, 1]
        k2 = idx[2, 2]
        k3 = idx[2, 3]
        for l in range(l_begin + cuda.threadIdx.x, l_end, cuda.blockDim.x):
            acc = real_np(0.0)
            for a in range(4):
                i1 = idx[0, a]
                for b in range(4):
                    i2 = idx[1, b]
                    s = (a * 4 + b) * 4
                    x0 = coeffs[i1, i2, k0, l]  # four independent loads in flight
                    x1 = coeffs[i1, i2, k1, l]
                    x2 = coeffs[i1, i2, k2, l]
                    x3 = coeffs[i1, i2, k3, l]
                    acc += real_np(w[0, s]) * x0
                    acc += real_np(w[0, s + 1]) * x1
                    acc += real_np(w[0, s + 2]) * x2
                    acc += real_np(w[0, s + 3]) * x3
            out[j, l] = acc

    @c.jit
    def values_pairs(coeffs, cell_inverse, positions, first, chunk, out):
        """``values_coalesced`` with each thread reading (re, im) pairs: coeffs (n1, n2, n3, L'/2)
        complex (one 8-byte load in float32, 16 bytes in float64), out (N, L') real; blockIdx.y's chunk
        counts pairs. The same products in the same order per real component, so the same numbers."""
        n1, n2, n3, n_pair = coeffs.shape
        j = first + cuda.blockIdx.x
        m_begin = cuda.blockIdx.y * chunk
        m_end = min(n_pair, m_begin + chunk)
        idx = cuda.shared.array((3, 4), i64)
        wax = cuda.shared.array((3, 3, 4), f64)
        w = cuda.shared.array((5, 64), f64)  # rounded to the coefficient type at use (see kernels())
        point_weights(cell_inverse, positions, j, n1, n2, n3, idx, wax, w)
        k0 = idx[2, 0]
        k1 = idx[2, 1]
        k2 = idx[2, 2]
        k3 = idx[2, 3]
        for m in range(m_begin + cuda.threadIdx.x, m_end, cuda.blockDim.x):
            re = real_np(0.0)
            im = real_np(0.0)
            for a in range(4):
                i1 = idx[0, a]
                for b in range(4):
                    i2 = idx[1, b]
                    s = (a * 4 + b) * 4
                    x0 = coeffs[i1, i2, k0, m]
                    x1 = coeffs[i1, i2, k1, m]
                    x2 = coeffs[i1, i2, k2, m]
                    x3 = coeffs[i1, i2, k3, m]
                    re += real_np(w[0, s]) * x0.real
                    im += real_np(w[0, s]) * x0.imag
                    re += real_np(w[0, s + 1]) * x1.real
                    im += real_np(w[0, s + 1]) * x1.imag
                    re += real_np(w[0, s + 2]) * x2.real
                    im += real_np(w[0, s + 2]) * x2.imag
                    re += real_np(w[0, s + 3]) * x3.real
                    im += real_np(w[0, s + 3]) * x3.imag
            out[j, 2 * m] = re
            out[j, 2 * m + 1] = im

    @c.jit
    def values_uncoalesced(coeffs, cell_inverse, positions, first, out):
        """out[j, l·P + p]; coeffs (L, n1, n2, n3, P) real (P = 2: complex as (re, im))."""
        n_orb, n1, n2, n3, parts = coeffs.shape
        j = first + cuda.blockIdx.x
        idx = cuda.shared.array((3, 4), i64)
        wax = cuda.shared.array((3, 3, 4), f64)
        w = cuda.shared.array((5, 64), f64)  # rounded to the coefficient type at use (see kernels())
        point_weights(cell_inverse, positions, j, n1, n2, n3, idx, wax, w)
        k0 = idx[2, 0]
        k1 = idx[2, 1]
        k2 = idx[2, 2]
        k3 = idx[2, 3]
        for t in range(cuda.threadIdx.x, n_orb * parts, cuda.blockDim.x):
            l = t // parts
            p = t - l * parts
            acc = real_np(0.0)
            for a in range(4):
                i1 = idx[0, a]
                for b in range(4):
                    i2 = idx[1, b]
                    s = (a * 4 + b) * 4
                    x0 = coeffs[l, i1, i2, k0, p]
                    x1 = coeffs[l, i1, i2, k1, p]
                    x2 = coeffs[l, i1, i2, k2, p]
                    x3 = coeffs[l, i1, i2, k3, p]
                    acc += real_np(w[0, s]) * x0
                    acc += real_np(w[0, s + 1]) * x1
                    acc += real_np(w[0, s + 2]) * x2
                    acc += real_np(w[0, s + 3]) * x3
            out[j, t] = acc

    @c.jit
    def vgl_coalesced(coeffs, cell_inverse, positions, first, chunk, out_v, out_g, out_l):
        """Values (N, L'), gradients (N, 3, L'), Laplacians (N, L') for blockIdx.y's chunk of orbitals;
        coeffs (n1, n2, n3, L') real."""
        n1, n2, n3, n_orb = coeffs.shape
        j = first + cuda.blockIdx.x
        l_begin = cuda.blockIdx.y * chunk
        l_end = min(n_orb, l_begin + chunk)
        idx = cuda.shared.array((3, 4), i64)
        wax = cuda.shared.array((3, 3, 4), f64)
        w = cuda.shared.array((5, 64), f64)  # rounded to the coefficient type at use (see kernels())
        point_weights(cell_inverse, positions, j, n1, n2, n3, idx, wax, w)
        for l in range(l_begin + cuda.threadIdx.x, l_end, cuda.blockDim.x):
            v = real_np(0.0)
            x = real_np(0.0)
            y = real_np(0.0)
            z = real_np(0.0)
            q = real_np(0.0)
            for a in range(4):
                i1 = idx[0, a]
                for b in range(4):
                    i2 = idx[1, b]
                    for cc in range(4):
                        s = (a * 4 + b) * 4 + cc
                        cl = coeffs[i1, i2, idx[2, cc], l]
                        v += real_np(w[0, s]) * cl
                        x += real_np(w[1, s]) * cl
                        y += real_np(w[2, s]) * cl
                        z += real_np(w[3, s]) * cl
                        q += real_np(w[4, s]) * cl
            out_v[j, l] = v
            out_g[j, 0, l] = x
            out_g[j, 1, l] = y
            out_g[j, 2, l] = z
            out_l[j, l] = q

    return {"values_coalesced": values_coalesced, "values_pairs": values_pairs,
            "values_uncoalesced": values_uncoalesced, "vgl_coalesced": vgl_coalesced}


class CudaBspline:
    """``orbitals`` (a :class:`~qmckit.systems.bspline_orbitals.BsplineOrbitals`, any layout, dtype)
    on the GPU. The coalesced coefficient table is uploaded at construction; the uncoalesced one on
    first use of :meth:`values_uncoalesced` (or ``time("values_uncoalesced", …)``), never timed.

    ``threads``: threads per block, 4 … 1024 (default :func:`default_threads` of L' = L or 2L; at
    least 3 threads compute the axis weights, fewer than L' loop over the orbitals).
    ``chunk``: real orbitals per block (None: all L', one block per electron); with a chunk the grid
    is (N, ⌈L'/chunk⌉), each block recomputing the electron's 64 × 5 weights (cheap next to the reads)
    so that more, shorter blocks keep more loads in flight.
    """

    def __init__(self, orbitals: bo.BsplineOrbitals, threads: int | None = None, chunk: int | None = None):
        if not isinstance(orbitals, bo.BsplineOrbitals):
            raise ValueError(f"orbitals must be a BsplineOrbitals, got {type(orbitals).__name__}")
        c = _cuda()
        self.orbitals = orbitals.with_layout("coalesced")
        self.dtype = self.orbitals.dtype
        self.real = self.orbitals.coefficients.real.dtype
        self.parts = 2 if self.orbitals.is_complex else 1
        self.n_orbitals = self.orbitals.n_orbitals
        self.n_real = self.n_orbitals * self.parts
        self.threads = default_threads(self.n_real) if threads is None else bo.check_int("threads", threads, 4)
        if self.threads > 1024:
            raise ValueError(f"threads must be at most 1024, got {self.threads}")
        self.chunk = None if chunk is None else bo.check_int("chunk", chunk, 1)
        host = self.orbitals.coefficients.view(self.real)  # (n1, n2, n3, L') real
        self.d_coeffs = c.to_device(host)
        self.d_cell_inverse = c.to_device(np.ascontiguousarray(self.orbitals.cell_inverse))
        self._d_uncoalesced = None
        self._d_pairs = None
        self.kernels = kernels(self.real == np.float32)

    # ---- device data ----
    @property
    def d_coeffs_uncoalesced(self):
        """(L, n1, n2, n3, P) real on the device (uploaded once, on first use)."""
        if self._d_uncoalesced is None:
            unc = self.orbitals.with_layout("uncoalesced").coefficients  # (L, n1, n2, n3)
            self._d_uncoalesced = _cuda().to_device(unc.view(self.real).reshape(*unc.shape, self.parts))
        return self._d_uncoalesced

    @property
    def d_coeffs_pairs(self):
        """(n1, n2, n3, L'/2) complex on the device: the coalesced table read as (re, im) pairs
        (uploaded once, on first use; needs an even L')."""
        if self._d_pairs is None:
            if self.n_real % 2:
                raise ValueError(f"values_pairs needs an even number of real orbitals, got {self.n_real}")
            pair = np.complex64 if self.real == np.float32 else np.complex128
            self._d_pairs = _cuda().to_device(self.orbitals.coefficients.view(self.real).view(pair))
        return self._d_pairs

    def coefficient_table_bytes(self) -> int:
        return int(sum(a.nbytes for a in (self.d_coeffs, self._d_uncoalesced, self._d_pairs) if a is not None))

    def _positions(self, positions):
        return self.orbitals.checked_positions(positions)

    def _to_complex(self, *arrays):
        return tuple(a.view(self.dtype) for a in arrays)

    # ---- launches (device arrays in and out, no synchronisation) ----
    def _launch(self, kind, d_pos, outs, threads=None, chunk=None):
        T = self.threads if threads is None else threads
        n = d_pos.shape[0]
        k = self.kernels
        units = self.n_real // 2 if kind == "values_pairs" else self.n_real
        chunk = self.chunk if chunk is None else chunk
        chunk = units if chunk is None else min(units, max(1, chunk // 2) if kind == "values_pairs" else chunk)
        grid = (n, (units + chunk - 1) // chunk)
        if kind == "values":
            k["values_coalesced"][grid, T](self.d_coeffs, self.d_cell_inverse, d_pos, 0, chunk, outs[0])
        elif kind == "values_pairs":
            k["values_pairs"][grid, T](self.d_coeffs_pairs, self.d_cell_inverse, d_pos, 0, chunk, outs[0])
        elif kind == "values_uncoalesced":
            k["values_uncoalesced"][n, T](self.d_coeffs_uncoalesced, self.d_cell_inverse, d_pos, 0, outs[0])
        elif kind == "values_per_electron":
            launch = k["values_coalesced"][1, T]
            for j in range(n):
                launch(self.d_coeffs, self.d_cell_inverse, d_pos, j, self.n_real, outs[0])
        elif kind == "vgl":
            k["vgl_coalesced"][grid, T](self.d_coeffs, self.d_cell_inverse, d_pos, 0, chunk, *outs)
        else:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")

    def _device_outputs(self, kind, n):
        c = _cuda()
        if kind == "vgl":
            return (c.device_array((n, self.n_real), self.real), c.device_array((n, 3, self.n_real), self.real),
                    c.device_array((n, self.n_real), self.real))
        return (c.device_array((n, self.n_real), self.real),)

    def _run(self, kind, positions):
        pos = self._positions(positions)
        d_pos = _cuda().to_device(pos)
        outs = self._device_outputs(kind, len(pos))
        self._launch(kind, d_pos, outs)
        return self._to_complex(*(o.copy_to_host() for o in outs))

    # ---- host API ----
    def values(self, positions) -> np.ndarray:
        """Values (N, L) at positions (N, 3) bohr: one launch, coalesced layout."""
        return self._run("values", positions)[0]

    def values_pairs(self, positions) -> np.ndarray:
        """Values (N, L): one launch, coalesced layout read as (re, im) pairs."""
        return self._run("values_pairs", positions)[0]

    def values_uncoalesced(self, positions) -> np.ndarray:
        """Values (N, L): one launch on the uncoalesced layout (L, n1, n2, n3)."""
        return self._run("values_uncoalesced", positions)[0]

    def values_per_electron(self, positions) -> np.ndarray:
        """Values (N, L): one launch per electron (coalesced layout)."""
        return self._run("values_per_electron", positions)[0]

    def evaluate(self, positions):
        """Values (N, L), gradients (N, 3, L), Laplacians (N, L): one launch, coalesced layout."""
        return self._run("vgl", positions)

    def time(self, kind, positions, repeats=20, transfers=True, threads=None, chunk=None) -> float:
        """Median seconds of one evaluation of ``kind`` (:data:`KINDS`) over ``repeats`` timings with
        CUDA events on the default stream, after one untimed warm-up (compilation).

        Coefficient upload is never included. ``transfers=True``: the interval covers the upload of
        the positions (N × 3 float64) from pinned host memory, the kernel launch(es) and the download
        of all results (values, or values + gradients + Laplacians) into pinned host memory;
        ``transfers=False``: the kernel launch(es) only (positions already on the device, results
        left there). Per-electron timing includes numba's host-side launch cost of every launch.
        ``threads``/``chunk`` override the instance's for this timing.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        repeats = bo.check_int("repeats", repeats, 1)
        if threads is not None and not 4 <= bo.check_int("threads", threads, 4) <= 1024:
            raise ValueError(f"threads must be at most 1024, got {threads}")
        c = _cuda()
        pos = self._positions(positions)
        n = len(pos)
        pinned_pos = c.pinned_array(pos.shape, np.float64)
        pinned_pos[...] = pos
        d_pos = c.to_device(pos)
        outs = self._device_outputs(kind, n)
        host_outs = [c.pinned_array(o.shape, self.real) for o in outs]
        self._launch(kind, d_pos, outs, threads, chunk)  # compile / warm up
        c.synchronize()
        start, end = c.event(), c.event()
        times = []
        for _ in range(repeats):
            start.record()
            if transfers:
                d_pos.copy_to_device(pinned_pos)
            self._launch(kind, d_pos, outs, threads, chunk)
            if transfers:
                for o, h in zip(outs, host_outs):
                    o.copy_to_host(h)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
        return float(np.median(times))


def measured_copy_bandwidth(n_bytes: int = 1 << 30, repeats: int = 10) -> dict:
    """Device-to-device copy of an ``n_bytes`` buffer timed with CUDA events: bytes read + written
    (2 × n_bytes) / median time. Returns {"bytes": …, "median_s": …, "bytes_per_s": …}."""
    c = _cuda()
    n = max(1, int(n_bytes) // 4)
    src = c.device_array(n, np.float32)
    dst = c.device_array(n, np.float32)
    dst.copy_to_device(src)  # warm up
    c.synchronize()
    start, end = c.event(), c.event()
    times = []
    for _ in range(repeats):
        start.record()
        dst.copy_to_device(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    median = float(np.median(times))
    del src, dst
    return {"bytes": 4 * n, "median_s": median, "bytes_per_s": 2 * 4 * n / median}
