"""Programs to C++: one source per batch, compiled both as HIP device code and as x86-64.

The GPU side is a kernel per program (``extern "C"``, so its symbol is the
program's name). The x86 side is ``<name>_host``, which runs the same statement
text for every work-item of every workgroup in turn; a program with LDS
exchanges is split at each barrier into phases, every work-item finishing one
phase before any starts the next (what ``__syncthreads`` guarantees), with the
variables that live across phases in a per-work-item struct.
"""
from __future__ import annotations

from pathlib import Path

from experiments.emufuzz.ir import Expr, Program, Stmt, ty
from experiments.emufuzz.ops import OPS, RAW_SOURCES

PRELUDE = Path(__file__).resolve().parent / "prelude.h"
MAX_BLOCK = 1024


def literal(t: str, bits: int) -> str:
    """A C++ constant of type ``t`` with exactly these bits."""
    T = ty(t)
    if T.kind == "bool":
        return "true" if bits else "false"
    suffix = "ull" if T.bits == 64 else "u"
    if T.is_float:
        return f"__builtin_bit_cast({T.ctype}, ({T.utype})0x{bits:x}{suffix})"
    return f"(({T.ctype})0x{bits:x}{suffix})"


class _Ctx:
    """How names render on one side: GPU locals, or x86 fields of the phase struct."""

    def __init__(self, gpu: bool, in_struct: bool):
        self.gpu = gpu
        self.in_struct = in_struct

    def var(self, i: int) -> str:
        return f"S->v{i}" if self.in_struct else f"v{i}"

    def decl(self, t: str, i: int) -> str:
        return f"S->v{i}" if self.in_struct else f"{ty(t).ctype} v{i}"

    @property
    def exit(self) -> str:
        return "return;" if self.gpu else "continue;"


def expr(e: Expr, c: _Ctx) -> str:
    op = e.op
    if op == "var":
        return c.var(e.value)
    if op == "const":
        return literal(e.ty, e.value)
    if op == "load":
        return f"x{e.value}"
    if op == "scalar":
        return f"s{e.value}"
    if op in ("gid", "lid"):
        return op
    if op == "idx":
        return f"i{e.value}"
    if op == "aidx":
        return "j"
    spec = OPS[op]
    args = [expr(a, c) for a in e.args]
    T = ty(e.ty).ctype
    F = ty(e.args[0].ty).ctype
    if op == "gather":
        return f"in{e.value}[w_gix({args[0]}, n)]"
    if op in ("divc", "remc") and ty(e.ty).bits == 64:
        args[0] = f"w_opq({args[0]})"      # exclusions.toml: llvm19-divrem-shrink
    elif op in ("divc", "remc") and ty(e.ty).bits < 32:
        args[0] = f"({T})w_opq((int32_t){args[0]})"    # exclusions.toml: llvm-dot4-narrow-divrem
    if op == "fdiv" and e.ty == "f16":      # exclusions.toml: llvm19-f16-fdiv-rounding
        return f"(half)w_opq((float){args[0]} / (float){args[1]})"
    if op == "conv" and e.ty == "f16":      # exclusions.toml: llvm-f16-conversion-folds
        src = f"w_opq({args[0]})" if ty(e.args[0].ty).is_float else args[0]
        return f"w_opq(w_conv<half>({src}))"
    if op == "not" and ty(e.ty).bits == 64:
        args[0] = f"w_opq({args[0]})"      # exclusions.toml: llvm19-i64-or-high-half
    if op == "fsub" and e.args[0].op == "const" and e.args[0].value == 0:
        args[0] = f"w_opq({args[0]})"      # exclusions.toml: llvm-fsub-positive-zero
    if op == "copysign" and e.args[1].op not in RAW_SOURCES:
        args[1] = f"w_nansign({args[1]})"
    if op == "bits" and ty(e.args[0].ty).is_float and e.args[0].op not in RAW_SOURCES:
        return f"w_nbits<{T}>({args[0]})"
    if op == "bits" and ty(e.ty).is_float and e.args[0].op not in RAW_SOURCES:
        return f"w_fbits<{T}>({args[0]})"      # exclusions.toml: nan-bits
    return spec.template.format(*args, T=T, F=F)


def _outputs(p: Program, c: _Ctx, declared: set[int], indent: str) -> list[str]:
    k = len(p.outputs)
    return [f"{indent}out[(uint64_t)gid * {k}u + {j}u] = (uint64_t)w_out({c.var(v)});"
            for j, v in enumerate(p.outputs) if v in declared]


