"""data/atoms.json (study 002's Table 7.1 and the values around it) against the study notes, and the
helpers of qmckit.studies.atoms."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from qmckit.runs import RunConfig
from qmckit.stats import extrapolate, format_value_error
from qmckit.studies.atoms import (ELEMENTS, SANDSDALEN_SAMPLER, THESIS_SAMPLER, dt_scan, gpu_dmc, markdown_table71,
                                  nuclear_cusp_coefficient, pull, reference, reference_data, table71_rows, weighted_mean)
from qmckit.systems.atom import ELEMENTS as ATOM_PARAMETERS
from qmckit.systems.atom import REFERENCE_ENERGIES, noninteracting_energy

# ../shared/seeds/notes/002-bec-atoms-opencl.md, §1.1 and §3.1 (Table 7.1)
NOTES_TABLE_7_1 = {  # element: (alpha, beta, thesis VMC, its error, Sandsdalen VMC)
    "He": (1.839, 0.348, -2.8903, 2e-4, -2.89040),
    "Be": (3.925, 0.109, -14.5015, 9e-4, -14.50220),
    "Ne": (9.546, 0.177, -127.4598, 3e-3, -127.284),
}
NOTES_EXACT = {"He": -2.903724, "Be": -14.66736, "Ne": -128.9376}


def test_data_loads_with_sources_for_every_value():
    data = reference_data()
    assert set(data["atoms"]) == set(ELEMENTS)
    for element, atom in data["atoms"].items():
        assert atom["exact_source"] in data["sources"]
        for key in ("thesis", "sandsdalen"):
            assert key in data["sources"]
        if "fn_dmc_hf_nodes" in atom:
            assert atom["fn_dmc_hf_nodes"]["source"] in data["sources"]


@pytest.mark.parametrize("element", ELEMENTS)
def test_table_7_1_matches_the_notes_and_the_atom_module(element):
    alpha, beta, thesis, thesis_error, sandsdalen = NOTES_TABLE_7_1[element]
    atom = reference_data()["atoms"][element]
    assert (atom["alpha"], atom["beta"]) == (alpha, beta) == ATOM_PARAMETERS[element][1:]
    assert atom["z"] == ATOM_PARAMETERS[element][0]
    assert reference(element, "vmc", "thesis") == (thesis, thesis_error)
    assert reference(element, "vmc", "sandsdalen")[0] == sandsdalen
    assert REFERENCE_ENERGIES[element]["thesis"] == (thesis, thesis_error)
    assert REFERENCE_ENERGIES[element]["sandsdalen"][0] == sandsdalen
    assert atom["exact"][0] == NOTES_EXACT[element]
    assert atom["noninteracting"] == noninteracting_energy(element, atom["z"]) == {"He": -4, "Be": -20, "Ne": -200}[element]


def test_the_ne_alternative_exact_value_is_the_one_the_atom_module_uses():
    assert reference("Ne", "exact_alt")[0] == REFERENCE_ENERGIES["Ne"]["exact"][0] == -128.9383
    assert abs(reference("Ne", "exact")[0] - reference("Ne", "exact_alt")[0]) < 1e-3


@pytest.mark.parametrize("element", ELEMENTS)
def test_sandsdalen_extrapolation_is_a_weighted_line_through_his_three_time_steps(element):
    # His Tables 8.7-8.9 (middle step printed as 0.25; it is 0.025): the weighted least-squares line
    # of study 002's recipe reproduces his extrapolated value and error, which fixes both readings
    points = reference_data()["atoms"][element]["sandsdalen_dt_points"]
    fit = extrapolate(points["dt"], points["energy"], points["error"], order=1, n_points=3)
    value, error = reference(element, "vmc", "sandsdalen")
    assert abs(fit.energy - value) < 0.25 * error  # his values are printed to 5 (He, Be) and 3 (Ne) decimals
    assert fit.error == pytest.approx(error, rel=0.05)
    if element != "He":
        misread = extrapolate([0.05, 0.25, 0.01], points["energy"], points["error"], order=1, n_points=3)
        assert abs(misread.energy - value) > 10 * error


def test_ne_conflict_is_far_outside_both_error_bars():
    thesis, sandsdalen = reference("Ne", "vmc", "thesis"), reference("Ne", "vmc", "sandsdalen")
    assert abs(pull(*thesis, sandsdalen)) > 40


@pytest.mark.parametrize("element", ["Be", "Ne"])
def test_fixed_node_energies_lie_between_exact_and_vmc(element):
    fn = reference(element, "fn_dmc_hf_nodes", "casino")
    exact = reference(element, "exact")[0]
    assert exact < fn[0] < reference(element, "vmc", "thesis")[0]
    assert 0.005 < fn[0] - exact < 0.02  # HF-node fixed-node errors: about 10 (Be) and 14 (Ne) mE_h
    assert reference_data()["atoms"][element]["fn_dmc_hf_nodes"]["same_node_as_this_trial_function"] == (element == "Be")


def test_pull_and_weighted_mean():
    assert pull(1.0, 0.3, (0.0, 0.4)) == pytest.approx(2.0)
    assert math.isnan(pull(1.0, 0.0, (1.0, 0.0)))
    mean, error, chi2, dof = weighted_mean([1.0, 2.0], [1.0, 1.0])
    assert (mean, dof) == (1.5, 1) and error == pytest.approx(1 / math.sqrt(2)) and chi2 == pytest.approx(0.5)
    with pytest.raises(ValueError):
        weighted_mean([1.0], [0.0])


def test_table71_rows_and_markdown():
    rows = table71_rows({"He": (-2.8903, 0.0002), "Ne": (-127.40, 0.01)})
    assert [r["element"] for r in rows] == ["He", "Ne"]
    assert rows[0]["pull_thesis"] == pytest.approx(0.0)
    assert rows[1]["pull_sandsdalen"] == pytest.approx((-127.40 + 127.284) / math.hypot(0.01, 0.0025))
    text = markdown_table71(rows, caption="Table 7.1")
    assert text.startswith("Table 7.1") and "| He | 1.839 | 0.348 | -2.89030(20) | -2.89030(20) | +0.0 |" in text
    assert "-127.4598(30)" in text and "-127.2840(25)" in text


def test_published_sampler_options_are_valid_run_options():
    for options in (THESIS_SAMPLER, SANDSDALEN_SAMPLER):
        RunConfig(system="atom", params={"element": "Be"}, dt=0.01, walkers=2, steps=2, **options)


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")  # short series
def test_dt_scan_of_a_noninteracting_atom_is_exact_at_every_time_step():
    scan = dt_scan("He", [0.05, 0.02], walkers=10, simulated_time=1.0, seed=3, min_steps=20,
                   params={"alpha": 2.0, "jastrow": False, "ee": False}, **THESIS_SAMPLER)
    assert list(scan["steps"]) == [20, 50]
    assert np.all(np.abs(scan["energy"] + 4.0) < 1e-9) and np.all(scan["error"] < 1e-10)


# --- GPU runs recorded from benchmarks/results (qmckit_recorded.gpu_h100)

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def _gpu():
    return reference_data()["qmckit_recorded"]["gpu_h100"]


def _result(stem):
    return json.loads((RESULTS / f"{stem}.json").read_text())


def _cap_key(cap):
    return (type(cap) is bool, cap)  # True (Zen's cut alone) is not the number 1


def test_gpu_section_names_its_files_and_machine():
    gpu = _gpu()
    assert "H100" in gpu["machine"] and "H100" in gpu["description"] and gpu["versions"] in gpu["description"]
    for stem in gpu["files"]["dmc"] + [gpu["files"]["vmc_and_speed"]]:
        assert (RESULTS / f"{stem}.json").exists() and (RESULTS / f"{stem}.md").exists()
    assert _result(gpu["files"]["vmc_and_speed"])["device"]["name"] in gpu["machine"]
    assert set(gpu["dmc"]) == set(gpu["vmc"]) == set(gpu["speed"]) == set(ELEMENTS)


@pytest.mark.parametrize("stem", ["atom_dmc_h100_2026-11-22", "atom_dmc_small_dt_h100_2026-11-22",
                                  "atom_dmc_cut_scan_h100_2026-11-22"])
def test_gpu_dmc_points_match_the_result_files(stem):
    gpu, result = _gpu(), _result(stem)
    assert stem in gpu["files"]["dmc"]
    assert all(gpu["dmc_runs"][stem][key] == value for key, value in result["args"].items())
    recorded = [(element, p) for element, points in gpu["dmc"].items() for p in points if p["file"] == stem]
    assert len(recorded) == len(result["points"])  # every point of the file, once
    markdown = (RESULTS / f"{stem}.md").read_text()
    for source in result["points"]:
        matches = [p for element, p in recorded if element == source["element"] and p["dt"] == source["dt"]
                   and _cap_key(p["energy_cap"]) == _cap_key(source["cap"])]
        assert len(matches) == 1, source["element"]
        p = matches[0]
        assert p["energy"] == pytest.approx(source["energy"], rel=1e-9)
        assert p["error"] == pytest.approx(source["error"], rel=1e-3)
        assert p["population"] == pytest.approx(source["population"], abs=0.06)
        assert p["acceptance"] == pytest.approx(source["acceptance"], abs=6e-5)
        assert p["tau"] == pytest.approx(source["tau"], abs=6e-3)
        assert (p["energy_cut"] is None) == (source["energy_cut"] is None)
        if p["energy_cut"] is not None:
            assert p["energy_cut"] == pytest.approx(source["energy_cut"], abs=6e-5)
        # the markdown table of the same file prints the same value
        row = f"| {source['element']} | {source['dt']} | {source['cap']} | {format_value_error(p['energy'], p['error'])} |"
        assert row in markdown


def test_gpu_dmc_fits_match_the_files_and_refit_from_the_recorded_points():
    gpu = _gpu()
    fits = gpu["dmc_fits"]
    assert len(fits) == sum(len(_result(stem)["fits"]) for stem in gpu["files"]["dmc"])
    for fit in fits:
        source = _result(fit["file"])["fits"][fit["element"]]
        assert fit["energy"] == pytest.approx(source["energy"], rel=1e-9)
        assert fit["error"] == pytest.approx(source["error"], rel=1e-3)
        points = gpu_dmc(fit["element"], 8.0, file=fit["file"])
        assert sorted(points["dt"]) == sorted(fit["dt"])
        refit = extrapolate(points["dt"], points["energy"], points["error"], order=1, n_points=None)
        assert refit.energy == pytest.approx(fit["energy"], abs=1e-3 * fit["error"])
        assert refit.error == pytest.approx(fit["error"], rel=1e-3)


def test_gpu_dmc_helper_selects_by_cut_and_file():
    he = gpu_dmc("He")
    assert list(he["dt"]) == [0.04, 0.02, 0.01, 0.005, 0.0025] and len(he["file"]) == 5
    assert list(gpu_dmc("Be", True)["energy"]) == [-14.6545242]
    nocut = gpu_dmc("Be", False)
    assert nocut["energy"][0] < -19 and np.isnan(nocut["energy_cut"][0])
    assert gpu_dmc("Be", 1.0)["dt"].size == 0  # the number 1 is not True
    assert list(gpu_dmc("Ne")["dt"]) == [0.005, 0.0025, 0.0025, 0.00125, 0.000625]
    assert list(gpu_dmc("Ne", file="atom_dmc_small_dt_h100_2026-11-22")["dt"]) == [0.0025, 0.00125, 0.000625]
    assert list(gpu_dmc("Ne", 128.0)["population"]) == [32768.0]


def test_gpu_dmc_numbers_quoted_by_the_notebook():
    # the brief's and the notebook's numbers, against the recorded points
    he, be, ne = gpu_dmc("He"), gpu_dmc("Be"), gpu_dmc("Ne", file="atom_dmc_small_dt_h100_2026-11-22")
    he_exact = reference("He", "exact")[0]
    line = extrapolate(he["dt"], he["energy"], he["error"], order=1, n_points=2)
    assert format_value_error(line.energy, line.error) == "-2.9039(8)"
    assert abs(line.energy - he_exact) < min(3 * line.error, 1e-3)
    small = be["dt"] <= 0.01
    mean, error, chi2, dof = weighted_mean(be["energy"][small], be["error"][small])
    assert format_value_error(mean, error) == "-14.6547(8)" and dof == 2 and chi2 < 3
    assert 0.002 < mean - reference("Be", "fn_dmc_hf_nodes", "casino")[0] < 0.003  # "about 3 mE_h above the HF node"
    ne_line = extrapolate(ne["dt"], ne["energy"], ne["error"], order=1, n_points=3)
    assert format_value_error(ne_line.energy, ne_line.error) == "-128.705(7)"
    ne_32 = gpu_dmc("Ne", 32.0)
    assert ne["energy"][1] - ne_32["energy"][0] == pytest.approx(0.016, abs=0.001)


def test_gpu_vmc_and_speed_match_the_result_file():
    gpu = _gpu()
    result = _result(gpu["files"]["vmc_and_speed"])
    markdown = (RESULTS / f"{gpu['files']['vmc_and_speed']}.md").read_text()
    for source in result["energies"]:
        v = gpu["vmc"][source["element"]]
        assert v["energy"] == pytest.approx(source["energy"], rel=1e-9)
        assert v["error"] == pytest.approx(source["error"], rel=1e-3)
        run = (source["W"], source["steps"], source["equilibration"], source["dt"])
        assert (v["walkers"], v["steps"], v["equilibration"], v["dt"]) == run
        assert f"| {source['element']} | {source['energy']:.5f} ± {source['error']:.5f} |" in markdown
    # GPU VMC agrees with the thesis (He) and with qmckit's long CPU runs (Be, Ne)
    recorded = reference_data()["qmckit_recorded"]
    refs = {"He": reference("He", "vmc", "thesis"), "Be": tuple(recorded["Be"]["exact_combined"]),
            "Ne": tuple(recorded["Ne"]["exact_combined"])}
    for element, v in gpu["vmc"].items():
        assert abs(pull(v["energy"], v["error"], refs[element])) < 3
    for element, s in gpu["speed"].items():
        gpu_rows = [t for t in result["gpu"] if t["element"] == element]
        best = max(gpu_rows, key=lambda t: t["cycles_per_s"])
        cpu = [t for t in result["cpu"]["timings"] if t["element"] == element]
        all_cores = max((t for t in cpu if t["threads"] > 1), key=lambda t: t["cycles_per_s"])
        one = next(t for t in cpu if t["threads"] == 1)
        assert s["gpu_walkers"] == best["W"] and s["cpu_threads"] == all_cores["threads"] == result["cpu"]["cores"]
        assert s["ratio_all_cores"] == pytest.approx(best["cycles_per_s"] / all_cores["cycles_per_s"], abs=0.05)
        assert s["ratio_one_thread"] == round(best["cycles_per_s"] / one["cycles_per_s"])
        assert f"{s['ratio_all_cores']:.1f} | {s['ratio_one_thread']} |" in markdown
    assert [gpu["speed"][e]["ratio_all_cores"] for e in ELEMENTS] == [547.1, 240.9, 75.0]


@pytest.mark.parametrize("element", ELEMENTS)
def test_nuclear_cusp_coefficient_is_alpha_minus_z(element):
    atom = reference_data()["atoms"][element]
    assert nuclear_cusp_coefficient(element) == pytest.approx(atom["alpha"] - atom["z"], abs=1e-6)
    assert abs(nuclear_cusp_coefficient(element, params={"alpha": float(atom["z"])})) < 1e-6  # α = Z obeys the cusp
