"""Regression tests for issue 15's emulator findings (items 1-9), on the exact operands
the differential fuzzing found, through real clang-compiled sequences where the bug
showed there and single instructions where the ISA pins the bits down."""
import numpy as np
import pytest

from asmevo.emu.errors import MemoryFault
from tests.emu.asmdsl import run_asm
from tests.emu.hipkit import run_hip

ARCHS = ("gfx942", "gfx90a")
U = np.uint32

DIV = '''
extern "C" __global__ void fdiv(const float* a, const float* b, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a[i] / b[i]; }
extern "C" __global__ void ddiv(const double* a, const double* b, double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a[i] / b[i]; }
extern "C" __global__ void dfma(const double* a, const double* b, const double* c, double* y,
                                int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = __builtin_fma(a[i], b[i], c[i]); }
extern "C" __global__ void dldexp(const double* a, const int* e, double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = __builtin_ldexp(a[i], e[i]); }
'''


def f32(*bits):
    return np.array(bits, U).view(np.float32)


def fdiv(a, b, arch):
    out = run_hip(DIV, "fdiv", {"a": a, "b": b, "y": np.zeros(a.size, np.float32)}, n=a.size,
                  scalars={"n": a.size}, arch=arch)
    return out["y"].view(U)


@pytest.mark.parametrize("arch", ARCHS)
def test_item1_fdiv_overflowing_quotient_is_infinity(arch):
    # 0xd643f9e5 / 0x00000001: the scaled quotient overflows inside the macro; div_fixup
    # must give -inf, not NaN
    assert fdiv(f32(0xD643F9E5), f32(0x00000001), arch)[0] == 0xFF800000


@pytest.mark.parametrize("arch", ARCHS)
def test_item2_div_scale_uses_the_f32_denormal_threshold(arch):
    # 16777216.0f / FLT_MAX: 1/den is a float32 denormal, so both operands are scaled
    assert fdiv(np.float32([16777216.0]), f32(0x7F7FFFFF), arch)[0] == 0x0B800001


def test_item2_div_scale_operands_directly():
    # denominator FLT_MAX, numerator 2^24: exponent difference -103 sets VCC; the
    # denominator is scaled by 2^-64, the numerator is left alone
    o = run_asm("v_div_scale_f32 v2, vcc, v0, v0, v1\nv_div_scale_f32 v3, s[10:11], v1, v0, v1",
                v={0: f32(*[0x7F7FFFFF] * 64), 1: np.full(64, 16777216.0, np.float32)})
    assert o.v(2)[0] == (np.float32(3.4028235e38) * np.float32(2.0 ** -64)).view(U)
    assert o.vf(3)[0] == 16777216.0
    assert o.s(10) == 0xFFFFFFFF and o.s(11) == 0xFFFFFFFF


@pytest.mark.parametrize("arch", ARCHS)
def test_item3_fma_f64_overflow_is_infinity_not_a_fault(arch):
    a = np.array([2.0 ** 1023, -2.0 ** 1023, 1.7976931348623157e308, 1.7976931348623157e308])
    b = np.array([2.0, 2.0, 1.0 + 2.0 ** -52, 1.0])
    c = np.array([0.0, 0.0, 0.0, 2.0 ** 970])     # last: exactly half an ulp above max
    out = run_hip(DIV, "dfma", {"a": a, "b": b, "c": c, "y": np.zeros(4)}, n=4,
                  scalars={"n": 4}, arch=arch)["y"]
    assert out[0] == np.inf and out[1] == -np.inf and out[2] == np.inf
    assert out[3] == np.inf          # ties to even: max's mantissa is odd


def test_item3_fmac_f64_overflow():
    big = np.full(64, 2.0 ** 1023)
    o = run_asm("v_fmac_f64 v[4:5], v[0:1], v[2:3]",
                v={0: big.view(U)[0::2], 1: big.view(U)[1::2], 2: np.zeros(64, U),
                   3: np.full(64, np.float64(2.0).view(np.uint64) >> 32, U),
                   4: np.zeros(64, U), 5: np.zeros(64, U)})
    r = (o.v(4).astype(np.uint64) | (o.v(5).astype(np.uint64) << 32)).view(np.float64)
    assert r[0] == np.inf


