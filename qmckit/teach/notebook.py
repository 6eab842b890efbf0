"""Exercise notebooks with the teacher's solutions run in place of the students' cells (the tests)."""
from __future__ import annotations

import os
from pathlib import Path

SOLUTIONS = "QMCKIT_EXERCISE_SOLUTIONS"  # set to 1: every "# task NAME" cell runs the solution of task NAME
solutions_in = False  # whether this process runs the solutions (then a check that does not pass raises)


def read_solutions(path) -> dict:
    """The sections of a solutions file: {task name: source}, each section begun by a line ``# %% task NAME``."""
    sections, name = {}, None
    for line in Path(path).read_text().splitlines(keepends=True):
        if line.startswith("# %% task "):
            name = line.split()[3]
            sections[name] = ""
        elif name is not None:
            sections[name] += line
    return sections


def start(exercise: str, folder: str | os.PathLike = "solutions") -> None:
    """Called in the first code cell of the exercise notebook ``exercise`` (e.g. "p1_bosons"). Does nothing for a
    student. With the environment variable QMCKIT_EXERCISE_SOLUTIONS=1 (the tests set it) every later cell that begins
    with the line ``# task NAME`` runs the section of ``folder/<exercise>.py`` for task NAME instead, so that the
    notebook's checks run on the teacher's solutions, and a check that does not pass raises (so the test fails);
    :data:`solutions_in` then says so."""
    global solutions_in
    if os.environ.get(SOLUTIONS) != "1":
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("start: run it in a notebook (IPython)")
    sections = read_solutions(Path(folder) / f"{exercise}.py")

    def solution(lines: list[str]) -> list[str]:
        if lines and lines[0].startswith("# task "):
            name = lines[0].split()[2]
            if name not in sections:
                raise KeyError(f"no solution of task {name} in {folder}/{exercise}.py")
            return sections[name].splitlines(keepends=True)
        return lines

    shell.input_transformers_post.append(solution)
    solutions_in = True
