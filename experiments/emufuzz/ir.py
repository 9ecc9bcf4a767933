"""The fuzzer's program representation: typed expressions, statements, programs.

A program is small and plain data so that the generator, the renderer (C++ for
gfx942/gfx90a and x86-64 from one tree), the minimizer (which rebuilds trees)
and the replay files (JSON) all share one value. Nodes are generic (an op name,
a type, children) so the minimizer can walk and rebuild any of them without a
case per op.

Semantics are those of the rendered C++, which the renderer keeps free of
undefined behaviour: integer arithmetic wraps, shifts mask their amount,
division guards zero and MIN/-1, float->int conversion saturates (NaN -> 0).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Ty:
    """A scalar type of the generated C++."""

    name: str
    bits: int
    kind: str          # int | float | bool
    signed: bool = False

    @property
    def ctype(self) -> str:
        if self.kind == "bool":
            return "bool"
        if self.kind == "float":
            return {16: "half", 32: "float", 64: "double"}[self.bits]
        return f"{'' if self.signed else 'u'}int{self.bits}_t"

    @property
    def utype(self) -> str:
        """The unsigned integer type of the same width (the carrier of the bits)."""
        return f"uint{self.bits}_t"

    @property
    def carrier(self) -> str:
        """numpy dtype name of the bits."""
        return f"uint{self.bits}"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"


TYPES: dict[str, Ty] = {t.name: t for t in (
    Ty("i8", 8, "int", True), Ty("u8", 8, "int"), Ty("i16", 16, "int", True),
    Ty("u16", 16, "int"), Ty("i32", 32, "int", True), Ty("u32", 32, "int"),
    Ty("i64", 64, "int", True), Ty("u64", 64, "int"),
    Ty("f16", 16, "float", True), Ty("f32", 32, "float", True), Ty("f64", 64, "float", True),
    Ty("bool", 1, "bool"))}
INT_TYPES = tuple(n for n, t in TYPES.items() if t.is_int)
FLOAT_TYPES = ("f16", "f32", "f64")
NUMERIC_TYPES = INT_TYPES + FLOAT_TYPES


def ty(name: str) -> Ty:
    return TYPES[name]


# Leaves: their ``value`` says which variable / buffer / scalar / loop / constant bits.
LEAVES = {"var", "const", "load", "scalar", "gid", "lid", "idx", "aidx"}


@dataclass(frozen=True)
class Expr:
    """One expression node: ``op`` over ``args``, of type ``ty`` (a TYPES name)."""

    op: str
    ty: str
    args: tuple["Expr", ...] = ()
    value: int = 0

    def walk(self):
        yield self
        for a in self.args:
            yield from a.walk()

    @property
    def is_leaf(self) -> bool:
        return not self.args

    def size(self) -> int:
        return 1 + sum(a.size() for a in self.args)


# Statement kinds (see Stmt):
#   let      var:new id, ty, exprs=(value,)
#   set      var, exprs=(value,)                           (var declared earlier)
#   if       exprs=(cond,), blocks=(then, else)
#   loop     exprs=(count,) or (count, break_cond), size=trip mask, blocks=(body,)
#   array    var (declared earlier, receives the load), ty=element, size=length,
#            exprs=(init over aidx, store index, store value, load index)
#   exchange var:new id, ty, size=LDS array id, exprs=(value stored at lid, read index)
#   exit     exprs=(cond,)       top level, after the last exchange: write outputs, return
STMT_KINDS = ("let", "set", "if", "loop", "array", "exchange", "exit")


@dataclass(frozen=True)
class Stmt:
    kind: str
    var: int = -1
    ty: str = ""
    exprs: tuple[Expr, ...] = ()
    blocks: tuple[tuple["Stmt", ...], ...] = ()
    size: int = 0

    def walk(self):
        yield self
        for b in self.blocks:
            for s in b:
                yield from s.walk()


@dataclass(frozen=True)
class Program:
    """One kernel: ``out[gid * len(outputs) + j] = bits(var outputs[j])`` for gid < n."""

    name: str
    n: int
    block: int
    buffers: tuple[str, ...]                 # element type of each input buffer
    scalars: tuple[tuple[str, int], ...]     # (type, bits) of each scalar argument
    body: tuple[Stmt, ...]
    outputs: tuple[int, ...]                 # top-level variable ids, one output slot each
    input_seed: int
    noinline: bool = False                   # body in a noinline device function (calls)
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def grid(self) -> int:
        return -(-self.n // self.block)

    @property
    def uses_lds(self) -> bool:
        return any(s.kind == "exchange" for s in self.body)

    def var_types(self) -> dict[int, str]:
        """Type of every variable a top-level let or exchange declares."""
        return {s.var: s.ty for s in self.body if s.kind in ("let", "exchange")}

    def with_body(self, body, outputs=None) -> "Program":
        return replace(self, body=tuple(body),
                       outputs=self.outputs if outputs is None else tuple(outputs))


# -- JSON ----------------------------------------------------------------------

def _expr_to(e: Expr):
    return [e.op, e.ty, e.value, [_expr_to(a) for a in e.args]]


def _expr_from(d) -> Expr:
    op, t, value, args = d
    return Expr(op, t, tuple(_expr_from(a) for a in args), value)


def _stmt_to(s: Stmt):
    return {"k": s.kind, "v": s.var, "t": s.ty, "n": s.size,
            "e": [_expr_to(e) for e in s.exprs],
            "b": [[_stmt_to(x) for x in b] for b in s.blocks]}


def _stmt_from(d) -> Stmt:
    return Stmt(d["k"], d["v"], d["t"], tuple(_expr_from(e) for e in d["e"]),
                tuple(tuple(_stmt_from(x) for x in b) for b in d["b"]), d["n"])


def to_json(p: Program) -> str:
    return json.dumps({"name": p.name, "n": p.n, "block": p.block, "buffers": list(p.buffers),
                       "scalars": [list(s) for s in p.scalars],
                       "body": [_stmt_to(s) for s in p.body], "outputs": list(p.outputs),
                       "input_seed": p.input_seed, "noinline": p.noinline, "meta": p.meta},
                      separators=(",", ":"))


def from_json(text: str) -> Program:
    d = json.loads(text)
    return Program(d["name"], d["n"], d["block"], tuple(d["buffers"]),
                   tuple((t, int(b)) for t, b in d["scalars"]),
                   tuple(_stmt_from(s) for s in d["body"]), tuple(d["outputs"]),
                   d["input_seed"], d.get("noinline", False), d.get("meta", {}))
