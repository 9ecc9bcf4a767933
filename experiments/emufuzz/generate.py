"""Seeded random programs: ``generate(seed, index)`` is the same program on every run.

Each program picks a few "focus" types so that values flow between its
statements (a program over six unrelated types would mostly compute constants),
then draws statements: lets, updates, divergent if/else on per-lane data,
loops with data-dependent trip counts and early breaks, private arrays indexed
by data (so they live in scratch), LDS exchanges across a barrier, and early
exits. Expressions mix every operator of :mod:`ops` over those types, with
special-value constants and scalars.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from experiments.emufuzz import values
from experiments.emufuzz.ir import (FLOAT_TYPES, INT_TYPES, NUMERIC_TYPES, Expr, Program,
                                    Stmt, ty)
from experiments.emufuzz.ops import OPS

_TYPE_WEIGHTS = {"i8": 1, "u8": 1, "i16": 1, "u16": 1, "i32": 4, "u32": 4, "i64": 2,
                 "u64": 2, "f16": 2, "f32": 5, "f64": 3}
_INT_BIN = ["add", "sub", "mul", "and", "or", "xor", "shl", "shr", "div", "rem", "divc",
            "remc", "mulhi", "min", "max"]
_INT_UN = ["neg", "not", "popc", "clz", "ctz", "abs"]
_FLT_BIN = ["fadd", "fsub", "fmul", "fdiv", "fmin", "fmax", "copysign"]
_FLT_UN = ["fneg", "fabs", "sqrt", "floor", "ceil", "trunc", "rint"]
_CMP = ["lt", "le", "gt", "ge", "eq", "ne"]
_SAME_WIDTH = {16: ("i16", "u16", "f16"), 32: ("i32", "u32", "f32"), 64: ("i64", "u64", "f64")}
BLOCKS = (64, 64, 128, 256, 32, 96, 100, 192, 1, 7, 33, 65)
ARRAY_SIZES = (4, 8, 16, 40, 64, 100)
LOOP_MASKS = (3, 7, 15)
# Bounds on the work one program does (the emulator runs -O0 code at ~50 us per wave
# instruction): iterations of nested loops, and array elements initialised in them.
MAX_TRIPS = 60
MAX_WAVES = 8
MAX_ARRAY_WORK = 240


@dataclass(frozen=True)
class GenConfig:
    """Knobs of the generator (defaults: the configuration the bench runs)."""

    max_stmts: int = 14
    max_depth: int = 3
    p_lds: float = 0.25
    p_noinline: float = 0.15
    max_n: int = 300


class _Gen:
    def __init__(self, r: random.Random, cfg: GenConfig):
        self.r = r
        self.cfg = cfg
        k = r.choice((2, 2, 3, 3, 4))
        self.types = self._weighted_types(k)
        self.buffers = [r.choice(self.types) for _ in range(r.randint(1, 4))]
        self.scalars = [(t, values.value(t, r, 0.4)) for t in
                        (r.choice(self.types) for _ in range(r.randint(0, 3))) if ty(t).bits >= 16]
        self.vars: list[tuple[int, str]] = []
        self.next_var = 0
        self.loop_depth = 0
        self.mult = 1            # product of the trip masks of the enclosing loops
        self.in_array = False

    def _weighted_types(self, k: int) -> list[str]:
        names = list(_TYPE_WEIGHTS)
        out: list[str] = []
        while len(out) < k:
            t = self.r.choices(names, [_TYPE_WEIGHTS[n] for n in names])[0]
            if t not in out:
                out.append(t)
        return out

    def any_type(self) -> str:
        r = self.r
        return r.choice(self.types) if r.random() < 0.85 else r.choice(NUMERIC_TYPES)

    # -- expressions ---------------------------------------------------------------
    def const(self, t: str) -> Expr:
        return Expr("const", t, value=values.value(t, self.r, 0.35))

    def leaf(self, t: str) -> Expr:
        r = self.r
        if t == "bool":
            u = self.any_type()
            a, b = self.leaf(u), self.leaf(u)
            if a == b:
                b = self.leaf(u)
            return Expr(r.choice(_CMP), "bool", (a, b))
        cands: list[Expr] = [Expr("var", t, value=i) for i, vt in self.vars if vt == t]
        cands += [Expr("load", t, value=b) for b, bt in enumerate(self.buffers) if bt == t]
        cands += [Expr("scalar", t, value=k) for k, (st, _) in enumerate(self.scalars) if st == t]
        if t == "u32":
            cands += [Expr("gid", t), Expr("lid", t)]
            cands += [Expr("idx", t, value=d) for d in range(self.loop_depth)]
            if self.in_array:
                cands += [Expr("aidx", t)] * 2
        if not cands:
            # nothing of this type holds data: convert something that does, half the time
            others = [Expr("var", vt, value=i) for i, vt in self.vars if vt != "bool"]
            others += [Expr("load", bt, value=b) for b, bt in enumerate(self.buffers)]
            if others and r.random() < 0.5:
                src = r.choice(others)
                return Expr("bits" if ty(src.ty).bits == ty(t).bits and ty(src.ty).kind !=
                            ty(t).kind and r.random() < 0.3 else "conv", t, (src,))
            return self.const(t)
        if r.random() < 0.15:
            return self.const(t)
        return r.choice(cands)

    def expr(self, t: str, depth: int) -> Expr:
        r = self.r
        if depth <= 0 or r.random() < 0.2:
            return self.leaf(t)
        d = depth - 1
        if t == "bool":
            k = r.random()
            if k < 0.75:
                u = self.any_type()
                a, b = self.expr(u, d), self.expr(u, d)
                if a == b:
                    b = self.expr(u, d)
                return Expr(r.choice(_CMP), "bool", (a, b))
            if k < 0.9:
                return Expr(r.choice(("land", "lor")), "bool", (self.expr("bool", d),
                                                                self.expr("bool", d)))
            return Expr("lnot", "bool", (self.expr("bool", d),))
        k = r.random()
        if k < 0.10:
            return Expr("select", t, (self.expr("bool", min(d, 2)), self.expr(t, d),
                                      self.expr(t, d)))
        if k < 0.24:
            u = r.choice([x for x in NUMERIC_TYPES if x != t] + [x for x in self.types if x != t])
            return Expr("conv", t, (self.expr(u, d),))
        if k < 0.28:
            u = r.choice([x for x in _SAME_WIDTH.get(ty(t).bits, ()) if ty(x).kind != ty(t).kind]
                         or [t])
            if u != t:
                return Expr("bits", t, (self.expr(u, d),))
        if k < 0.34:
            cands = [b for b, bt in enumerate(self.buffers) if bt == t]
            if cands:
                it = r.choice(INT_TYPES)
                return Expr("gather", t, (self.expr(it, min(d, 2)),), r.choice(cands))
        return self.int_expr(t, d) if ty(t).is_int else self.float_expr(t, d)

    def int_expr(self, t: str, d: int) -> Expr:
        r = self.r
        T = ty(t)
        if r.random() < 0.8:
            op = r.choice(_INT_BIN)
            a = self.expr(t, d)
            if op in ("divc", "remc"):
                return Expr(op, t, (a, Expr("const", t, value=self._divisor(T))))
            if op in ("shl", "shr") and r.random() < 0.5:
                return Expr(op, t, (a, Expr("const", t, value=r.randrange(T.bits))))
            return Expr(op, t, (a, self.expr(t, d)))
        op = r.choice([o for o in _INT_UN if T.signed or not OPS[o].signed_only])
        return Expr(op, t, (self.expr(t, d),))

    def _divisor(self, T) -> int:
        m = (1 << T.bits) - 1
        while True:
            v = self.r.choice((3, 5, 7, 10, 16, 1000, 641, 0x7FFF, -3, -16, 2, 1,
                               1 << (T.bits - 1), (1 << (T.bits - 1)) - 1)) & m
            if v == 0 or (T.signed and T.bits >= 32 and v == m):
                continue
            return v

    def float_expr(self, t: str, d: int) -> Expr:
        r = self.r
        k = r.random()
        if k < 0.6:
            return Expr(r.choice(_FLT_BIN), t, (self.expr(t, d), self.expr(t, d)))
        if k < 0.85:
            return Expr(r.choice(_FLT_UN), t, (self.expr(t, d),))
        return Expr("fma", t, (self.expr(t, d), self.expr(t, d), self.expr(t, d)))

    # -- statements --------------------------------------------------------------
    def new_var(self) -> int:
        self.next_var += 1
        return self.next_var

    def inner(self, n: int, nest: int) -> tuple[Stmt, ...]:
        """Statements inside an if or loop: updates, and nested control flow."""
        out = []
        for _ in range(n):
            k = self.r.random()
            if nest < 2 and k < 0.15:
                out.append(self.if_stmt(nest + 1))
            elif nest < 2 and k < 0.25 and self.loop_depth < 2:
                out.append(self.loop_stmt(nest + 1))
            elif k < 0.32:
                out.append(self.array_stmt())
            else:
                out.append(self.set_stmt())
        return tuple(out)

    def set_stmt(self) -> Stmt:
        i, t = self.r.choice(self.vars)
        return Stmt("set", i, t, (self.expr(t, self.r.randint(1, self.cfg.max_depth)),))

    def if_stmt(self, nest: int) -> Stmt:
        r = self.r
        cond = self.expr("bool", r.randint(1, 2))
        return Stmt("if", exprs=(cond,), blocks=(self.inner(r.randint(1, 3), nest),
                                                 self.inner(r.choice((0, 1, 2)), nest)))

    def loop_stmt(self, nest: int) -> Stmt:
        r = self.r
        masks = [m for m in LOOP_MASKS if self.mult * m <= MAX_TRIPS] or [1]
        mask = r.choice(masks)
        count = self.expr(r.choice([t for t in self.types if ty(t).is_int] or ["u32"]), 1)
        self.loop_depth += 1
        self.mult *= mask
        exprs = (count,) + ((self.expr("bool", 2),) if r.random() < 0.4 else ())
        body = self.inner(r.randint(1, 3), nest)
        self.loop_depth -= 1
        self.mult //= mask
        return Stmt("loop", exprs=exprs, blocks=(body,), size=mask)

    def array_stmt(self) -> Stmt:
        r = self.r
        i, t = r.choice(self.vars)
        self.in_array = True
        init = self.expr(t, 2)
        self.in_array = False
        it = r.choice(INT_TYPES)
        sizes = [k for k in ARRAY_SIZES if k * self.mult <= MAX_ARRAY_WORK] or [ARRAY_SIZES[0]]
        return Stmt("array", i, t, (init, self.expr(it, 2), self.expr(t, 2), self.expr(it, 2)),
                    size=r.choice(sizes))

    def let_stmt(self) -> Stmt:
        t = self.any_type()
        e = self.expr(t, self.r.randint(1, self.cfg.max_depth))
        i = self.new_var()
        self.vars.append((i, t))
        return Stmt("let", i, t, (e,))

    def exchange_stmt(self, lds_id: int) -> Stmt:
        """Store a value at lid, barrier, read another lane's (a new variable)."""
        r = self.r
        t = self.any_type()
        src = self.expr(t, 2)
        idx = self.expr(r.choice(("u32", "i32", r.choice(self.types))), 1)
        if ty(idx.ty).is_float:
            idx = Expr("conv", "u32", (idx,))
        i = self.new_var()
        self.vars.append((i, t))
        return Stmt("exchange", i, t, (src, idx), size=lds_id)

    def body(self, lds: bool) -> list[Stmt]:
        r = self.r
        out = [self.let_stmt() for _ in range(r.randint(1, 3))]
        exited = False
        n_lds = 0
        if lds:
            out.append(self.exchange_stmt(n_lds))
            n_lds += 1
        for _ in range(r.randint(2, self.cfg.max_stmts)):
            k = r.random()
            if k < 0.12:
                out.append(self.if_stmt(0))
            elif k < 0.22:
                out.append(self.loop_stmt(0))
            elif k < 0.30:
                out.append(self.array_stmt())
            elif k < 0.36:
                out.append(self.set_stmt())
            elif lds and not exited and k < 0.46:
                out.append(self.exchange_stmt(n_lds))
                n_lds += 1
            elif k < 0.50:
                out.append(Stmt("exit", exprs=(self.expr("bool", 2),)))
                exited = True
            else:
                out.append(self.let_stmt())
        return out


def generate(seed: int, index: int, cfg: GenConfig = GenConfig()) -> Program:
    """Program ``index`` of the stream ``seed``."""
    r = random.Random(f"emufuzz:{seed}:{index}")
    g = _Gen(r, cfg)
    lds = r.random() < cfg.p_lds
    body = g.body(lds)
    declared = [s.var for s in body if s.kind in ("let", "exchange")]
    if r.random() < 0.7:
        outputs = declared
    else:
        outputs = sorted(set(r.sample(declared, r.randint(1, len(declared)))) | {declared[-1]})
    block = r.choice(BLOCKS)
    wpg = -(-block // 64)
    top = min(cfg.max_n, MAX_WAVES // wpg * block)   # emulator cost grows with the waves
    n = r.randint(1, min(70, top)) if r.random() < 0.4 else r.randint(min(70, top), top)
    return Program(name=f"fz{seed}_{index}", n=n, block=block,
                   buffers=tuple(g.buffers), scalars=tuple(g.scalars), body=tuple(body),
                   outputs=tuple(outputs), input_seed=r.getrandbits(48),
                   noinline=r.random() < cfg.p_noinline)
