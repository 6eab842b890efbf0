"""The GPU sampler: the interface of :mod:`qmckit.samplers` over a system's own CUDA sweeper.

Runs (:mod:`qmckit.runs`) and DMC (:mod:`qmckit.methods.dmc`) drive it like the CPU sampler. The system
names its GPU sweeper in ``capabilities.gpu`` ("module:Class", a class in :mod:`qmckit.backends`); the
sweeper keeps the walkers on the device and :meth:`CudaSampler.sync` copies them back into the host
:class:`~qmckit.walkers.Walkers` (before a checkpoint, or before DMC branching). Study 002's Metropolis
variants exist only on the CPU.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np

from ..backends import cuda_import
from ..backends.cuda_bec import gather_kernel, put_kernel
from ..backends.cpu_kernels import kernels_for, variant_flags
from ..rng import fork_from
from ..systems.protocol import require
from ..walkers import Walkers
from .cpu import append as host_append
from .cpu import equilibrate, equilibration_pieces, nuclei_for_moves
from .cpu import take_last as host_take_last


def sweeper_class(system):
    """The GPU sweeper class of ``system`` (:class:`~qmckit.systems.Unsupported` if it has none)."""
    require(system, "gpu", "backend cuda")
    path = system.capabilities.gpu
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def cuda_available(system) -> bool:
    """Whether ``system`` has GPU kernels and a real CUDA GPU is present."""
    try:
        module = importlib.import_module(system.capabilities.gpu.split(":")[0])
    except (AttributeError, ImportError):
        return False
    return bool(module.available())


@dataclass
class SharedWalkers:
    """Walkers left on a GPU for another process to copy (:meth:`CudaSampler.take_last_shared`): the positions as a
    CUDA IPC handle of a device array in the sweeper's layout (the walker axis last), and the walkers' random
    streams."""

    handle: object  # numba IpcArrayHandle
    n_walkers: int
    rng_states: np.ndarray


def device_identity() -> dict:
    """Where this process computes: its host, its current GPU's identity (PCI domain, bus, device) and those of every
    GPU it can see; a part of a split run copies walkers straight from another's GPU when it sees that GPU."""
    import socket

    from numba.cuda.cudadrv.driver import driver

    c = cuda_import.bind({})
    return {"host": socket.gethostname(), "device": c.get_current_device().get_device_identity(),
            "visible": [driver.get_device(k).get_device_identity() for k in range(driver.get_device_count())]}


