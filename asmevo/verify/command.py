"""``asmevo verify SPEC K0 K1``: is K1 the same function as K0, and is it faster?"""
from __future__ import annotations

import json
from pathlib import Path

from asmevo.runtime.registry import DEFAULT_DEVICE, REGISTRY as DEVICES, default_timing
from asmevo.targets import DEFAULT_TARGET, REGISTRY as TARGETS
from asmevo.verify import candidate_command


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="differential verification of K1 against K0, then timing")
    p.add_argument("spec", help="spec.toml (or its folder)")
    p.add_argument("k0", help="reference code object")
    p.add_argument("k1", help="candidate code object")
    p.add_argument("--device", default=DEFAULT_DEVICE, choices=list(DEVICES))
    p.add_argument("--target", default=DEFAULT_TARGET, choices=list(TARGETS),
                   help="ISA family of K0 and K1")
    p.add_argument("--size", default="small")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated input seeds")
    p.add_argument("--no-special", action="store_true", help="skip the special-values input set")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--family-seed", type=int, default=0,
                   help="which seeded members of the spec's launch family (an equal verdict "
                        "records it: the same seed replays the same launches)")
    p.add_argument("--one-launch", action="store_true",
                   help="check at --size only: no family members, workgroup orders or "
                        "overlapping buffers")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main)
    candidate_command.add_parser(sub)     # ``asmevo candidate``: its stage-by-stage sibling


def coverage_lines(verdict) -> list[str]:
    """What an equal verdict's launches left out, and what K0 itself fails: one line each."""
    fam = verdict.details.get("family") or {}
    out = []
    if fam.get("k0_fails"):
        out += [f"note: K0 itself fails {k} ({' '.join(str(v).split())[:160]}): not held "
                "against the candidate; the family may be wider than the kernel's contract"
                for k, v in fam["k0_fails"].items()]
    if fam.get("excluded"):
        out.append("not checked: " + "; ".join(f"{k} ({v})" for k, v in
                                               list(fam["excluded"].items())[:6])
                   + (f"; and {len(fam['excluded']) - 6} more" if len(fam["excluded"]) > 6
                      else ""))
    if fam:
        out.append(f"family seed {fam.get('seed', 0)} (--family-seed replays these launches)")
    return out


def main(args) -> int:
    from asmevo.files import read_input
    from asmevo.targets import get_target
    from asmevo.verify.evaluate import EvalContext, evaluate_code, k0_problems

    ctx = EvalContext(spec_path=str(Path(args.spec)), size=args.size, code_object=args.k0,
                      device=args.device, timing=default_timing(args.device),
                      target=args.target,
                      seeds=tuple(int(s) for s in args.seeds.split(",") if s.strip()),
                      special_values=not args.no_special, timeout=args.timeout,
                      family=not args.one_launch, family_seed=args.family_seed)
    k1 = read_input(args.k1, what="code object")
    get_target(args.target).load(k1, path=args.k1)   # not a code object: bad input, exit 2
    ev = evaluate_code(ctx, k1)
    problems = k0_problems(ctx)
    if args.json:
        print(json.dumps(ev.to_json() | {"k0_problems": problems}, indent=2))
    else:
        if problems:
            print(f"note: K0 itself has {len(problems)} static-check problem"
                  f"{'s' if len(problems) > 1 else ''}; candidates are refused only for new "
                  f"ones: {problems[0]}" + (f" (and {len(problems) - 1} more)"
                                            if len(problems) > 1 else ""))
        print(f"verdict: {ev.verdict}")
        for line in coverage_lines(ev.verdict):
            print(line)
        if ev.timing is not None:
            t = ev.timing
            print(f"speedup: {t.speedup:.4f}x  [{t.label}, {t.device}]  "
                  f"K0 {t.k0:.6g} {t.unit}, K1 {t.candidate:.6g} {t.unit}, noise bound {t.noise:.2%}")
            print("improved" if t.improved else "not faster than K0 beyond the noise bound")
    return 0 if ev.verdict.equal else 1
