"""An ipywidgets panel for VMC and fixed-node DMC of closed-shell molecules in a Gaussian basis (study 001).

:class:`MoleculePanel` is :class:`~qmckit.widgets.SystemPanel` for the system ``"molecule"``, with
the Run/Stop/continue machinery, progress bar and live plots, and these controls: molecule (the built-in geometries of
:func:`qmckit.systems.molecule.builtin_molecules`), basis set, Jastrow factor on/off, method
(VMC or fixed-node DMC), Δτ, walkers, steps and seed. Next to the QMC energy it shows the RHF energy
that PySCF computed for the same orbitals: with the Jastrow factor off, VMC samples the bare RHF
determinant and must reproduce it within its error bar; the Jastrow factor and DMC go below it.

No physics lives here: the controls become a :class:`qmckit.RunConfig` (which validates them and
builds the molecule, running RHF once per geometry and basis) and :func:`qmckit.runs.make_run` does
the rest. PySCF is optional: without it the panel still builds and says so in one line.

    >>> from qmckit.widgets import MoleculePanel
    >>> panel = MoleculePanel(molecule="h2o", basis="cc-pvdz", method="dmc")
    >>> panel            # in Jupyter; or panel.run_sync()
"""
from __future__ import annotations

import html
import math
import warnings

import ipywidgets as widgets
import numpy as np

from ..runs import RunConfig
from ..stats import format_value_error
from ..systems.gaussian_basis import PySCFMissing, require_pyscf
from ..systems.molecule import builtin_molecules
from .fast import fast_mode
from .labels import unit_text
from .panel_base import row, style
from .plots import run_figure, sparse_ticks
from .system_panel import SystemPanel

# a drift time step per built-in molecule (ħ/E_h): the heaviest nucleus Z sets the scale ~1/Z²
DEFAULT_DT = {"h2": 0.05, "h2o": 0.01, "ne": 0.005, "acetic-acid": 0.01}
FALLBACK_DT = 0.01
# basis sets offered in the list (any other name PySCF knows can be typed in)
BASES = ("sto-3g", "6-31g", "cc-pvdz", "cc-pvtz", "aug-cc-pvdz")
MOLECULE_FAST_SIZES = {"walkers": 40, "steps": 200}
MOLECULE_FULL_SIZES = {"walkers": 200, "steps": 2000}


def pyscf_missing() -> str | None:
    """None when PySCF can be imported, else the one-line message that names the ``chem`` extra."""
    try:
        require_pyscf()
    except PySCFMissing as exc:
        return str(exc).splitlines()[0]
    return None


