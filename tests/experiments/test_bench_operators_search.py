"""bench_operators --search: each kernel's line says how many evaluations its search made,
their median cost and why it stopped, and the summary names the kernels the search wall cut
short (a 'not improved' that is a wall, not the operators, must be visible in the output)."""
from __future__ import annotations

import re

from tests.experiments import load_bench


def _search(capsys, evaluations: int, wall: int) -> str:
    b = load_bench('bench_operators')
    rc = b.main(["--search", "--kernels", "relu", "--operators", "nop_remove,swap_adjacent",
                 "--evaluations", str(evaluations), "--search-wall", str(wall),
                 "--threshold", "0", "--jobs", "1"])
    assert rc == 0
    return capsys.readouterr().out


def test_a_search_that_spends_its_evaluations_is_not_counted_as_cut(capsys):
    out = _search(capsys, evaluations=4, wall=600)
    line = next(ln for ln in out.splitlines() if ln.startswith("relu "))
    made = int(re.search(r"(\d+) evaluations, median ([0-9.]+) s", line).group(1))
    assert made >= 4 and "stopped by budget.evaluations)" in line
    assert "kernels_cut_by_wall=0/1" in out


def test_a_search_the_wall_ends_is_named(capsys):
    out = _search(capsys, evaluations=10_000, wall=1)
    line = next(ln for ln in out.splitlines() if ln.startswith("relu "))
    assert "stopped by budget.wall_seconds)" in line
    assert "kernels_cut_by_wall=1/1 (relu)" in out
