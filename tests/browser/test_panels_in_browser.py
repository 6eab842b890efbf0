"""The notebooks' panels in a real browser: JupyterLab 4 in headless Chromium, driven by Playwright.

For each panel type (the tour's BosonPanel, bec's DMCPanel, atoms' AtomPanel and MoleculePanel,
lattice_rvb's LatticePanel, tio2_orbitals' OrbitalsPanel, scans' ScanPanel, quantum_dots' OptimizePanel) a
notebook is built in the server's folder from the real one: its title, its set-up cell (less the lines a spec
leaves out, such as the scans notebook's Dask cluster), the markdown cell before the panel and the cell that
constructs the panel, cut after its ``display(...)`` (the ``run_sync()`` and asserts that follow are what the
browser does here by hand), then a cell that tags the panel's widgets with CSS classes (``bt-panel`` on the whole panel,
``bt-<attribute>`` on each widget attribute: ``bt-run_button``, ``bt-progress``, ``bt-status``, ``bt-plot``,
``bt-walkers``, …, and ``bt-<key>`` on the widgets of a dict attribute, such as ScanPanel's ``boxes``:
``bt-alpha``). The notebook is opened in JupyterLab, its cells run, and then, per panel, as a student would:

* run it once with the notebook's settings, change controls (walkers, steps, seed), press Run: the old
  figure goes at once, the status says "starting…", the panel is busy (Run disabled, Stop enabled), the
  progress bar advances (naming its phase, where the spec says which), the figure appears and changes while
  the run goes on; press Stop: the run stops within 2 s and the progress bar stays where it is;
* enter a value the panel rejects and press Run: a one-line error in the status line, no figure;
* press Stop during equilibration: it stops within 2 s, and the progress bar moved during equilibration;
* press Profile (panels of one qmckit Run): the run's phases and Amdahl model replace the energy plot, and a
  second press brings the energy plot back;
* the panel fits the notebook: no horizontal overflow, no cut-off label, status line or dropdown.

Screenshots of every step go to the folder the terminal summary names.
"""
from __future__ import annotations

import copy
import importlib.util
import json
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from _browser_support import REPORTS_KEY, required, safe_name

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
STOP_LIMIT_S = 2.0  # issue 26: "clicks Stop and sees it stop within 2 s"
SLOW = 1000  # ms: Playwright's unit


@dataclass(frozen=True)
class PanelSpec:
    """One panel type and how the test drives it.

    ``long_run``: control values (attribute name → value) for a run of several seconds, long enough to see
    progress and live plots and to press Stop while it runs; ``equilibration_run``: values whose
    equilibration alone takes several seconds (None: the panel has no equilibration phase); ``bad``: a
    control and a value the panel must reject, with words its one-line error names. A panel that draws its
    figure only when a run ends (``live_plot=False``) shows the plot change with a short ``plot_run``.
    ``first_run``: values put over the notebook's own for the run that gives the panel its first figure (e.g.
    ScanPanel's ``workers=0``: no Dask cluster started for it); ``setup_drop``: regexes of whole lines of the
    notebook's set-up cell to leave out (each must match a line); ``progress_phase``: the description the
    progress bar shows while the long run goes (empty: not checked).
    """

    id: str
    notebook: str
    panel_class: str
    long_run: dict
    bad: tuple  # (control, value, words the error names)
    equilibration_run: dict | None = None
    no_equilibration_test: str = ""  # why the panel's equilibration cannot be stopped by hand (when it has none)
    live_plot: bool = True  # False: the figure is drawn when a run ends (checked with a short run, plot_run)
    plot_run: dict | None = None
    extra_statements: tuple = ()  # regexes of one-line statements of other cells the panel cell needs
    requires: tuple = ()  # importable modules the panel needs to run (else: skip; an error under CI)
    first_run: dict | None = None  # values over the notebook's own for the run that draws the first figure
    setup_drop: tuple = ()  # regexes of set-up cell lines the test notebook leaves out
    progress_phase: str = ""  # the progress bar's description while the long run goes ("": not checked)


