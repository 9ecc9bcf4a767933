"""Every bad spec the hostile-input review found: one line naming the file, the key and, for
a limit, the knob that raises it; exit 2 at once, nothing allocated or run."""
from __future__ import annotations

import time

import pytest

from asmevo import knobs
from tests.hostile import run_cli, toml_text
from tests.launch.test_spec_fuzz import base_doc


def _with(doc: dict, path: str, value) -> dict:
    *parents, last = path.split(".")
    t = doc
    for p in parents:
        t = t[int(p)] if p.isdigit() else t[p]
    t[int(last) if last.isdigit() else last] = value
    return doc


CASES = [
    # (what, key path, value, what the line must say)
    ("1e12-element buffer", "args.0.count", 10 ** 12, "args[0].count (float32): "
     "4,000,000,000,000 bytes in one buffer is over the limit"),
    ("10**10", "args.0.count", "10**10", "ASMEVO_MAX_BUFFER_BYTES"),
    ("2**64 count", "args.0.count", "2**64", "ASMEVO_MAX_BUFFER_BYTES"),
    ("2**64 literal count", "args.0.count", 2 ** 64, "ASMEVO_MAX_BUFFER_BYTES"),
    ("2**64 * 2 count", "args.0.count", "2**64 * 2", "out of range (beyond 2**64)"),
    ("3e8-element buffer", "args.0.count", 300_000_000, "1,200,000,000 bytes in one buffer"),
    ("3e8 as a float", "args.0.count", 3e8, "args[0].count: must be an integer"),
    ("block 2^20", "launch.block", ["2**20", 1, 1], "launch.block: 1,048,576 work-items per "
     "workgroup is over the limit of 1,024 (set ASMEVO_MAX_BLOCK"),
    ("block dimension", "launch.block", [1, 1, 2048], "ASMEVO_MAX_BLOCK"),
    ("huge dynamic_lds", "launch.dynamic_lds", 2 ** 40, "launch.dynamic_lds: "
     "1,099,511,627,776 bytes of dynamic LDS is over the limit of 65,536 (set "
     "ASMEVO_MAX_DYNAMIC_LDS"),
    ("(-8)**0.5", "args.0.count", "(-8)**0.5", "is not a real number"),
    ("NaN", "args.0.count", float("nan"), "args[0].count: nan is not finite"),
    ("inf", "launch.grid", [float("inf")], "launch.grid[0]: inf is not finite"),
    ("1e999", "args.3.value", "1e999", "args[3].value: '1e999' is not finite"),
    ("NaN tolerance", "tolerance.atol", float("nan"), "tolerance.atol: must be a finite number"),
    ("min()", "args.0.count", "min()", "min() takes at least 1 argument(s), got 0"),
    ("cdiv(1)", "args.0.count", "cdiv(1)", "cdiv() takes 2 argument(s), got 1"),
    ("division by zero", "args.0.count", "N // 0", "division by zero"),
    ("args not tables", "args", "x", "args: must be an array of tables"),
    ("args of numbers", "args", [1, 2], "args: must be an array of tables"),
    ("launch a number", "launch", 5, "launch: must be a table"),
    ("params a list", "params", [1], "params: must be a table"),
    ("a size a number", "sizes.small", 3, "sizes.small: must be a table"),
    ("grid a number", "launch.grid", 5, "launch.grid: must be a list of 1-3 sizes"),
    ("grid of lists", "launch.grid", [[1]], "launch.grid[0]: must be a number or an expression"),
    ("four dimensions", "launch.grid", [1, 1, 1, 1], "must be a list of 1-3 sizes"),
    ("tolerance a list", "tolerance", [1], "tolerance: must be a table"),
    ('atol = "x"', "tolerance.atol", "x", "tolerance.atol: must be a finite number, got 'x'"),
    ("negative atol", "tolerance.atol", -1.0, "tolerance.atol: must be >= 0"),
    ("9**9**9", "args.0.count", "9**9**9", "387,420,489 (an exponent) is over the limit of 64 "
     "(set ASMEVO_MAX_EXPONENT"),
    ("grid = 1e8", "launch.grid", [1e8, 1, 1], "launch.grid[0]: must be an integer, got "
     "100000000.0"),
    ("grid = 10**8", "launch.grid", [10 ** 8, 1, 1], "launch.grid: 100,000,000 workgroups in "
     "one launch is over the limit of 16,777,216 (set ASMEVO_MAX_WORKGROUPS"),
    ("grid = 2**32 work-items", "launch.grid", [2 ** 24, 1, 1], "launch.grid * launch.block: "
     "4,294,967,296 work-items in one launch is over the limit"),
    ("int32 scalar 2**40", "args.3.value", 2 ** 40, "args[3].value: 1099511627776 does not fit "
     "int32"),
    ("int32 scalar 1.5", "args.3.value", 1.5, "args[3].value: int32 needs an integer, got 1.5"),
    ("size = -1", "args.3.size", -1, "args[3].size: must be in [1, 256], got -1"),
    ("offset = 2**40", "args.3.offset", 2 ** 40, "args[3].offset: must be in [0, 65535]"),
    ("count = -1", "args.0.count", -1, "args[0].count: must be >= 1, got -1"),
    ("output = \"no\"", "args.2.output", "no", "args[2].output: must be true or false"),
    ("std < 0", "args.0.std", -1.0, "args[0].std: must be >= 0"),
    ("injection", "args.0.count", "__import__('os').system('touch /tmp/asmevo-pwned')",
     "unsupported expression"),
    ("path in a name", "args.0.name", "../../x", "args[0].name: must be a name of letters"),
    ("control characters in the kernel", "kernel", "vector_add\n.include \"/etc/passwd\"",
     "kernel: must not hold control characters"),
    ("a 3,000-character expression", "args.0.count", "N+" * 1500 + "N",
     "characters in an expression is over the limit of 1,000 (set ASMEVO_MAX_EXPRESSION_CHARS"),
    ("a deep expression", "args.0.count", "-" * 900 + "N",
     "syntax nodes in an expression is over the limit of 200"),
]


