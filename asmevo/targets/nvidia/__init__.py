"""NVIDIA sm_90 cubins, edited in place at the SASS level.

No public assembler exists for SASS, so this target never re-encodes an
instruction: it permutes K0's 128-bit words inside a region and changes their
control fields (stall, yield, reuse), after :mod:`legality` proves the result
equivalent; or it recompiles the kernel's PTX with other ptxas options
(:mod:`ptx`). ``NvidiaTarget`` is the :class:`asmevo.targets.Target` for "nvidia".
"""
from __future__ import annotations


class NvidiaTarget:
    """sm_90 cubins: load, recover (nvdisasm), build/patch in place, ABI diff."""

    name = "nvidia"

    def load(self, data, *, path=None):
        from asmevo.targets.nvidia.cubin import load
        return load(data, path=path)

    def recover(self, code_object):
        from asmevo.targets.nvidia.program import recover
        return recover(code_object)

    def build(self, program) -> bytes:
        from asmevo.targets.nvidia.edit import build
        return build(program)

    def patch(self, program, patch) -> bytes:
        """``patch``: an :class:`asmevo.edits.Edit` (window lines) or a Move / Retime."""
        from asmevo.edits import Edit
        from asmevo.targets.nvidia.edit import apply, apply_edit, build
        new = apply_edit(program, patch) if isinstance(patch, Edit) else apply(program, patch)
        return build(new)

    def abi_diff(self, a, b) -> list:
        from asmevo.targets.nvidia.abi import abi_diff
        return abi_diff(a, b)