@pytest.mark.parametrize("arch", ARCHS)
def test_item6_ldexp_f64_full_exponent_range(arch):
    a = np.array([1.0, 1.5, 1.0, 2.0 ** -1074, 1.0, 3.0])
    e = np.array([1000, -1074, 1023, 2100, -1080, -1076], np.int32)
    out = run_hip(DIV, "dldexp", {"a": a, "e": e, "y": np.zeros(6)}, n=6, scalars={"n": 6},
                  arch=arch)["y"]
    assert out[0] == 2.0 ** 1000
    assert out[1] == 2.0 ** -1073            # 1.5 * 2^-1074 ties to even
    assert out[2] == 2.0 ** 1023
    assert out[3] == np.inf
    assert out[4] == 0.0
    assert out[5] == 2.0 ** -1074           # 3 * 2^-1076 = 0.75 of the least denormal


@pytest.mark.parametrize("arch", ARCHS)
def test_item7_div_fmas_rounds_once_for_denormal_quotients(arch):
    # FLT_MIN / 0x3f9caec9: the quotient is a denormal; scaling after rounding is 1 ulp off
    assert fdiv(f32(0x00800000), f32(0x3F9CAEC9), arch)[0] == 0x00689167


def test_item7_div_fmas_single_rounding_directly():
    # vcc set, S2 < 2: result = fma(S0, S1, S2) * 2^-64 rounded once into the denormals
    a, b, c = np.float32(1.5), np.float32(2.0 ** -60), np.float32(1.0)
    o = run_asm("s_mov_b64 vcc, -1\nv_div_fmas_f32 v3, v0, v1, v2",
                v={0: np.full(64, a), 1: np.full(64, b), 2: np.full(64, c)})
    from fractions import Fraction
    want = np.float32(float((Fraction(1.5) * Fraction(2) ** -60 + 1) * Fraction(2) ** -64))
    assert o.vf(3)[0] == want


def test_item5_div_fixup_nan_bits():
    sn, qn = 0x7F800001, 0x7FC00005
    q = f32(*([0x3F800000] * 64))
    d = f32(0, 0x7F800000, 0x3F800000, sn, 0x3F800000, qn, *([0x3F800000] * 58))
    n = f32(0, 0xFF800000, sn, 0x3F800000, 0x3F800000, 0x3F800000, *([0x3F800000] * 58))
    o = run_asm("v_div_fixup_f32 v3, v0, v1, v2", v={0: q, 1: d, 2: n})
    r = o.v(3)
    assert r[0] == 0xFFC00000 and r[1] == 0xFFC00000        # 0/0, inf/inf
    assert r[2] == 0x7FC00001 and r[3] == 0x7FC00001        # sNaN operands come back quiet
    assert r[4] == 0x3F800000 and r[5] == qn


def test_item5_div_fixup_nan_quotient_is_signed_infinity():
    o = run_asm("v_div_fixup_f32 v3, v0, v1, v2",
                v={0: f32(*[0x7FC00000] * 64), 1: np.full(64, -1.0, np.float32),
                   2: np.full(64, 1.0, np.float32)})
    assert o.v(3)[0] == 0xFF800000


SNAN = 0x7F800001


def test_item8_canonicalize_quiets_signalling_nan():
    o = run_asm("v_max_f32_e32 v1, v0, v0", v={0: f32(*[SNAN] * 64)})
    assert o.v(1)[0] == 0x7FC00001
    o = run_asm("v_max_f32_e32 v1, v0, v0", v={0: f32(*[SNAN] * 64)},
                directives=".amdhsa_ieee_mode 0")
    assert o.v(1)[0] == SNAN                                # non-IEEE: NaN -> other operand


