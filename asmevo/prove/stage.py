"""The prover as the verify pipeline's ``prove`` stage sees it.

After the differential run has found a candidate equal on every launch, :func:`judge`
asks :func:`asmevo.prove.validate.prove_programs` whether K0's kernel and the
candidate's are the same function. Its answer goes into the verdict's details:
``coverage`` (``proved`` or ``tested``) and ``proof`` (status, kind, reason, time,
the regions and loops it looked at). A refutation rejects the candidate (verdict
``refuted``, with the counterexample the emulator reproduced); with ``mode ==
"require"`` anything short of a proof rejects it (``unproved``). Without the solver
installed the stage says ``tested`` and why. A failure inside the prover never stops
an evaluation: the candidate stays ``tested`` and the details say what failed.
"""
from __future__ import annotations

from asmevo.prove.z3env import available, missing_reason
from asmevo.verdict import Verdict

MODES = ("off", "on", "require")
BUDGET_S = 30.0          # seconds one candidate's proof may take before it gives up
BUDGET_MAX_S = 3600.0    # the most a run may grant it ([run] proof_budget)


def judge(k0_program, cand_program, kernel: str, mode: str = "on",
          budget_s: float = BUDGET_S, block=None) -> tuple[Verdict | None, dict]:
    """(the verdict that refuses the candidate, or None; the details to add); ``block``:
    the launch's work-items per workgroup, where known (see ``prove_programs``)."""
    if not available():
        proof = {"status": "unavailable", "reason": missing_reason()}
    else:
        proof = _prove(k0_program, cand_program, kernel, budget_s, block)
    details = {"coverage": "proved" if proof["status"] == "proved" else "tested",
               "proof": proof}
    if proof["status"] == "refuted":
        return Verdict("refuted", f"the prover refutes it: {proof['reason']}", details), details
    if mode == "require" and proof["status"] != "proved":
        return Verdict("unproved", f"a proof is required: {proof['reason']}", details), details
    return None, details


def _prove(k0_program, cand_program, kernel: str, budget_s: float, block) -> dict:
    from asmevo.prove.validate import prove_programs
    try:
        return prove_programs(k0_program, cand_program, kernel,
                              budget_s=budget_s, block=block).to_json(seconds=False)
    except Exception as exc:    # noqa: BLE001 - the prover's failure leaves the test verdict
        return {"status": "unknown", "kind": "error",
                "reason": f"the prover failed: {type(exc).__name__}: {exc}"[:300]}
