"""Address steps of an unrolled loop folded into immediate offsets, and the copies'
narrow loads from consecutive offsets joined into wide ones.

A naive loop advances its pointer once per iteration (``v_lshl_add_u64 v[2:3],
v[2:3], 0, 4``; on gfx90a ``v_add_co_u32``/``v_addc_co_u32``; a scalar pointer by
``s_add_u32``/``s_addc_u32``) and reads through it at offset 0. In F unrolled copies
the pointer need only move once: copy ``j`` reads at ``offset + j*step``, and the last
copy adds all F steps. The addresses are the same 64-bit values (an immediate offset
is added to the 64-bit address; a step of F x 4 bytes is one inline constant, other
totals stay F updates in a row), so every access touches the same bytes.

Then, where the F copies load ``step`` bytes each from offsets ``o, o + step, ...``
before the pointer moves, and nothing in the body stores or synchronizes, those
loads are one ``global_load_dwordx{2,4}`` / ``s_load_dwordx{2,4}`` into a fresh
aligned tuple whose parts the copies read (:func:`vectorize`): the same bytes, the
same lanes, the same cache flags, one request instead of up to four -- what a
strided one-thread-per-row loop needs, since each narrow load touches one cache line
per lane.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from asmevo.targets.amdgpu.analysis import regs as R
from asmevo.targets.amdgpu.analysis.effects import effects
from asmevo.operators.rules.loops import RegisterPool, _int
from asmevo.operators.rules.webs import rewrite, webs_of


@dataclass(frozen=True)
class Stride:
    """A 64-bit address pair the body advances by a constant ``step`` bytes once per
    iteration (``at``: the update's one or two instructions), read otherwise only as
    the address of memory instructions with an immediate offset (``uses``)."""

    kind: str                # "v" (vaddr of global_*) or "s" (base of s_load_*)
    lo: int
    step: int
    at: tuple[int, ...]
    uses: tuple[int, ...]


OFFSET_RANGE = {"v": (-4096, 4095), "s": (0, (1 << 20) - 1)}   # global: 13-bit signed


def _pair_update(body: list[str], k: int) -> tuple[str, int, int, tuple[int, ...]] | None:
    """``(kind, lo, step, at)`` if ``body[k]`` starts a constant 64-bit address step."""
    e = effects(body[k])
    ops = [o.strip() for o in e.operands]
    if e.modifiers or not ops:
        return None
    m = re.fullmatch(r"v\[(\d+):(\d+)\]", ops[0])
    if e.mnemonic == "v_lshl_add_u64" and m and len(ops) == 4 and ops[1] == ops[0] \
            and ops[2] == "0" and _int(ops[3]) and int(m.group(2)) == int(m.group(1)) + 1:
        return "v", int(m.group(1)), _int(ops[3]), (k,)
    if e.mnemonic == "v_add_co_u32_e32" and len(ops) == 4 and ops[1] == "vcc" \
            and ops[0] == ops[3] and re.fullmatch(r"v\d+", ops[0]) and _int(ops[2]):
        kind, lo, step, cmask = "v", int(ops[0][1:]), _int(ops[2]), R.VCC_MASK
        hi_op, expect = "v_addc_co_u32_e32", [f"v{lo + 1}", "vcc", "0", f"v{lo + 1}", "vcc"]
    elif e.mnemonic == "s_add_u32" and len(ops) == 3 and ops[0] == ops[1] \
            and re.fullmatch(r"s\d+", ops[0]) and _int(ops[2]):
        kind, lo, step, cmask = "s", int(ops[0][1:]), _int(ops[2]), R.SCC_MASK
        hi_op, expect = "s_addc_u32", [f"s{lo + 1}", f"s{lo + 1}", "0"]
    else:
        return None
    for k2 in range(k + 1, len(body)):
        e2 = effects(body[k2])
        if e2.mnemonic == hi_op and [o.strip() for o in e2.operands] == expect \
                and not e2.modifiers:
            return kind, lo, step, (k, k2)
        if (e2.reads | e2.writes) & cmask:
            return None
    return None


def strides(body: list[str]) -> list[Stride]:
    """Every address pair of ``body`` that :func:`fold_strides` may fold."""
    out = []
    for k in range(len(body)):
        found = _pair_update(body, k)
        if found is None:
            continue
        kind, lo, step, at = found
        if not 0 < step < 1 << 16 or lo % 2:
            continue
        pair = R.operand_mask(f"{kind}[{lo}:{lo + 1}]")
        addr = f"v[{lo}:{lo + 1}],off" if kind == "v" else f"s[{lo}:{lo + 1}]"
        uses, ok = [], True
        for j, t in enumerate(body):
            e = effects(t)
            if j in at or not (e.reads | e.writes) & pair:
                continue
            mem_ok = (e.mnemonic.startswith("global_") if kind == "v" else
                      e.mnemonic.startswith("s_load_") and len(e.operands) == 3
                      and _int(e.operands[2]) is not None)
            if e.writes & pair or not mem_ok or e.addr != addr or \
                    (e.reads & pair) != pair or at[0] < j < at[-1]:
                ok = False
                break
            uses.append(j)
        if ok and uses:
            out.append(Stride(kind, lo, step, at, tuple(uses)))
    return out


def _with_offset(text: str, kind: str, add: int) -> str | None:
    """``text`` (an address use) with ``add`` more bytes of immediate offset, or None
    when the field cannot hold it."""
    e = effects(text)
    ops, mods = list(e.operands), list(e.modifiers)
    if kind == "s":
        new = _int(ops[2]) + add
        ops[2] = hex(new)
    else:
        new = e.offset + add
        mods = [m for m in mods if not m.startswith("offset:")] + ([f"offset:{new}"] if new
                                                                  else [])
    lo, hi = OFFSET_RANGE[kind]
    if not lo <= new <= hi:
        return None
    return " ".join([e.mnemonic, ", ".join(ops)] + mods)


def _lit32(v: int) -> str:
    return str(v) if v <= 64 else hex(v)


def _carry_dead(body: list[str], st: Stride) -> bool:
    """Whether the carry (SCC or VCC) a two-instruction step leaves is overwritten in
    the body before anything reads it: then one step of F x step, whose last carry
    may differ from the F-th small step's, changes nothing."""
    flag = R.SCC_MASK if st.kind == "s" else R.VCC_MASK
    for t in body[st.at[-1] + 1:]:
        e = effects(t)
        if e.reads & flag:
            return False
        if e.kills & flag == flag:
            return True
    return False


def fold_strides(copies: list[list[str]], body: list[str],
                 found: list[Stride] | None = None) -> tuple[list[list[list[str]]], list[Stride]]:
    """``copies`` (position-aligned with the stripped ``body``) as, per copy and
    position, the lines that replace it: each :func:`strides` pair advanced once per
    group instead of once per copy. A use in copy ``j`` gets the bytes the skipped
    steps would have added as immediate offset (``j`` steps, ``j+1`` after the
    update); the last copy takes all F steps at its update (one ``v_lshl_add_u64`` of
    F x step when that is an inline constant, else the F updates in a row: the same
    value and the same carries). A pair whose offsets would not fit stays as it was."""
    f = len(copies)
    out = [[[t] for t in c] for c in copies]
    done = []
    for st in (strides(body) if found is None else found):
        change: list[dict[int, list[str]]] = [{} for _ in copies]
        fits = True
        for j in range(f):
            for u in st.uses:
                after = u > st.at[-1]
                add = 0 if j == f - 1 and after else st.step * (j + after)
                t = _with_offset(copies[j][u], st.kind, add) if add else copies[j][u]
                if t is None:
                    fits = False
                change[j][u] = [t]
        if not fits:
            continue
        for j in range(f - 1):
            change[j].update({k: [] for k in st.at})
        steps, lo = f * st.step, st.lo
        if st.kind == "v" and len(st.at) == 1 and steps <= 64:
            first = [f"v_lshl_add_u64 v[{lo}:{lo + 1}], v[{lo}:{lo + 1}], 0, {steps}"]
        elif len(st.at) == 2 and steps < 1 << 31 and _carry_dead(body, st):
            first = ([f"s_add_u32 s{lo}, s{lo}, {_lit32(steps)}"] if st.kind == "s" else
                     [f"v_add_co_u32_e32 v{lo}, vcc, {_lit32(steps)}, v{lo}"]) + [body[st.at[1]]]
        else:
            first = [body[k] for k in st.at] * f
        change[f - 1].update({st.at[0]: first, **{k: [] for k in st.at[1:]}})
        for j in range(f):
            for k, lines in change[j].items():
                out[j][k] = lines
        done.append(st)
    return out, done


_WIDE = {("v", 1): "global_load_dword", ("v", 2): "global_load_dwordx2",
         ("v", 4): "global_load_dwordx4", ("s", 1): "s_load_dword",
         ("s", 2): "s_load_dwordx2", ("s", 4): "s_load_dwordx4"}
_WIDTH = {v: k[1] for k, v in _WIDE.items()}


def vectorizable(body: list[str], st: Stride) -> list[int]:
    """The uses of ``st`` that :func:`vectorize` may join: plain loads of exactly
    ``step`` bytes before the update, in a body without stores, atomics or fences."""
    if any(effects(t).mem_store or effects(t).fence for t in body):
        return []
    out = []
    for u in st.uses:
        e = effects(body[u])
        w = _WIDTH.get(e.mnemonic)
        if w is None or u > st.at[0] or st.step != 4 * w or e.ndefs != 1:
            continue
        if any(not m.startswith("offset:") for m in e.modifiers):
            continue                       # cache-policy flags, lds: leave those alone
        out.append(u)
    return out


def vectorize(copies: list[list[str]], body: list[str], pool: RegisterPool, live_after: int,
              found: list[Stride]) -> tuple[list[list[str]], dict[tuple[int, int], str]]:
    """Rename the copies' loaded values of each :func:`vectorizable` use into parts of
    fresh tuples; returns the renamed copies and, per ``(copy, position)``, the wide
    load that replaces the narrow one there (after :func:`fold_strides` fixed the
    offsets, :func:`join_loads` puts them in). Copy positions not in the map that held
    a joined load are dropped by :func:`join_loads`."""
    f = len(copies)
    copies = [list(c) for c in copies]
    plan: dict[tuple[int, int], str] = {}
    for st in found:
        for u in vectorizable(body, st):
            w = _WIDTH[effects(body[u]).mnemonic]
            g = max(1, min(f, 4 // w))
            for j0 in range(0, f - g + 1, g):
                chunk = list(range(j0, j0 + g))
                if len(chunk) < 2:
                    continue
                webs = []
                for j in chunk:
                    ws = webs_of(copies[j])
                    mine = [x for x, web in enumerate(ws.webs) if web.start == u]
                    bits = 0
                    for x in mine:
                        web = ws.webs[x]
                        bits |= 1 << ((R.VGPR_BASE if web.kind == "v" else 0) + web.reg)
                    groups = ws.group_members()
                    tied = {y for x in mine for y in groups[ws.find(x)]}
                    if len(mine) != w or tied != set(mine) or \
                            not all(ws.webs[x].ok for x in mine) or \
                            j == f - 1 and bits & live_after:
                        break
                    webs.append((ws, sorted(mine, key=lambda x: ws.webs[x].reg)))
                else:
                    n = g * w
                    al = 2 if st.kind == "v" else (2 if n == 2 else 4)
                    first = pool.take(st.kind, n, al, 0)
                    if first is None:
                        continue
                    for k, (j, (ws, mine)) in enumerate(zip(chunk, webs)):
                        copies[j] = rewrite(ws, {x: first + k * w + i for i, x in enumerate(mine)})
                    wide = _WIDE[(st.kind, n)]
                    dest = f"{st.kind}[{first}:{first + n - 1}]"
                    plan[(j0, u)] = f"{wide}|{dest}"
                    for j in chunk[1:]:
                        plan[(j, u)] = ""
    return copies, plan


def join_loads(parts: list[list[list[str]]], plan: dict[tuple[int, int], str]) \
        -> list[list[list[str]]]:
    """``parts`` (from :func:`fold_strides`) with each planned group's first load made
    wide (its folded offset kept) and the group's other loads dropped."""
    out = [[list(x) for x in c] for c in parts]
    for (j, u), what in plan.items():
        if not what:
            out[j][u] = []
            continue
        wide, dest = what.split("|")
        e = effects(out[j][u][0])
        ops = [dest] + list(e.operands[1:])
        out[j][u] = [" ".join([wide, ", ".join(ops)] + list(e.modifiers))]
    return out