def test_item8_min_max_med3_with_signalling_nan():
    one = np.full(64, 1.0, np.float32)
    two = np.full(64, 2.0, np.float32)
    sn = f32(*[SNAN] * 64)
    o = run_asm("v_min_f32_e32 v3, v0, v1\nv_max_f32_e32 v4, v1, v0\n"
                "v_med3_f32 v5, v0, v1, v2\nv_max3_f32 v6, v1, v0, v2\n"
                "v_min_f32_e32 v7, v8, v1", v={0: sn, 1: one, 2: two, 8: f32(*[0x7FC00003] * 64)})
    assert o.v(3)[0] == 0x7FC00001 and o.v(4)[0] == 0x7FC00001   # not "the other operand"
    assert o.vf(5)[0] == 2.0        # med3 with a NaN: min3 = min(quiet NaN, 2) = 2
    assert o.vf(6)[0] == 2.0        # max3: max(max(1, sNaN) = qNaN, 2) = 2
    assert o.vf(7)[0] == 1.0        # a quiet NaN still yields the other operand


def test_item9_add_sub_u32_clamp_saturates():
    a = np.array([0xFFFFFFF0, 5, 0x7FFFFFFF, 3] + [0] * 60, U)
    b = np.array([0x20, 7, 1, 2] + [0] * 60, U)
    o = run_asm("v_add_u32_e64 v2, v0, v1 clamp\nv_sub_u32_e64 v3, v0, v1 clamp\n"
                "v_add_i32 v4, v0, v1 clamp\nv_add_u32_e64 v5, v0, v1", v={0: a, 1: b})
    assert list(o.v(2)[:4]) == [0xFFFFFFFF, 12, 0x80000000, 5]
    assert list(o.v(3)[:4]) == [0xFFFFFFD0, 0, 0x7FFFFFFE, 1]
    assert o.v(4)[2] == 0x7FFFFFFF and o.v(4)[0] == 0x10        # signed: -16 + 32 = 16
    assert o.v(5)[0] == 0x10                                      # no clamp: wraps


def test_item9_mad_legacy_u16():
    a = np.array([300, 2, 0xFFFF] + [0] * 61, U) | U(0xABCD0000)
    b = np.array([300, 3, 2] + [0] * 61, U)
    c = np.array([7, 4, 1] + [0] * 61, U)
    o = run_asm("v_mad_legacy_u16 v3, v0, v1, v2\nv_mad_legacy_u16 v4, v0, v1, v2 clamp\n"
                "v_mov_b32 v5, 0x12340000\nv_mad_u16 v5, v0, v1, v2 op_sel:[0,0,0,1]",
                v={0: a, 1: b, 2: c})
    assert list(o.v(3)[:3]) == [(300 * 300 + 7) & 0xFFFF, 10, (0xFFFF * 2 + 1) & 0xFFFF]
    assert list(o.v(4)[:3]) == [0xFFFF, 10, 0xFFFF]
    assert o.v(5)[1] == (10 << 16)       # op_sel dst hi: result in the high half


def test_item9_div_fixup_f16():
    h = lambda *xs: np.array(xs + (0x3C00,) * (64 - len(xs)), U)
    o = run_asm("v_div_fixup_f16 v3, v0, v1, v2",
                v={0: h(0x3C00, 0x3C00, 0x4000, 0x3C00), 1: h(0, 0, 0xC000, 0x7C00),
                   2: h(0, 0x3C00, 0x4400, 0x7C00)})
    assert list(o.v(3)[:4]) == [0xFE00, 0x7C00, 0xC000, 0xFE00]


