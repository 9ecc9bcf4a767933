"""What one VMEM instruction moves: bytes per lane and direction, from one table.

The model's instruction records (:func:`asmevo.timing.model.instruction_record`) and
the trace's address probes (:mod:`asmevo.timing.trace`) both read :func:`vmem_access`,
so the bytes a record charges and the bytes its lanes are coalesced over agree. The
sizes are the emulator's own (``asmevo.emu.isa.vmem``: ``LOADS``, ``STORES``,
``ATOMIC32``, ``ATOMIC64``; ``fatomic.FLOAT_ATOMICS``).

Directions:

* ``READ``: global memory read -- into registers, or, for an LDS-DMA load
  (``buffer_load_dword ... lds``, ``global_load_lds_dword*``), into LDS: it returns
  nothing to registers, but it is a load all the same (read bandwidth, completes on
  ``vmcnt`` when its data arrives);
* ``WRITE``: a store (write requests to the L2, written back to HBM), and the cache
  maintenance instructions (no bytes);
* ``ATOMIC``: a read-modify-write at the L2's atomic unit.
"""
from __future__ import annotations

from asmevo.memo import cached

READ, WRITE, ATOMIC = "read", "write", "atomic"
# moves no data: buffer_wbinvl1*, buffer_wbl2, buffer_inv (complete like a store)
_MAINTENANCE = ("buffer_wbinvl1", "buffer_wbl2", "buffer_inv")


@cached("timing.access.vmem_access", 4096)
def vmem_access(mnemonic: str) -> tuple[int, str]:
    """(bytes one lane moves, direction) of the VMEM instruction ``mnemonic``. A data
    type outside the emulator's tables (``buffer_load_format_*``, ...) gets the width
    its suffix names (:func:`~asmevo.targets.amdgpu.analysis.effects.effects`), with the
    direction its name gives."""
    from asmevo.emu.isa.fatomic import FLOAT_ATOMICS
    from asmevo.emu.isa.vmem import ATOMIC32, ATOMIC64, LOADS, STORES

    m = mnemonic.split("_e32")[0]
    if m.startswith(_MAINTENANCE):
        return 0, WRITE
    if "_atomic_" in m:
        name = m.split("_atomic_", 1)[1]
        if name in ATOMIC32 or name in FLOAT_ATOMICS or name == "cmpswap":
            return 4, ATOMIC            # pk_add_bf16 / pk_add_f16: two halves of a dword
        if name in ATOMIC64 or name == "cmpswap_x2":
            return 8, ATOMIC
        return _suffix_width(m), ATOMIC
    for part, table, direction in (("_load_", LOADS, READ), ("_store_", STORES, WRITE)):
        if part in m:
            key = m.split(part, 1)[1]
            if key.startswith("lds_"):  # global_load_lds_dwordx4, buffer_load_lds_dword
                key = key[4:]
            row = table.get(key)
            return (row[0] * row[1] if row else _suffix_width(m)), direction
    return 0, WRITE


def _suffix_width(mnemonic: str) -> int:
    from asmevo.targets.amdgpu.analysis.effects import effects

    return effects(mnemonic).width or 4

