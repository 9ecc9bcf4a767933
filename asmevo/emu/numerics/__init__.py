"""Floating-point rules the instruction semantics share, below every instruction.

- :mod:`~asmevo.emu.numerics.exact`: bit-exact helpers numpy lacks (FMA with one
  rounding, full-range ldexp, flushing, IEEE-mode min/max/med3, AMD conversions).
- :mod:`~asmevo.emu.numerics.fpmode`: the MODE register as float instructions see it
  (rounding, denormals, DX10_CLAMP, IEEE) and its NaN rules.
- :mod:`~asmevo.emu.numerics.fp8`: the FNUZ 8-bit formats of gfx940/gfx942.
- :mod:`~asmevo.emu.numerics.approx`: instructions specified only to within an error
  bound, as function families (the ``approx_variant`` launch option).
"""
