"""Requests for the three LLM operators: mutation, crossover, repair.

A request is a Messages-API body (a plain dict). Its static parts come first
and carry ``cache_control`` so repeated calls on one kernel are cheap: the
tool definition, the system prompt (ISA notes and the rules, the same for every
kernel) and the kernel block (ABI summary and K0's full listing, the same for
every call on that kernel). Only the last user message changes per call: the
window, its profile, the recent attempts, the task.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from asmevo.operator import Inspiration
from asmevo.operators.llm import variants
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.parse import TOOL_NAME
from asmevo.targets.amdgpu import processors as P

_FIRST_CDNA3 = P.names(lambda p: p.family == P.CDNA3)[0]     # gfx940

_INTRO = f"""\
You are an expert AMD GPU assembly optimizer. You edit one window of machine code of a compiled \
kernel for {P.DEFAULT} (CDNA3: MI300X / MI300A / MI308X) and propose the replacement by calling the \
propose_edit tool exactly once. A harness rebuilds the code object, checks it statically, runs it \
against the original on several input sets and accepts it only when every output is bit-identical; \
then it times it. Wrong code is always caught and costs an evaluation; a correct, faster window is \
the only useful answer.

"""

MACHINE_NOTES = f"""\
# The machine ({P.DEFAULT} / CDNA3)
- Wavefronts are 64 lanes. A CU has 4 SIMDs; each SIMD interleaves up to 8 waves and issues at \
most one instruction per wave per cycle from each of the VALU, SALU, VMEM, LDS and branch \
units. A wave64 VALU op occupies the SIMD for 4 cycles (16 lanes a cycle); transcendental ops \
(v_exp_f32, v_log_f32, v_rcp_f32, v_rsq_f32, v_sqrt_f32, v_sin/v_cos) are quarter rate.
- Latencies, roughly: global/buffer loads 500-1000+ cycles (HBM) or ~300 (L2 hit); scalar \
loads (s_load_*, s_buffer_load_*) ~100-200; LDS (ds_*) ~64-128; VALU results are available to \
the next dependent VALU op without stalls in the common case.
- What the hardware rewards, in order of usual payoff:
  1. Latency hiding: issue memory loads as early as their address allows and consume them as \
late as possible; put independent ALU work between a load and its first use; prefer partial \
waits (vmcnt(N), lgkmcnt(N)) over waiting for everything.
  2. Fewer s_waitcnt stalls: a wait that covers more than the next use needs (e.g. vmcnt(0) \
where vmcnt(2) suffices, or a wait before code that does not read the loaded registers) \
stalls the wave for nothing.
  3. Fewer instructions: fold address arithmetic into the memory instruction (global_* with an \
SGPR base: `global_load_dword vD, vOffset32, s[base:base+1] offset:imm`, immediate offsets \
in [-4096, 4095]); use wider accesses (dwordx2/x4) when alignment is known; \
v_lshl_add_u64 / v_lshl_add_u32 / v_add3_u32 / v_fma for combined arithmetic; packed FP32 \
(v_pk_fma_f32, v_pk_mul_f32, v_pk_add_f32, v_pk_mov_b32) for two lanes of work; hoisting \
loop-invariant work is only possible inside the window.
  4. Occupancy: waves per SIMD fall when VGPRs (granule 8, 512 per SIMD lane shared by VGPRs \
and AGPRs) or LDS grow. Never use a register beyond the allocation given below.
  5. MFMA pipelining (v_mfma_*): a dependent MFMA waits for the previous result (8/16/32 \
passes); interleave independent MFMAs and other work; keep the required s_nop distance between \
an MFMA writing a register and any VALU/VMEM/MFMA reading it.

# Waits (s_waitcnt) on {P.DEFAULT}
- vmcnt counts outstanding vector-memory ops, loads AND stores (no separate store counter on \
GFX9); they retire in issue order for counting purposes, so vmcnt(N) means "all but the N most \
recent vector-memory ops are done". lgkmcnt counts LDS, GDS, scalar-memory and message ops; \
scalar-memory loads may return out of order, so with several s_load_* outstanding only \
lgkmcnt(0) guarantees a particular one. expcnt is for exports/GDS.
- A register written by a load must not be read, or written again, before a wait that covers \
that load. The harness recomputes waits where it can, but an edit must still be correct as \
written.
- s_endpgm does not need outstanding stores to be waited for.

