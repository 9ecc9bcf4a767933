"""Prompt and answer sizes of ``llm_agent`` conversations, turn by turn, on a corpus kernel.

Runs a search (the real engine, evaluator and archive; the CPU emulator; modeled
timing) whose only operator is ``llm_agent``, against the replay server, and
measures the request bodies the server received, per conversation and turn:

- ``prefix``: tools + the system blocks (agent notes, the kernel block): cached,
  the same bytes on every turn and every conversation on the kernel;
- ``transcript``: the messages, all of them; ``new``: the part of them the
  previous request did not have (the previous answer and its tool results,
  or the first message): what a turn writes to the cache;
- ``inspired``: the first message's quoted improvements of the run (``What worked``);
- ``answer``: the answer's content blocks (text and tool calls) as stored.

asm_copy (the default) runs the population test's script
(``tests/operators/llm/data/asm_copy_population.json``): two islands, two
generations; in generation 0 one conversation stacks two accepted edits and
tries a third, another accepts one; in generation 1 each first message quotes
both islands' improvements with their lines, and tries a duplicate (refused
unbuilt). Other kernels get a generic one-conversation script on K0's hottest
modeled window: show and analyze it, try it without its first instruction, try it
with an ``s_nop 0`` in front (equal, slower: not accepted), ask for the profile and
the next window, submit.

Token figures are estimates (no tokenizer offline): characters / 3.5 (JSON with
assembly and prose). Cost: claude-sonnet-4-6 list prices with prompt caching
(the prefix and the old transcript read at $0.30/Mtok, the new part written at
$3.75/Mtok, the answer at $15/Mtok; a cold prefix is written once per kernel).

    python experiments/bench_llm_agent.py                    # asm_copy, two islands
    python experiments/bench_llm_agent.py --kernel softmax   # its hottest window

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
        {"kind": "tool_use", "text": "Not faster. Where else does the time go?",
         "calls": [{"tool": "profile", "input": {}}, {"tool": "next_window", "input": {}}]},
        {"kind": "tool_use", "tool": "submit",
         "input": {"rationale": "nothing faster found"}}]}


def config(kernel_dir: Path, base_url: str, *, islands: int, generations: int) -> str:
    return textwrap.dedent(f"""\
        [run]
        name = "bench-llm-agent"
        seed = 1
        spec = "{kernel_dir}"
        size = "small"
        device = "emulator"
        timing = "modeled"

        [engine]
        islands = {islands}
        population = 2
        generations = {generations}
        tournament = 2
        elite = 1
        migration_size = 0
        hall_of_fame = 4

        [operators]
        llm_agent = {{ weight = 1.0, base_url = "{base_url}", backoff_base_s = 0.001 }}
        """)


def measure(received, rows) -> list[dict]:
    """Per turn of every conversation: sizes of the request, its parts and the answer.
    ``rows``: call id -> the usage row (generation, island, turn, answer)."""
    out, prev = [], {}
    for r in received:
        row = rows[r.headers["x-asmevo-call-id"]]
        conv = (row["generation"], row["island"])
        body = r.body
        prefix = len(json.dumps(body["tools"])) + sum(len(b["text"]) for b in body["system"])
        msgs = body["messages"]
        k = prev.get(conv, 0)
        first = msgs[0]["content"][0]["text"]
        inspired = first[first.index("### What worked"):].split("\n### Your budget")[0] \
            if "### What worked" in first else ""
        out.append({"gen": conv[0], "island": conv[1], "turn": row["turn"], "request": len(r.raw),
                    "prefix": prefix, "transcript": len(json.dumps(msgs)),
                    "new": len(json.dumps(msgs[k:])), "inspired": len(inspired),
                    "answer": len(json.dumps(json.loads(row["answer"])))})
        prev[conv] = len(msgs)
    return out


def cost(rows: list[dict], cold: bool) -> float:
    """One conversation's estimated dollars (``cold``: its first turn writes the prefix)."""
    total = 0.0
    for r in rows:
        t = {k: r[k] / CHARS_PER_TOKEN for k in ("prefix", "transcript", "new", "answer")}
        read = t["transcript"] - t["new"] + (0 if cold and r["turn"] == 0 else t["prefix"])
        write = t["new"] + (t["prefix"] if cold and r["turn"] == 0 else 0)
        total += (read * SONNET["read"] + write * SONNET["write"]
                  + t["answer"] * SONNET["output"]) / 1e6
    return total


