"""What every panel shows while it starts, runs, stops and fails (issue 26, item 4), headless.

Each test can fail for the reason it names: a figure of the last run left up while a new one starts, a
rejected input that leaves a figure, a Stop that waits for the end of a long equilibration, a progress bar
that sits at 0 through the equilibration, a panel without a busy state, a total energy labelled E/N, a
compile note on every run, raw underscores in units, controls or rows that cannot fit the notebook.

Stops are made deterministic with events, never with sleeps: a progress hook (run in the run's thread)
either presses Stop itself or sets an event that the test waits for before pressing Stop.
"""
import re
import threading

import ipywidgets as widgets
from ipywidgets.widgets.widget_description import DescriptionWidget
import numpy as np
import pytest

from qmckit.widgets import AtomPanel, BosonPanel, LatticePanel, OrbitalsPanel, PrecisionPanel, SystemPanel
from qmckit.widgets import panel_base
from qmckit.widgets.dmc_panel import DMCPanel
from qmckit.widgets.molecule_panel import pyscf_missing
from qmckit.widgets.panel_base import STARTING
from qmckit.widgets.plots import run_figure

TIMEOUT = 120.0  # seconds: a cold numba compile on a slow CI machine; a working Stop takes a fraction of one

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # tiny runs: reblocking says they are short
needs_pyscf = pytest.mark.skipif(pyscf_missing() is not None, reason="PySCF (the 'chem' extra) is not installed")


def boson(**kw):
    return BosonPanel(**({"n": 4, "walkers": 4, "steps": 40, "seed": 3} | kw))


def lattice(**kw):
    return LatticePanel(**({"L": 3, "doping": 0.2, "chains": 4, "sweeps": 60, "seed": 3} | kw))


def orbitals(**kw):
    return OrbitalsPanel(**({"scheme": "pbp", "n_per_spin": 7, "sweeps": 400} | kw))


def precision(**kw):
    return PrecisionPanel(**({"k_min": 10, "k_max": 1000, "points": 2, "trials": 1, "work": 2.0**16} | kw))


def molecule(**kw):
    from qmckit.widgets import MoleculePanel

    return MoleculePanel(**({"molecule": "h2", "basis": "sto-3g", "walkers": 8, "steps": 40, "seed": 3} | kw))


def _set(name, value):
    def setter(panel):
        getattr(panel, name).value = value
    return setter


# (panel factory, a change that the panel must refuse, a word its error names)
PANELS = {
    "SystemPanel": (lambda: SystemPanel("qdot", n=2, walkers=4, steps=20, seed=1), _set("omega", -1.0), "omega"),
    "BosonPanel": (boson, _set("alpha", -1.0), "alpha"),
    "DMCPanel": (lambda: DMCPanel(n=4, walkers=8, steps=30, dt=0.02, seed=3), _set("dt", 0.0), "dt"),
    "AtomPanel": (lambda: AtomPanel(element="He", walkers=8, steps=40, seed=3), _set("alpha", -1.0), "alpha"),
    "MoleculePanel": (molecule, _set("basis", "no-such-basis"), "basis"),
    "PrecisionPanel": (precision, _set("k_min", 0), "K min"),
    "LatticePanel": (lattice, _set("L", 4), "L"),
    "OrbitalsPanel": (orbitals, _set("sweeps", 5), "sweeps"),
}
PANEL_PARAMS = [pytest.param(name, marks=needs_pyscf) if name == "MoleculePanel" else name for name in PANELS]


def root_of(panel):
    return panel if isinstance(panel, widgets.Widget) else panel.widget


