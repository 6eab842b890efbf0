"""Regression test of recorded numbers (not a physics test): the characterisation set of
``tests/characterisation.py``, seeded CPU runs of every system with explicit parameters, gives the
numbers recorded in ``tests/data/characterisation_cpu.json`` before the toolkit redesign (issue 24).
A change here means a refactor changed results; re-record only with a reason in the commit."""
import json

import pytest

import characterisation as ch

RECORDED = json.loads(ch.RECORD.read_text())["runs"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # short series: reblocking says so, as recorded
@pytest.mark.parametrize("name", ch.all_cases())
def test_seeded_run_gives_the_recorded_numbers(name):
    now = json.loads(json.dumps(ch.run_case(name)))
    assert ch.compare(RECORDED[name], now) == []


def test_compare_sees_a_change_in_the_last_recorded_digits():
    run = RECORDED["bec_vmc_drift"]
    changed = json.loads(json.dumps(run))
    changed["estimates"]["energy_per_particle"]["mean"] *= 1 + 1e-9
    assert ch.compare(run, changed) == [".estimates.energy_per_particle.mean: "
                                        f"{run['estimates']['energy_per_particle']['mean']!r} → "
                                        f"{changed['estimates']['energy_per_particle']['mean']!r}"]
