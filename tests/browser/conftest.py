"""Fixtures for the real-browser tests: one JupyterLab server and one headless Chromium per session.

The tests drive Debian's ``chromium`` (``/usr/bin/chromium``, or ``$QMCKIT_CHROMIUM``) through Playwright
for Python; Playwright's own browser downloads are never used. JupyterLab runs on 127.0.0.1 with a random
token, in a temporary folder, with its own settings, workspaces, config and runtime folders (nothing of
the user's JupyterLab set-up leaks in, and nothing is written to the checkout) and ``QMCKIT_FAST=1``.

Without chromium, Playwright or JupyterLab the tests are skipped with the reason, except under CI (the
environment variable ``CI`` or ``QMCKIT_REQUIRE_BROWSER`` set), where a missing piece is an error: ``.ci/run``
installs chromium and sets ``QMCKIT_REQUIRE_BROWSER=1``.

Screenshots go to ``$QMCKIT_SCREENSHOTS`` or, by default, ``browser-screenshots/`` in pytest's base
temporary folder; the terminal summary prints the folder ("browser screenshots: PATH"). The browser tests
run after the rest of the session, when numba's on-disk cache already holds the kernels they use.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from _browser_support import CHROMIUM, REPORTS_KEY, missing_requirements, required

HERE = Path(__file__).resolve().parent
VIEWPORT = {"width": 1280, "height": 900}
SCREENSHOTS_KEY = pytest.StashKey[Path]()
LAB_LOG_KEY = pytest.StashKey[Path]()

# JupyterLab user settings for the test server: no news or update pop-ups over the page, and every cell
# rendered (no virtual scrolling, so what the test measures is laid out)
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def _is_browser_test(item) -> bool:
    return HERE in Path(item.path).resolve().parents


def pytest_collection_modifyitems(session, config, items):
    # the browser tests go last: by then the numba kernels they use are compiled and cached on disk (on a fresh
    # CI machine their first runs would otherwise spend their time compiling)
    browser = [item for item in items if _is_browser_test(item)]
    if browser and len(browser) < len(items):
        rest = [item for item in items if not _is_browser_test(item)]
        items[:] = rest + browser


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    item.stash.setdefault(REPORTS_KEY, {})[report.when] = report


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    folder = config.stash.get(SCREENSHOTS_KEY, None)
    if folder is None:
        return
    shots = sorted(folder.glob("*.png")) if folder.exists() else []
    terminalreporter.write_sep("-", "browser tests")
    terminalreporter.write_line(f"browser screenshots: {folder} ({len(shots)} PNG files)")
    log = config.stash.get(LAB_LOG_KEY, None)
    if log is not None:
        terminalreporter.write_line(f"JupyterLab server log: {log}")


# --- fixtures ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def browser_requirements():
    missing = missing_requirements()
    if missing:
        message = "browser tests need " + "; ".join(missing)
        if required():
            pytest.fail(message + " (CI or QMCKIT_REQUIRE_BROWSER is set: an error, not a skip)", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def screenshots(request, tmp_path_factory) -> Path:
    folder = Path(os.environ.get("QMCKIT_SCREENSHOTS") or tmp_path_factory.getbasetemp() / "browser-screenshots")
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    request.config.stash[SCREENSHOTS_KEY] = folder
    return folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab server: ``url(path)`` with the token, ``notebook_dir``, ``api()``."""

    base: str
    token: str
    notebook_dir: Path
    process: subprocess.Popen
    log: Path

    def url(self, path: str, **query) -> str:
        extra = "".join(f"&{k}" if v is True else f"&{k}={v}" for k, v in query.items())
        return f"{self.base}/{path.lstrip('/')}?token={self.token}{extra}"

    def api(self, method: str, path: str, body=None, timeout: float = 10.0):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.base}/api/{path.lstrip('/')}", data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
        return json.loads(text) if text.strip() else None

    def shutdown_kernels(self, notebook: str) -> None:
        """Shut down the kernel of every session of ``notebook`` (a path relative to ``notebook_dir``)."""
        for session in self.api("GET", "sessions") or []:
            if session.get("path") == notebook:
                self.api("DELETE", f"sessions/{session['id']}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@pytest.fixture(scope="session")
def lab(browser_requirements, tmp_path_factory, request):
    root = tmp_path_factory.mktemp("jupyterlab")
    notebook_dir = root / "notebooks"
    notebook_dir.mkdir()
    settings = root / "settings"
    for name, values in LAB_SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(os.environ)
    env.update({
        "QMCKIT_FAST": "1",
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(root / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(root / "config"),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        "IPYTHONDIR": str(root / "ipython"),
        "PYTHONUNBUFFERED": "1",
    })
    token = secrets.token_hex(24)
    port = _free_port()
    log = root / "jupyterlab.log"
    request.config.stash[LAB_LOG_KEY] = log
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.port_retries=0",
               "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", "--allow-root",
               f"--ServerApp.root_dir={notebook_dir}", "--LabApp.expose_app_in_browser=True"]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root,
                                   start_new_session=True)
    server = Lab(f"http://127.0.0.1:{port}", token, notebook_dir, process, log)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with status {process.returncode}:\n{server.log_tail()}",
                            pytrace=False)
            try:
                server.api("GET", "status", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer on port {port} within 120 s:\n{server.log_tail()}",
                                pytrace=False)
                time.sleep(0.25)
        yield server
    finally:
        _stop_server(server)


def _stop_server(server: Lab) -> None:
    process = server.process
    if process.poll() is None:
        try:
            server.api("POST", "shutdown", timeout=5)  # shuts down its kernels too
        except (urllib.error.URLError, OSError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    try:  # kernels it started live in its process group (start_new_session): none may outlive the session
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@pytest.fixture(scope="session")
def browser(browser_requirements):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def browser_context(browser):
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US")
    yield context
    context.close()
