"""``asmevo candidate SPEC EDITS [--until STAGE]``: one edit list through the pipeline.

For debugging a stage on its own: the candidate goes through the stages of
:data:`asmevo.verify.pipeline.CANDIDATE` in order and stops after ``--until``
(``apply``, ``gate``, ``build``, ``abi``, ``differential``, ``timing``; all of
them by default). It prints the stages it passed, and the stage that refused it
with the verdict; ``--out`` writes the candidate's bytes once a build stage has
run. Exit 0: every stage run passed; 1: a stage refused it; 2: bad input.
"""
from __future__ import annotations

import json
from pathlib import Path

from asmevo.runtime.registry import DEFAULT_DEVICE, REGISTRY as DEVICES, default_timing
from asmevo.targets import DEFAULT_TARGET, REGISTRY as TARGETS
from asmevo.verify.pipeline import CANDIDATE


def add_parser(sub) -> None:
    p = sub.add_parser("candidate", help="run one edit list through the pipeline's stages "
                       "(up to --until)")
    p.add_argument("spec", help="spec.toml (or its folder)")
    p.add_argument("edits", help="JSON file: an edit list (as the archive stores it)")
    p.add_argument("--until", choices=CANDIDATE, help="the last stage to run (default: all)")
    p.add_argument("--code-object", help="K0 (default: the spec's)")
    p.add_argument("--device", default=DEFAULT_DEVICE, choices=list(DEVICES))
    p.add_argument("--target", default=DEFAULT_TARGET, choices=list(TARGETS))
    p.add_argument("--size", default="small")
    p.add_argument("--out", help="write the candidate's bytes here (once built)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main)


def main(args) -> int:
    import hashlib

    from asmevo.edits import edits_from_json
    from asmevo.errors import AsmevoError
    from asmevo.files import read_input_text
    from asmevo.verify.evaluate import EvalContext, setting
    from asmevo.verify.pipeline import Candidate, run, stages_until

    try:
        edits = edits_from_json(read_input_text(args.edits, what="edit list"))
    except AsmevoError as exc:
        raise exc.in_file(args.edits)
    ctx = EvalContext(spec_path=str(Path(args.spec)), size=args.size,
                      code_object=args.code_object, device=args.device, target=args.target,
                      timing=default_timing(args.device))
    stages = stages_until(CANDIDATE, args.until)
    refused, cand, verdict = run(setting(ctx), Candidate(edits), CANDIDATE, until=args.until)
    passed = stages[:stages.index(refused)] if refused else stages
    if args.out and cand.data is not None:
        Path(args.out).write_bytes(cand.data)
    out = {"stages": list(stages), "passed": list(passed), "refused_by": refused,
           "verdict": verdict.to_json() if verdict is not None else None,
           "sha256": hashlib.sha256(cand.data).hexdigest() if cand.data is not None else None,
           "timing": cand.timing.to_json() if cand.timing is not None else None}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for name in passed:
            print(f"{name}: passed")
        if refused:
            print(f"{refused}: refused: {verdict}")
        elif verdict is not None:
            print(f"verdict: {verdict}")
        if cand.timing is not None:
            t = cand.timing
            print(f"timing: {t.speedup:.4f}x [{t.label}, {t.device}] K0 {t.k0:.6g} {t.unit}, "
                  f"candidate {t.candidate:.6g} {t.unit}")
        if out["sha256"]:
            print(f"bytes: sha256 {out['sha256']}" + (f", written to {args.out}"
                                                      if args.out else ""))
    return 1 if refused else 0