PRIVATE = '''
extern "C" __global__ void k(const int* in, int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int arr[24];
  for (int i = 0; i < 24; i++) arr[i] = in[t] * (i + 1) + i;
  int s = 0;
  for (int j = 0; j < 5; j++) s += arr[(in[t] + 7 * j) % 24];
  out[t] = s;
}
extern "C" __global__ void v(const int* in, int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  volatile int arr[16];                     // a flat pointer into the private aperture
  for (int i = 0; i < 16; i++) arr[i] = in[t] * i;
  out[t] = arr[in[t] & 15];
}
extern "C" __global__ void oob(const int* in, int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  volatile int arr[4];
  arr[0] = 1;
  out[t] = arr[in[t]];                      // in[t] = 100000: far outside the 16 bytes
}
'''


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("kernel", ["k", "v"])
def test_item4_private_memory(arch, opt, kernel):
    # gfx90a: buffer_* on the swizzled private segment V# (-O0 stack, arrays); gfx942:
    # scratch_*; both: flat_* through src_private_base
    n = 1000
    inp = np.random.default_rng(0).integers(0, 1000, n).astype(np.int32)
    if kernel == "k":
        arr = inp[:, None] * (np.arange(24) + 1) + np.arange(24)
        want = sum(arr[np.arange(n), (inp + 7 * j) % 24] for j in range(5)).astype(np.int32)
    else:
        want = (inp * (inp & 15)).astype(np.int32)
    out = run_hip(PRIVATE, kernel, {"in": inp, "out": np.zeros(n, np.int32)}, n=n,
                  scalars={"n": n}, arch=arch, opt=opt, block=256)["out"]
    assert np.array_equal(out, want)


@pytest.mark.parametrize("arch", ARCHS)
def test_private_access_outside_the_lane_segment_is_a_fault(arch):
    inp = np.full(64, 100000, np.int32)
    res = run_hip(PRIVATE, "oob", {"in": inp, "out": np.zeros(64, np.int32)}, n=64,
                  scalars={"n": 64}, arch=arch, opt="O2", expect="fault")
    assert res.status == "fault", res.message
    assert "private" in res.message and res.byte_address is not None


def test_private_bytes_come_from_the_descriptor():
    # a kernel with no private segment has no private bytes: any scratch access faults
    with pytest.raises(MemoryFault, match="outside the lane's 0 private bytes"):
        run_asm("scratch_store_dword off, v0, off offset:4")


def test_dynamic_stack_from_the_spec_extends_the_private_segment(tmp_path):
    from asmevo.emu import run_launch
    from tests.emu.asmdsl import build_kernel
    from asmevo.launch.spec import LaunchSpec
    from dataclasses import replace
    co = tmp_path / "k.co"
    co.write_bytes(build_kernel("v_mov_b32 v0, 7\nscratch_store_dword off, v0, off offset:64\n"
                                "scratch_load_dword v1, off, off offset:64"))
    spec = LaunchSpec(name="t", kernel="k", code_object=co, grid=(1, 1, 1), block=(64, 1, 1),
                      args=())
    assert run_launch(co, spec, {}).status == "fault"
    assert run_launch(co, replace(spec, dynamic_stack=68), {}).status == "ok"


def test_an_exception_inside_an_instruction_is_not_a_fault(tmp_path, monkeypatch):
    from asmevo.emu import run_launch
    from asmevo.emu.isa import valu
    from asmevo.launch.spec import LaunchSpec
    from tests.emu.asmdsl import build_kernel

    def broken(*args):
        raise OverflowError("integer division result too large for a float")
    monkeypatch.setitem(valu.OPS, "v_fma_f64", ("f64", ("f64", "f64", "f64"), broken))
    co = tmp_path / "k.co"
    co.write_bytes(build_kernel("v_fma_f64 v[4:5], v[0:1], v[2:3], v[4:5]  ; internal-error"))
    spec = LaunchSpec(name="t", kernel="k", code_object=co, grid=(1, 1, 1), block=(64, 1, 1),
                      args=())
    res = run_launch(co, spec, {})
    assert res.status == "unsupported" and "OverflowError" in res.message
    assert res.address is not None


