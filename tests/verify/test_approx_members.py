"""The differential verifier runs K0 and K' under a second member of the approximate-
instruction families: a candidate that replaces an approximate instruction by
"equivalent" exact math agrees with K0 under the correctly rounded member only,
and is a mismatch; K0 against itself stays equal."""
import numpy as np

from asmevo.edits import Edit
from asmevo.runtime.emulator import EmulatorDevice
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edits
from asmevo.verify.differential import differential, reference_runs
from asmevo.launch.spec import ArgSpec, LaunchSpec
from tests.emu.hipkit import compile_hip

SRC = '''
extern "C" __global__ void rcp(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __builtin_amdgcn_rcpf(x[i]); }
extern "C" __global__ void sqr(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __builtin_amdgcn_sqrtf(x[i]); }
'''

# 1/x correctly rounded from scratch (LLVM's fdiv macro for 1.0 / v2 into v2),
# with registers and SGPRs the kernel leaves free
EXACT_RCP = (
    "v_div_scale_f32 v20, s[40:41], {x}, {x}, 1.0",
    "v_rcp_f32_e32 v21, v20",
    "v_div_scale_f32 v22, vcc, 1.0, {x}, 1.0",
    "v_fma_f32 v23, -v20, v21, 1.0",
    "v_fmac_f32_e32 v21, v23, v21",
    "v_mul_f32_e32 v23, v22, v21",
    "v_fma_f32 v24, -v20, v23, v22",
    "v_fmac_f32_e32 v23, v24, v21",
    "v_fma_f32 v20, -v20, v23, v22",
    "v_div_fmas_f32 v20, v20, v21, v23",
    "v_div_fixup_f32 {d}, v20, {x}, 1.0",
)


def _spec(co, kernel, n):
    return LaunchSpec(name=kernel, kernel=kernel, code_object=co, grid=(-(-n // 64), 1, 1),
                      block=(64, 1, 1),
                      args=(ArgSpec("x", "buffer", "float32", n, init="uniform",
                                    dist={"low": 0.5, "high": 4.0}),
                            ArgSpec("y", "buffer", "float32", n, output=True),
                            ArgSpec("n", "scalar", "int32", value=n)))


def _edit(co, kernel, mnemonic, lines):
    fn = recover(load(co)).function(kernel)
    i = next(k for k, ins in enumerate(fn.instructions) if ins.mnemonic == mnemonic)
    d, x = [o.strip() for o in fn.instructions[i].text.split(None, 1)[1].split(",")[:2]]
    edit = Edit(kernel, i, i + 1, tuple(line.format(d=d, x=x) for line in lines))
    return build_program(apply_edits(recover(load(co)), (edit,)))


def _verdicts(kernel, mnemonic, lines):
    co = compile_hip(SRC, "gfx942", "O2")
    spec = _spec(co, kernel, 512)
    dev = EmulatorDevice()
    k0 = co.read_bytes()
    # ordinary inputs only: with special values (1/2^127 is a denormal v_rcp_f32
    # flushes) the replacement differs even under member 0
    ref = reference_runs(dev, k0, spec, seeds=(0,), special=False)
    k1 = _edit(co, kernel, mnemonic, lines)
    ref0 = reference_runs(dev, k0, spec, seeds=(0,), special=False, approx_variants=())
    return (differential(dev, ref, k0, spec), differential(dev, ref0, k1, spec),
            differential(dev, ref, k1, spec))


def test_exact_reciprocal_instead_of_v_rcp_is_a_mismatch():
    same, member0_only, full = _verdicts("rcp", "v_rcp_f32_e32", EXACT_RCP)
    assert same.equal and same.details["approx_variants"] == [1]
    assert member0_only.equal          # what the verifier said before the families
    assert full.status == "mismatch" and full.details["approx_variant"] == 1
    assert "approximate instruction" in full.reason


def test_sqrt_as_rsq_then_rcp_is_a_mismatch():
    _, _, full = _verdicts("sqr", "v_sqrt_f32_e32", ("v_rsq_f32_e32 {d}, {x}",
                                                     "v_rcp_f32_e32 {d}, {d}"))
    assert full.status == "mismatch"


def test_approx_members_are_skipped_on_measured_devices():
    class Gpu(EmulatorDevice):
        measured = True
    co = compile_hip(SRC, "gfx942", "O2")
    ref = reference_runs(Gpu(), co.read_bytes(), _spec(co, "rcp", 64), seeds=(0,))
    assert ref.approx == {}
    assert np.isfinite(len(ref.results))
