"""The AMDGPU target: code objects for gfx90a / gfx942 (GFX9 family, HSA ABI)."""
from asmevo.targets.amdgpu.codeobject import CodeObject, Kernel, load
from asmevo.targets.amdgpu.elf import CodeObjectError, TargetId
from asmevo.targets.amdgpu.program import Function, Instruction, Label, Program
from asmevo.targets.amdgpu.recover import recover

__all__ = ["CodeObject", "CodeObjectError", "Function", "Instruction", "Kernel", "Label",
           "Program", "TargetId", "load", "recover"]
