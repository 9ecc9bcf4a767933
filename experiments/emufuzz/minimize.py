"""Shrink a failing program to a small reproducer (delta debugging over the program tree).

Each round builds every one-step reduction of the current program -- keep one
output, delete a statement (a deleted declaration's uses become 0), turn an
if into one of its branches, drop a loop's break, cut a loop to one trip,
replace an expression by a child of its type or by 0, drop an unused buffer,
shrink the launch -- compiles them *together* as one batch (clang start-up
dominates a one-program compile) and keeps the smallest that still fails the
same way on the same (target, opt). It stops when no reduction fails or the
round budget is spent.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable

from experiments.emufuzz.build import build
from experiments.emufuzz.harness import Result, run_batch
from experiments.emufuzz.ir import Expr, Program, Stmt
from experiments.emufuzz.render import batch_source

MAX_CANDIDATES = 48


def size(p: Program) -> int:
    """Nodes in the program (what the minimizer makes smaller)."""
    n = len(p.outputs) + len(p.buffers) + (1 if p.noinline else 0)
    for s in p.body:
        for st in s.walk():
            n += 1 + sum(e.size() for e in st.exprs)
    return n


# -- tree edits ---------------------------------------------------------------------

def _map_exprs(body, fn: Callable[[Expr], Expr]) -> tuple[Stmt, ...]:
    def st(s: Stmt) -> Stmt:
        return replace(s, exprs=tuple(fn(e) for e in s.exprs),
                       blocks=tuple(tuple(st(x) for x in b) for b in s.blocks))
    return tuple(st(s) for s in body)


def _subst(e: Expr, pred: Callable[[Expr], bool], make: Callable[[Expr], Expr]) -> Expr:
    if pred(e):
        return make(e)
    if not e.args:
        return e
    return replace(e, args=tuple(_subst(a, pred, make) for a in e.args))


def _zero(t: str) -> Expr:
    return Expr("const", t, value=0)


def _drop_var(p: Program, body, var: int) -> Program:
    body = _map_exprs(body, lambda e: _subst(e, lambda x: x.op == "var" and x.value == var,
                                             lambda x: _zero(x.ty)))
    body = _strip_targets(body, var)
    return p.with_body(body, tuple(o for o in p.outputs if o != var))


def _strip_targets(body, var: int) -> tuple[Stmt, ...]:
    out = []
    for s in body:
        if s.kind in ("set", "array") and s.var == var:
            continue
        out.append(replace(s, blocks=tuple(_strip_targets(b, var) for b in s.blocks)))
    return tuple(out)


def _stmt_paths(body, prefix=()) -> Iterable[tuple]:
    for i, s in enumerate(body):
        yield prefix + (i,)
        for b, blk in enumerate(s.blocks):
            yield from _stmt_paths(blk, prefix + (i, b))


def _get(body, path) -> Stmt:
    s = body[path[0]]
    for k in range(1, len(path), 2):
        s = s.blocks[path[k]][path[k + 1]]
    return s


def _put(body, path, new: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """``body`` with the statement at ``path`` replaced by ``new`` (zero or more)."""
    i = path[0]
    if len(path) == 1:
        return tuple(body[:i]) + tuple(new) + tuple(body[i + 1:])
    s = body[i]
    b = path[1]
    blocks = list(s.blocks)
    blocks[b] = _put(s.blocks[b], path[2:], new)
    return tuple(body[:i]) + (replace(s, blocks=tuple(blocks)),) + tuple(body[i + 1:])


def _expr_sites(e: Expr, prefix=()) -> Iterable[tuple]:
    yield prefix
    for k, a in enumerate(e.args):
        yield from _expr_sites(a, prefix + (k,))


def _expr_at(e: Expr, site) -> Expr:
    for k in site:
        e = e.args[k]
    return e


def _expr_put(e: Expr, site, new: Expr) -> Expr:
    if not site:
        return new
    args = list(e.args)
    args[site[0]] = _expr_put(args[site[0]], site[1:], new)
    return replace(e, args=tuple(args))


# -- candidate reductions ------------------------------------------------------------

def _statement_reductions(p: Program) -> Iterable[Program]:
    for path in sorted(_stmt_paths(p.body), key=len):
        s = _get(p.body, path)
        if s.kind in ("let", "exchange"):
            if len(path) == 1:
                q = _drop_var(p, _put(p.body, path, ()), s.var)
                if q.outputs:
                    yield q
            continue
        yield p.with_body(_put(p.body, path, ()))
        if s.kind == "if":
            for blk in s.blocks:
                yield p.with_body(_put(p.body, path, blk))
        if s.kind == "loop":
            if len(s.exprs) > 1:
                yield p.with_body(_put(p.body, path, (replace(s, exprs=s.exprs[:1]),)))
            if s.size != 1:
                yield p.with_body(_put(p.body, path, (replace(s, size=1),)))


def _expression_reductions(p: Program) -> Iterable[Program]:
    for path in _stmt_paths(p.body):
        s = _get(p.body, path)
        for k, e in enumerate(s.exprs):
            for site in _expr_sites(e):
                node = _expr_at(e, site)
                if node.op == "const" and node.value == 0:
                    continue
                subs = [a for a in node.args if a.ty == node.ty]
                subs.append(_zero(node.ty) if node.ty != "bool" else
                            Expr("lt", "bool", (_zero("i32"), _zero("i32"))))
                for new in subs:
                    exprs = list(s.exprs)
                    exprs[k] = _expr_put(e, site, new)
                    yield p.with_body(_put(p.body, path, (replace(s, exprs=tuple(exprs)),)))


def _launch_reductions(p: Program, lane: int | None) -> Iterable[Program]:
    if p.noinline:
        yield replace(p, noinline=False)
    if lane is not None and p.n > lane + 1:
        yield replace(p, n=lane + 1)
    if p.block != 64 and not p.uses_lds:
        yield replace(p, block=64)
    used = {x.value for s in p.body for st in s.walk() for e in st.exprs for x in e.walk()
            if x.op in ("load", "gather")}
    for b in range(len(p.buffers)):
        if b not in used:
            remap = {old: old - (old > b) for old in range(len(p.buffers))}
            body = _map_exprs(p.body, lambda e: _renumber(e, remap))
            yield replace(p, buffers=p.buffers[:b] + p.buffers[b + 1:], body=body)
            break


def _renumber(e: Expr, remap) -> Expr:
    return _subst(e, lambda x: x.op in ("load", "gather"),
                  lambda x: replace(x, value=remap[x.value],
                                    args=tuple(_renumber(a, remap) for a in x.args)))


def _output_reductions(p: Program, var: int | None) -> Iterable[Program]:
    if var is not None and p.outputs != (var,):
        yield replace(p, outputs=(var,))
    if len(p.outputs) > 1:
        yield replace(p, outputs=p.outputs[-1:])


def candidates(p: Program, first: Result | None) -> list[Program]:
    """One-step reductions of ``p``, biggest cuts first, at most MAX_CANDIDATES."""
    d = first.verdict.first if first is not None and first.verdict else None
    lane = d.lane if d else None
    var = d.var if d else None
    seen = set()
    out: list[Program] = []
    for gen in (_output_reductions(p, var), _launch_reductions(p, lane),
                _statement_reductions(p), _expression_reductions(p)):
        for q in gen:
            key = (q.body, q.outputs, q.n, q.block, q.buffers, q.noinline)
            if key in seen or size(q) >= size(p) and q.n >= p.n and q.block == p.block:
                continue
            seen.add(key)
            out.append(q)
    out.sort(key=size)
    return out[:MAX_CANDIDATES]


# -- the loop ------------------------------------------------------------------------

def same_failure(want: Result, got: Result) -> bool:
    if got.outcome != want.outcome:
        return False
    if want.outcome in ("refused",):
        return got.detail == want.detail
    return True


def minimize(p: Program, want: Result, *, clang: Path | None = None, rounds: int = 30,
             log: Callable[[str], None] | None = None) -> tuple[Program, Result]:
    """The smallest program found that fails like ``want`` on ``want.target``/``want.opt``."""
    cur, cur_res = p, want
    tmp = Path(tempfile.mkdtemp(prefix="emufuzz-min-"))
    try:
        for rnd in range(rounds):
            cands = [replace(q, name=f"{p.name}_m{rnd}_{k}")
                     for k, q in enumerate(candidates(cur, cur_res))]
            if not cands:
                break
            built = build(batch_source(cands), tmp / f"r{rnd}", targets=(want.target,),
                          opts=(want.opt,), clang=clang)
            if built.errors:      # one candidate the compiler rejects: try them one by one
                results = _one_by_one(cands, want, tmp / f"r{rnd}s", clang)
            else:
                results = run_batch(cands, built, (want.target,), (want.opt,))
            hits = [(q, r) for q, r in zip(cands, results) if same_failure(want, r)]
            if log:
                log(f"round {rnd}: {len(cands)} candidates, {len(hits)} still fail, "
                    f"size {size(cur)}")
            if not hits:
                break
            cur, cur_res = min(hits, key=lambda h: (size(h[0]), h[0].n))
            shutil.rmtree(tmp / f"r{rnd}", ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return replace(cur, name=p.name + "_min"), cur_res


def _one_by_one(cands, want: Result, workdir: Path, clang) -> list[Result]:
    out = []
    for k, q in enumerate(cands[:8]):
        b = build(batch_source([q]), workdir / str(k), targets=(want.target,), opts=(want.opt,),
                  clang=clang)
        out += run_batch([q], b, (want.target,), (want.opt,))
    return out + [Result(q.name, want.target, want.opt, "compile_error") for q in cands[8:]]
