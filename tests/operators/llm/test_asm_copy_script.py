"""The recorded asm_copy exchanges, driven through the operators and judged by the verifier.

This is the operator half of the end-to-end acceptance test: a correct
improving edit (equal to K0), a wrong edit (mismatch) whose verdict reaches the
next prompt and gets repaired, and a hostile answer refused before any tool.
The engine half (a short search that runs these through the archive) is wired
the same way; see docs/llm.md.
"""
from __future__ import annotations

import json

import pytest

from asmevo.targets.amdgpu import sanitize
from asmevo.operators.llm.spend import MemoryLedger, spend_report
from asmevo.operator import Attempt, Rejected
from tests.operators.llm.conftest import ASM_COPY, DATA, GOOD, K0, make_context

SCRIPT = DATA / "asm_copy_e2e.json"


@pytest.fixture(scope="module")
def verify():
    """K0's reference runs on the emulator, and a judge for one edit list."""
    from asmevo.verify.differential import differential
    from asmevo.verify.evaluate import EvalContext, build_candidate, k0_state

    ctx = EvalContext(spec_path=str(ASM_COPY / "spec.toml"), size="small", isolate=False)
    st = k0_state(ctx)

    def judge(edits):
        data, verdict = build_candidate(ctx, tuple(edits))
        return verdict if verdict is not None else differential(st.device, st.reference, data,
                                                                st.spec, runs=ctx.runs)
    return judge


def test_recorded_exchanges_end_to_end(replay, make_op, asm_copy_k0, verify, monkeypatch):
    srv = replay(json.loads(SCRIPT.read_text()))
    mutate, repair = make_op("llm_mutate", srv), make_op("llm_repair", srv)
    ledger = MemoryLedger()
    encoded = []
    real = sanitize.encode_lines
    monkeypatch.setattr(sanitize, "encode_lines",
                        lambda lines, t, **k: encoded.append(list(lines)) or real(lines, t, **k))
    notebook: list[Attempt] = []

    def attempt(slot, op="mutate"):
        ctx = make_context(asm_copy_k0, ledger=ledger, slot=slot, notebook=notebook[::-1])
        e = (mutate if op == "mutate" else repair).mutate(K0, ctx)
        if isinstance(e, Rejected):
            return e, ctx.reasons
        v = verify([e])
        notebook.append(Attempt(1, e.operator, str(e), e, v.status, v.reason, None, None))
        return e, v

    # 1. the correct, improving edit: 7 -> 4 instructions, bit-equal to K0
    e1, v1 = attempt(0)
    assert list(e1.lines) == GOOD and v1.status == "equal", v1
    # 2. the wrong edit: rejected by the verifier with a first mismatch
    e2, v2 = attempt(1)
    assert v2.status == "mismatch" and "dst[" in v2.reason
    # 3. the hostile answer: refused before llvm-mc, reason recorded
    e3, reasons = attempt(2)
    assert isinstance(e3, Rejected) and ".incbin" in reasons[0]
    assert not any(".incbin" in " ".join(x) for x in encoded)
    # 4. the verdict of (2) is in the next prompt, and the repair is correct
    e4, v4 = attempt(3, op="repair")
    assert v4.status == "equal" and list(e4.lines) == GOOD
    assert "status: mismatch" in srv.received[-1].raw and v2.reason[:40] in srv.received[-1].raw
    # spend: every answered call is recorded once, the hostile one included
    rows = list(ledger.rows.values())
    assert [r["status"] for r in rows] == ["proposed", "proposed", "rejected", "proposed"]
    assert rows[0]["cache_write_tokens"] == 2300 and rows[1]["cache_read_tokens"] == 2300
    improved = [rows[0]["call_id"], rows[3]["call_id"]]
    assert spend_report(rows, improved)["total"].cost_per_improvement > 0
