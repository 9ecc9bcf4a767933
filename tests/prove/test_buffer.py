"""Buffer loads and stores in proofs (asmevo/prove/sem_buffer.py): the V# range check (a
lane out of range reads 0 and writes nothing), the swizzled layout, and refutations
through a buffer access that the emulator reproduces."""
from __future__ import annotations

from asmevo.prove import check, sem_buffer
from asmevo.prove.machine import Context
from tests.prove.test_equiv import prove_window, replays, window

CTX = Context(0x2F0)
# a linear V# in s[8:11] (SWIZZLE_ENABLE and ADD_TID_ENABLE clear, stride 0) with
# num_records = s10 as the window sets it
LINEAR = ["s_and_b32 s9, s9, 0xffff", "s_mov_b32 s11, 0x27000"]


def test_every_lane_out_of_range_reads_zero():
    k0 = LINEAR + ["s_mov_b32 s10, 0", "buffer_load_dwordx2 v[1:2], v3, s[8:11], 0 offen"]
    cand = LINEAR + ["s_mov_b32 s10, 0", "v_mov_b32_e32 v1, 0", "v_mov_b32_e32 v2, 0"]
    assert prove_window(CTX, window(k0, cand, "v1", "v2", "s9", "s10", "s11")).status == \
        "proved"


def test_a_store_out_of_range_writes_nothing():
    # num_records 8: a dword at offset 8 + v3 (>= 8) ends past it in every lane
    k0 = LINEAR + ["s_mov_b32 s10, 8", "buffer_store_dword v1, v3, s[8:11], 0 offen offset:8"]
    cand = LINEAR + ["s_mov_b32 s10, 8"]
    assert prove_window(CTX, window(k0, cand, "s9", "s10", "s11")).status == "proved"
    # offset 4: lanes with v3 = 0 store (the last dword of the range)
    k0[-1] = "buffer_store_dword v1, v3, s[8:11], 0 offen offset:4"
    w = window(k0, cand, "s9", "s10", "s11")
    got = prove_window(CTX, w)
    assert got.status == "refuted" and "memory" in got.counterexample["differs"]
    assert replays(w, got)


def test_a_range_checked_load_is_not_a_plain_load():
    # with the check, a lane past num_records reads 0, not the memory at its address
    w = window(["buffer_load_dword v1, v3, s[8:11], 0 offen"],
               ["v_mov_b32_e32 v4, 0", "buffer_load_dword v1, v3, s[8:11], 0 offen"], "v1")
    assert prove_window(CTX, w).status == "proved"
    w = window(LINEAR + ["buffer_load_dword v1, v3, s[8:11], 0 offen"],
               LINEAR + ["v_mov_b32_e32 v4, 0", "buffer_load_dword v1, v3, s[8:11], 0 offen",
                         "v_cmp_le_u32_e32 vcc, s10, v3", "v_cndmask_b32_e32 v1, v1, v4, vcc"],
               "v1", "s9", "s11")
    assert prove_window(CTX, w).status == "proved"


def test_a_moved_offset_is_refuted_and_replays():
    # the instruction's offset in 64 bits, the VGPR add in 32: they differ where v3 wraps
    # (a linear V#: with the swizzled layout's terms too the question is slow)
    w = window(LINEAR + ["buffer_load_dword v1, v3, s[8:11], 0 offen offset:4"],
               LINEAR + ["v_add_u32_e32 v4, 4, v3", "buffer_load_dword v1, v4, s[8:11], 0 offen"],
               "v1", "s9", "s11")
    got = prove_window(CTX, w)
    assert got.status == "refuted" and got.counterexample["replayed"], got.reason
    assert replays(w, got)


def test_the_swizzled_layout_is_not_the_linear_one(monkeypatch):
    text = "buffer_load_dwordx2 v[10:11], v4, s[8:11], s12 offen offset:8"
    assert check.check_text(text, cases=40).disagreements == []
    monkeypatch.setattr(sem_buffer.Access, "swizzle", lambda self, i: self.linear(i))
    assert check.check_text(text, cases=40).disagreements


def test_a_buffer_load_into_lds_and_a_buffer_atomic_are_refused():
    assert check.check_text("buffer_load_dword v1, s[8:11], 0 offen lds").refused
    assert check.check_text("buffer_atomic_add v1, v2, s[8:11], 0 offen").refused