PANELS = [
    PanelSpec("tour-BosonPanel", "00_tour.ipynb", "BosonPanel",
              long_run={"walkers": 100, "steps": 24000, "seed": 8},
              equilibration_run={"walkers": 200, "steps": 50000, "seed": 9},
              bad=("alpha", "-0.5", ("alpha",))),
    PanelSpec("bec-DMCPanel", "bec.ipynb", "DMCPanel",
              long_run={"walkers": 200, "steps": 18000, "seed": 12},
              equilibration_run={"walkers": 200, "steps": 50000, "seed": 13},
              bad=("alpha", "-0.5", ("alpha",)), extra_statements=(r"B2\s*=.*",)),
    PanelSpec("atoms-AtomPanel", "atoms.ipynb", "AtomPanel",
              long_run={"walkers": 500, "steps": 30000, "seed": 2},
              equilibration_run={"walkers": 1000, "steps": 80000, "seed": 3},
              bad=("alpha", "-1", ("alpha",))),
    PanelSpec("atoms-MoleculePanel", "atoms.ipynb", "MoleculePanel",
              long_run={"walkers": 1000, "steps": 24000, "seed": 4},
              equilibration_run={"walkers": 1000, "steps": 125000, "seed": 5},
              bad=("basis", "no-such-basis", ("basis", "no-such-basis")), requires=("pyscf",)),
    PanelSpec("lattice-LatticePanel", "lattice_rvb.ipynb", "LatticePanel",
              long_run={"chains": 32, "sweeps": 45000, "seed": 8},
              equilibration_run={"chains": 32, "sweeps": 250000, "seed": 9},
              bad=("L", "4", ("L",))),
    PanelSpec("tio2-OrbitalsPanel", "tio2_orbitals.ipynb", "OrbitalsPanel",
              long_run={"sweeps": 600000}, live_plot=False, plot_run={"sweeps": 3000},
              bad=("sweeps", "10", ("sweeps",)),
              no_equilibration_test="OrbitalsPanel equilibrates a fixed 500 sweeps (well under a second): "
                                    "too short to press Stop in"),
    # workers=0: the points run one by one in the kernel (~0.3 s each at the notebook's 100 walkers × 1000 steps),
    # so Stop is seen between points and no Dask cluster is started; the set-up cell's cluster is left out
    PanelSpec("scans-ScanPanel", "scans.ipynb", "ScanPanel",
              long_run={"alpha": "0.40:0.60:40", "workers": 0, "seed": 5},
              first_run={"workers": 0},
              bad=("alpha", "0.4:x:5", ("alpha",)),
              setup_drop=(r"client, close_cluster = start_executor\(.*", r"print\(.*dashboard_link.*"),
              progress_phase="points",
              no_equilibration_test="ScanPanel has no equilibration phase of its own: its progress counts "
                                    "points, each point equilibrates inside its own run (well under a "
                                    "second here), and Stop is seen between points"),
    # each step samples, differentiates and checks its candidates (about 0.5 s at 100 walkers × 100 samples), and the
    # plot is redrawn after every step; Stop is seen before every sample of a step
    PanelSpec("qdots-OptimizePanel", "quantum_dots.ipynb", "OptimizePanel",
              long_run={"steps": 200, "walkers": 100, "samples": 100, "seed": 5},
              bad=("alpha", "-1", ("alpha",)), progress_phase="steps",
              setup_drop=(r"REFERENCES = json\.loads\(.*",),  # ../data is not beside the test's notebook
              no_equilibration_test="OptimizePanel has no equilibration phase of its own: its progress counts "
                                    "steps, each step's sampling equilibrates for well under a second, and Stop "
                                    "is seen before every sample"),
]

TAG_CODE = """
# added by tests/browser: CSS classes the browser test finds the panel's widgets by
import ipywidgets as _bt_widgets


def _bt_tag(panel):
    root = getattr(panel, "widget", panel)
    root.add_class("bt-panel")
    attributes = vars(panel)
    for name, value in attributes.items():
        if isinstance(value, _bt_widgets.DOMWidget) and value is not root:
            value.add_class(f"bt-{name}")
        elif isinstance(value, dict):  # a dict of widgets (ScanPanel's boxes): bt-<key>, unless an attribute has it
            for key, widget in value.items():
                if isinstance(widget, _bt_widgets.DOMWidget) and key not in attributes:
                    widget.add_class(f"bt-{key}")


_bt_tag(PANEL)
"""