@pytest.mark.parametrize("what, path, value, message", CASES, ids=[c[0] for c in CASES])
def test_bad_spec_is_one_line_and_exit_2(tmp_path, what, path, value, message):
    spec = tmp_path / "spec.toml"
    spec.write_text(toml_text(_with(base_doc("vector_add"), path, value)))
    t0 = time.perf_counter()
    out = run_cli(["emulate", str(spec), "--size", "small", "--out", str(tmp_path / "o")],
                  seconds=20)
    assert time.perf_counter() - t0 < 5
    assert out.escaped is None and not out.hung, (out.escaped, out.stderr)
    assert out.code == 2 and len(out.error_lines) == 1, out.stderr
    line = out.error_lines[0]
    assert line.startswith(f"asmevo emulate: error: {spec}: "), line
    assert message in line, line
    assert not (tmp_path / "o").exists()


def test_the_vector_add_base_is_valid(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(toml_text(base_doc("vector_add")))
    assert run_cli(["emulate", str(spec), "--size", "small"]).code == 0


def test_a_limit_is_raised_by_its_knob(tmp_path, monkeypatch):
    spec = tmp_path / "spec.toml"
    spec.write_text(toml_text(_with(base_doc("vector_add"), "launch.dynamic_lds", 70000)))
    assert run_cli(["emulate", str(spec), "--size", "small"]).code == 2
    monkeypatch.setenv("ASMEVO_MAX_DYNAMIC_LDS", "70000")
    out = run_cli(["emulate", str(spec), "--size", "small"])
    assert out.code == 2 and "65536" in out.stderr      # now the emulator's own hardware limit
    assert "ASMEVO_MAX_DYNAMIC_LDS" not in out.stderr


def test_a_bad_knob_is_one_line(tmp_path, monkeypatch):
    spec = tmp_path / "spec.toml"
    spec.write_text(toml_text(base_doc("vector_add")))
    monkeypatch.setenv("ASMEVO_MAX_BUFFER_BYTES", "lots")
    out = run_cli(["emulate", str(spec), "--size", "small"])
    assert out.code == 2 and "ASMEVO_MAX_BUFFER_BYTES='lots': must be a positive integer" \
        in out.stderr


def test_a_grid_within_the_limits_is_refused_by_the_emulator_at_once(tmp_path):
    doc = _with(base_doc("vector_add"), "launch.grid", [2 ** 24 - 1, 1, 1])
    spec = tmp_path / "spec.toml"
    spec.write_text(toml_text(doc))
    t0 = time.perf_counter()
    out = run_cli(["emulate", str(spec), "--size", "small"])
    assert time.perf_counter() - t0 < 5
    assert out.code == 2 and "67,108,860 waves in one emulated launch is over the limit of " \
        "262,144 (set ASMEVO_EMU_MAX_WAVES" in out.stderr, out.stderr


def test_every_committed_spec_is_within_the_default_limits():
    from tests.conftest import KERNELS, ROOT
    from asmevo.launch.spec import load_spec
    specs = sorted(KERNELS.glob("*/spec.toml")) + sorted(
        (ROOT / "experiments" / "nvidia" / "specs").glob("*.toml"))
    for p in specs:
        for size in ("default", "small", "large"):
            load_spec(p, size)
    assert len(specs) >= 38 and knobs.MAX_BUFFER_BYTES.value == 1 << 30


@pytest.mark.parametrize("deep", ["[" * 600 + "]" * 600, "{a = " * 600 + "1" + "}" * 600])
def test_deeply_nested_toml_is_one_line(tmp_path, deep):
    spec = tmp_path / "spec.toml"
    spec.write_text(f"deep = {deep}\n" + toml_text(base_doc("vector_add")))
    out = run_cli(["emulate", str(spec)])
    assert out.code == 2 and out.error_lines == [
        f"asmevo emulate: error: {spec}: spec nesting: 600 levels of nesting is over the "
        "limit of 32 (set ASMEVO_MAX_TOML_DEPTH to raise it)"], out.stderr
