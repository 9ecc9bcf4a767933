"""The production set (experiments/production/): every spec loads at each of its sizes, has
a declared launch family and checks clean against its code object; a few fast kernels match
their references at the smallest launch of their family; build_production's specialization
follows Triton's launcher."""
from pathlib import Path

import numpy as np
import pytest

from asmevo.emu import run_launch
from asmevo.launch.check import check_outputs
from asmevo.launch.spec import family_space, load_spec, make_inputs, spec_sizes
from asmevo.verify.skeleton import advice, check

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
PRODUCTION = EXPERIMENTS / "production"
SPECS = sorted(PRODUCTION.glob("*/spec.toml"))
# quick ones (< 3 s each on the 2-core machine): an fp8 Triton kernel (MODE.FP16_OVFL), a
# Liger norm, FlagGems' GEMM (a K loop), an AITer object
FAST = ["aiter_tri_quant_fp8", "liger_layer_norm", "flaggems_mm",
        "aiter_i8gemm_bf16_pertokeni8_bpreshuffle_32x128"]


def test_the_set_holds_twelve_triton_kernels_and_eight_aiter_objects():
    names = [p.parent.name for p in SPECS]
    triton = [n for n in names if (PRODUCTION / n / f"{n}.py").is_file()]
    aiter = [n for n in names if n not in triton]
    assert len(triton) >= 12 and len(aiter) >= 8, names
    assert all(n.startswith("aiter_") for n in aiter)
    for n in names:
        assert (PRODUCTION / n / "NOTICE").is_file() and (PRODUCTION / n / "reference.py").is_file()


@pytest.mark.parametrize("spec_path", SPECS, ids=lambda p: p.parent.name)
def test_spec_loads_declares_its_family_and_checks_clean(spec_path):
    assert check(spec_path) == []
    assert not [a for a in advice(spec_path) if "family" in a]
    for size in ("default",) + spec_sizes(spec_path):
        spec = load_spec(spec_path, size)
        assert spec.code_object.is_file()
    space = family_space(spec_path, "small")
    assert not space.family.derived and space.family.ranges


@pytest.mark.parametrize("name", FAST)
def test_k0_matches_its_reference_at_the_smallest_launch_of_its_family(name):
    spec_path = PRODUCTION / name / "spec.toml"
    space = family_space(spec_path, "small")
    smallest = next(m for m in space.members(0) if m.why == "the smallest launch")
    spec = space.resolve(smallest)
    inputs = make_inputs(spec, 0)
    res = run_launch(spec.code_object, spec, inputs)
    assert res.status == "ok", res.message
    ref = spec.expected({k: (v.copy() if isinstance(v, np.ndarray) else v)
                         for k, v in inputs.items()})
    checks = check_outputs(spec, res.outputs, ref)
    assert checks and all(c.ok for c in checks), [c.detail for c in checks if not c.ok]


def test_build_specializes_like_a_triton_launch():
    import sys
    sys.path.insert(0, str(EXPERIMENTS))
    from build_production import attrs_and_signature

    build = {"signature": {"p": "*bf16", "n": "i32", "one": "i32", "odd": "i32", "m": "i32",
                           "BLOCK": "constexpr"},
             "constexprs": {"BLOCK": 64}, "launch": {"n": 4096, "one": 1, "odd": 50, "m": 32},
             "do_not_specialize": ["m"], "output": "x.co"}
    sig, consts, attrs = attrs_and_signature(build)
    assert attrs[(0,)] == [["tt.divisibility", 16], ["tt.pointer_range", 32]]
    assert attrs[(1,)] == [["tt.divisibility", 16]]
    assert sig["one"] == "constexpr" and consts["one"] == 1
    assert (3,) not in attrs and (4,) not in attrs     # 50 % 16, and m is not specialized
    with pytest.raises(SystemExit, match="no launch value"):
        attrs_and_signature({**build, "launch": {"n": 4096}})


def test_bench_search_knows_the_production_set():
    import sys
    sys.path.insert(0, str(EXPERIMENTS))
    from bench_search import BenchError, kernel_dirs

    dirs = kernel_dirs("production")
    assert [d.name for d in dirs] == [p.parent.name for p in SPECS] and len(dirs) >= 20
    with pytest.raises(BenchError, match="production"):
        kernel_dirs("no_such_set")


@pytest.mark.parametrize("value", [1, 0, 16, 32, 50, -100, 4096, 14336, 32000])
def test_integer_specialization_agrees_with_triton_where_it_is_installed(value):
    """build_production's rule against Triton's own launcher (native_specialize_impl)."""
    pytest.importorskip("triton")
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.amd.compiler import HIPBackend
    import sys
    sys.path.insert(0, str(EXPERIMENTS))
    from build_production import attrs_and_signature

    ty, key = native_specialize_impl(HIPBackend, value, False, True, True)
    sig, consts, attrs = attrs_and_signature({"signature": {"n": "i32"}, "constexprs": {},
                                              "launch": {"n": value}, "output": "x.co"})
    if ty == "constexpr":
        assert sig["n"] == "constexpr" and consts["n"] == value
    else:
        assert sig["n"] == ty and ((0,) in attrs) == (key == "D")


def test_aiter_gemms_rebuild_to_the_committed_bytes_from_their_shared_helpers():
    """The two AITer GEMMs call the blocks they share from aiter_gemm_common.py: Triton
    inlines them, so the rebuild is the committed object byte for byte (~3 s each)."""
    triton = pytest.importorskip("triton")
    import subprocess
    import sys
    sys.path.insert(0, str(EXPERIMENTS))
    from build_production import TRITON_VERSION

    if triton.__version__ != TRITON_VERSION:
        pytest.skip(f"triton {triton.__version__}; the set is built with {TRITON_VERSION}")
    for name in ("aiter_tri_gemm_a8w8", "aiter_tri_gemm_a16w16"):
        assert "from aiter_gemm_common import" in (PRODUCTION / name / f"{name}.py").read_text()
    res = subprocess.run([sys.executable, str(EXPERIMENTS / "build_production.py"), "--check",
                          "--only", "aiter_tri_gemm_a8w8", "aiter_tri_gemm_a16w16"],
                         capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0 and "objects=2 differ=0" in res.stdout, res.stdout + res.stderr
