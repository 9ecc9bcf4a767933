"""The read-only tools of an ``llm_agent`` conversation: ``show``, ``analyze``, ``profile``
and ``next_window``, and the text of a tried edit's verdict.

Every function here is pure: a program (the candidate the conversation edits),
its profile, and the window the model asked about in; text out. Nothing runs a
kernel: ``show`` reads the per-line profile the engine kept from the
candidate's evaluation; ``analyze`` is the static analysis the gate and the
rule operators use (liveness, the waitcnt model, the hazard rules).
"""
from __future__ import annotations

import json

from asmevo.edits import Edit
from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.cfg import build_cfg
from asmevo.targets.amdgpu.analysis.hazards import window_constraints
from asmevo.targets.amdgpu.analysis.liveness import Liveness
from asmevo.targets.amdgpu.analysis.problems import AnalysisError
from asmevo.targets.amdgpu.analysis.waitcnt import State, window_states
from asmevo.targets.amdgpu.program import Label
from asmevo.operator import LineProfile, TryResult
from asmevo.operators.llm.prompts import for_model


def show(program, function: str, start: int, end: int, profile: LineProfile | None, *,
         max_lines: int) -> str:
    """Instructions ``[start, end)`` of ``function`` with labels and per-line costs."""
    fn = program.function(function)
    n = len(fn.instructions)
    start, end = max(0, start), min(n, end)
    if start >= end:
        return f"nothing to show: `{function}` has instructions 0..{n - 1}"
    cut = end - start > max_lines
    end = min(end, start + max_lines)
    known = profile is not None and any(profile.at(function, i) for i in range(start, end))
    head = "  idx" + (f"  {'count':>9}  {'cycles':>9}  {'stall':>9}" if known else "") + \
        "  instruction"
    rows = [head]
    idx = 0
    for item in fn.items:
        if isinstance(item, Label):
            if start <= idx < end or idx == end and not cut:
                rows.append(f"{item.name}:")
            continue
        if start <= idx < end:
            row = f"{idx:5d}"
            if known:
                c = profile.at(function, idx)
                row += ("".join(f"  {v:>9}" for v in (c.executions, f"{c.cycles:.0f}",
                                                       f"{c.stalls:.0f}"))
                        if c else f"  {'-':>9}  {'-':>9}  {'-':>9}")
            rows.append(row + "  " + item.text)
        idx += 1
    if known:
        rows.insert(0, f"(per-line profile: {profile.label} {profile.unit}; '-' where the "
                       "profile did not keep a line: it keeps the hot windows)")
    if cut:
        rows.append(f"... (at most {max_lines} lines a call; ask for [{end}, ...) next)")
    return "\n".join(rows)


def _state(st: State) -> str:
    parts = []
    for name, q in (("vmcnt", st.vm), ("lgkmcnt (LDS, in order)", st.lds),
                    ("lgkmcnt (scalar memory / other, out of order)", st.other)):
        if not q:
            continue
        items = sorted(q.values(), key=lambda e: e.age)
        what = [("store" if e.store else "load") + (f" -> {R.render(e.mask)}" if e.mask else "")
                for e in items]
        parts.append(f"{name}: {len(q)} outstanding, newest first: " + "; ".join(what))
    return "\n".join(parts) or "nothing outstanding"