# window.__bt: what the tests read from the page (all relative to the panel tagged bt-panel)
JS_HELPERS = r"""
window.__bt = {
  root() { return document.querySelector('.bt-panel'); },
  el(name) { const r = this.root(); return r ? r.querySelector('.bt-' + name) : null; },
  hash(s) {
    let h = 0;
    for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    return s.length + ':' + h;
  },
  button(name, text) {
    const tagged = this.el(name);
    if (tagged) return tagged;
    const r = this.root();
    return r ? [...r.querySelectorAll('button')].find(b => b.textContent.trim() === text) || null : null;
  },
  run() { return this.button('run_button', 'Run'); },
  stop() { return this.button('stop_button', 'Stop'); },
  barValue(progress) {
    const bar = progress.querySelector('.progress-bar');
    if (!bar) return null;
    const w = bar.style.width || bar.style.height;
    if (w && w.endsWith('%')) return parseFloat(w) / 100;
    const track = bar.parentElement.getBoundingClientRect(), r = bar.getBoundingClientRect();
    return track.width ? r.width / track.width : 0;
  },
  progressEl() {
    const r = this.root();
    return this.el('progress') || (r ? r.querySelector('.widget-hprogress, .widget-vprogress') : null);
  },
  progress() { const p = this.progressEl(); return p ? this.barValue(p) : null; },
  phase() {  // the progress bar's description
    const p = this.progressEl(), label = p ? p.querySelector('.widget-label') : null;
    return label ? label.textContent.trim() : null;
  },
  allProgress() {
    const r = this.root();
    return r ? [...r.querySelectorAll('.widget-hprogress, .widget-vprogress')].map(p => this.barValue(p)) : [];
  },
  plot() {
    const p = this.el('plot');
    const imgs = p ? [...p.querySelectorAll('img')] : [];
    return {n: imgs.length, hashes: imgs.map(i => this.hash(i.src || ''))};
  },
  status() { const s = this.el('status'); return s ? s.innerText.trim() : null; },
  busy() { const run = this.run(), stop = this.stop(); return !!(run && run.disabled && stop && !stop.disabled); },
  idle() { const run = this.run(), stop = this.stop(); return !!(run && !run.disabled && (!stop || stop.disabled)); },
  stopped() { return this.idle() && /stopped|paused/i.test(this.status() || ''); },
  state() { return {status: this.status(), progress: this.progress(), phase: this.phase(),
                    all_progress: this.allProgress(),
                    plot: this.plot(), busy: this.busy(), idle: this.idle()}; },
  record() {  // every text the status line shows, and every state, from now on
    const texts = [], states = [];
    const status = this.el('status');
    const snap = () => states.push(Object.assign({t: performance.now()}, this.state()));
    const watch = new MutationObserver(records => {
      for (const m of records) {
        if (status && status.contains(m.target)) {
          if (m.oldValue) texts.push(m.oldValue);
          for (const n of m.addedNodes) texts.push(n.textContent);
          for (const n of m.removedNodes) texts.push(n.textContent);
          texts.push(m.target.textContent);
        }
      }
      snap();
    });
    watch.observe(this.root(), {subtree: true, childList: true, attributes: true, characterData: true,
                                characterDataOldValue: true});
    snap();
    this.recording = {watch, texts, states};
  },
  recorded() {
    const r = this.recording;
    if (!r) return {texts: [], states: []};
    r.watch.disconnect();
    this.recording = null;
    return {texts: r.texts.map(t => (t || '').trim()).filter(t => t), states: r.states};
  },
  layoutProblems() {  // what sticks out of the notebook or is cut off
    const root = this.root(), problems = [];
    const area = root.closest('.jp-OutputArea-output') || root.parentElement;
    const a = area.getBoundingClientRect();
    const describe = el => {
      const text = (el.innerText || el.value || '').trim().replace(/\s+/g, ' ');
      return `<${el.tagName.toLowerCase()} class="${el.className}">` + (text ? ` "${text.slice(0, 70)}"` : '');
    };
    const r = root.getBoundingClientRect();
    if (r.right > a.right + 0.5)
      problems.push(`the panel is ${(r.right - a.right).toFixed(1)} px wider than its output area`);
    const notebook = root.closest('.jp-WindowedPanel-outer') || root.closest('.jp-Notebook');
    for (const [what, el] of [['the output area', area], ['the panel', root], ['the notebook', notebook]]) {
      if (el && el.scrollWidth > el.clientWidth + 1)
        problems.push(`${what} scrolls horizontally (${el.scrollWidth} px of content in ${el.clientWidth} px)`);
    }
    let outside = 0;
    for (const el of root.querySelectorAll('*')) {
      const e = el.getBoundingClientRect();
      if (e.width > 0 && e.right > a.right + 0.5 && el.offsetParent !== null && outside++ < 5)
        problems.push(`${describe(el)} ends ${(e.right - a.right).toFixed(1)} px right of the output area`);
    }
    for (const el of root.querySelectorAll('.widget-label, .widget-html-content, label, button')) {
      if (el.offsetParent === null || !el.clientWidth) continue;
      if (el.scrollWidth > el.clientWidth + 1)
        problems.push(`cut off: ${describe(el)} (${el.scrollWidth} px of text in ${el.clientWidth} px)`);
    }
    const canvas = document.createElement('canvas').getContext('2d');
    for (const sel of root.querySelectorAll('select')) {
      if (sel.offsetParent === null || sel.multiple || sel.selectedIndex < 0) continue;
      const cs = getComputedStyle(sel);
      canvas.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const text = sel.options[sel.selectedIndex].text;
      const room = sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 16;  // the arrow
      const need = canvas.measureText(text).width;
      if (need > room + 1)
        problems.push(`cut off: dropdown "${text}" (${need.toFixed(0)} px of text in ${room.toFixed(0)} px)`);
    }
    return problems;
  },
};
"""


