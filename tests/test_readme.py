"""README promises: two set-up commands, the second is what CI runs, the quick start works."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_two_setup_commands_and_ci_runs_the_test_command():
    commands = [b.strip() for b in blocks("bash")]
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    assert commands[0].startswith("pip install -e . && qmckit ")
    assert "pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_quick_start_runs_and_prints_an_estimate(capsys):
    (code,) = blocks("python")
    exec(compile(code.replace("steps=2000", "steps=300"), "README quick start", "exec"), {})
    printed = capsys.readouterr().out
    assert re.search(r"1\.53\d*\(\d+\)", printed), printed


def test_the_reproduce_table_lists_every_study():
    from qmckit.studies.reports import STUDIES

    listed = re.findall(r"^\| `(\w+)` \| (\d{3}) \|", (ROOT / "README.md").read_text(), flags=re.M)
    assert [name for name, _ in listed] == list(STUDIES)
    assert all(STUDIES[name].summary.startswith(number) for name, number in listed)