@pytest.mark.parametrize("arch", ARCHS)
def test_item1_item5_f64_division_overflow_and_nan_bits(arch):
    a = np.array([1e300, -1e300, 0.0, np.inf, 1.0, 2.0 ** -1074])
    b = np.array([1e-300, 1e-300, 0.0, -np.inf, 0.0, 3.0])
    sn = np.array([0x7FF0000000000001], np.uint64).view(np.float64)
    a = np.concatenate([a, sn]); b = np.concatenate([b, [1.0]])
    out = run_hip(DIV, "ddiv", {"a": a, "b": b, "y": np.zeros(a.size)}, n=a.size,
                  scalars={"n": a.size}, arch=arch)["y"]
    bits = out.view(np.uint64)
    assert out[0] == np.inf and out[1] == -np.inf
    assert bits[2] == 0xFFF8000000000000 and bits[3] == 0xFFF8000000000000   # 0/0, inf/inf
    assert out[4] == np.inf and out[5] == 0.0
    assert bits[6] == 0x7FF8000000000001                                     # sNaN quieted


CALLS = '''
__attribute__((noinline)) __device__ int helper(int* arr, int x) {
  int local[8];
  for (int i = 0; i < 8; i++) local[i] = arr[i] * x + i;
  int s = 0;
  for (int i = 0; i < 8; i++) s += local[(x + i) & 7] * (i + 1);
  return s;
}
__attribute__((noinline)) __device__ int rec(int n, int* arr) {
  int buf[4]; buf[n & 3] = n;
  if (n <= 0) return arr[0];
  return rec(n - 1, arr) + buf[n & 3];
}
extern "C" __global__ void k(const int* in, int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int arr[8];
  for (int i = 0; i < 8; i++) arr[i] = in[t] + i;
  out[t] = helper(arr, in[t] & 15) + rec(in[t] & 7, arr);
}
'''


@pytest.mark.parametrize("arch", ARCHS)
def test_stack_frames_of_calls_and_recursion_at_O0(arch):
    # callee frames through the stack pointer (wave-scaled on gfx90a), AGPR spills in the
    # callees (the kernels' accum_offset), and a recursive function's dynamic stack
    n = 256
    inp = np.random.default_rng(2).integers(0, 1000, n).astype(np.int32)

    def ref(x):
        arr = [x + i for i in range(8)]
        xx = x & 15
        local = [arr[i] * xx + i for i in range(8)]
        return sum(local[(xx + i) & 7] * (i + 1) for i in range(8)) + arr[0] + sum(
            range(1, (x & 7) + 1))
    want = np.array([ref(int(x)) for x in inp], np.int32)
    bufs = {"in": inp, "out": np.zeros(n, np.int32)}
    res = run_hip(CALLS, "k", bufs, n=n, scalars={"n": n}, arch=arch, opt="O0", block=128,
                  expect="fault")
    assert res.status == "fault" and "dynamic_stack" in res.message
    out = run_hip(CALLS, "k", bufs, n=n, scalars={"n": n}, arch=arch, opt="O0", block=128,
                  dynamic_stack=4096)["out"]
    assert np.array_equal(out, want)


def test_fma_f64_exact_product_plus_infinity_is_that_infinity():
    # emufuzz repro fma-f64-exact-product: DBL_MAX * -2 overflows as a float product, but
    # the exact product is finite, so adding +inf gives +inf (not -inf + inf = NaN)
    from asmevo.emu.numerics.exact import fma64
    r = fma64(np.array([1.7976931348623157e308, np.inf, 0.0]), np.array([-2.0, 0.0, np.inf]),
              np.array([np.inf, 1.0, 1.0]))
    assert r[0] == np.inf and np.isnan(r[1]) and np.isnan(r[2])


