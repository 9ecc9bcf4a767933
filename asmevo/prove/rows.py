"""Where instruction semantics register: ``@register("s_add_u32", ...)``.

The family modules (``sem_scalar``, ``sem_vector``, ``sem_float``, ``valu``,
``sem_compare``, ``sem_memory``, ``sem_buffer``) put a function ``fn(machine, insn)`` here
per mnemonic (without its encoding suffix), the way the emulator's families register builders in
:mod:`asmevo.emu.isa.insn`; :mod:`asmevo.prove.registry` imports them all and looks up.
The families import only this module, never the registry.
"""
from __future__ import annotations

from typing import Callable

Semantics = Callable[[object, object], None]
SEMANTICS: dict[str, Semantics] = {}
EXACT: set[str] = set()          # mnemonics with an exact row (not an opaque function)


def register(*names: str, exact: bool = True):
    def deco(fn: Semantics) -> Semantics:
        for n in names:
            SEMANTICS[n] = fn
            if exact:
                EXACT.add(n)
        return fn
    return deco
