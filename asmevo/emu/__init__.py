"""CPU functional emulator of the GFX9-family ISA (gfx90a, gfx942).

Public API::

    from asmevo.emu import Emulator, LaunchResult, run_launch

    result = run_launch(code_object_or_program, spec, inputs, max_instructions=None)
    result.status          # "ok" | "fault" | "timeout" | "unsupported"
    result.message         # one line; names kernel, instruction address, byte address
    result.outputs         # name -> ndarray: final contents of ALL buffers (inputs too)
    result.profile         # function name -> FunctionProfile(counts, lanes) per instruction
    result.waves, result.instructions_executed (wave-level), result.lane_instructions
    result.guards          # name -> (bytes before, bytes after) when guard_bytes > 0
    result.raise_for_status()   # re-raise the verdict as its EmulatorError subclass

``code_object_or_program`` is a :class:`CodeObject`, a recovered ``Program``
(edited candidates run without re-disassembly), code object bytes or a path.
Keyword arguments (see :meth:`Emulator.launch`): ``kernel``, ``time_limit``
(seconds), ``guard_bytes``/``guard_fill`` (mapped guard regions around each
buffer), ``fill`` (name -> byte pattern to pre-fill, e.g. poison outputs),
``raise_errors``, ``approx_variant`` (member of the approximate-instruction
families, :mod:`asmevo.emu.numerics.approx`; 0 = correctly rounded).
``Emulator(code)`` decodes once and launches many times.
"""
from asmevo.emu.errors import (ControlFault, DecodeError, EmulatorError, InternalError,
                               LaunchError, LaunchTimeout, MemoryFault, UnsupportedInstruction)
from asmevo.emu.run.launch import Emulator, FunctionProfile, LaunchResult, run_launch

__all__ = ["Emulator", "LaunchResult", "FunctionProfile", "run_launch", "EmulatorError",
           "UnsupportedInstruction", "MemoryFault", "ControlFault", "LaunchTimeout",
           "LaunchError", "DecodeError", "InternalError"]
