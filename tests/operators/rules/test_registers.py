"""The register helpers the rule operators share (operators/rules/registers.py), and that
no rule operator takes them, or anything else, from the merge or occupancy operator's
module."""
from __future__ import annotations

import ast
from pathlib import Path

from asmevo.operators.rules.registers import fmt_range, reg_bit, reg_mask
from asmevo.targets.amdgpu.analysis import regs as R

RULES = Path(__file__).resolve().parents[3] / "operators" / "rules"


def test_ranges_print_as_the_assembler_writes_them():
    assert fmt_range("v", 3, 1) == "v3"
    assert fmt_range("s", 4, 4) == "s[4:7]"


def test_masks_are_the_analyses_register_bits():
    assert reg_bit("v", 2) == 1 << (R.VGPR_BASE + 2)
    assert reg_bit("s", 5) == 1 << (R.SGPR_BASE + 5)
    assert reg_mask("v", [0, 2]) == reg_bit("v", 0) | reg_bit("v", 2)
    assert reg_mask("s", []) == 0


def test_no_rule_operator_imports_from_the_merge_or_occupancy_operator():
    offenders = []
    for path in sorted(RULES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and \
                    (node.module or "").endswith(("rules.merge", "rules.occupancy")):
                offenders.append(path.name)
    assert offenders == []
