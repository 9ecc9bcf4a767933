"""Instruction semantics: from one instruction's text to a closure that executes it.

:mod:`~asmevo.emu.isa.insn` holds the builder registry (``BUILDERS``, mnemonic ->
builder); every family module registers its mnemonics there as it loads, and
:mod:`~asmevo.emu.isa.decode` imports them all and decodes one instruction. Which
module implements which mnemonic: ``docs/emulator_mnemonics.md``, generated from
the registry by :mod:`asmevo.emu.isa.mnemonics`.

Shared by the families: :mod:`~asmevo.emu.isa.operands` (operand parsing and
readers), :mod:`~asmevo.emu.isa.vsrc` (DPP/SDWA/op_sel sources),
:mod:`~asmevo.emu.isa.atomic` (atomics in lane order),
:mod:`~asmevo.emu.isa.native` (the compiled rows, ``native.c``) and
:mod:`~asmevo.emu.isa.gfx950` (what of a gfx950 object runs).
"""