def stmts(p: Program, body, c: _Ctx, depth: int, declared: set[int], indent: str,
          top: bool = False) -> list[str]:
    out: list[str] = []
    for s in body:
        out += stmt(p, s, c, depth, declared, indent, top)
    return out


def stmt(p: Program, s: Stmt, c: _Ctx, depth: int, declared: set[int], indent: str,
         top: bool) -> list[str]:
    """Lines of one statement (``declared`` grows with the top-level lets seen so far)."""
    e = [expr(x, c) for x in s.exprs]
    if s.kind == "let":
        declared.add(s.var)
        return [f"{indent}{c.decl(s.ty, s.var)} = {e[0]};"]
    if s.kind == "set":
        return [f"{indent}{c.var(s.var)} = {e[0]};"]
    if s.kind == "if":
        lines = [f"{indent}if ({e[0]}) {{"]
        lines += stmts(p, s.blocks[0], c, depth, declared, indent + "  ")
        if s.blocks[1]:
            lines.append(f"{indent}}} else {{")
            lines += stmts(p, s.blocks[1], c, depth, declared, indent + "  ")
        return lines + [f"{indent}}}"]
    if s.kind == "loop":
        i = f"i{depth}"
        lines = [f"{indent}for (uint32_t t{depth} = (uint32_t)({e[0]}) & {s.size}u, {i} = 0; "
                 f"{i} < t{depth}; ++{i}) {{"]
        if len(e) > 1:
            lines.append(f"{indent}  if ({e[1]}) break;")
        lines += stmts(p, s.blocks[0], c, depth + 1, declared, indent + "  ")
        return lines + [f"{indent}}}"]
    if s.kind == "array":
        T = ty(s.ty).ctype
        k = s.size
        return [f"{indent}{{",
                f"{indent}  {T} a[{k}];",
                f"{indent}  for (uint32_t j = 0; j < {k}u; ++j) a[j] = {e[0]};",
                f"{indent}  a[w_gix({e[1]}, {k}u)] = {e[2]};",
                f"{indent}  {c.var(s.var)} = a[w_gix({e[3]}, {k}u)];",
                f"{indent}}}"]
    if s.kind == "exit":
        if not top:
            raise ValueError("exit below the top level")
        cond = e[0] if not p.uses_lds else f"live && ({e[0]})"
        return ([f"{indent}if ({cond}) {{"] + _outputs(p, c, declared, indent + "  ")
                + [f"{indent}  {c.exit}", f"{indent}}}"])
    if s.kind == "exchange":
        # GPU only: the x86 side splits phases here (see _host)
        declared.add(s.var)
        return [f"{indent}lds{s.size}[lid] = {e[0]};",
                f"{indent}__syncthreads();",
                f"{indent}{c.decl(s.ty, s.var)} = lds{s.size}[w_gix({e[1]}, bdim)];"]
    raise ValueError(f"unknown statement kind {s.kind!r}")


def _prologue(p: Program, indent: str) -> list[str]:
    lines = []
    if p.uses_lds:
        lines.append(f"{indent}bool live = gid < n;")
        for b, t in enumerate(p.buffers):
            lines.append(f"{indent}{ty(t).ctype} x{b} = live ? in{b}[gid] : ({ty(t).ctype})0;")
    else:
        lines.append(f"{indent}if (gid >= n) EXIT_;")
        for b, t in enumerate(p.buffers):
            lines.append(f"{indent}{ty(t).ctype} x{b} = in{b}[gid];")
    return lines


def _params(p: Program) -> str:
    ins = [f"const {ty(t).ctype}* in{b}" for b, t in enumerate(p.buffers)]
    scs = [f"{ty(t).ctype} s{k}" for k, (t, _) in enumerate(p.scalars)]
    return ", ".join(ins + ["uint64_t* out", "uint32_t n"] + scs)


def _lds_decls(p: Program, indent: str) -> list[str]:
    return [f"{indent}__shared__ {ty(s.ty).ctype} lds{s.size}[{p.block}];"
            for s in p.body if s.kind == "exchange"]