# the notebook's kernel is connected and idle (JupyterLab is started with expose_app_in_browser)
KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.sessionContext || !w.sessionContext.isReady) return false;
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}"""


def _source(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def _cell(kind: str, source: str) -> dict:
    cell = {"cell_type": kind, "id": uuid.uuid4().hex[:12], "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def build_notebook(spec: PanelSpec, folder: Path) -> Path:
    """The notebook of ``spec``: the real notebook's title, set-up cell, the markdown before the panel cell and
    the panel cell up to its ``display(...)``, then the tagging lines. Raises AssertionError if the real
    notebook no longer has such a cell (the test then says which)."""
    original = json.loads((NOTEBOOKS / spec.notebook).read_text())
    cells = original["cells"]
    code = [i for i, c in enumerate(cells) if c["cell_type"] == "code"]
    constructs = re.compile(rf"^(\w+)\s*=\s*{spec.panel_class}\(", re.M)
    found = [(i, constructs.search(_source(cells[i]))) for i in code]
    found = [(i, m) for i, m in found if m]
    assert found, f"notebooks/{spec.notebook} has no cell that constructs a {spec.panel_class}"
    index, match = found[0]
    kept = []
    for line in _source(cells[index]).splitlines():
        kept.append(line)
        if re.match(r"\s*display\(", line):
            break
    else:
        raise AssertionError(f"the {spec.panel_class} cell of notebooks/{spec.notebook} has no display(...) line")
    panel_source = "\n".join(kept)

    new = []
    if cells[0]["cell_type"] == "markdown":
        new.append(copy.deepcopy(cells[0]))
    if code[0] != index:
        setup = copy.deepcopy(cells[code[0]])  # the set-up cell: imports, SIZES, …
        if spec.setup_drop:
            lines = _source(setup).splitlines()
            for pattern in spec.setup_drop:
                regex = re.compile(rf"\s*{pattern}")
                assert any(regex.fullmatch(line) for line in lines), (
                    f"the set-up cell of notebooks/{spec.notebook} has no line matching {pattern!r} to leave out")
                lines = [line for line in lines if not regex.fullmatch(line)]
            setup["source"] = "\n".join(lines)
        new.append(setup)
    statements = []
    for pattern in spec.extra_statements:
        regex = re.compile(rf"^{pattern}$", re.M)
        hits = [m.group(0) for i in code for m in [regex.search(_source(cells[i]))] if m]
        assert hits, f"notebooks/{spec.notebook} has no line matching {pattern!r} (the panel cell needs it)"
        statements.append(hits[0])
    if statements:
        new.append(_cell("code", "\n".join(statements)))
    if index > 0 and cells[index - 1]["cell_type"] == "markdown":
        new.append(copy.deepcopy(cells[index - 1]))
    new.append(_cell("code", panel_source))
    new.append(_cell("code", TAG_CODE.strip().replace("PANEL", match.group(1))))
    for cell in new:
        if cell["cell_type"] == "code":
            cell.update(execution_count=None, outputs=[])
        cell.setdefault("id", uuid.uuid4().hex[:12])
    notebook = {"cells": new, "nbformat": 4, "nbformat_minor": max(5, original.get("nbformat_minor", 5)),
                "metadata": dict(original.get("metadata", {}),
                                 kernelspec={"name": "python3", "display_name": "Python 3 (ipykernel)",
                                             "language": "python"})}
    path = folder / f"{Path(spec.notebook).stem}-{spec.panel_class}.ipynb"
    path.write_text(json.dumps(notebook, indent=1))
    return path


class PanelPage:
    """A notebook page in the browser with one tagged panel; the methods act as a user would."""

    def __init__(self, page, spec: PanelSpec, screenshots: Path):
        self.page, self.spec, self.screenshots = page, spec, screenshots
        self.root = page.locator(".bt-panel").first
        self.initial: dict = {}
        self.shots: list[Path] = []

    # --- reading ------------------------------------------------------------------------------------------
    def js(self, expression: str, arg=None):
        return self.page.evaluate(expression, arg)

    def state(self) -> dict:
        return self.js("() => __bt.state()")

    def status(self) -> str:
        return self.js("() => __bt.status()") or ""

    def progress(self):
        return self.js("() => __bt.progress()")

    def plot(self) -> dict:
        return self.js("() => __bt.plot()")

    def wait(self, what: str, predicate: str, arg=None, timeout: float = 30.0):
        """Wait until the JS ``predicate`` (a function of ``arg``) is truthy; fail saying ``what`` did not happen."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            return self.page.wait_for_function(predicate, arg=arg, timeout=timeout * SLOW, polling=50).json_value()
        except PlaywrightTimeout:
            raise AssertionError(f"{self.spec.id}: {what} did not happen within {timeout:g} s; "
                                 f"panel state: {self.state()}") from None

    def check(self, predicate: str, arg=None, timeout: float = 5.0) -> bool:
        """``wait`` that answers instead of failing: True if ``predicate`` came true within ``timeout`` s."""
        try:
            self.wait("", predicate, arg, timeout)
        except AssertionError:
            return False
        return True

    def control(self, name: str):
        tagged = self.root.locator(f".bt-{name}")
        assert tagged.count(), f"{self.spec.id}: the panel has no control {name!r}"
        return tagged.locator("input, select, textarea").first

    def value_of(self, name: str) -> str:
        return self.control(name).input_value()

    # --- acting -------------------------------------------------------------------------------------------
    def set(self, name: str, value) -> None:
        """Type ``value`` into control ``name`` (or choose it in a dropdown) and leave the field, as a user does."""
        control = self.control(name)
        if control.evaluate("e => e.tagName") == "SELECT":
            control.select_option(label=str(value))
        else:
            control.fill(str(value))
            control.evaluate("e => e.blur()")  # the change event: ipywidgets sends the value to the kernel
        assert control.input_value() == str(value), (
            f"{self.spec.id}: control {name!r} shows {control.input_value()!r} after entering {value!r}")

    def set_many(self, values: dict) -> None:
        for name, value in values.items():
            self.set(name, value)

    def click(self, which: str) -> None:
        handle = self.js(f"() => !!__bt.{which}()")
        assert handle, f"{self.spec.id}: the panel has no {which.title()} button"
        button = self.page.evaluate_handle(f"() => __bt.{which}()").as_element()
        button.click()

    def ensure_idle(self, timeout: float = 120.0) -> None:
        """Leave the panel idle: stop a run that is still going (a failed test may leave one)."""
        if self.js("() => __bt.busy()"):
            self.click("stop")
        self.wait("the panel becoming idle", "() => __bt.idle()", timeout=timeout)

    def run_to_completion(self, timeout: float = 240.0) -> None:
        """Press Run and wait until the panel is idle again with a figure."""
        self.click("run")
        self.wait("a figure, with the panel idle again after Run", "() => __bt.idle() && __bt.plot().n > 0",
                  timeout=timeout)

    def ensure_figure(self) -> None:
        """A figure in the plot area: if there is none, a short run with the notebook's settings."""
        if self.plot()["n"]:
            return
        self.set_many(self.initial | (self.spec.first_run or {}))
        self.run_to_completion()

    def shot(self, name: str, whole_page: bool = False) -> Path:
        """A screenshot of the panel across the notebook's width (``whole_page``: the whole window)."""
        path = self.screenshots / f"{safe_name(self.spec.id)}-{len(self.shots) + 1:02d}-{safe_name(name)}.png"
        clip = None
        try:
            self.root.evaluate("e => e.scrollIntoView({block: 'center'})")
            if not whole_page:
                box = self.root.bounding_box()
                notebook = self.page.locator(".jp-NotebookPanel-notebook").last.bounding_box() or box
                view = self.page.viewport_size
                x, y = max(0.0, notebook["x"]), max(notebook["y"], box["y"] - 16)
                clip = {"x": x, "y": y, "width": min(view["width"], notebook["x"] + notebook["width"]) - x,
                        "height": min(view["height"], box["y"] + box["height"] + 24) - y}
        except Exception:  # noqa: BLE001 - a screenshot must not hide the test's own result: then the window
            clip = None
        self.page.screenshot(path=str(path), clip=clip)
        self.shots.append(path)
        return path

    def tracebacks(self) -> list[str]:
        """Texts of error outputs in the notebook (a failing cell or callback)."""
        return self.js("""() => [...document.querySelectorAll('.jp-OutputArea-output')]
            .filter(o => /Traceback|Error:/.test(o.innerText) && !o.querySelector('.bt-panel'))
            .map(o => o.innerText.slice(-800))""")


