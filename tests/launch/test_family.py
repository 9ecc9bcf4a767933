"""Launch families: parsing, the members verification draws, and bad families refused."""
import shutil
import subprocess
import sys

import pytest

from asmevo.launch.expr import predicate
from asmevo.launch.family import Family, Range, candidates, derived, parse
from asmevo.launch.spec import SpecError, family_space, load_spec
from tests.conftest import KERNELS

BASE = {"M": 64, "N": 64, "K": 64}


def _grid(p):
    return (-(-p["N"] // 16), -(-p["M"] // 16), 1)


def test_constraints_compare_and_combine():
    assert predicate("K % 64 == 0 and 1 <= M <= 4 * N", {"K": 128, "M": 3, "N": 1})
    assert predicate("not K > 5 or M == 2", {"K": 9, "M": 2})
    for bad, why in [("K", "not a comparison"), ("K and M", "take comparisons"),
                     ("K < (M == 1)", "comparison used as a number"), ("Q > 1", "unknown")]:
        with pytest.raises(SpecError, match=why):
            predicate(bad, {"K": 1, "M": 2})


def test_members_are_small_odd_and_reach_every_grid_dimension():
    fam = parse({"M": {"low": 1, "high": 4096}, "N": {"low": 1, "high": 4096},
                 "K": {"low": 1, "high": 4096}}, BASE)
    ms = candidates(fam, BASE, 0, _grid)
    by_kind = {}
    for m in ms:
        by_kind.setdefault(m.kind, []).append(m)
    assert by_kind["smallest"][0].params == {"M": 1, "N": 1, "K": 1}
    assert ms[0].kind == "smallest" and ms[0].edge
    # each parameter alone at trip counts 3 and 2^k -/+ 1, the others smallest, short first
    k_series = [m.params["K"] for m in by_kind["series"] if m.param == "K"]
    assert k_series[:8] == [3, 5, 7, 9, 15, 17, 31, 33] and k_series == sorted(k_series)
    assert all(sum(v > 1 for v in m.params.values()) == 1 for m in by_kind["series"])
    order = [m.param for m in by_kind["series"]][:3]
    assert sorted(order) == ["K", "M", "N"]          # every parameter's 3 before any 5
    g = _grid(by_kind["workgroups"][0].params)
    assert g[0] >= 2 and g[1] >= 2
    assert [m.params for m in by_kind["all"]] == [{"M": 7, "N": 7, "K": 7},
                                                  {"M": 9, "N": 9, "K": 9}]
    assert all(fam.outside(m.params) is None for m in ms)
    assert len({m.values for m in ms}) == len(ms) and BASE not in [m.params for m in ms]
    assert candidates(fam, BASE, 0, _grid) == ms                  # seeded: replayable
    assert [m for m in candidates(fam, BASE, 1, _grid) if m.why == "random"] != \
        [m for m in ms if m.why == "random"]


def test_multiples_lists_and_constraints_hold_at_every_member():
    fam = parse({"K": {"low": 64, "high": 8192, "multiple": 64}, "M": [1, 16, 100],
                 "where": ["M * K <= 65536"]}, {"K": 128, "M": 16, "N": 8})
    ms = candidates(fam, {"K": 128, "M": 16, "N": 8}, 0, lambda p: (p["M"], 1, 1))
    assert ms and all(m.params["K"] % 64 == 0 and m.params["M"] in (1, 16, 100)
                      and m.params["M"] * m.params["K"] <= 65536 for m in ms)
    assert {m.params["K"] // 64 for m in ms} & {7, 9}          # odd trip counts of 64


def test_a_family_derived_from_the_named_sizes():
    fam = derived({"N": 4096}, {"small": {"N": 4000}, "large": {"N": 1 << 24}})
    assert fam.derived and fam.ranges == (Range("N", 4000, 1 << 24),)
    assert derived({"N": 4096}, {"small": {"N": 4096}}).ranges == ()
    assert candidates(Family(), {"N": 1}, 0, lambda p: (1, 1, 1)) == []


@pytest.mark.parametrize("family, why", [
    ({"Q": {"low": 1, "high": 2}}, "not a size parameter"),
    ({"M": {"low": 5, "high": 1}}, "empty range: low 5 is above high 1"),
    ({"M": {"low": 1, "high": 63, "multiple": 64}}, "no multiple of 64"),
    ({"M": {"low": 1}}, "needs both low and high"),
    ({"M": {"low": 1, "high": 9, "step": 2}}, "unknown key"),
    ({"M": []}, "1 to 256 values"),
    ({"M": [1.5]}, "must be an integer"),
    ({"M": {"low": 1, "high": 9}, "members": -1}, "members"),
    ({"M": {"low": 1, "high": 9}, "budget": 0}, "budget"),
    ({"M": {"low": 1, "high": 9}, "where": ["Z > 1"]}, "unknown parameter 'Z'"),
    ({"where": ["M > 1"]}, "names no size parameter"),
])
def test_a_bad_family_is_one_error(family, why):
    with pytest.raises(SpecError, match=why):
        parse(family, BASE)


def _spec_copy(tmp_path, family: str):
    """vector_add's spec with its [family] table replaced by ``family``."""
    import re
    d = tmp_path / "vector_add"
    shutil.copytree(KERNELS / "vector_add", d)
    text = re.sub(r"\n\[family\]\n.*?(?=\n\[)", "", (d / "spec.toml").read_text(),
                  flags=re.S)
    assert "[family]" not in text
    (d / "spec.toml").write_text(text.replace("\n[launch]", f"\n{family}\n[launch]", 1))
    return d


def test_the_size_under_check_must_be_in_the_family(tmp_path):
    d = _spec_copy(tmp_path, "[family]\nN = { low = 1, high = 100 }\n")
    with pytest.raises(SpecError, match="size small is not a launch of the family"):
        family_space(d, "small")
    space = family_space(_spec_copy(tmp_path / "b", "[family]\nN = { low = 1, high = 8192 }\n"),
                         "small")
    m = space.members(0)[0]
    spec = space.resolve(m)
    assert spec.member == m.label and spec.size == f"small[{m.label}]"
    n = next(a for a in spec.args if a.name == "n")
    assert n.value == m.params["N"] and spec.grid[0] == -(-m.params["N"] // 256)


def test_a_bad_family_fails_load_spec_and_the_cli_in_one_line(tmp_path):
    d = _spec_copy(tmp_path, "[family]\nN = { low = 9, high = 1 }\n")
    with pytest.raises(SpecError, match="empty range"):
        load_spec(d, "small")
    k0 = str(d / "vector_ops.gfx942.co")
    for cmd in (["verify", str(d), k0, k0], ["spec", "check", str(d)]):
        r = subprocess.run([sys.executable, "-m", "asmevo", *cmd], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2, r
        lines = (r.stderr + r.stdout).strip().splitlines()
        assert len(lines) == 1 and str(d) in lines[0] and "empty range" in lines[0]


def test_an_empty_size_table_is_refused(tmp_path):
    d = tmp_path / "v"
    shutil.copytree(KERNELS / "vector_add", d)
    text = (d / "spec.toml").read_text()
    (d / "spec.toml").write_text(text + "\n[sizes.tiny]\n")
    with pytest.raises(SpecError, match="sizes.tiny: an empty size"):
        load_spec(d, "tiny")
