"""ipywidgets panels for qmckit. They call only the public API: no physics lives here.

    >>> from qmckit.widgets import BosonPanel
    >>> panel = BosonPanel()
    >>> panel            # in Jupyter: controls, Run/Stop, progress bar, live plots
    >>> panel.run_sync() # or press Run (background thread) / Stop (pauses within a fraction of a second)

Panels: :class:`SystemPanel` (any registered system, its controls generated from the parameter
metadata: ``SystemPanel("qdot", n=6)``), :class:`BosonPanel` (trapped bosons, VMC),
:class:`AtomPanel` (He, Be, Ne: VMC and fixed-node
DMC), :class:`MoleculePanel` (molecules in a Gaussian basis with RHF orbitals from PySCF, VMC and
fixed-node DMC, energy next to E_RHF) and :class:`PrecisionPanel` (error per element of the orbital
matrix product against its inner length, per arithmetic) and :class:`LatticePanel` (study 000's
projected d-wave RVB state of the t–J model) and :class:`OrbitalsPanel` (study 003: B-spline orbital
evaluation cost and the updating schemes' bias) and :class:`ScanPanel` (a parameter scan of any system on a local
Dask cluster, :func:`qmckit.scan`) and :class:`OptimizePanel` (many-parameter optimisation of any continuum system,
live). The last five are imported on first use, so
``import qmckit.widgets`` stays cheap; none needs PySCF to import (without it they say so).

``fast_mode()`` reads ``QMCKIT_FAST`` (small default sizes for CI and notebook fast mode). What every
panel shows while it starts, runs, stops and fails (and the CSS classes browser tests find it by) is
described in :mod:`qmckit.widgets.panel_base`.
"""
from importlib import import_module

from .atom_panel import AtomPanel
from .bec_panel import BosonPanel
from .fast import fast_mode
from .plots import plot_energy_trace, plot_reblock, run_figure
from .system_panel import SystemPanel

_LAZY = {"MoleculePanel": ".molecule_panel", "PrecisionPanel": ".precision_panel", "LatticePanel": ".lattice_panel",
         "OrbitalsPanel": ".orbitals_panel", "ScanPanel": ".scan_panel",
         "OptimizePanel": ".optimize_panel"}

__all__ = ["SystemPanel", "AtomPanel", "BosonPanel", "LatticePanel", "MoleculePanel", "OrbitalsPanel", "PrecisionPanel",
           "ScanPanel", "OptimizePanel", "fast_mode",
           "plot_energy_trace", "plot_reblock", "run_figure"]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