def gpu_source(p: Program) -> str:
    """The kernel (and, for ``noinline`` programs, its body function)."""
    c = _Ctx(gpu=True, in_struct=False)
    declared: set[int] = set()
    body = _prologue(p, "  ") + stmts(p, p.body, c, 0, declared, "  ", top=True)
    final = _outputs(p, c, declared, "    " if p.uses_lds else "  ")
    if p.uses_lds:
        final = ["  if (live) {"] + final + ["  }"]
    body = [ln.replace("EXIT_", "return") for ln in body + final]
    args = ", ".join([f"in{b}" for b in range(len(p.buffers))] + ["out", "n"]
                     + [f"s{k}" for k in range(len(p.scalars))])
    head = (f'extern "C" __global__ void {p.name}({_params(p)}) {{\n'
            "  uint32_t lid = threadIdx.x;\n  uint32_t bdim = blockDim.x;\n"
            "  uint32_t gid = blockIdx.x * bdim + lid;\n")
    if not p.noinline:
        return head + "\n".join(_lds_decls(p, "  ") + body) + "\n}\n"
    fn = (f"static __device__ __attribute__((noinline)) void {p.name}_body(uint32_t lid, "
          f"uint32_t bdim, uint32_t gid, {_params(p)}) {{\n"
          + "\n".join(_lds_decls(p, "  ") + body) + "\n}\n")
    return fn + head + f"  {p.name}_body(lid, bdim, gid, {args});\n}}\n"


def _phases(body) -> list[list[Stmt]]:
    """Top-level statements split after each exchange's store (the barrier)."""
    phases: list[list[Stmt]] = [[]]
    for s in body:
        phases[-1].append(s)
        if s.kind == "exchange":
            phases.append([])
    return phases


def host_source(p: Program) -> str:
    """``<name>_host(n, bdim, nblk, bufs, scalars, out)``: the same function on x86."""
    lds = p.uses_lds
    c = _Ctx(gpu=False, in_struct=lds)
    lines = [f'extern "C" void {p.name}_host(uint32_t n, uint32_t bdim, uint32_t nblk, '
             "void** bufs, const uint64_t* sc, uint64_t* out) {"]
    for b, t in enumerate(p.buffers):
        lines.append(f"  const {ty(t).ctype}* in{b} = (const {ty(t).ctype}*)bufs[{b}];")
    for k, (t, _) in enumerate(p.scalars):
        T = ty(t)
        lines.append(f"  {T.ctype} s{k} = __builtin_bit_cast({T.ctype}, ({T.utype})sc[{k}]);")
    var_types = p.var_types()
    if lds:
        fields = " ".join(f"{ty(t).ctype} v{i};" for i, t in var_types.items())
        lines.append(f"  struct St {{ {fields} }};")
        lines.append(f"  static St st[{MAX_BLOCK}];")
        for s in p.body:
            if s.kind == "exchange":
                lines.append(f"  static {ty(s.ty).ctype} lds{s.size}[{MAX_BLOCK}];")
    lines.append("  for (uint32_t blk = 0; blk < nblk; ++blk) {")
    declared: set[int] = set()
    phases = _phases(p.body)
    for k, ph in enumerate(phases):
        lines.append("    for (uint32_t lid = 0; lid < bdim; ++lid) {")
        lines.append("      uint32_t gid = blk * bdim + lid;")
        if lds:
            lines.append("      St* S = &st[lid];")
        lines += [ln.replace("EXIT_", "continue") for ln in _prologue(p, "      ")]
        if k > 0:   # the read half of the exchange that ended the previous phase
            x = phases[k - 1][-1]
            declared.add(x.var)
            lines.append(f"      {c.var(x.var)} = lds{x.size}[w_gix({expr(x.exprs[1], c)}, bdim)];")
        for s in ph:
            if s.kind == "exchange":
                lines.append(f"      lds{s.size}[lid] = {expr(s.exprs[0], c)};")
            else:
                lines += stmt(p, s, c, 0, declared, "      ", top=True)
        if k == len(phases) - 1:
            final = _outputs(p, c, declared, "        " if lds else "      ")
            lines += (["      if (live) {"] + final + ["      }"]) if lds else final
        lines.append("    }")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def batch_source(programs) -> str:
    """One translation unit holding every program of a batch, for both sides."""
    parts = ['#include "prelude.h"', "", "#if GPU"]
    parts += [gpu_source(p) for p in programs]
    parts += ["#else"]
    parts += [host_source(p) for p in programs]
    parts += ["#endif", ""]
    return "\n".join(parts)
