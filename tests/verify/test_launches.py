"""A check covers more than one launch: what K0's baseline holds, and candidates that are
equal in lockstep at the size under check but not at every launch a user makes."""
import pytest

from asmevo.launch.spec import ArgSpec, LaunchSpec
from asmevo.runtime.emulator import EmulatorDevice
from asmevo.verify.differential import reference_runs
from asmevo.verify.evaluate import EvalContext, evaluate_candidate, k0_state
from asmevo.verify.launches import check, coverage
from tests.conftest import KERNELS
from tests.emu.asmdsl import build_kernel

# out[wg * 64 + lane] = lane: workgroups share no byte
K0 = """
    s_load_dwordx2 s[4:5], s[0:1], 0x0
    s_waitcnt lgkmcnt(0)
    s_lshl_b32 s6, s2, 8
    v_lshlrev_b32_e32 v1, 2, v0
    v_add_u32_e32 v1, s6, v1
{before}
    global_store_dword v1, v0, s[4:5]
{after}
    s_waitcnt vmcnt(0)
"""
# first a wrong value into the partner workgroup's slot (wg ^ 1): the real stores come
# later in lockstep and win there; run one workgroup at a time, one is clobbered
PARTNER = """
    s_xor_b32 s7, s2, 1
    s_lshl_b32 s7, s7, 8
    v_lshlrev_b32_e32 v2, 2, v0
    v_add_u32_e32 v2, s7, v2
    v_mov_b32_e32 v3, 0xdead
    global_store_dword v2, v3, s[4:5]
"""
# then every lane stores 63 - lane to the workgroup's first element: the emulator's last
# lane (63) stores 0, K0's value there, but which lane lands is not promised
ONE_ADDRESS = """
    v_sub_u32_e32 v3, 63, v0
    v_mov_b32_e32 v4, s6
    global_store_dword v4, v3, s[4:5]
"""


def _spec(grid: int) -> LaunchSpec:
    return LaunchSpec(name="lanes", kernel="k", code_object=None, grid=(grid, 1, 1),
                      block=(64, 1, 1), args=(ArgSpec(name="out", kind="buffer",
                                                      dtype="uint32", count=64 * grid,
                                                      output=True),))


def _check(before: str = "", after: str = "", grid: int = 2):
    dev, spec = EmulatorDevice(), _spec(grid)
    k0 = build_kernel(K0.format(before="", after=""), buffers=1)
    k1 = build_kernel(K0.format(before=before, after=after), buffers=1)
    base = coverage(dev, k0, spec, reference_runs(dev, k0, spec, seeds=(0,)), None)
    return base, check(dev, base, k1, spec, runs=1, barriers=False)


def test_k0_against_itself_covers_the_orders():
    base, v = _check()
    ex = base.extras[0]
    assert v.equal and list(ex.orders) == ["ascending", "descending", "shuffle:0"]
    assert v.details["launches"] == v.details["launches"] and "3 orders" in v.reason
    assert v.details["family"]["orders"] == ["ascending", "descending", "shuffle:0"]


def test_a_store_into_another_workgroups_slot_is_caught_by_the_order():
    _, v = _check(before=PARTNER)
    assert v.status == "mismatch" and "workgroups" in v.details["input_set"]
    assert "workgroups run one at a time" in v.reason


def test_lanes_storing_different_values_to_one_address_are_unspecified():
    _, v = _check(after=ONE_ADDRESS)
    assert v.status == "unspecified", v
    assert "lanes of one wave" in v.reason and v.details["lane_conflicts"]


def test_one_workgroup_runs_no_orders():
    base, v = _check(grid=1)
    assert v.equal and len(base.extras) == 1 and base.extras[0].orders == {}


VADD = KERNELS / "vector_add"


def test_the_baseline_says_what_it_covers_and_leaves_out():
    st = k0_state(EvalContext(spec_path=str(VADD), size="small", timing="none", seeds=(0,)))
    base = st.coverage
    main_cost = max(r.details["instructions"] for r in base.main.results.values())
    assert base.members and all(m.spec.member == m.member.label for m in base.members)
    assert all(m.cost <= 2.0 * main_cost for m in base.members)       # the default budget
    s = base.summary()
    assert s["seed"] == 0 and s["declared"] == (not base.derived)
    assert [m["label"] for m in s["members"]] == [m.member.label for m in base.members]
    assert all(why.startswith(("over the budget", "N moves the grid"))
               for k, why in s.get("excluded", {}).items() if not k.startswith("overlap"))
    assert s["aliases"] == []            # vector_add's buffers are noalias (__restrict__)
    assert s["members"][0]["why"] == "the smallest launch" and s["declared"]


def test_overlaps_where_the_kernel_allows_them():
    """tri_add declares no noalias: its output laid over an input (in place, and shifted:
    each work-item reads its elements before it writes its own) is in its contract, on
    a launch of several workgroups and on one of one."""
    st = k0_state(EvalContext(spec_path=str(KERNELS / "tri_add"), size="small",
                              timing="none", seeds=(0,)))
    s = st.coverage.summary()
    assert any(a.startswith(("out=x ", "out=y ")) for a in s["aliases"]), s
    ats = {a.split(" at ")[1] for a in s["aliases"]}
    assert len(ats) >= 2 and any(ex.orders for ex in st.coverage.extras)


def test_one_launch_when_asked():
    ctx = EvalContext(spec_path=str(VADD), size="small", timing="none", seeds=(0,),
                      family=False)
    v = evaluate_candidate(ctx, ()).verdict
    assert v.equal and "launch-family members" not in v.reason
    assert k0_state(ctx).coverage.members == [] and "one launch" in v.reason


@pytest.mark.parametrize("seed", [0, 5])
def test_an_equal_verdict_replays_from_its_seed(seed):
    ctx = EvalContext(spec_path=str(VADD), size="small", timing="none", seeds=(0,),
                      family_seed=seed)
    v = evaluate_candidate(ctx, ()).verdict
    fam = v.details["family"]
    again = k0_state(EvalContext(spec_path=str(VADD), size="small", timing="none",
                                 seeds=(0,), family_seed=fam["seed"])).coverage
    assert [m.member.params for m in again.members] == [m["params"] for m in fam["members"]]
