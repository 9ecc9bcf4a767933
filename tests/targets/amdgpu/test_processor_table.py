"""The processor table: its facts, and no chip name spelled in product code outside it."""
from __future__ import annotations

import ast
import io
import re
import tokenize
import tomllib
from pathlib import Path

import pytest

from asmevo.emu.isa import gfx950
from asmevo.targets.amdgpu import processors as P
from asmevo.targets.amdgpu.analysis.problems import target_family
from asmevo.targets.amdgpu.assembly import UNIFIED_VGPR, architected_flat_scratch, vgpr_granule
from asmevo.targets.amdgpu.elf import MACH, SUPPORTED, TargetId
from asmevo.targets.amdgpu.toolchain import FIRST_LLVM, MIN_LLVM

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("asmevo", "operators", "archive")
TABLE = ROOT / "asmevo" / "targets" / "amdgpu" / "processors.py"
CHIP = re.compile(r"gfx\d{2,4}[a-z]?")
_STRINGS = {tokenize.STRING} | ({tokenize.FSTRING_MIDDLE} if hasattr(tokenize, "FSTRING_MIDDLE")
                                else set())


def _docstring_lines(tree: ast.AST) -> set[int]:
    """The lines of module, class and function docstrings (prose, not literals)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            out.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    return out


def chip_literals(path: Path) -> list[str]:
    """``file:line: literal`` for each string literal in ``path`` naming a chip."""
    src = path.read_text()
    docs = _docstring_lines(ast.parse(src))
    return [f"{path.relative_to(ROOT)}:{tok.start[0]}: {CHIP.search(tok.string).group()}"
            for tok in tokenize.generate_tokens(io.StringIO(src).readline)
            if tok.type in _STRINGS and tok.start[0] not in docs and CHIP.search(tok.string)]


def test_no_chip_name_literal_outside_the_table():
    found = [hit for top in PRODUCT for f in sorted((ROOT / top).rglob("*.py"))
             if f != TABLE for hit in chip_literals(f)]
    assert found == [], "chip names outside processors.py:\n" + "\n".join(found)


def test_the_scan_finds_a_literal():
    f = ROOT / "asmevo" / "__init__.py"
    assert chip_literals(TABLE)            # the table itself names them
    assert chip_literals(f) == []


@pytest.mark.parametrize("name,family,granule,vgprs,waves,unified", [
    ("gfx908", "gfx908", 4, 256, 10, False),
    ("gfx90a", "gfx90a", 8, 512, 8, True),
    ("gfx940", "gfx942", 8, 512, 8, True),
    ("gfx942", "gfx942", 8, 512, 8, True),
    ("gfx950", "gfx950", 8, 512, 8, True),
    ("gfx9-4-generic", "gfx942", 8, 512, 8, True),
    ("gfx1100", "gfx1100", 4, 256, 10, False),      # not in the table: older-GFX9 defaults
])
def test_register_files_and_families(name, family, granule, vgprs, waves, unified):
    p = P.processor(name)
    assert (p.family, p.vgpr_granule, p.vgprs, p.max_waves, p.unified_vgpr) == \
        (family, granule, vgprs, waves, unified)
    assert p.wave_size == 64 and p.sgprs == 800
    assert TargetId(name).family == family
    assert vgpr_granule(TargetId(name)) == granule
    assert (name in UNIFIED_VGPR) == unified


def test_the_lists_the_code_used_before():
    assert UNIFIED_VGPR == ("gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx9-4-generic")
    assert P.names(lambda p: p.packed_tid) == ("gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")
    assert SUPPORTED == ("gfx900, gfx906, gfx908, gfx90c, gfx90a, gfx940, gfx941, gfx942, "
                         "gfx950, gfx9-generic, gfx9-4-generic")
    assert MACH[0x4C] == "gfx942" and MACH[0x4F] == "gfx950" and MACH[0x3F] == "gfx90a"
    assert P.hazard_families() == ("gfx90a", "gfx942", "gfx950")


def test_scratch_lds_fp8_and_llvm():
    assert [architected_flat_scratch(TargetId(n)) for n in ("gfx90a", "gfx940", "gfx942",
            "gfx950", "gfx9-4-generic", "gfx908")] == [False, True, True, True, True, False]
    assert gfx950.lds_limit("gfx950") == 160 * 1024
    assert gfx950.lds_limit("gfx942") == gfx950.lds_limit("gfx90a") == 64 * 1024
    assert gfx950.refusal("v_cvt_pk_fp8_f32", "gfx950")
    assert gfx950.refusal("v_cvt_pk_fp8_f32", "gfx942") is None
    assert gfx950.missing("gfx950") and gfx950.missing("gfx942") == gfx950.missing("gfx90a") == ""
    assert MIN_LLVM == 19 and FIRST_LLVM == {"gfx950": 20}
    assert P.DEFAULT == "gfx942"


def test_hazard_sets():
    assert target_family("gfx941") == ("gfx942", True)
    assert target_family("gfx950:xnack-") == ("gfx950", False)
    assert [P.processor(n).hazards for n in ("gfx90a", "gfx942", "gfx950", "gfx908")] == \
        ["gfx90a", "gfx942", "gfx950", None]
    assert [P.processor(n).mfma_valu_hold for n in ("gfx90a", "gfx942", "gfx950")] == \
        [False, True, False]


@pytest.mark.parametrize("name", ["gfx90a", "gfx942"])
def test_timing_parameters_file_and_cu_count(name):
    p = P.processor(name)
    path = ROOT / "asmevo" / "timing" / "params" / p.timing_params
    machine = tomllib.loads(path.read_text())["machine"]
    assert p.cu_count == machine["compute_units"]
    assert P.processor("gfx940").timing_params == P.processor("gfx942").timing_params
    assert not (path.parent / P.processor("gfx950").timing_params).exists()