def analyze(program, function: str, start: int, end: int, target, *, vgprs: int, sgprs: int,
            margin: int = 8) -> str:
    """Liveness, free registers (within the allocation: ``vgprs`` VGPRs, and the SGPRs
    below ``sgprs`` that the code uses), counters outstanding and hazard constraints."""
    fn = program.function(function)
    n = len(fn.instructions)
    if not 0 <= start < end <= n:
        return f"window [{start}, {end}) is outside `{function}` (instructions 0..{n - 1})"
    cfg = build_cfg(fn)
    live = Liveness(fn, cfg)
    live_in, live_out = live.window(start, end)
    free_v = live.free(start, end, "v") & R.span(R.VGPR_BASE, R.VGPR_BASE + vgprs - 1)
    free_s = live.free(start, end, "s") & R.span(0, sgprs - 1)
    out = [f"## analyze [{start}, {end}) of `{function}` ({end - start} instructions)",
           f"live in:  {R.render(live_in) or '-'}",
           f"live out: {R.render(live_out) or '-'}   (the code after the window reads these)",
           f"VGPRs free in the window (inside the allocation): {R.render(free_v) or 'none'}",
           "SGPRs free in the window (below the highest the code uses): "
           f"{R.render(free_s) or 'none'}"]
    try:
        entry, exit_ = window_states(fn, start, end, cfg)
        out += ["### memory operations outstanding at the window's start", _state(entry),
                "### outstanding at its end (the most an edit may leave behind)", _state(exit_)]
    except AnalysisError as exc:
        out += [f"### counters: {exc.message} (an edit must stay inside one basic block "
                "for its waits to be recomputed)"]
    cons = window_constraints(fn, target, start, end, margin=margin, cfg=cfg)
    out.append(f"### hazard wait states around the window (consumers {start}.."
               f"{min(n, end + margin) - 1})")
    out += [f"- {p.rule}: {p.message}" + (" (VIOLATED)" if p.actual < p.required else "")
            for p in cons] or ["none: no hazard rule binds instructions here"]
    return "\n".join(out)


def try_text(n: int, limit: int, edit: Edit, asked: tuple[str, ...], r: TryResult, *,
             stacked: int | None = None, shift: int | None = None) -> str:
    """The tool result of one try: what was tried, the verdict and its details, the speedup,
    and whether it was accepted (``stacked``: its place in the stack; ``shift``: how far
    the instructions after it moved)."""
    head = f"try {n} of {limit}: [{edit.start}, {edit.end}) -> {len(edit.lines)} lines"
    out = [head]
    if tuple(edit.lines) != asked:
        out.append("the harness recomputed the waits; lines tried:\n"
                   + "\n".join(f"  {t}" for t in edit.lines))
    if r.refused:
        out.append(f"not evaluated: {for_model(r.refused)}")
        return "\n".join(out)
    out.append(f"verdict: {r.status}" + (f": {for_model(r.reason)}" if r.reason else ""))
    if r.equal and r.speedup is not None:
        out.append(f"speedup over K0: {r.speedup:.4f}x ({r.label or 'modeled'})")
    if r.details:
        text = for_model(json.dumps(r.details, sort_keys=True, default=str))
        out.append("details: " + (text if len(text) <= 1500 else text[:1497] + "..."))
    if stacked is not None:
        moved = f"instructions from {edit.end} on moved by {shift:+d}" if shift else \
            "no instruction moved"
        out.append(f"accepted: edit {stacked} of this conversation's stack; every later tool "
                   f"call works on the program with it ({moved})")
    elif r.equal:
        out.append("not accepted: no faster than the best so far (the stack is unchanged)")
    return "\n".join(out)


def profile_text(windows, *, speedup: float, stacked: int, label: str, function: str) -> str:
    """The ``profile`` tool: the current best's hot windows, hottest first, with shares."""
    out = [f"## profile of the current best: {speedup:.4f}x of K0 ({label}), "
           f"{stacked} accepted edit(s) of this conversation stacked",
           "rank  window          lines  share of the time"]
    for k, (fn, start, end, share) in enumerate(windows, 1):
        pct = f"{100 * share:5.1f}%" if share is not None else "    ?"
        out.append(f"{k:>4}  [{start}, {end}){'':<{max(1, 14 - len(f'[{start}, {end})'))}}"
                   f"{end - start:>5}  {pct}")
    if len(out) == 2:
        out.append(f"(no hot windows known for `{function}`; show lists any range)")
    return "\n".join(out)


def window_text(function, start: int, end: int, config, *, share: float | None, rank: int,
                profile) -> str:
    """The ``next_window`` tool: a window with its context and per-line profile."""
    from asmevo.operators.llm.prompts import window_section
    pct = f"{100 * share:.1f}% of the modeled time" if share is not None else "share unknown"
    return window_section(function, start, end, config, profile,
                          f"Window {rank} ({pct})")