class CudaSampler:
    """Sweeps on the GPU. Parameters as :class:`~qmckit.samplers.cpu.CpuSampler`, plus ``dtype`` and ``layout``."""

    def __init__(self, system, walkers, sampler: str = "drift", dt: float = 0.05, step: float = 1.0,
                 target_acceptance: float = 0.5, drift_cap: bool = True, dtype=np.float64, layout: str = "auto",
                 nuclear_moves: bool = False, **variants):
        if variant_flags(**variants):
            raise ValueError("backend cuda runs exact Metropolis–Hastings only; study 002's variants need backend cpu")
        self.system = system  # the sweeper validates sampler, dt and step
        self.sampler = sampler
        self.target_acceptance = target_acceptance
        self._options = dict(sampler=sampler, drift_cap=drift_cap, dtype=dtype, layout=layout)
        if nuclear_moves:  # only a sweeper that has them takes the option
            nuclei_for_moves(system, sampler)
            require(system, "gpu_nuclear_moves", "nuclear_moves on backend cuda")
            self._options["nuclear_moves"] = True
        self._sweeper_class = sweeper_class(system)
        self._sweeper = self._sweeper_class(system, walkers, dt=dt, step=step, **self._options)

    # the walkers live on the device; assigning new ones (DMC branching) re-uploads them
    @property
    def walkers(self):
        return self._sweeper.walkers

    @walkers.setter
    def walkers(self, walkers):
        s = self._sweeper
        self._sweeper = self._sweeper_class(self.system, walkers, dt=s.dt, step=s.step, **self._options)
        self._sweeper.track_diffusion = s.track_diffusion

    @property
    def track_diffusion(self) -> bool:
        """Whether sweeps sum the squared diffusion displacements (a kernel variant that does; for DMC)."""
        return self._sweeper.track_diffusion

    @track_diffusion.setter
    def track_diffusion(self, value: bool) -> None:
        self._sweeper.track_diffusion = bool(value)

    @property
    def last_diffusion(self):
        """(2, W) Σ squared diffusion displacements of the last sweep's proposed and accepted moves (None
        unless ``track_diffusion``)."""
        return self._sweeper.last_diffusion

    @property
    def dt(self) -> float:
        return self._sweeper.dt

    @dt.setter
    def dt(self, value: float) -> None:
        self._sweeper.dt = float(value)

    @property
    def step(self) -> float:
        return self._sweeper.step

    @step.setter
    def step(self, value: float) -> None:
        self._sweeper.step = float(value)

    def sweep(self, n_sweeps: int, measure: bool = True):
        return self._sweeper.sweep(n_sweeps, measure)

    @property
    def last_kernel_s(self):
        """Device seconds of the last sweep's kernels (CUDA events), or None where the sweeper does not time them."""
        return getattr(self._sweeper, "last_kernel_s", None)

    def observables(self) -> np.ndarray:
        """(W, 1 + K) E_L and the system's observables, measured on the GPU."""
        require(self.system, "observables_gpu", "observables on the GPU")
        return self._sweeper.observables()

    def branch(self, index, children, source_states) -> None:
        """DMC branching on the device: keep ``walkers[index]``; the rows ``children`` (copies)
        get streams forked from ``source_states``. Only random states cross to the host."""
        forked = getattr(self._sweeper, "branch_forked", None)
        if forked is not None:  # the states are gathered on the device; only the copies' new ones are uploaded
            fresh = np.empty((len(children), 2), dtype=np.uint64)
            fork_from(source_states, fresh, np.arange(len(children)))  # the streams fork_from gives children, in order
            forked(index, children, fresh)
            return
        states = self._sweeper.rng_states()[index]
        if len(children):
            fork_from(source_states, states, children)
        self._sweeper.branch(index, states)

    def take_last(self, n: int):
        """Remove the last ``n`` walkers and return them (:class:`~qmckit.walkers.Walkers`, no caches). On a sweeper
        that declares ``DEVICE_AXES`` only those walkers cross to the host; the others stay on the device."""
        axes = getattr(self._sweeper, "DEVICE_AXES", None)
        if axes is None:  # the whole ensemble through the host
            self.sync()
            return host_take_last(self, n)
        tail, states = self._cut_last(n)
        positions = tail.copy_to_host().transpose(np.argsort(axes)).astype(np.float64)
        return Walkers(np.ascontiguousarray(positions), np.zeros((n, 0)), np.ones(n), states)

    def _cut_last(self, n: int):
        """Remove the last ``n`` walkers on the device: (their positions, a device array in the sweeper's layout,
        their random states)."""
        s, W = self._sweeper, self.walkers.n_walkers
        c = cuda_import.bind({})
        tail = c.device_array(s._pos.shape[:-1] + (n,), dtype=s._pos.dtype)  # the walker axis is the device's last
        gather_kernel()[_columns_grid(tail), _THREADS](s._pos, c.to_device(np.arange(W - n, W)), tail)
        states = s.rng_states()
        s.branch(np.arange(W - n), states[:W - n])
        return tail, states[W - n:].copy()

    def take_last_shared(self, n: int) -> "SharedWalkers":
        """As :meth:`take_last`, but the walkers stay on this device and another process on this host that sees it
        copies them from there (:meth:`append`, CUDA IPC). They are kept here until :meth:`release_shared`."""
        if not self.shares_device:
            raise ValueError("take_last_shared: this GPU sweeper keeps no walker axis on the device")
        tail, states = self._cut_last(n)
        cuda_import.bind({}).synchronize()  # the tail is complete before another process reads it
        self._shared = getattr(self, "_shared", []) + [tail]
        return SharedWalkers(tail.get_ipc_handle(), n, states)

    @property
    def shares_device(self) -> bool:
        """Whether walkers can leave for another process's GPU straight from this one (:meth:`take_last_shared`)."""
        return getattr(self._sweeper, "DEVICE_AXES", None) is not None

    def release_shared(self) -> None:
        """Free the walkers given by :meth:`take_last_shared` (their receivers have copied them)."""
        self._shared = []

    def append(self, walkers) -> None:
        """Add ``walkers`` (another ensemble's, from :meth:`take_last`, or :class:`SharedWalkers` from another
        process's :meth:`take_last_shared`) after these; on a sweeper that declares ``DEVICE_AXES`` only the new
        walkers are uploaded, or copied from device to device."""
        s, W = self._sweeper, self.walkers.n_walkers
        if getattr(s, "DEVICE_AXES", None) is None:
            self.sync()
            host_append(self, walkers)
            return
        c = cuda_import.bind({})
        if isinstance(walkers, SharedWalkers):
            source = walkers.handle.open()  # the giver's memory (peer access, or staged by numba through the host)
            try:
                new = c.device_array(source.shape, dtype=source.dtype)
                new.copy_to_device(source)
                c.synchronize()  # copied before the giver's memory is let go
            finally:
                walkers.handle.close()
        else:
            new = c.to_device(np.ascontiguousarray(walkers.positions.transpose(s.DEVICE_AXES), dtype=s._pos.dtype))
        # grow on the device (the new columns copies of walker 0, with the newcomers' streams), then overwrite them
        s.branch(np.concatenate([np.arange(W), np.zeros(walkers.n_walkers, dtype=np.int64)]),
                 np.concatenate([s.rng_states(), walkers.rng_states]))
        put_kernel()[_columns_grid(new), _THREADS](s._pos, W, new)

    def equilibrate(self, n_sweeps: int, chunk: int = 10) -> float:
        return equilibrate(self, n_sweeps, chunk)

    def equilibration_pieces(self, n_sweeps: int, chunk: int = 10):
        return equilibration_pieces(self, n_sweeps, chunk)

    def recompute(self) -> None:
        """Nothing to do: the GPU kernels rebuild their caches at every launch."""

    def sync(self) -> None:
        """Copy positions and random states from the device into ``walkers``.

        The host caches are left stale: the GPU rebuilds its own at every launch, and a CPU
        driver built on these walkers recomputes them first.
        """
        self._sweeper.to_host(recompute_caches=False)

    def local_energies(self) -> np.ndarray:
        """Local energy of every walker now, (W,), computed on the host (used once, to start DMC)."""
        self.sync()
        w = self.walkers
        kernels = kernels_for(type(self.system))
        caches = np.zeros((w.n_walkers, self.system.cache_size()))  # the host walkers may carry none
        kernels.recompute_all(w.positions, caches, self.system.kernel_params)
        out = np.empty(w.n_walkers)
        kernels.local_energies(w.positions, caches, self.system.kernel_params, out)
        return out


_THREADS = 128  # threads per block of the column kernels


def _columns_grid(array) -> tuple:
    """The grid of :func:`~qmckit.backends.cuda_bec.gather_kernel` and ``put_kernel`` over ``array``'s walker columns
    (a 3-axis device array, the walker axis last): (blocks of walkers, axis 1, axis 0)."""
    return ((array.shape[2] + _THREADS - 1) // _THREADS, array.shape[1], array.shape[0])
