"""Which module implements each mnemonic the emulator decodes, read from the registry.

Every family module registers its builders in :data:`asmevo.emu.isa.insn.BUILDERS`
as :mod:`asmevo.emu.isa.decode` imports it; a builder's module is the one that
implements the mnemonic. A builder another module wraps (``scratch`` puts its
private-aperture check in front of ``vmem``'s ``flat_*`` builders) carries the
wrapped one as ``__wrapped__``: the table names the implementing module and the
wrapping one.

``python3 -m asmevo.emu.isa.mnemonics > docs/emulator_mnemonics.md`` writes the
reference page; ``tests/emu/test_mnemonic_modules.py`` fails while it is out of date.
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass

from asmevo.emu.isa import decode  # noqa: F401  (imports every family module)
from asmevo.emu.isa.insn import BUILDERS, split_mnemonic

COMMAND = "python3 -m asmevo.emu.isa.mnemonics > docs/emulator_mnemonics.md"


@dataclass(frozen=True)
class Entry:
    mnemonic: str
    module: str                 # dotted name of the module whose builder implements it
    wrapped_by: str | None      # the module whose builder runs in front of it, if any


def entries() -> list[Entry]:
    """One entry per registered mnemonic (encoding suffix dropped), sorted by mnemonic."""
    out = []
    for name in sorted(BUILDERS):
        fn = BUILDERS[name]
        inner = inspect.unwrap(fn)
        outer = fn.__module__ if inner is not fn and fn.__module__ != inner.__module__ else None
        out.append(Entry(name, inner.__module__, outer))
    return out


def module_of(mnemonic: str) -> str | None:
    """The module implementing ``mnemonic`` (``_e32``/``_e64``/``_sdwa``/``_dpp`` allowed)
    as the decoder looks it up, or None where no builder has it."""
    base, _ = split_mnemonic(mnemonic)
    fn = BUILDERS.get(base) or BUILDERS.get(mnemonic)
    return None if fn is None else inspect.unwrap(fn).__module__


def _path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _summary(module: str) -> str:
    doc = (sys.modules[module].__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split()).replace("|", "\\|")


def render() -> str:
    """The reference page: modules with their counts, then mnemonic -> module."""
    table = entries()
    counts: dict[str, int] = {}
    for e in table:
        counts[e.module] = counts.get(e.module, 0) + 1
    lines = ["# Emulator mnemonics: which module implements each", "",
             f"Generated from the decoder's builder registry (`asmevo.emu.isa.insn.BUILDERS`) by "
             f"`{COMMAND}`; `tests/emu/test_mnemonic_modules.py` checks it is up to date. "
             f"{len(table)} mnemonics, without their encoding suffix (`_e32`, `_e64`, `_sdwa`, "
             "`_dpp`). A mnemonic not listed decodes to an instruction that raises "
             "`UnsupportedInstruction` when executed (see docs/emulator.md).", "",
             "## Modules", "", "| module | mnemonics | what it is |", "|---|---|---|"]
    for module in sorted(counts):
        lines.append(f"| `{_path(module)}` | {counts[module]} | {_summary(module)} |")
    lines += ["", "## Mnemonic -> module", "", "| mnemonic | module | wrapped by |",
              "|---|---|---|"]
    for e in table:
        wrapped = f"`{_path(e.wrapped_by)}`" if e.wrapped_by else ""
        lines.append(f"| `{e.mnemonic}` | `{_path(e.module)}` | {wrapped} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
