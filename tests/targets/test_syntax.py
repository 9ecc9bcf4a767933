"""Operand text split outside brackets, the way every ISA family's reader splits it."""
from __future__ import annotations

from asmevo.targets.syntax import comma_fields, top_level_words


def test_comma_fields_keep_brackets_whole_and_give_the_last_field_apart():
    assert comma_fields("v[4:5], s[0:3], 0 offen offset:16") == (["v[4:5]", "s[0:3]"],
                                                                   "0 offen offset:16")
    assert comma_fields("R2, [R4.64+0x10], c[0x0][0x210]") == (["R2", "[R4.64+0x10]"],
                                                               "c[0x0][0x210]")
    assert comma_fields("a,,b, ") == (["a", "", "b"], "")
    assert comma_fields("") == ([], "")


def test_top_level_words_split_at_whitespace_outside_brackets_only():
    assert top_level_words("0 offen  offset:16") == ["0", "offen", "offset:16"]
    assert top_level_words("neg_lo:[0, 1]\tclamp") == ["neg_lo:[0, 1]", "clamp"]
    assert top_level_words("   ") == []
