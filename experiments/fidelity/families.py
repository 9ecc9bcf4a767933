"""Launches of AITer's measured rows: one builder per kernel family.

Each builder turns a row of ``aiter_rows.csv`` into the launch AITer's own code makes
for it (``csrc/py_itfs_cu/*.cu`` at the extracted commit): the spec of the corpus
kernel of the same family (``experiments/kernels/aiter_*``: same kernarg structure,
checked against each binary's metadata when it is loaded) with the row's shape, tile
and split, the row's ``.co`` from the AITer checkout, and the argument values timing
needs. Timing reads addresses and control flow, not data: bulk buffers are left out of
the values (the emulator fills them with zeros); index buffers (MoE routing) are given.

What a row's measured time covers beyond the kernel (AITer's tuners sum the device time
of every kernel the op launches, ``aiter/test_common.py`` ``get_trace_perf``): a split-K
GEMM zeroes C first (``hipMemsetAsync`` in ``asm_gemm_a8w8.cu`` and
``asm_a8w8_blockscale_bpreshuffle.cu``), returned here as ``memset_bytes``.
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from asmevo.ablate.config import _toml_value     # the project's one TOML writer

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "experiments" / "kernels"
FAMILIES = ("i8gemm", "fp8gemm_blockscale", "fmoe_2stages")


class Unmodeled(Exception):
    """A row this bench cannot launch (the reason is printed, the row counted apart)."""


@dataclass
class RowLaunch:
    """One row's launch: the spec's TOML text, argument values, extra work it measures."""

    toml: str
    values: dict = field(default_factory=dict)
    memset_bytes: int = 0


def tile_of(kernel: str) -> tuple[int, int]:
    """(tile_m, tile_n) from an AITer kernel name (``..._112x256E``, ``..._32x128_3tg_pf3E``)."""
    got = re.findall(r"_(\d+)x(\d+)", kernel)
    if not got:
        raise Unmodeled(f"no tile in {kernel}")
    return int(got[-1][0]), int(got[-1][1])


def _template(name: str) -> dict:
    return tomllib.loads((KERNELS / name / "spec.toml").read_text())


def _set(args: list[dict], name: str, **kw) -> None:
    for a in args:
        if a["name"] == name:
            a.update(kw)
            return
    raise KeyError(name)


_SIZES = {"uint64": 8, "int64": 8, "uint32": 4, "int32": 4, "float32": 4, "uint16": 2,
          "uint8": 1}


def _arg_bytes(a: dict) -> int:
    if a["kind"] in ("buffer", "null"):
        return 8
    if a["kind"] == "pad":
        return int(a["size"])
    return _SIZES[a.get("dtype", "int32")]


def fit_to_binary(args: list[dict], co: Path) -> list[dict]:
    """The template's arguments laid out (packed, in order) and matched by offset to the
    explicit arguments of ``co``'s metadata: a template argument that is not a pad must
    sit at an offset the binary has, with its size; every other argument of the binary
    is a zero of its size (AITer's launchers pass only their struct; a binary may list
    the struct's pads in other pieces, or bytes past it)."""
    from asmevo.targets.amdgpu import load

    at, off = {}, 0
    for a in args:
        at[off] = a
        off += _arg_bytes(a)
    meta = load(co.read_bytes()).kernels[0].meta.explicit_args
    have = {m.offset: m.size for m in meta}
    for o, a in at.items():
        if not a["name"].startswith("pad") and a["kind"] != "null" and \
                have.get(o) != _arg_bytes(a):
            raise Unmodeled(f"{co.name}: argument {a['name']} (offset {o}) is not in its "
                            "metadata")
    out = []
    for m in meta:
        a = at.get(m.offset)
        if a is not None and _arg_bytes(a) == m.size and not a["name"].startswith("pad"):
            out.append(a)
        else:
            out.append({"name": f"pad_{m.offset}", "kind": "scalar",
                        "dtype": "uint64" if m.size == 8 else "uint32", "value": 0})
    return out


def to_toml(doc: dict) -> str:
    """The spec document back as TOML (top-level values, tables, arrays of tables)."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in doc.items()
             if not isinstance(v, (dict, list)) or (isinstance(v, list) and v
                                                    and not isinstance(v[0], dict))]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"\n[{k}]")
            lines += [f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()]
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                lines.append(f"\n[[{k}]]")
                lines += [f"{kk} = {_toml_value(vv)}" for kk, vv in item.items()]
    return "\n".join(lines) + "\n"


def _gemm(row: dict, co: Path, template: str, tile_n: int | None) -> RowLaunch:
    doc = _template(template)
    tm, tn = tile_of(row["kernel"])
    tn = tile_n or tn
    m, n, k = int(row["M"]), int(row["N"]), int(row["K"])
    ks = max(1, int(row["splitK"] or 1))
    if n % tn:
        raise Unmodeled(f"N={n} is not a multiple of tile_n {tn}")
    doc.update(name=f"{template}_{row['kernel']}", kernel=row["kernel"], code_object=str(co))
    doc["params"] = {"M": m, "N": n, "K": k}
    doc.pop("sizes", None)
    doc.pop("tolerance", None)
    doc.pop("reference", None)
    doc["launch"] = {"grid": [f"N // {tn} * {ks}", f"cdiv(M, {tm})", 1], "block": [256, 1, 1]}
    _set(doc["args"], "KS", value=ks)
    doc["args"] = fit_to_binary(doc["args"], co)
    return RowLaunch(to_toml(doc), {}, m * n * 2 if ks > 1 else 0)


def i8gemm(row: dict, co: Path) -> RowLaunch:
    """``gemm_a8w8_asm``: gdx = N / tile_n * splitK, gdy = ceil(M / tile_m), ks = splitK."""
    return _gemm(row, co, "aiter_i8gemm", None)


def fp8gemm_blockscale(row: dict, co: Path) -> RowLaunch:
    """``gemm_a8w8_blockscale_bpreshuffle_asm``: gdx = N / 128 * splitK, gdy = ceil(M /
    tile_m); scales per 1x128 (A, transposed) and 128x128 (B) blocks."""
    return _gemm(row, co, "aiter_fp8gemm_blockscale", 128)


def routing(token: int, expert: int, topk: int, block_m: int, seed: int = 0):
    """moe_sorting of a routing drawn as AITer's MoE tuner draws it (``gemm_moe_tune.py``
    ``generate_data``: random normal scores, top-k experts per token; seeded here, so the
    ids are not the tuner's own draw): (sorted_token_ids, sorted_expert_ids, valid ids)."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((token, expert))
    ids = np.argsort(-scores, axis=1)[:, :topk]
    padded_max = token * topk + expert * block_m - topk
    blocks_max = -(-padded_max // block_m)
    sti = np.full(padded_max, (topk << 24) | token, np.int32)
    sei = np.full(blocks_max, -1, np.int32)
    pos = nblk = 0
    for e in range(expert):
        tok, slot = np.nonzero(ids == e)
        if not tok.size:
            continue
        sti[pos:pos + tok.size] = (slot << 24) | tok
        nb = -(-tok.size // block_m)
        sei[nblk:nblk + nb] = e
        pos += nb * block_m
        nblk += nb
    return sti, sei, pos


def fmoe_stage1(row: dict, co: Path) -> RowLaunch:
    """``moe_stage1_g1u1`` (``asm_moe_2stage.cu``): gdx = inter_dim / tile_n, gdy = the
    padded block count of moe_sorting, gdz = 2^ksplit; blocks past num_valid_ids exit."""
    doc = _template("aiter_fmoe_stage1")
    tm, tn = tile_of(row["kernel"])
    t, dm, inter = int(row["token"]), int(row["model_dim"]), int(row["inter_dim"])
    e, topk, bm = int(row["expert"]), int(row["topk"]), int(row["block_m"] or tm)
    if bm != tm or inter % tn:
        raise Unmodeled(f"block_m {bm} / inter_dim {inter} do not fit tile {tm}x{tn}")
    if "doweight" in row["kernel"]:
        raise Unmodeled("the routing-weight pointer (ptr_SW) is two 4-byte fields in the "
                        "binary's metadata, where a launch spec can pass no buffer")
    blockscale = "blockscale" in row["kernel"]
    sti, sei, valid = routing(t, e, topk, bm)
    doc.update(name=f"fmoe_stage1_{row['kernel']}", kernel=row["kernel"], code_object=str(co))
    doc["params"] = {"T": t, "DM": dm, "I": inter, "E": e, "TOPK": topk,
                     "NS": int(sti.size), "NB": int(sei.size)}
    for key in ("sizes", "tolerance", "reference"):
        doc.pop(key, None)
    doc["launch"] = {"grid": [f"cdiv(I, {tn})", "NB", 1], "block": [256, 1, 1]}
    a = doc["args"]
    out_bytes = 1 if blockscale else 2
    # per_1x128: fp8 out with its scales in rows appended past the tokens' (fused_moe.py:
    # a2 = empty((token_num + (token_num * 4 + 127) // 128, topk, inter_dim), fp8))
    _set(a, "O", count="(T + (T * 4 + 127) // 128) * TOPK * I" if blockscale
         else "T * TOPK * I", dtype="float8_e4m3fnuz" if blockscale else "bfloat16")
    _set(a, "X", count="T * DM + 256")
    _set(a, "G", count="E * 2 * I * DM")
    _set(a, "XQ", count="T * (DM // 128)" if blockscale else "T")
    gq = "E * (2 * I // 128) * (DM // 128)" if blockscale else "E * 2 * I"
    _set(a, "GQ", count=gq)
    _set(a, "STP", count="NS")
    _set(a, "SEP", count="NB")
    for name, value in (("batch", "T"), ("Xs", "DM"), ("GUs", "DM"), ("Os", f"TOPK * I * {out_bytes}"), ("eGUs", "DM * I * 2"),
                        ("eGUQs", "(2 * I // 128) * (DM // 128) * 4" if blockscale
                         else "2 * I * 4"), ("eSMQs", "I * 4"), ("topk", "TOPK")):
        _set(a, name, value=value)
    doc["args"] = fit_to_binary(a, co)
    values = {"STP": sti, "SEP": sei, "Xc": np.array([valid, valid], np.int32)}
    return RowLaunch(to_toml(doc), values, 0)


BUILDERS = {"i8gemm": i8gemm, "fp8gemm_blockscale": fp8gemm_blockscale,
            "fmoe_2stages": fmoe_stage1}


def build(row: dict, aiter: Path) -> RowLaunch:
    """The launch of ``row`` (``aiter``: the AITer checkout holding its ``.co``)."""
    fn = BUILDERS.get(row["family"])
    if fn is None:
        raise Unmodeled(f"family {row['family']} has no launch builder here")
    co = aiter / row["co"]
    if not co.exists():
        raise Unmodeled(f"{co}: not in the AITer checkout")
    return fn(row, co)


def cdiv(a: int, b: int) -> int:
    return -(-a // b) if b else math.inf
