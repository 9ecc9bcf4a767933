"""Prompt and answer sizes of one ``llm_agent`` conversation, turn by turn, on a corpus kernel.

Runs a one-generation search (the real engine, evaluator and archive; the CPU
emulator; modeled timing) whose only operator is ``llm_agent``, against the
replay server, and measures the request bodies the server received:

- ``prefix``: tools + both system blocks (agent notes, the kernel block): cached,
  the same bytes on every turn and every conversation on the kernel;
- ``transcript``: the messages, all of them; ``new``: the part of them the
  previous request did not have (the previous answer and its tool results,
  or the first message): what a turn writes to the cache;
- ``answer``: the answer's content blocks (text and tool calls) as stored.

Token figures are estimates (no tokenizer offline): characters / 3.5 (JSON with
assembly and prose). Cost: claude-sonnet-4-6 list prices with prompt caching
(the prefix and the old transcript read at $0.30/Mtok, the new part written at
$3.75/Mtok, the answer at $15/Mtok; a cold prefix is written once per kernel).

    python experiments/bench_llm_agent.py                    # asm_copy, the test's script
    python experiments/bench_llm_agent.py --kernel softmax   # its hottest window

Kernels other than asm_copy get a generic conversation on K0's hottest
modeled window: show and analyze it, try it without its first instruction,
try it with an ``s_nop 0`` in front (equal, a little slower), submit that.
The last lines are ``name=value`` figures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHARS_PER_TOKEN = 3.5
SONNET = {"read": 0.30, "write": 3.75, "output": 15.0}     # $ per Mtok


def hottest_window(spec_dir: Path) -> tuple[str, int, int]:
    """K0's hottest modeled window (what its evaluation keeps first)."""
    from asmevo.verify.evaluate import EvalContext, evaluate_candidate
    ev = evaluate_candidate(EvalContext(spec_path=str(spec_dir)), ())
    fn, start, end, _ = ev.verdict.details["hot_windows"][0]
    return fn, int(start), int(end)


def generic_script(program, window) -> dict:
    fn, start, end = window
    lines = [i.text for i in program.function(fn).instructions[start:end]]
    n = len(program.function(fn).instructions)
    show = {"function": fn, "start": max(0, start - 8), "end": min(n, end + 8)}
    return {"exchanges": [
        {"kind": "tool_use", "text": "Looking at the hot window first.",
         "calls": [{"tool": "show", "input": show},
                   {"tool": "analyze", "input": {"start": start, "end": end}}]},
        {"kind": "tool_use", "tool": "try_edit",
         "input": {"start": start, "end": end, "replacement": lines[1:]}},
        {"kind": "tool_use", "tool": "try_edit",
         "text": "That broke it; the first instruction is needed. Keeping it, with a nop.",
         "input": {"start": start, "end": end, "replacement": ["s_nop 0"] + lines}},
        {"kind": "tool_use", "tool": "submit",
         "input": {"start": start, "end": end, "replacement": ["s_nop 0"] + lines,
                   "rationale": "the only passing try"}}]}


def config(kernel_dir: Path, base_url: str) -> str:
    return textwrap.dedent(f"""\
        [run]
        name = "bench-llm-agent"
        seed = 3
        spec = "{kernel_dir}"
        size = "small"
        device = "emulator"
        timing = "modeled"

        [engine]
        islands = 1
        population = 2
        generations = 0
        elite = 1
        hall_of_fame = 2

        [operators]
        llm_agent = {{ weight = 1.0, base_url = "{base_url}", backoff_base_s = 0.001 }}
        """)


def measure(received, answers) -> list[dict]:
    rows, prev = [], 0
    for k, r in enumerate(received):
        body = r.body
        prefix = len(json.dumps(body["tools"])) + sum(len(b["text"]) for b in body["system"])
        msgs = body["messages"]
        new = len(json.dumps(msgs[prev:])) if k else len(json.dumps(msgs))
        rows.append({"turn": k, "request": len(r.raw), "prefix": prefix,
                     "transcript": len(json.dumps(msgs)), "new": new,
                     "answer": len(json.dumps(answers[k]))})
        prev = len(msgs)
    return rows


def cost(rows: list[dict], cold: bool) -> float:
    total = 0.0
    for r in rows:
        t = {k: r[k] / CHARS_PER_TOKEN for k in ("prefix", "transcript", "new", "answer")}
        read = t["transcript"] - t["new"] + (0 if cold and r["turn"] == 0 else t["prefix"])
        write = t["new"] + (t["prefix"] if cold and r["turn"] == 0 else 0)
        total += (read * SONNET["read"] + write * SONNET["write"]
                  + t["answer"] * SONNET["output"]) / 1e6
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="asm_copy")
    args = ap.parse_args(argv)
    from asmevo.engine.config import parse_config
    from asmevo.engine.engine import Engine
    from asmevo.engine.parallel import make_pool
    from asmevo.engine.rundir import create_run
    from asmevo.targets.amdgpu import load, recover
    from operators.llm.replay import ReplayServer

    kdir = ROOT / "experiments" / "kernels" / args.kernel
    co = kdir / f"{args.kernel}.gfx942.co"
    program = recover(load(co.read_bytes(), path=str(co)))
    if args.kernel == "asm_copy":
        window = ("asm_copy", 12, 19)
        script = json.loads((ROOT / "tests/operators/llm/data/asm_copy_agent.json").read_text())
    else:
        window = hottest_window(kdir)
        script = generic_script(program, window)
    os.environ.setdefault("ANTHROPIC_API_KEY", "dummy")
    with tempfile.TemporaryDirectory() as tmp, ReplayServer(script) as srv:
        cfg = parse_config(config(kdir, srv.base_url), base_dir=ROOT)
        with create_run(cfg, Path(tmp) / "run") as run:
            engine = Engine(run.config, run.archive, run.blobs, run.evaluator,
                            make_pool(run.config.parallel), run_id=run.run_id,
                            windows_of=lambda prog, kernel: [window])
            try:
                engine.run()
            finally:
                engine.pool.close()
            answers = [json.loads(r[0]) for r in run.archive.conn.execute(
                "SELECT answer FROM llm_usage ORDER BY turn")]
            tries = [tuple(r) for r in run.archive.conn.execute(
                "SELECT status, speedup FROM agent_tries ORDER BY seq")]
        rows = measure(srv.received, answers)
    fn, start, end = window
    print(f"kernel {args.kernel}: {len(program.function(fn).instructions)} instructions; "
          f"window [{start}, {end}); tries: {tries}")
    print(f"{'turn':>4} {'request':>8} {'prefix':>7} {'transcript':>10} {'new':>6} {'answer':>6}"
          "   (characters)")
    for r in rows:
        print(f"{r['turn']:>4} {r['request']:>8} {r['prefix']:>7} {r['transcript']:>10} "
              f"{r['new']:>6} {r['answer']:>6}")
    k = args.kernel
    warm, cold = cost(rows, cold=False), cost(rows, cold=True)
    print(f"{k}_turns={len(rows)}")
    print(f"{k}_prefix_chars={rows[0]['prefix']}")
    print(f"{k}_first_message_chars={rows[0]['transcript']}")
    print(f"{k}_last_request_chars={rows[-1]['request']}")
    print(f"{k}_new_chars_per_turn_max={max(r['new'] for r in rows[1:])}")
    print(f"{k}_answer_chars_max={max(r['answer'] for r in rows)}")
    print(f"{k}_conversation_dollars_sonnet_warm={warm:.4f}")
    print(f"{k}_conversation_dollars_sonnet_cold={cold:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
