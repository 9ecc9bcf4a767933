"""Instruction semantics by mnemonic, and running one instruction on a machine.

The family modules register a function ``fn(machine, insn)`` per mnemonic in
:mod:`asmevo.prove.rows` (the way the emulator's families register builders);
this module imports them all, and :func:`execute` parses the text with the
emulator's parser, looks the mnemonic up and runs it. Lane-local vector instructions without an exact row, and
scalar ones likewise, fall back to an uninterpreted function of exactly what they
read (:mod:`asmevo.prove.sem_opaque`); anything else raises
:class:`~asmevo.prove.errors.Unsupported`.
"""
from __future__ import annotations

import time

from asmevo.emu.isa.insn import Insn, parse
from asmevo.memo import Memo
from asmevo.prove import (sem_buffer, sem_compare, sem_memory, sem_scalar,  # noqa: F401
                          sem_vector, valu)
from asmevo.prove.errors import OutOfTime, Unsupported
from asmevo.prove.rows import EXACT, SEMANTICS, Semantics
from asmevo.prove.sem_opaque import opaque
from asmevo.targets.amdgpu.processors import DEFAULT


_PARSED: Memo[Insn] = Memo("prove.registry.parsed", 100_001)


def parsed(text: str, accum_offset: int = 0, processor: str = DEFAULT) -> Insn:
    """The emulator's parse of ``text`` (cached: texts repeat across windows)."""
    key = (text, accum_offset, processor)
    got = _PARSED.get(key)
    if got is None:
        try:
            got = parse(text, index=0, address=None, kernel=None, accum_offset=accum_offset,
                        processor=processor)
        except (ValueError, IndexError) as exc:
            raise Unsupported(text, f"cannot parse operands ({exc})") from None
        _PARSED.put(key, got)
    return got


def lookup(ins: Insn) -> Semantics | None:
    """The exact row of ``ins``, or None (SDWA forms have none: they are opaque)."""
    if ins.encoding == "sdwa":
        return None
    return SEMANTICS.get(ins.base) or SEMANTICS.get(ins.mnemonic)


def execute(m, text: str) -> None:
    """Run one instruction on machine ``m`` (Unsupported where it is not modeled;
    OutOfTime once the proof's deadline has passed)."""
    if m.ctx.deadline is not None and time.perf_counter() > m.ctx.deadline:
        raise OutOfTime(f"the proof's time budget is spent (at {text!r})")
    ins = parsed(text, m.ctx.accum_offset, m.ctx.processor)
    fn = lookup(ins)
    if fn is None:
        fn = opaque(ins)
    try:
        fn(m, ins)
    except Unsupported:
        raise
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise Unsupported(text, f"cannot model its operands ({exc})") from None



def modeled() -> set[str]:
    """Mnemonics with an exact row."""
    return set(SEMANTICS) & EXACT