def tree(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from tree(child)


# --- 4.1: a new run clears the old plot and says "starting…"; a rejected input shows the error, no plot ---------
@pytest.mark.parametrize("name", PANEL_PARAMS)
def test_new_run_clears_the_last_figure_and_says_starting(name):
    make, _, _ = PANELS[name]
    panel = make()
    assert panel.run_sync() is not None and len(panel.plot.outputs) == 1  # the first run's figure is up
    seen = []  # (status, figures in the plot, progress description) whenever the status changes
    panel.status.observe(lambda change: seen.append((change["new"], len(panel.plot.outputs),
                                                     panel.progress.description)), "value")
    assert panel.run_sync() is not None
    starting = [s for s in seen if s[0] == STARTING]
    assert starting, f"{name}: no '{STARTING}' state; the status went {[s[0][:30] for s in seen]}"
    assert starting[0][1:] == (0, "starting"), "the last run's figure was still up when the new run started"
    assert seen.index(starting[0]) == 0, "something else was shown before the new run said it was starting"


@pytest.mark.parametrize("name", PANEL_PARAMS)
def test_rejected_input_shows_one_error_line_and_clears_the_plot(name):
    make, spoil, word = PANELS[name]
    panel = make()
    assert panel.run_sync() is not None and len(panel.plot.outputs) == 1
    spoil(panel)
    assert panel.run_sync() is None and panel.error is not None
    status = panel.status.value
    assert status.startswith("error: ") and word in status and "\n" not in status and "Traceback" not in status
    assert panel.plot.outputs == (), "the figure of the last run stayed up next to the error"
    assert panel.progress.bar_style == "danger" and panel.progress.value == 0
    assert not panel.run_button.disabled and panel.stop_button.disabled and not panel.running
    assert panel.run() is None and not panel.running  # the Run button starts nothing either


@needs_pyscf
def test_molecule_panel_drops_the_last_molecules_line_when_a_new_run_starts():
    panel = molecule()
    panel.run_sync()
    assert "h2/sto-3g" in panel.comparison.value
    lines = []
    panel.status.observe(lambda change: lines.append((change["new"], panel.comparison.value)), "value")
    panel.molecule.value = "h2o"
    panel.dt.value, panel.steps.value = 0.01, 20
    panel.run_sync()
    assert lines[0] == (STARTING, "")
    assert "h2o/sto-3g" in panel.comparison.value and "h2/" not in panel.figure()._suptitle.get_text()


# --- 4.2: Stop within a fraction of a second in any phase; progress through the equilibration -------------------
def test_stop_during_a_long_equilibration_takes_effect():
    # 200 walkers × 10^6 sweeps: 200000 equilibration sweeps, minutes of work in one phase
    panel = BosonPanel(n=20, walkers=200, steps=10**6, seed=4)
    equilibrating = threading.Event()
    panel.on_progress(lambda phase, done, total: equilibrating.set() if phase == "equilibration" else None)
    panel.run_button.click()
    try:
        assert equilibrating.wait(TIMEOUT), "the equilibration reported no progress"
        assert panel.running and panel.run_button.disabled and not panel.stop_button.disabled
    finally:
        panel.stop_button.click()
    panel.thread.join(TIMEOUT)
    assert not panel.thread.is_alive(), "Stop did not end the equilibration"
    run = panel.last_run
    assert not run.equilibrated and run.paused_part_way
    assert panel.status.value.startswith("stopped during the equilibration (")
    assert "Run continues it" in panel.status.value
    assert panel.progress.description == "stopped" and 0 < panel.progress.value < panel.progress.max == 200000
    assert not panel.run_button.disabled and panel.stop_button.disabled


@pytest.mark.parametrize("phase, at", [("equilibration", 30), ("DMC equilibration", 5), ("block", 7)])
def test_stopped_anywhere_and_continued_gives_the_numbers_of_an_uninterrupted_run(phase, at):
    settings = dict(n=4, walkers=6, steps=200, dt=0.02, seed=9)  # blocks of 10 steps
    panel = DMCPanel(**settings)
    stopped = []

    def press_stop(p, done, total):  # in the run's thread: the run sees the Stop right after this piece
        if p == phase and done >= at and not stopped:
            stopped.append((p, done))
            panel.stop()

    panel.on_progress(press_stop)
    assert panel.run_sync() is None and stopped
    assert panel.status.value.startswith("stopped") and panel.last_run.paused_part_way
    run = panel.last_run
    result = panel.run_sync()  # the same settings: the same run goes on where it stopped
    assert panel.last_run is run and result is not None and panel.status.value.startswith("done")
    reference = DMCPanel(**settings)
    expected = reference.run_sync()
    np.testing.assert_array_equal(run.energy_series(), reference.last_run.energy_series())
    assert result["estimates"] == expected["estimates"]


def test_progress_moves_through_the_equilibration_phases(monkeypatch):
    monkeypatch.setattr(panel_base, "PROGRESS_INTERVAL", 0.0)  # every piece updates the bar
    panel = DMCPanel(n=4, walkers=6, steps=40, dt=0.02, seed=5)
    bars = []
    panel.progress.observe(lambda change: bars.append((panel.progress.description, panel.progress.value)), "value")
    panel.run_sync()
    run = panel.last_run
    equilibrating = [v for d, v in bars if d == "equilibrating"]
    dmc = [v for d, v in bars if d == "DMC equil."]
    assert len(equilibrating) > 3 and equilibrating == sorted(equilibrating) and equilibrating[-1] > 0
    assert len(dmc) > 3 and dmc == sorted(dmc) and dmc[-1] >= run.config.dmc_equilibration - 1
    phases = [d for d, _ in bars]
    assert phases.index("equilibrating") < phases.index("DMC equil.") < phases.index("blocks")
    assert panel.progress.description == "done" and panel.progress.value == panel.progress.max


def test_the_run_button_waits_while_a_run_goes():
    panel = boson(walkers=100, steps=10**6)
    going = threading.Event()
    panel.on_progress(lambda *piece: going.set())
    panel.run_button.click()
    try:
        assert going.wait(TIMEOUT)
        assert panel.run_button.disabled and "qmckit-busy" in panel.widget._dom_classes
        assert panel.run() is None and panel.last_run.config.steps == 10**6  # refused: the same run goes on
    finally:
        panel.stop()
    assert panel.wait(TIMEOUT) and not panel.run_button.disabled
    assert "qmckit-busy" not in panel.widget._dom_classes


# --- 4.7: OrbitalsPanel has progress, Stop and a busy state -------------------------------------------------------
def test_orbitals_panel_is_busy_shows_progress_and_stops():
    panel = orbitals(n_per_spin=19, sweeps=10**7)  # minutes of sweeps
    measuring = threading.Event()
    panel.progress.observe(lambda change: measuring.set() if panel.progress.description == "sweeps" else None,
                           "value")
    thread = panel.run()
    try:
        assert measuring.wait(TIMEOUT), "the measured sweeps never moved the progress bar"
        assert panel.run_button.disabled and panel.time_button.disabled and not panel.stop_button.disabled
        assert "qmckit-busy" in panel._dom_classes and 0 < panel.progress.value < panel.progress.max
    finally:
        panel.stop_button.click()
    thread.join(TIMEOUT)
    assert not thread.is_alive(), "Stop did not end the chain"
    assert panel.status.value.startswith("stopped while measuring")
    assert not panel.run_button.disabled and not panel.time_button.disabled and panel.stop_button.disabled
    assert "qmckit-busy" not in panel._dom_classes


def test_orbitals_panel_time_is_busy_without_stop():
    panel = orbitals()
    panel.grid.value = 8
    thread = panel.time()
    assert panel.time_button.disabled and panel.run_button.disabled and panel.stop_button.disabled
    thread.join(TIMEOUT)
    assert not panel.time_button.disabled and "ms" in panel.status.value and panel.progress.description == "done"


def test_orbitals_panel_chain_in_pieces_equals_run_scheme():
    from qmckit.studies import updating_schemes as us

    panel = orbitals(scheme="qs_batched", sweeps=1000)
    out = panel.run_sync()
    model = us.FreeElectronModel(n_per_spin=7)
    direct = us.run_scheme(model, "qs_batched", out["run"].step, sweeps=1000, seed=11)
    np.testing.assert_array_equal(out["run"].energy, direct.energy)
    np.testing.assert_array_equal(out["run"].s, direct.s)
    assert out["run"].acceptance == direct.acceptance


# --- 4.6, 4.9: labels and units ------------------------------------------------------------------------------
def test_atom_panel_says_total_energy_in_hartree_not_e_per_n():
    panel = AtomPanel(element="He", walkers=8, steps=40, seed=3)
    panel.run_sync()
    status = panel.status.value
    assert " E = " in status and "Eₕ" in status and "E/N" not in status and "_" not in status
    fig = panel.figure()
    assert fig.axes[0].get_ylabel() == "E [E$_{h}$]" and fig._suptitle.get_text().startswith("total energy: E = ")
    assert not any("E/N" in text for text in (fig.axes[0].get_ylabel(), fig._suptitle.get_text(),
                                              *(line.get_label() for line in fig.axes[0].lines)))


def test_units_are_rendered_and_dmc_counts_steps():
    vmc = boson()
    vmc.run_sync()
    assert "ħω⊥" in vmc.status.value and "_" not in vmc.status.value and "40 sweeps × 4 walkers" in vmc.status.value
    assert vmc.steps.description == "sweeps" and vmc.figure().axes[0].get_xlabel() == "sweep"
    dmc = DMCPanel(n=4, walkers=8, steps=30, dt=0.02, seed=3)
    dmc.run_sync()
    assert dmc.steps.description == "steps" and "30 DMC steps × 8 walkers" in dmc.status.value
    assert "sweep" not in dmc.status.value and dmc.figure().axes[0].get_xlabel() == "DMC step"
    assert "_" not in dmc.dt.tooltip.split("(")[1]  # Δτ's unit rendered (1/ω⊥)
    qdot = SystemPanel("qdot", n=2, walkers=4, steps=20, seed=1)
    assert qdot.steps.description == "sweeps"
    qdot.method.value = "dmc"
    assert qdot.steps.description == "steps"
    assert "<sub>h</sub>" in qdot.widget.children[0].value  # the header's units (E_h*) rendered
    lat = lattice()
    lat.run_sync()
    assert "E/Nₛ" in lat.status.value and "E/N$_{s}$" in lat.figure()._suptitle.get_text()


def test_the_compile_note_shows_on_the_first_run_only(monkeypatch):
    monkeypatch.setattr(panel_base, "_NOTED", set())  # as in a fresh process
    lines = []
    for _ in range(2):
        panel = boson()
        panel.status.observe(lambda change: lines.append(change["new"]), "value")
        panel.run_sync()
        lines.append("--- next run")
    first, second = "\n".join(lines).split("--- next run")[:2]
    assert "compiles the kernels" in first and "compiles the kernels" not in second
    monkeypatch.setattr(panel_base, "_NOTED", set())
    notes = []
    p = precision()
    p.status.observe(lambda change: notes.append("compiles" in change["new"]), "value")
    p.run_sync()
    p.run_sync()
    assert notes.count(True) == 1


def test_precision_status_follows_per_element():
    panel = precision()
    panel.run_sync()
    assert "mean relative error per element" in panel.status.value
    panel.stat.value = "max"
    assert panel.status.value.startswith("done") and "max relative error per element" in panel.status.value


def test_energy_trace_ticks_stay_few_and_short():
    fig = run_figure(np.random.default_rng(1).normal(size=50_000), unit="ħω_⊥", label="E/N")
    ax = fig.axes[0]
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    labels = ax.xaxis.get_major_formatter().format_ticks(ticks)
    assert len(ticks) <= 6 and all(len(text) <= 4 for text in labels), labels  # "20k", not "20000"
    assert all(text == "0" or text.endswith("k") for text in labels), labels  # one scale: not 8000 next to 16k
    assert "$_{⊥}$" in ax.get_ylabel() and "_⊥" not in ax.get_ylabel().replace("$_{⊥}$", "")


# --- 4.8: nothing wider than the notebook -------------------------------------------------------------------
@pytest.mark.parametrize("name", PANEL_PARAMS)
def test_panels_fit_the_notebook(name):
    panel = PANELS[name][0]()
    root = root_of(panel)
    assert root.layout.overflow == "hidden" and root.layout.width in (None, "", "auto")
    assert isinstance(panel.status, widgets.HTML), "a Label cuts a long status line off; HTML wraps it"
    for widget in tree(root):
        # width 100% plus the 2 px margins ipywidgets gives every widget was the 4 px overflow
        assert getattr(widget.layout, "width", None) != "100%", widget
        if isinstance(widget, widgets.HBox):
            assert widget.layout.flex_flow == "row wrap", "a row that cannot wrap overflows a narrow notebook"
        description = re.sub("<[^>]+>", "", getattr(widget, "description", ""))  # the text it shows
        if isinstance(widget, DescriptionWidget) and len(description) > 8 and \
                not isinstance(widget, (widgets.Button, widgets.Checkbox)):
            assert widget.style.description_width == "initial", f"{description!r} would be cut off"