def _controls_of(spec: PanelSpec) -> set:
    names = set(spec.long_run) | {spec.bad[0]} | set(spec.first_run or {})
    if spec.equilibration_run:
        names |= set(spec.equilibration_run)
    return names


@pytest.fixture(scope="module", params=PANELS, ids=[spec.id for spec in PANELS])
def panel(request, lab, browser_context, screenshots):
    """The notebook of one panel type open in the browser, its cells run, the panel ready; at the end the
    page is closed and its kernel shut down."""
    spec: PanelSpec = request.param
    for module in spec.requires:
        if importlib.util.find_spec(module) is None:
            message = f"{spec.panel_class} needs {module} (pip install -e '.[test]')"
            if required():
                pytest.fail(message, pytrace=False)
            pytest.skip(message)
    path = build_notebook(spec, lab.notebook_dir)
    page = browser_context.new_page()
    page.set_default_timeout(60 * SLOW)
    page.add_init_script(JS_HELPERS)
    console_errors = []
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    workspace = f"bt-{safe_name(spec.id)}-{uuid.uuid4().hex[:6]}"
    try:
        page.goto(lab.url(f"lab/workspaces/{workspace}/tree/{path.name}", reset=True))
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90 * SLOW)
        page.wait_for_function(KERNEL_IDLE, timeout=120 * SLOW)  # run-all before that asks for a kernel
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        outcome = page.wait_for_function(
            """() => {
                if (document.querySelector('.bt-panel .bt-status')) return 'panel';
                const error = [...document.querySelectorAll('.jp-OutputArea-output')]
                    .find(o => /Traceback/.test(o.innerText));
                return error ? 'error: ' + error.innerText.slice(-1500) : false;
            }""", timeout=180 * SLOW).json_value()
        if outcome != "panel":
            pytest.fail(f"{spec.id}: the notebook cell failed in the browser:\n{outcome}", pytrace=False)
        panel = PanelPage(page, spec, screenshots)
        # wait for the kernel to finish the cell, then note the notebook's own settings
        page.wait_for_function(KERNEL_IDLE, timeout=120 * SLOW)
        panel.initial = {name: panel.value_of(name) for name in _controls_of(spec)
                         if panel.root.locator(f".bt-{name}").count()}
        panel.console_errors = console_errors
        panel.shot("opened-page", whole_page=True)
        yield panel
    finally:
        try:
            page.close()
        finally:
            lab.shutdown_kernels(path.name)


