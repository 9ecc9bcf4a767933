"""Spec skeletons: a launch spec written from a code object's own metadata, and a
check that says what a spec still lacks or gets wrong.

A kernel's metadata already knows its kernarg layout: AITer's list every
kernarg (40-150 per kernel, alignment pads named ``pad``), which a hand-written
spec would have to repeat entry by entry. :func:`skeleton` writes them all
(pads as the zero-filled ``pad`` kind), the block size the metadata requires,
the LDS the descriptor allocates, and ``"TODO"`` wherever only the user knows
the answer (counts, dtypes, grid, inputs, which buffers are outputs).
:func:`check` lists every TODO left and every disagreement with the code
object, one line each.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from asmevo.errors import AsmevoError
from asmevo.files import read_toml
from asmevo.launch.spec import SpecError, load_spec

TODO = "TODO"
_SCALARS = {1: "int8 | uint8", 2: "int16 | uint16 | float16 | bfloat16",
            4: "int32 | uint32 | float32", 8: "int64 | uint64 | float64"}


def _q(s: str) -> str:
    return json.dumps(s)


def _short_name(kernel: str) -> str:
    """``_ZN5aiter24topksoftmax_4x128x6_bf16E`` -> ``topksoftmax_4x128x6_bf16``."""
    parts, i = [], 3
    if kernel.startswith("_ZN") and kernel.endswith("E"):
        while i < len(kernel) - 1 and kernel[i].isdigit():
            m = re.match(r"\d+", kernel[i:])
            n = int(m.group(0))
            i += len(m.group(0))
            parts.append(kernel[i:i + n])
            i += n
    name = parts[-1] if parts else kernel
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "kernel"


def _is_pad(a) -> bool:
    """AITer names its alignment fillers ``pad`` (``_pN`` in its C++ structs)."""
    return a.value_kind == "by_value" and bool(re.fullmatch(r"_?(?:pad|p)\d*", a.name or ""))


def _arg_lines(a, names: set[str]) -> list[str]:
    space = f" ({a.address_space})" if a.address_space else ""
    typ = f" {a.type_name}" if a.type_name else ""
    head = (f"[[args]]   # +{a.offset}, {a.size} B, {a.value_kind}{space},{typ} "
            f"{a.name or '(unnamed)'}")
    if _is_pad(a):
        name = f"pad_{a.offset}"
        return [head, f"name = {_q(name)}", 'kind = "pad"', f"offset = {a.offset}",
                f"size = {a.size}", ""]
    name = a.name or f"arg_{a.offset}"
    if name in names:
        name = f"{name}_{a.offset}"
    names.add(name)
    lines = [head, f"name = {_q(name)}"]
    if a.value_kind in ("global_buffer", "dynamic_shared_pointer") or a.address_space:
        lines += ['kind = "buffer"', f"offset = {a.offset}",
                  f'dtype = "{TODO}"           # element type',
                  f'count = "{TODO}"           # elements, an expression over the params',
                  f'init = "{TODO}"            # normal | uniform | randint | zeros | ones | '
                  'arange',
                  f'output = "{TODO}"          # true for what the kernel writes']
    elif a.value_kind == "by_value":
        lines += ['kind = "scalar"', f"offset = {a.offset}", f"size = {a.size}",
                  f'dtype = "{TODO}"           # {_SCALARS.get(a.size, f"{a.size} bytes")}',
                  f'value = "{TODO}"']
    else:
        lines += [f'kind = "{TODO}"            # metadata value kind {a.value_kind}',
                  f"offset = {a.offset}", f"size = {a.size}"]
    return lines + [""]


def skeleton(co, kernel_name: str | None, *, code_object_ref: str) -> str:
    """The TOML text of a spec for one kernel of ``co`` (a loaded CodeObject);
    ``code_object_ref`` is the path the spec names it by."""
    if kernel_name is None:
        if len(co.kernels) != 1:
            raise SpecError(f"{len(co.kernels)} kernels; choose one with --kernel: "
                            + ", ".join(co.kernel_names), path=co.path)
        kernel_name = co.kernels[0].name
    k = co.kernel(kernel_name)
    m = k.meta
    kd = k.descriptor
    raw = m.raw if m else {}
    reqd = raw.get(".reqd_workgroup_size")
    ids = "xyz"[:kd.enable_vgpr_workitem_id + 1]
    if isinstance(reqd, list) and len(reqd) == 3:
        block = f"block = {list(reqd)}   # metadata .reqd_workgroup_size"
    else:
        limit = m.max_flat_workgroup_size if m and m.max_flat_workgroup_size else 1024
        dims = [f'"{TODO}"'] + [f'"{TODO}"' if d in ids else "1" for d in "yz"]
        block = (f"block = [{', '.join(dims)}]   # at most {limit} work-items "
                 f"(.max_flat_workgroup_size); the descriptor gives work-item ids {ids}")
    out = [f"# Launch spec skeleton: {kernel_name} in {Path(co.path or '?').name}",
           f"# ({co.target}), written by `asmevo spec init`. Replace every \"{TODO}\", then",
           "# run `asmevo spec check` on this file. Format: experiments/kernels/README.md.",
           f"name = {_q(_short_name(kernel_name))}",
           f"kernel = {_q(kernel_name)}",
           f"code_object = {_q(code_object_ref)}   # relative to this file",
           'reference = "reference"   # reference.py beside this file: def reference(inputs) '
           '-> {output: array}',
           'description = ""   # what it computes (optional)', "",
           f"[params]        # {TODO}: the sizes counts, grid and values are written in, "
           "e.g. M = 4096", "",
           f"[sizes.small]   # {TODO}: a size the emulator runs in seconds", "",
           "[family]   # the launches the kernel is used with: one range (or list) per size",
           "           # parameter; verification checks a candidate at members of it",
           "           # (docs/config.md, Launch families), e.g.",
           "# N = { low = 1, high = 1048576 }",
           "# K = { low = 64, high = 8192, multiple = 64 }",
           "# BLOCK = [64, 128, 256]",
           "# where = [\"M * N <= 16777216\"]",
           f'{TODO} = "a range or list per size parameter (replace this line)"', "",
           "[launch]",
           f'grid = ["{TODO}", "{TODO}", "{TODO}"]   # workgroups per dimension',
           block,
           f"dynamic_lds = 0   # bytes beyond the {kd.group_segment_fixed_size} of LDS the "
           "descriptor allocates", ""]
    names: set[str] = set()
    explicit = m.explicit_args if m else ()
    if not explicit:
        out.append(f"# the metadata lists no arguments: give each one an offset "
                   f"({k.kernarg_size} kernarg bytes)")
    elif not any(a.name for a in explicit):
        out.append("# the metadata names no argument (the object was built without names):"
                   " arg_<offset> stands in for each; rename them")
    for a in explicit:
        out += _arg_lines(a, names)
    return "\n".join(out).rstrip("\n") + "\n"


def _todos(node, where: str = "") -> list[str]:
    if isinstance(node, dict):
        out = []
        for key, v in node.items():
            label = f"{where}.{key}" if where else key
            out += _todos(v, label)
        return out
    if isinstance(node, list):
        out = []
        for i, v in enumerate(node):
            label = f"{where}[{i}]"
            if isinstance(v, dict) and isinstance(v.get("name"), str):
                label += f" ({v['name']})"
            out += _todos(v, label)
        return out
    return [f"{where}: {TODO}"] if isinstance(node, str) and TODO in node else []


def _against_metadata(doc: dict, kernel) -> list[str]:
    """The spec's argument list against the kernel's explicit arguments."""
    m = kernel.meta
    explicit = list(m.explicit_args) if m else []
    args = doc.get("args", [])
    if not explicit:
        return [f"args[{i}] ({a.get('name')}): no offset (the metadata lists no arguments)"
                for i, a in enumerate(args) if "offset" not in a]
    out = []
    if len(args) != len(explicit):
        out.append(f"args: {len(args)} in the spec, {len(explicit)} explicit arguments in the "
                   "metadata")
    for i, (a, x) in enumerate(zip(args, explicit)):
        where = f"args[{i}] ({a.get('name')})"
        if "offset" in a and a["offset"] != x.offset:
            out.append(f"{where}: offset {a['offset']}, the metadata says {x.offset}")
        if isinstance(a.get("size"), int) and a["size"] != x.size:
            out.append(f"{where}: size {a['size']}, the metadata says {x.size}")
        size = _dtype_size(a.get("dtype"))
        if a.get("kind") == "scalar" and "size" not in a and size and size != x.size:
            out.append(f"{where}: dtype {a['dtype']} is {size} bytes, the metadata says "
                       f"{x.size} ({x.type_name or x.value_kind})")
        if a.get("kind") in ("buffer", "null") and x.size != 8:
            out.append(f"{where}: a pointer in the spec, {x.size} bytes ({x.value_kind}) in "
                       "the metadata")
    return out


def _dtype_size(dtype) -> int | None:
    from asmevo.launch.dtypes import DTYPES, np_dtype
    return np_dtype(dtype).itemsize if isinstance(dtype, str) and dtype in DTYPES else None


def _against_launch(spec, kernel, processor: str) -> list[str]:
    from asmevo.emu.isa.gfx950 import lds_limit
    from asmevo.targets.amdgpu.kernargs import KernargError, slots
    out = []
    where = f"[size {spec.size}]"
    try:
        slots(kernel, spec)
    except KernargError as exc:
        out.append(f"{where} {exc.message}")
    m = kernel.meta
    reqd = m.raw.get(".reqd_workgroup_size") if m else None
    if isinstance(reqd, list) and list(spec.block) != list(reqd):
        out.append(f"{where} launch.block {list(spec.block)}, the metadata requires {reqd}")
    limit = m.max_flat_workgroup_size if m and m.max_flat_workgroup_size else 1024
    if math.prod(spec.block) > limit:
        out.append(f"{where} launch.block has {math.prod(spec.block)} work-items, the kernel "
                   f"allows {limit}")
    ids = kernel.descriptor.enable_vgpr_workitem_id
    for d, n in zip("yz", spec.block[1:]):
        if n > 1 and "xyz".index(d) > ids:
            out.append(f"{where} launch.block has {n} in {d}, but the descriptor gives "
                       f"work-item ids {'xyz'[:ids + 1]} only")
    lds = kernel.descriptor.group_segment_fixed_size + spec.dynamic_lds
    if lds > lds_limit(processor):
        out.append(f"{where} {lds} bytes of LDS, {processor} has {lds_limit(processor)}")
    if not spec.outputs:
        out.append(f"{where} no buffer is an output: nothing would be compared")
    return out


def check(path: str | Path) -> list[str]:
    """Every problem of the spec at ``path``, one line each (empty: ready to use).

    A spec that cannot be read (a FIFO, a device, too large) or parsed (invalid TOML,
    nested past ``ASMEVO_MAX_TOML_DEPTH``) is a SpecError naming the file, not a problem
    line. The check ends by loading ``reference.py``, in a child process with a time and
    memory limit (:mod:`asmevo.launch.reference`): it is code the user trusts."""
    from asmevo.targets.amdgpu.codeobject import load
    p = Path(path)
    if p.is_dir():
        p = p / "spec.toml"
    doc = read_toml(p, error=SpecError, what="spec")
    problems = _todos(doc)
    todo = bool(problems)           # values still missing: the spec cannot be evaluated yet
    co = kernel = None
    if isinstance(doc.get("code_object"), str) and isinstance(doc.get("kernel"), str):
        try:
            co = load((p.parent / doc["code_object"]).resolve())
            kernel = co.kernel(doc["kernel"])
        except AsmevoError as exc:
            problems.append(str(exc))
    if kernel is not None:
        problems += _against_metadata(doc, kernel)
    if todo:
        return problems
    if "family" in doc:        # once, not once per size
        from asmevo.launch.family import parse
        try:
            parse(doc["family"], doc.get("params", {}) if isinstance(doc.get("params"), dict)
                  else {})
        except SpecError as exc:
            return problems + [exc.message]
    for size in ["default", *doc.get("sizes", {})]:
        try:
            spec = load_spec(p, size)
        except SpecError as exc:
            problems.append(f"[size {size}] {exc.message}")
            continue
        if kernel is not None:
            problems += _against_launch(spec, kernel, co.target.processor)
    if not problems:
        problems += _family_problems(p)
    if not problems:
        try:
            load_spec(p).reference()
        except SpecError as exc:
            problems.append(exc.message)
    return problems


def _family_problems(p: Path) -> list[str]:
    """The launch family around each named size: it must hold the size and resolve at
    every member verification would pick."""
    from asmevo.launch.spec import family_space, spec_sizes
    out = []
    for size in ("small", *[s for s in spec_sizes(p) if s != "small"]):
        if size not in spec_sizes(p):
            continue
        try:
            space = family_space(p, size)
            for m in space.members(0):
                space.resolve(m)
        except SpecError as exc:
            out.append(f"[size {size}] {exc.message}")
        break           # the size verification runs at: the first of small, then the rest
    return out


def advice(path: str | Path) -> list[str]:
    """What a usable spec could say better, one line each (never an error)."""
    from asmevo.launch.spec import family_space, spec_sizes
    p = Path(path)
    try:
        sizes = spec_sizes(p)
        size = "small" if "small" in sizes else "default"
        space = family_space(p, size)
    except SpecError:
        return []
    if not space.family.derived:
        return []
    if not space.family.ranges:
        return ["no [family]: verification will only see one launch size (declare the "
                "launches the kernel is used with: docs/config.md, Launch families)"]
    return [f"no [family]: verification derives one from the named sizes only "
            f"({space.family.describe()}); declare the launches the kernel is used with "
            "(docs/config.md, Launch families)"]