def search(kdir: Path, script: dict, *, islands: int, generations: int, window=None):
    """Run the search against the replay server: (per-turn rows, tries)."""
    from asmevo.engine.config import parse_config
    from asmevo.engine.engine import Engine
    from asmevo.engine.parallel import make_pool
    from asmevo.engine.rundir import create_run
    from asmevo.operators.llm.replay import ReplayServer

    os.environ.setdefault("ANTHROPIC_API_KEY", "dummy")
    with tempfile.TemporaryDirectory() as tmp, ReplayServer(script) as srv:
        cfg = parse_config(config(kdir, srv.base_url, islands=islands, generations=generations),
                           base_dir=ROOT)
        with create_run(cfg, Path(tmp) / "run") as run:
            engine = Engine(run.config, run.archive, run.blobs, run.evaluator,
                            make_pool(run.config.parallel), run_id=run.run_id,
                            windows_of=(lambda prog, kernel: [window]) if window else None)
            try:
                engine.run()
            finally:
                engine.pool.close()
            rows = {r["call_id"]: dict(r) for r in run.archive.conn.execute(
                "SELECT * FROM llm_usage")}
            tries = [tuple(r) for r in run.archive.conn.execute(
                "SELECT generation, island, status, speedup FROM agent_tries "
                "ORDER BY generation, island, seq")]
        return measure(srv.received, rows), tries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="asm_copy")
    args = ap.parse_args(argv)
    from asmevo.targets.amdgpu import load, recover

    kdir = ROOT / "experiments" / "kernels" / args.kernel
    co = kdir / f"{args.kernel}.gfx942.co"
    program = recover(load(co.read_bytes(), path=str(co)))
    if args.kernel == "asm_copy":
        script = json.loads((ROOT / "tests/operators/llm/data/asm_copy_population.json")
                            .read_text())
        fn = "asm_copy"
        rows, tries = search(kdir, script, islands=2, generations=1)
    else:
        window = hottest_window(kdir)
        fn = window[0]
        rows, tries = search(kdir, generic_script(program, window), islands=1, generations=0,
                             window=window)
    print(f"kernel {args.kernel}: {len(program.function(fn).instructions)} instructions; "
          f"tries (generation, island, verdict, speedup): {tries}")
    print(f"{'gen':>3} {'isl':>3} {'turn':>4} {'request':>8} {'prefix':>7} {'transcript':>10} "
          f"{'new':>6} {'inspired':>8} {'answer':>6}   (characters)")
    for r in rows:
        print(f"{r['gen']:>3} {r['island']:>3} {r['turn']:>4} {r['request']:>8} {r['prefix']:>7} "
              f"{r['transcript']:>10} {r['new']:>6} {r['inspired']:>8} {r['answer']:>6}")
    convs: dict[tuple, list[dict]] = {}
    for r in rows:
        convs.setdefault((r["gen"], r["island"]), []).append(r)
    for (g, isl), c in convs.items():
        print(f"conversation gen {g} island {isl}: {len(c)} turns, "
              f"${cost(c, cold=False):.4f} warm, ${cost(c, cold=True):.4f} cold")
    k = args.kernel
    print(f"{k}_conversations={len(convs)}")
    print(f"{k}_turns={len(rows)}")
    print(f"{k}_prefix_chars={rows[0]['prefix']}")
    print(f"{k}_first_message_chars_max={max(r['transcript'] for r in rows if r['turn'] == 0)}")
    print(f"{k}_inspired_chars_max={max(r['inspired'] for r in rows)}")
    print(f"{k}_last_request_chars_max={max(c[-1]['request'] for c in convs.values())}")
    print(f"{k}_new_chars_per_turn_max={max(r['new'] for r in rows if r['turn'] > 0)}")
    print(f"{k}_answer_chars_max={max(r['answer'] for r in rows)}")
    warm = [cost(c, cold=False) for c in convs.values()]
    print(f"{k}_conversation_dollars_sonnet_warm_max={max(warm):.4f}")
    print(f"{k}_conversation_dollars_sonnet_cold_max="
          f"{max(cost(c, cold=True) for c in convs.values()):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