class MoleculePanel(SystemPanel):
    """Controls, Run/Stop, progress bar, status line, an energy-vs-RHF line and live plots for a molecule.

    Keyword arguments set the initial controls. ``molecule`` is a built-in name (``h2``, ``h2o``,
    ``ne``, ``acetic-acid``); ``basis`` any basis set name PySCF knows (the list offers common ones);
    ``jastrow=False`` samples the bare RHF determinant. ``method="dmc"`` runs fixed-node DMC (walkers
    = population target, steps = measured DMC steps). ``dt`` defaults to a value per molecule
    (:data:`DEFAULT_DT`, reset when the molecule changes); ``walkers`` × ``steps`` to 40 × 200 in fast
    mode (``QMCKIT_FAST=1``), 200 × 2000 otherwise.

    Extra attributes: the controls ``molecule, basis, jastrow, method``; ``comparison`` (HTML: the
    energy ± error next to E_RHF); ``pyscf_message`` (None, or why molecules cannot run here).
    """

    def __init__(self, *, molecule: str = "h2", basis: str = "cc-pvdz", jastrow: bool = True,
                 method: str = "vmc", dt: float | None = None, walkers: int | None = None,
                 steps: int | None = None, seed: int = 1, redraw_interval: float = 0.5):
        names = builtin_molecules()
        if molecule not in names:
            raise ValueError(f"molecule must be one of {', '.join(names)}, got {molecule!r}")
        sizes = MOLECULE_FAST_SIZES if fast_mode() else MOLECULE_FULL_SIZES
        super().__init__("molecule", names=("jastrow",), method=method, sampler="drift",
                         dt=dt if dt is not None else DEFAULT_DT.get(molecule, FALLBACK_DT),
                         walkers=walkers or sizes["walkers"], steps=steps or sizes["steps"], seed=seed,
                         redraw_interval=redraw_interval, jastrow=jastrow)
        # the geometry and basis as lists of the built-in molecules and common bases (any name PySCF
        # knows can be typed); their help comes from the metadata like every other control's
        help_of = {info.name: info.describe() for info in self.system_class.parameters()}
        self.molecule = widgets.Dropdown(options=names, value=molecule, description="molecule",
                                         style=style("molecule"), layout=widgets.Layout(width="240px"),
                                         tooltip=help_of["xyz"])
        self.basis = widgets.Combobox(value=str(basis), options=list(BASES), ensure_option=False,
                                      description="basis", style=style("basis"),
                                      layout=widgets.Layout(width="240px"), placeholder="e.g. cc-pvdz",
                                      tooltip=help_of["basis"])
        self.dt.tooltip = "time step (ħ/E_h); heavier nuclei need smaller steps (Ne: ≤ 0.005)"
        self.comparison = widgets.HTML(value="")
        self.molecule.observe(self._molecule_changed, names="value")

        self.pyscf_message = pyscf_missing()
        if self.pyscf_message is not None:
            self._say(f"unavailable: {self.pyscf_message}")
            self.run_button.disabled = True
        header = widgets.HTML("<b>Molecules in a Gaussian basis — VMC and fixed-node DMC</b> "
                              "<span style='color:#666'>(RHF orbitals from PySCF; lengths in bohr, energies "
                              "in hartree)</span>")
        controls = row([
            widgets.VBox([self.molecule, self.basis, self.jastrow]),
            widgets.VBox([self.method, self.sampler, self.dt, self.walkers, self.steps, self.seed]),
        ])
        buttons, status, plot = self.widget.children[2:]
        self.widget.children = (header, controls, buttons, status, self.comparison, plot)

    # --- controls -----------------------------------------------------------------------------
    def _molecule_changed(self, change) -> None:
        self.dt.value = DEFAULT_DT.get(change["new"], FALLBACK_DT)

    def config(self) -> RunConfig:
        """The :class:`RunConfig` the controls describe (raises ``ValueError`` for bad input,
        including a missing PySCF and a basis set PySCF does not know)."""
        if self.pyscf_message is not None:
            raise ValueError(self.pyscf_message)
        try:
            return RunConfig(system="molecule", method=self.method.value,
                             params={"xyz": self.molecule.value, "basis": self.basis.value,
                                     **self.parameter_values()},
                             sampler=self.sampler.value, dt=self.dt.value, walkers=self.walkers.value,
                             steps=self.steps.value, seed=self.seed.value)
        except ValueError:
            raise
        except PySCFMissing as exc:
            raise ValueError(str(exc).splitlines()[0]) from None
        except Exception as exc:  # noqa: BLE001 - PySCF may fail in its own ways: one line, no traceback
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise ValueError(f"molecule {self.molecule.value!r} in basis {self.basis.value!r} failed in PySCF: "
                             f"{type(exc).__name__}{': ' + detail if detail else ''}") from None

    # --- runs ---------------------------------------------------------------------------------
    def _starting(self) -> None:
        self.comparison.value = ""  # a fresh run: the last molecule's line ("h2/sto-3g: …") goes with its figure
        super()._starting()

    def _fail(self, exc: Exception) -> None:
        super()._fail(exc)
        self.comparison.value = ""

    # --- results ------------------------------------------------------------------------------
    def energy_vs_rhf(self) -> dict | None:
        """``{"energy", "error", "rhf", "difference", "pull"}`` (E_h) of the last run, or None.

        ``energy`` is the run's estimate (weighted for DMC), ``rhf`` PySCF's E_RHF for the same
        molecule and basis, ``pull`` = (E − E_RHF)/σ (nan for a zero error bar)."""
        run = self.last_run
        if run is None or not run.blocks_done:
            return None
        with warnings.catch_warnings():  # a short run's warning is already in the status line
            warnings.simplefilter("ignore", RuntimeWarning)
            est = run.estimates()[run.system.energy_key]
        rhf = float(run.system.rhf_energy)
        diff = float(est.mean) - rhf
        return {"energy": float(est.mean), "error": float(est.error), "rhf": rhf, "difference": diff,
                "pull": diff / est.error if est.error > 0 else float("nan")}

    def _summary(self, run, prefix: str, elapsed: float | None = None, suffix: str = "") -> str:
        parts = super()._summary(run, prefix, elapsed=elapsed, suffix=suffix).split(" · ")
        at = 1
        if len(parts) > 1 and parts[1].startswith("E = "):
            values = self.energy_vs_rhf()  # the run's own estimate: weighted for DMC
            if values is not None and values["error"] > 0:
                value = format_value_error(values["energy"], values["error"])
                parts[1] = f"E = {value} {unit_text(run.system.energy_unit)}"
            at = 2
        parts.insert(at, f"E(RHF) = {run.system.rhf_energy:.6f} {unit_text(run.system.energy_unit)}")
        self._update_comparison(run)
        return " · ".join(parts)

    def _update_comparison(self, run) -> None:
        values = self.energy_vs_rhf()
        p = run.system.params
        what = ("fixed-node DMC" if run.config.method == "dmc" else "VMC") + \
            (", Jastrow factor" if p.jastrow else ", bare RHF determinant")
        where = f"{html.escape(p.xyz)}/{html.escape(p.basis)}"
        if values is None:
            self.comparison.value = f"{where}: E<sub>RHF</sub> = {run.system.rhf_energy:.6f} E<sub>h</sub> (PySCF)"
            return
        energy = (format_value_error(values["energy"], values["error"]) if values["error"] > 0
                  else f"{values['energy']:.6f}")
        pull = f" = {values['pull']:+.1f}σ" if math.isfinite(values["pull"]) else ""
        self.comparison.value = (
            f"{where}, {what}: <b>E = {energy} E<sub>h</sub></b> &nbsp;·&nbsp; "
            f"E<sub>RHF</sub> = {values['rhf']:.6f} E<sub>h</sub> (PySCF) &nbsp;·&nbsp; "
            f"E − E<sub>RHF</sub> = {values['difference'] * 1e3:+.1f} mE<sub>h</sub>{pull}")

    def _figure(self, run):
        """The walker-averaged local energy of every sweep (VMC) or the mixed DMC energy against imaginary
        time, with E_RHF as a line, and the reblocking plot."""
        return molecule_figure(run)