def test_fma_f64_of_a_product_below_the_denormals_keeps_its_sign():
    # emufuzz seed 2000 program 528: fma(|x|, x, +0) with x = -1e-200: the exact product
    # is negative and nonzero, so it rounds to -0 (was +0: taken for an exact zero sum)
    from asmevo.emu.numerics.exact import fma64
    x = np.array([-1e-200, 1e-200, -3e-170])
    r = fma64(np.abs(x), x, np.zeros(3))
    assert list(np.signbit(r)) == [True, False, True] and (r == 0).all()
    o = run_asm("v_fma_f64 v[4:5], v[0:1], v[2:3], 0",
                v={0: np.full(64, 0x2A6A4A4A, U), 1: np.full(64, 0x1E3C9F4B, U),
                   2: np.full(64, 0x2A6A4A4A, U), 3: np.full(64, 0x9E3C9F4B, U)})
    assert (o.v(5) == 0x80000000).all() and (o.v(4) == 0).all()


def test_cvt_f16_f32_of_a_nan_truncates_the_payload_and_quiets():
    # emufuzz repro cvt-f16-f32-nan-payload: 0x7f800001 -> 0x7e00 (payload only in dropped bits)
    v = np.array([0x7F800001, 0xFFC02000, 0x7FA00000] + [0] * 61, U).view(np.float32)
    o = run_asm("v_cvt_f16_f32_e32 v1, v0\nv_cvt_f32_f16_e32 v2, v1", v={0: v})
    assert list(o.v(1)[:3]) == [0x7E00, 0xFE01, 0x7F00]
    assert o.v(2)[0] == 0x7FC00000 and o.v(2)[2] == 0x7FE00000


def test_misaligned_private_access_inside_an_element_and_across_one():
    """Inside one 4-byte element a misaligned access is contiguous in the swizzled layout
    and runs; across elements (legal in unaligned mode, emitted by LLVM: emufuzz seed 1000
    program 30) its bytes' place is not modelled, so it is refused, not a fault."""
    from asmevo.emu.errors import UnsupportedInstruction
    d = ".amdhsa_private_segment_fixed_size 32\n.amdhsa_enable_private_segment 1"
    o = run_asm("v_mov_b32 v0, 0x11223344\nscratch_store_short off, v0, off offset:5\n"
                "scratch_load_ushort v1, off, off offset:5\ns_waitcnt vmcnt(0)", directives=d)
    assert (o.v(1) == 0x3344).all()
    with pytest.raises(UnsupportedInstruction, match="crosses a 4-byte element"):
        run_asm("scratch_store_dword off, v0, off offset:14", directives=d)


_GFX90A_PRIVATE = (".amdhsa_user_sgpr_private_segment_buffer 1\n"
                   ".amdhsa_private_segment_fixed_size 256\n"
                   ".amdhsa_system_sgpr_private_segment_wavefront_offset 1")


def test_a_swizzled_buffer_offset_wraps_at_2_32():
    """gfx90a: VGPR offset + offset: is a 32-bit sum (LLVM folds a negative VGPR offset
    against a positive immediate; emufuzz seed 2000 program 413, seed 5000 program 4380):
    v7 = 4j - 160 with offset:160 stores lane j's element j, read back at offset 4j."""
    body = ("v_lshlrev_b32 v9, 2, v0\nv_subrev_u32 v7, 0xa0, v9\nv_add_u32 v6, 5, v0\n"
            "buffer_store_dword v6, v7, s[0:3], s7 offen offset:160\ns_waitcnt vmcnt(0)\n"
            "buffer_load_dword v8, v9, s[0:3], s7 offen\ns_waitcnt vmcnt(0)")
    o = run_asm(body, proc="gfx90a", directives=_GFX90A_PRIVATE, user_sgprs=6)
    assert o.v(7)[1] == 2**32 - 156
    assert list(o.v(8)) == [j + 5 for j in range(64)]
    # a sum that wraps to a huge offset is still outside the lane's bytes: a fault
    with pytest.raises(MemoryFault, match="4-byte store"):
        run_asm("v_mov_b32 v7, -4\nbuffer_store_dword v6, v7, s[0:3], s7 offen", proc="gfx90a",
                directives=_GFX90A_PRIVATE, user_sgprs=6)