@pytest.fixture(autouse=True)
def _screenshot_on_failure(request):
    yield
    reports = request.node.stash.get(REPORTS_KEY, {})
    if "panel" in request.fixturenames and reports.get("call") is not None and reports["call"].failed:
        try:
            request.getfixturevalue("panel").shot(f"FAILED-{request.node.originalname}")
        except Exception:  # noqa: BLE001 - the failure itself is what matters
            pass


# --- the tests --------------------------------------------------------------------------------------------
def test_run_progress_plot_and_stop(panel: PanelPage):
    spec = panel.spec
    panel.ensure_idle()
    panel.ensure_figure()  # a finished short run: the plot holds its figure
    old = panel.plot()["hashes"]
    assert old, f"{spec.id}: no figure after a completed run"
    problems = []  # what the panel gets wrong but the test can go on past

    panel.set_many(spec.long_run)  # a changed control: Run starts a new run
    panel.js("() => __bt.record()")
    panel.click("run")
    if not panel.check("old => !__bt.plot().hashes.some(h => old.includes(h))", old, timeout=2.0):
        problems.append("the last run's figure stayed up for more than 2 s after Run started a new run")
    panel.wait("the busy state (Run disabled, Stop enabled)", "() => __bt.busy()", timeout=10)
    first = panel.wait("the progress bar moving off 0 (and off the last run's 100 %)",
                       "() => { const v = __bt.progress(); return v > 0 && v < 1 ? v : false; }", timeout=120)
    panel.wait("the progress bar advancing", "v => __bt.progress() > v", first, timeout=30)
    if spec.progress_phase and not panel.check("p => __bt.busy() && __bt.phase() === p", spec.progress_phase,
                                               timeout=5):
        problems.append(f"the progress bar did not name its phase {spec.progress_phase!r} while the run went on "
                        f"(it showed {panel.js('() => __bt.phase()')!r})")
    if spec.live_plot:
        h1 = panel.wait("a figure of the new run", """old => { const p = __bt.plot();
            return p.n > 0 && !p.hashes.some(h => old.includes(h)) ? p.hashes[0] : false; }""", old, timeout=30)
        panel.wait("the figure changing while the run goes on", """seen => { const p = __bt.plot();
            return p.n > 0 && !p.hashes.some(h => seen.includes(h)); }""", old + [h1], timeout=30)
    panel.shot("running")
    texts = panel.js("() => __bt.recorded()")["texts"]
    if not any(re.search(r"starting", t, re.I) for t in texts):
        problems.append(f"the status never said 'starting…' when the new run started (it showed {texts[:6]})")
    assert panel.js("() => __bt.busy()"), (
        f"{spec.id}: the run of {spec.long_run} ended before Stop could be pressed ({panel.status()!r}); "
        "make the test's long_run bigger")

    panel.click("stop")
    pressed = time.monotonic()
    panel.wait("the run stopping after Stop (status 'stopped', Run enabled)", "() => __bt.stopped()", timeout=60)
    took = time.monotonic() - pressed
    panel.shot("stopped")
    at_stop = panel.progress()
    panel.page.wait_for_timeout(1000)  # the bar must not move after the stop
    after = panel.state()
    if took > STOP_LIMIT_S:
        problems.append(f"Stop took {took:.1f} s (limit {STOP_LIMIT_S:g} s)")
    if after["progress"] != at_stop:
        problems.append(f"the progress bar moved after the stop: {at_stop} → {after['progress']}")
    if not (0 < at_stop < 1):
        problems.append(f"the progress bar shows {at_stop} after Stop (expected part of the run)")
    if spec.live_plot and not after["plot"]["n"]:
        problems.append("the stopped run shows no figure")
    if not spec.live_plot:  # the figure comes at the end of a run: a short one with other settings
        panel.set_many(spec.plot_run)
        panel.run_to_completion()
        panel.shot("short-run-done")
        if any(h in old for h in panel.plot()["hashes"]):
            problems.append(f"the figure did not change after a run with {spec.plot_run}")
    assert not problems, f"{spec.id}: " + "; ".join(problems)
    assert not panel.tracebacks(), f"{spec.id}: error output in the notebook: {panel.tracebacks()}"


