"""``qmckit reproduce STUDY`` for every study (issue 26): the report machinery on tiny presets.

The physics of each reproduction is checked where the notebooks run the same functions at the fast preset (their
asserts compare with exact and published values in units of the error bar); here each study runs at a tiny preset
and the report must carry the published numbers, pulls that follow from the numbers beside them, and the three
files. ``tests/test_wheel_install.py`` runs the real fast presets from an installed wheel.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from qmckit.studies import reports

TINY = {
    "atoms": {"table71": {"He": (40, 300, 0.05)}, "ne_recipe": (10, 0.5)},
    "helium": {"sample": (1000, 2, 6, 1, 2), "scan": (32, 2, 30, 0.1), "structure": (64, 2, 6, 6)},
    "lattice": {"l3": (4, 300, 30), "table61": {5: (4, 60, 20)}, "timing": ((5,), 4)},
    "tio2": {"grids": (8, 12, 16), "points": 40, "sizes": ("Si",), "qsu": (7, 300)},
    "molecules": {"bare": (("h2", "sto-3g"),), "vmc": (40, 400), "configurations": 4, "fig7": (1, 4, 1)},
}


@pytest.fixture(params=sorted(TINY))
def tiny(request, monkeypatch):
    name = request.param
    monkeypatch.setitem(reports.STUDIES[name].load().PRESETS, "tiny", TINY[name])
    return name, reports.reproduce(name, "tiny")


def _pulls_follow(value, error, ref, ref_error, reported):
    return math.isclose(reported, (value - ref) / math.hypot(error, ref_error), rel_tol=1e-9, abs_tol=1e-12)


def test_every_study_offers_the_report_functions_and_both_presets():
    for name, study in reports.STUDIES.items():
        module = study.load()
        assert {"fast", "full"} <= set(module.PRESETS), name
        assert all(callable(getattr(module, f)) for f in ("reproduce", "markdown", "figure")), name


def test_a_tiny_report_has_the_published_numbers_and_its_pulls(tiny, tmp_path):
    name, result = tiny
    assert result["study"] == name and result["precision"] == "tiny" and result["wall_s"] > 0
    text = reports.STUDIES[name].load().markdown(result)
    if name == "atoms":
        (row,) = result["table71"]["rows"]
        assert "-2.89030(20)" in text and "-2.89040(4)" in text  # the thesis's and Sandsdalen's He
        assert _pulls_follow(*row["qmckit"], *row["thesis"], row["pull_thesis"])
        verdict = result["ne_verdict"]
        sands = verdict["sandsdalen"]
        assert sands["energy"][0] == -127.732 and "-127.2840(25)" in text  # his Table 8.9 point and his Δt → 0 value
        assert _pulls_follow(verdict["live"]["energy"][0], verdict["live"]["error"][0], sands["energy"][0],
                             sands["error"][0], verdict["live_pulls"][0])
    elif name == "helium":
        rows = {r["observable"]: r for r in result["comparison_live"]}
        e = rows["energy_per_particle"]
        assert e["published"] == -5.7974 and "-5.797(9)" in text  # e.dat's E/N
        assert _pulls_follow(e["mean"], e["error"], e["published"], e["published_error"], e["pull"])
        assert result["sample_live"]["n"] == 1000
    elif name == "lattice":
        for exact in result["exact_l3"].values():  # enumeration and ⟨Ψ|H|Ψ⟩: two independent exact numbers
            assert abs(exact["enumeration"] - exact["expectation"]) < 1e-10
        (row,) = result["table61"]
        assert row["thesis_table41"] == {"n_sites": 26, "n_electrons": 24, "n_pairs": 12}
        assert (row["n_sites"], row["n_electrons"], row["n_pairs"]) == (26, 24, 12)
        assert _pulls_follow(*row["energy_per_site"], *row["recorded"], row["pull_recorded"])
    elif name == "tio2":
        (row,) = result["table_ii"]
        assert row["paper_cpu_ms"] == 2.77 and row["ms"] > 0
        for c in result["convergence"].values():  # h⁴, h³, h² even on three coarse grids
            assert all(abs(o - e) < 0.5 for o, e in zip(c["orders"], (4, 3, 2))), c["orders"]
        assert {r["scheme"] for r in result["qsu"]["rows"]} >= {"pbp", "qs_batched", "qs_literal"}
    elif name == "molecules":
        (bare,) = result["bare"]
        assert _pulls_follow(*bare["energy"], bare["rhf"], 0.0, bare["pull"])
        assert result["precision_h2o"]["errors"]["f64"]["max"] <= 1e-14  # the float64 path is the module's E_L
        assert result["fig7_cpu"][0]["paper"]["total_standard"] == 3.2  # 001's acetic acid
    paths = reports.write_report(name, result, tmp_path)
    assert json.loads(open(paths["json"]).read())["command"] == f"qmckit reproduce {name} --precision tiny"
    assert open(paths["markdown"]).read().startswith(text)
    assert open(paths["figure"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_cli_offers_every_study_and_refuses_a_bad_precision():
    res = subprocess.run([sys.executable, "-m", "qmckit", "reproduce", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and all(name in res.stdout for name in reports.STUDIES)
    res = subprocess.run([sys.executable, "-m", "qmckit", "reproduce", "atoms", "--precision", "huge"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "--precision" in res.stderr and len(res.stderr.strip().splitlines()) == 1