# Hazards (manual wait states) on {_FIRST_CDNA3}/{P.DEFAULT} — keep them
The hardware does not interlock these; the required distance is independent instructions or \
s_nop N (N+1 wait states):
- VALU writes an SGPR, then a VMEM instruction reads that SGPR: 5 wait states.
- VALU writes an SGPR/VCC, then v_readlane/v_writelane uses it as the lane select: 4.
- VALU writes VCC, then v_div_fmas: 4.
- VALU writes EXEC, then a DPP op: 5; VALU writes EXEC then v_readfirstlane etc. reading it: 4.
- s_setreg, then s_getreg of the same register: 2; SALU writes M0, then LDS-add-TID, GDS, \
s_sendmsg or S_MOVREL: 1.
- A transcendental VALU op, then a non-transcendental VALU op reading its result: 1.
- MFMA writes a VGPR/AGPR, then a VALU, VMEM, LDS or another MFMA (as SrcA/B, or SrcC unless it \
is the same-size back-to-back accumulation) reads it: passes+2 wait states (up to 18).
- Stores of more than 64 bits, then a VALU writing the store's data VGPRs: 1 (2 for some).
When you move or remove instructions, keep at least the same number of wait states between \
every such producer and consumer; if in doubt, keep the existing s_nop.

"""

RULES_HEAD = """\
# Rules (an answer that breaks one is rejected before it is run)
"""

_REPLY_RULE = """\
- Reply only by calling propose_edit once: `replacement` is the list of instruction lines that \
replace the window, one instruction per string, in the LLVM AMDGPU syntax of the listing \
(e.g. "v_add_f32_e32 v2, v6, v7"); `rationale` is one short line saying why it is faster.
"""

COMMON_RULES = """\
- Instruction lines only: no assembler directives (nothing starting with '.'), no labels, no \
comments, no second statement on a line. Branches may only target labels that already exist \
in the function. No s_setpc/s_swappc/s_getpc, s_trap, s_sethalt, s_sendmsg or s_setreg unless \
the window already has it.
- Same ABI: the same kernel arguments read the same way, the same outputs written, no new \
memory locations touched, no registers beyond the allocation, no LDS beyond the size given.
- Same results bit for bit: do not reassociate or reorder floating-point arithmetic, do not \
turn mul+add into fma (or back), do not change rounding, denormal or NaN behaviour. Integer \
identities that always hold are fine.
- The code after the window must find every register it reads holding the value the original \
window left there (including VCC, SCC and EXEC). Registers the window writes that nothing \
reads later are yours to drop.
- Keep hazards' wait states; waits must cover every use of a loaded register.
"""

_NO_CHANGE_RULE = """\
- If you see no safe improvement, return the window unchanged and say so in the rationale.
"""

# the single-shot operators' system block: the same bytes for every kernel and call
SYSTEM_NOTES = _INTRO + MACHINE_NOTES + RULES_HEAD + _REPLY_RULE + COMMON_RULES + _NO_CHANGE_RULE

TOOL = {
    "name": TOOL_NAME,
    "description": "Propose the instruction lines that replace the window. Call exactly once.",
    "input_schema": {
        "type": "object",
        "properties": {
            "replacement": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The new instruction lines for the window, in order; one "
                               "instruction per string, no directives, labels or comments.",
            },
            "rationale": {
                "type": "string",
                "description": "One line: why the replacement is correct and faster.",
            },
        },
        "required": ["replacement", "rationale"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class WindowProfile:
    """Per-line profile aligned with the window's lines (None where unknown).

    ``label`` says where the numbers come from: "modeled" (the emulator's
    timing model) or "measured" (a GPU profile).
    """

    counts: tuple[int | None, ...] = ()
    stalls: tuple[float | None, ...] = ()
    label: str = "modeled"
    cycles: tuple[float | None, ...] = ()


@dataclass(frozen=True)
class Note:
    """One earlier attempt as a prompt quotes it (from the engine's notebook)."""

    operator: str
    summary: str
    status: str
    reason: str = ""
    speedup: float | None = None

    def render(self) -> str:
        if self.status == "equal" and self.speedup is not None:
            outcome = f"equal, {self.speedup:.3f}x"
        else:
            outcome = self.status + (f": {self.reason}" if self.reason else "")
        return f"- [{self.operator}] {self.summary} -> {one_line(outcome, 300)}"


# advice written for the person at the command line, which a model cannot act on: the
# diagnostics' "(+N more lines: --verbose)" (asmevo.process.first_diagnostic), a limit's
# "(set ASMEVO_X to raise it)" (asmevo.knobs) and a timeout's "; raise ASMEVO_X to allow
# more" (asmevo.process.describe_limit)
_CLI_ADVICE = re.compile(r" \(\+\d+ more lines?: --verbose\)| \(set ASMEVO_\w+ to raise it\)"
                         r"|; raise ASMEVO_\w+ to allow more")


def for_model(text: str) -> str:
    """A verdict's or a refusal's text as a model reads it: without advice for the CLI."""
    return _CLI_ADVICE.sub("", str(text))


def one_line(text: str, limit: int) -> str:
    text = " ".join(for_model(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- the kernel block (static per kernel) --------------------------------------------------

def _compress(texts: list[str]) -> list[tuple[int, str, int]]:
    """(first index, text, repeat count) with runs of identical lines folded."""
    out: list[tuple[int, str, int]] = []
    for i, t in enumerate(texts):
        if out and out[-1][1] == t and out[-1][0] + out[-1][2] == i:
            out[-1] = (out[-1][0], t, out[-1][2] + 1)
        else:
            out.append((i, t, 1))
    return out


def listing(function, *, max_lines: int) -> str:
    """K0's function, labels included, one instruction per line with its index."""
    from asmevo.targets.amdgpu.program import Label

    rows: list[str] = []
    idx = 0
    pending: list[str] = []

    def flush():
        for first, text, n in _compress(pending):
            fold = f"   (x{n})" if n > 1 else ""
            rows.append(f"{idx - len(pending) + first:5d}  {text}{fold}")
        pending.clear()

    for item in function.items:
        if isinstance(item, Label):
            flush()
            rows.append(f"{item.name}:")
        else:
            pending.append(item.text)
            idx += 1
    flush()
    if len(rows) > max_lines:
        rows = rows[:max_lines] + [f"... ({len(rows) - max_lines} more lines not shown)"]
    return "\n".join(rows)


def kernel_block(summary: dict, function, *, max_listing_lines: int = 600) -> str:
    """ABI summary (args, registers used and free, LDS, occupancy) and K0's listing."""
    s = summary
    vused, valloc = s["vgprs_used_by_code"], s["granulated_vgprs"]
    sused = s["sgprs_used_by_code"]
    free_v = (f"v{vused}..v{valloc - 1} are free without changing the allocation"
              if valloc > vused else "no VGPR is free without growing the allocation")
    lines = [
        f"# Kernel `{s['name']}` ({s['target']}, code object v{s['code_object_version']}, "
        f"wavefront {s['wavefront_size']})",
        "## ABI (must not change)",
        f"- kernel arguments: {s['kernarg_size']} bytes, pointer in s[0:1] (kernarg segment)",
    ]
    for a in s["args"]:
        name = f" `{a['name']}`" if a.get("name") else ""
        space = f" {a['address_space']}" if a.get("address_space") else ""
        lines.append(f"  - +{a['offset']} ({a['size']} B) {a['kind']}{space}{name}")
    if not s["args"]:
        lines.append("  - (the metadata lists no arguments; offsets are fixed by the code)")
    lines += [
        f"- VGPRs: code uses v0..v{vused - 1}, allocation {valloc} ({free_v}); "
        f"AGPRs used {s['agprs_used_by_code']}, accum_offset {s['accum_offset']}",
        f"- SGPRs: code uses s0..s{sused - 1}; allocation {s['granulated_sgprs']} "
        f"(VCC/XNACK/flat_scratch live at the top: do not use SGPRs above s{sused - 1} "
        "unless the window already does)",
        f"- LDS: {s['lds_bytes']} bytes; scratch: {s['scratch_bytes']} bytes",
        f"- occupancy: {s['occupancy_waves_per_simd']} waves/SIMD, limited by "
        f"{s['occupancy_limited_by']} (workgroup size {s['occupancy_workgroup_size']})",
        f"- code: {s['instructions']} instructions in {s['basic_blocks']} basic blocks",
        "",
        "## The original kernel (K0), instruction index then text; windows below index the",
        "## candidate being edited, which may differ from K0 by earlier accepted edits.",
        listing(function, max_lines=max_listing_lines),
    ]
    return "\n".join(lines)


# -- the per-call message ------------------------------------------------------------------

def window_table(texts: Sequence[str], start: int, profile: WindowProfile | None) -> str:
    """The window's lines with their index and, where the profile knows them, the
    executions (count), cycles and stall cycles of each line."""
    cols = []
    if profile is not None:
        for name, values, fmt in (("count", profile.counts, "{:d}"),
                                  (f"cycles({profile.label})", profile.cycles, "{:.0f}"),
                                  (f"stall({profile.label})", profile.stalls, "{:.0f}")):
            if any(v is not None for v in values):
                cols.append((name, values, fmt))
    rows = ["  idx" + "".join(f"  {name:>9}" for name, _, _ in cols) + "  instruction"]
    for k, t in enumerate(texts):
        row = f"{start + k:5d}"
        for name, values, fmt in cols:
            v = values[k] if k < len(values) else None
            row += f"  {(fmt.format(v) if v is not None else '-'):>{max(9, len(name))}}"
        rows.append(row + "  " + t)
    return "\n".join(rows)


def _context(texts: Sequence[str], first: int) -> str:
    return "\n".join(f"{first + k:5d}  {t}" for k, t in enumerate(texts)) or "(none)"


def window_section(function, start: int, end: int, config: LLMConfig,
                    profile: WindowProfile | None, title: str) -> str:
    ins = [i.text for i in function.instructions]
    lo = max(0, start - config.context_lines)
    hi = min(len(ins), end + config.context_lines)
    return "\n".join([
        f"### Before the window (read-only, instructions {lo}..{start - 1})",
        _context(ins[lo:start], lo),
        f"### {title}: instructions [{start}, {end}) of `{function.name}`, {end - start} lines",
        window_table(ins[start:end], start, profile),
        f"### After the window (read-only, instructions {end}..{hi - 1})",
        _context(ins[end:hi], end),
    ])


def notes_section(notes: Sequence[Note]) -> str:
    if not notes:
        return "### Recent attempts on this kernel\n(none yet)"
    return "### Recent attempts on this kernel (newest first)\n" + "\n".join(
        n.render() for n in notes)


def _lines(lines: Sequence[str], limit: int) -> str:
    shown = [f"  {t}" for t in lines[:limit]] or ["  (none: the lines were deleted)"]
    if len(lines) > limit:
        shown.append(f"  ... ({len(lines) - limit} more lines)")
    return "\n".join(shown)


def inspirations_section(found: Sequence[Inspiration], *, max_lines: int) -> str:
    """Accepted improvements of the run (and of earlier runs) with their actual lines."""
    if not found:
        return ""
    out = ["### What worked (accepted edits of this run, every island, and of earlier runs; "
           "each window indexes the program it was made on)"]
    for k, f in enumerate(found, 1):
        out.append(f"#### {k}. {f.source} ({f.operator}): {f.gain:.4f}x over its parent, "
                   f"{f.speedup:.4f}x over its K0 ({f.label})")
        for c in f.changes:
            out += [f"[{c.start}, {c.end}) of `{c.function}`: {len(c.before)} -> "
                    f"{len(c.after)} lines", "before:", _lines(c.before, max_lines),
                    "after:", _lines(c.after, max_lines)]
    return "\n".join(out)


def system_blocks(notes: str, kernel_text: str, config: LLMConfig,
                  variant: tuple[int, ...] | None = None) -> list[dict]:
    """The notes and the kernel block (cached), then the prompt variant's hints, if any
    (after the cached prefix, so a variant never costs the kernel's cache)."""
    cache = {"cache_control": {"type": "ephemeral"}} if config.prompt_cache else {}
    return [{"type": "text", "text": notes, **cache},
            {"type": "text", "text": kernel_text, **cache}] + variants.block(variant)


def request(config: LLMConfig, kernel_text: str, user: str,
            variant: tuple[int, ...] | None = None, tool: dict = TOOL) -> dict:
    """A single-call request: ``tool`` forced, the system blocks, the one user message."""
    sampling = {} if config.temperature is None else {"temperature": config.temperature}
    return {
        "model": config.model,
        "max_tokens": config.max_tokens,
        **sampling,
        "system": system_blocks(SYSTEM_NOTES, kernel_text, config, variant),
        "tools": [tool],
        "tool_choice": {"type": "tool", "name": tool["name"]},
        "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}],
    }


@dataclass(frozen=True)
class Extra:
    """What a request carries besides its task: the run's inspirations (rendered) and the
    prompt variant (None: variants are off)."""

    inspirations: str = ""
    variant: tuple[int, ...] | None = None


def _join(parts: Sequence[str]) -> str:
    return "\n\n".join(p for p in parts if p)


def mutation_request(config: LLMConfig, *, kernel_text: str, function, start: int, end: int,
                     profile: WindowProfile | None = None, notes: Sequence[Note] = (),
                     edits_so_far: int = 0, extra: Extra = Extra()) -> dict:
    """Ask for a faster, equivalent replacement of one hot window."""
    user = _join([
        "## Task: mutate one hot window",
        f"The candidate is K0 plus {edits_so_far} accepted edit(s). Replace the window below "
        f"with code that computes exactly the same results faster on {P.DEFAULT}.",
        window_section(function, start, end, config, profile, "Window to replace"),
        notes_section(notes),
        extra.inspirations,
        f"Call {TOOL_NAME} with the replacement for instructions [{start}, {end}).",
    ])
    return request(config, kernel_text, user, extra.variant)


def crossover_request(config: LLMConfig, *, kernel_text: str, function_a, start: int, end: int,
                      lines_b: Sequence[str], speedup_a: float | None, speedup_b: float | None,
                      notes: Sequence[Note] = (), extra: Extra = Extra()) -> dict:
    """Two parents' versions of one region: keep what made each faster."""
    def sp(x):
        return f"{x:.3f}x" if x is not None else "unknown"
    user = _join([
        "## Task: crossover of two parents",
        f"Parent A runs at {sp(speedup_a)} of K0, parent B at {sp(speedup_b)}. Both are "
        "correct. Below is A's version of a region (the window to replace) and B's version of "
        "the same region. Write one window for A that keeps what made each parent faster, "
        "and is still exactly equivalent.",
        window_section(function_a, start, end, config, None, "Parent A's window to replace"),
        f"### Parent B's version of the same region ({len(lines_b)} lines)",
        "\n".join(f"  {t}" for t in lines_b) or "(empty)",
        notes_section(notes),
        extra.inspirations,
        f"Call {TOOL_NAME} with the replacement for A's instructions [{start}, {end}).",
    ])
    return request(config, kernel_text, user, extra.variant)


def repair_request(config: LLMConfig, *, kernel_text: str, function, start: int, end: int,
                   rejected_lines: Sequence[str], status: str, reason: str,
                   details: dict | None = None, notes: Sequence[Note] = (),
                   extra: Extra = Extra()) -> dict:
    """A rejected candidate and its verdict: ask for the smallest fix."""
    import json

    detail = json.dumps(details or {}, sort_keys=True, default=str)
    user = _join([
        "## Task: repair a rejected edit",
        "An earlier edit of the window below was rejected by the verifier. Keep its idea if it "
        "can be made correct, with the smallest change that fixes the problem; otherwise fall "
        "back towards the original lines.",
        window_section(function, start, end, config, None, "Original window (replace this)"),
        f"### The rejected replacement ({len(rejected_lines)} lines)",
        "\n".join(f"  {t}" for t in rejected_lines) or "(empty: the window was deleted)",
        "### The verdict",
        f"status: {status}\nreason: {one_line(reason, 600)}\ndetails: {one_line(detail, 1200)}",
        notes_section(notes),
        extra.inspirations,
        f"Call {TOOL_NAME} with the repaired replacement for instructions [{start}, {end}).",
    ])
    return request(config, kernel_text, user, extra.variant)