def molecule_figure(run):
    """The panel's figure for ``run`` (a molecule :class:`~qmckit.runs.VMCRun`/``DMCRun``, or None)."""
    if run is None:
        return run_figure([], unit="E_h", label="E", what="total energy")
    dmc = run.config.method == "dmc"
    label = "E (mixed)" if dmc else "E$_L$"
    fig = run_figure(run.energy_series(), unit=run.system.energy_unit, label=label,
                     xlabel="DMC step" if dmc else "sweep")
    ax = fig.axes[0]
    if dmc:  # one point per DMC step: show it against imaginary time τ = step · Δτ
        for line in ax.lines:
            line.set_xdata(np.asarray(line.get_xdata(), dtype=float) * run.config.dt)
        ax.relim()
        ax.autoscale_view()
        sparse_ticks(ax, integer=False)  # τ is not a count
        ax.set_xlabel("imaginary time τ  (ħ/E$_h$)")
        ax.set_title("DMC energy against time")
    else:
        ax.set_title("local energy (walker mean per sweep)")
    if ax.lines:
        ax.lines[0].set_label(f"{label} per {'DMC step' if dmc else 'sweep'}")
    rhf = float(run.system.rhf_energy)
    ax.axhline(rhf, color="k", ls="--", lw=1.0, label=f"E$_{{RHF}}$ = {rhf:.6f}")
    ax.legend(loc="upper right", fontsize="small")
    if run.blocks_done:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            est = run.estimates()[run.system.energy_key]
        if est.error > 0:  # the run's own estimate (weighted for DMC), as in the status line
            fig.suptitle(f"total energy: {label} = {format_value_error(est.mean, est.error)} E$_h$   "
                         f"(E$_{{RHF}}$ = {rhf:.6f} E$_h$, {run.system.params.xyz}/{run.system.params.basis})")
    return fig


__all__ = ["MoleculePanel", "molecule_figure", "pyscf_missing", "BASES", "DEFAULT_DT"]
