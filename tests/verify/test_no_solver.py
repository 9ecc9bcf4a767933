"""Without the prove extra (z3 not importable) verification works as before and says
``tested``: run in a child process where ``import z3`` fails."""
import json
import subprocess
import sys

from tests.conftest import KERNELS, ROOT

CHILD = r"""
import json, sys
sys.modules["z3"] = None                     # import z3 raises ImportError
from asmevo.edits import Edit
from asmevo.prove.z3env import available
from asmevo.verdict import coverage_label
from asmevo.verify.evaluate import EvalContext, evaluate_candidate
ctx = EvalContext(spec_path=sys.argv[1], size="small", seeds=(0,), runs=1, timing="none",
                  family=False)
swap = Edit("vector_add", 16, 18, ("global_load_dword v7, v[2:3], off",
                                   "global_load_dword v6, v[4:5], off"))
v = evaluate_candidate(ctx, (swap,)).verdict
print(json.dumps({"available": available(), "status": v.status,
                  "coverage": v.details.get("coverage"), "label": coverage_label(v.details),
                  "proof": v.details.get("proof", {}).get("status")}))
"""


def test_without_the_solver_an_equal_candidate_is_tested():
    out = subprocess.run([sys.executable, "-c", CHILD, str(KERNELS / "vector_add")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["available"] is False
    assert (got["status"], got["coverage"], got["proof"]) == ("equal", "tested", "unavailable")
    assert got["label"].startswith("tested (")