def test_bad_input_gives_one_line_error_and_clears_plot(panel: PanelPage):
    spec = panel.spec
    name, bad, words = spec.bad
    panel.ensure_idle()
    panel.ensure_figure()
    assert panel.plot()["n"], f"{spec.id}: no figure before the bad input"
    original = panel.value_of(name)
    panel.set(name, bad)
    try:
        panel.click("run")
        panel.wait(f"an error in the status line for {name} = {bad}", "() => /error/i.test(__bt.status() || '')",
                   timeout=60)
        cleared = panel.check("() => __bt.plot().n === 0", timeout=3)
        panel.shot(f"error-{name}")
        status, state = panel.status(), panel.state()
        problems = []
        if not cleared:
            problems.append("the plot still shows the last run's figure")
        if "\n" in status or "Traceback" in status or len(status) > 300:
            problems.append(f"the error is not one line: {status!r}")
        missing = [w for w in words if w.lower() not in status.lower()]
        if missing:
            problems.append(f"the error {status!r} does not name {missing}")
        if not state["idle"]:
            problems.append(f"the panel is not ready for the next Run after the error: {state}")
        if panel.tracebacks():
            problems.append(f"error output in the notebook: {panel.tracebacks()}")
        assert not problems, f"{spec.id}, {name} = {bad}: " + "; ".join(problems)
    finally:
        panel.set(name, original)


def test_stop_during_equilibration(panel: PanelPage):
    spec = panel.spec
    if spec.equilibration_run is None:
        pytest.skip(spec.no_equilibration_test or f"{spec.panel_class} has no equilibration phase")
    panel.ensure_idle()
    panel.set_many(spec.equilibration_run)
    panel.click("run")
    panel.wait("the status saying the run equilibrates", "() => /equilibr/i.test(__bt.status() || '')", timeout=120)
    start = panel.state()
    # progress over equilibration: some progress bar of the panel moves while the status says it equilibrates
    # (given 1.5 s, so that Stop still comes early in an equilibration of several seconds)
    moved = panel.check("() => /equilibr/i.test(__bt.status() || '') && __bt.allProgress().some(v => v > 0)",
                        timeout=1.5)
    still = panel.state()
    panel.shot("equilibrating")
    assert re.search(r"equilibr", still["status"] or "", re.I), (
        f"{spec.id}: equilibration of {spec.equilibration_run} ended before Stop could be pressed; make it bigger")
    panel.click("stop")
    pressed = time.monotonic()
    panel.wait("the run stopping after Stop during equilibration", "() => __bt.stopped()", timeout=120)
    took = time.monotonic() - pressed
    panel.shot("stopped-in-equilibration")
    problems = []
    if took > STOP_LIMIT_S:
        problems.append(f"Stop during equilibration took {took:.1f} s (limit {STOP_LIMIT_S:g} s)")
    if not moved:
        problems.append(f"no progress bar moved during equilibration (status {start['status']!r}, "
                        f"bars {still['all_progress']})")
    assert not problems, f"{spec.id}: " + "; ".join(problems)


def test_profile_view_shows_the_run_and_goes_back(panel: PanelPage):
    """The Profile toggle (issue 31): after a run it swaps the energy plot for the run's phases and their Amdahl
    model, with nothing sticking out of the notebook, and pressed again it brings the energy plot back."""
    spec = panel.spec
    if not panel.root.locator(".bt-profile_button").count():
        pytest.skip(f"{spec.panel_class} has no Profile view (its runs are not one qmckit Run with a profile)")
    panel.ensure_idle()
    panel.ensure_figure()
    energy = panel.plot()["hashes"]
    toggle = panel.root.locator(".bt-profile_button")
    toggle.click()
    profile = panel.wait("the Profile view replacing the energy plot", """old => { const p = __bt.plot();
        return p.n === 1 && !p.hashes.some(h => old.includes(h)) ? p.hashes[0] : false; }""", energy, timeout=30)
    panel.shot("profile-view")
    problems = panel.js("() => __bt.layoutProblems()")
    toggle.click()
    panel.wait("the energy plot coming back after the second press", """shown => { const p = __bt.plot();
        return p.n > 0 && !p.hashes.includes(shown); }""", profile, timeout=30)
    assert not problems, f"{spec.id}, Profile view: " + "; ".join(problems)
    assert not panel.tracebacks(), f"{spec.id}: error output in the notebook: {panel.tracebacks()}"


def test_panel_fits_the_notebook(panel: PanelPage):
    spec = panel.spec
    panel.ensure_idle()
    panel.shot("layout")
    problems = panel.js("() => __bt.layoutProblems()")
    assert not problems, f"{spec.id}: " + "; ".join(problems)
    assert not panel.console_errors, f"{spec.id}: JavaScript errors in the page: {panel.console_errors}"
