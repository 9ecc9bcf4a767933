"""The processors asmevo knows: one row per chip, the only place a processor is named.

Every fact the code keys on a processor name comes from here: the ISA family the
hazard rules, the emulator and the timing model share, the register files and their
granules, the LDS one workgroup may allocate, how scratch is set up, the first LLVM
release that knows the chip, and the timing-model parameters file. Code elsewhere asks
``processor(name)`` (or a helper below) instead of comparing names; a test checks that
no chip name is spelled outside this module.
"""
from __future__ import annotations

from dataclasses import dataclass

# The ISA families the hazard rules, the emulator and the timing model key on (named by
# their reference chip; values are what TargetId.family and target_family return).
CDNA2 = "gfx90a"
CDNA3 = "gfx942"
CDNA4 = "gfx950"
DEFAULT = CDNA3          # the processor the emulator implements, and every default target
MIN_LLVM = 19            # the oldest LLVM asmevo runs with


@dataclass(frozen=True)
class Processor:
    """One chip (or generic target) and the facts the code keys on."""

    name: str
    mach: int                       # EF_AMDGPU_MACH in e_flags
    family: str                     # the ISA family (CDNA2/CDNA3/CDNA4, else the name)
    wave_size: int = 64
    unified_vgpr: bool = False      # VGPRs and AGPRs in one 512-entry file (gfx90a+)
    vgprs: int = 256                # VGPRs (AGPRs included when unified) per lane per SIMD
    vgpr_granule: int = 4
    sgprs: int = 800                # per SIMD
    max_waves: int = 10             # per SIMD
    lds_bytes: int = 64 * 1024      # what one workgroup may allocate
    cu_count: int | None = None     # CUs of the reference part (the timing model's device)
    packed_tid: bool = False        # workitem ids packed into v0 (10 bits each)
    architected_scratch: bool = False   # flat scratch set up by hardware (gfx940+)
    hazards: str | None = None      # the hazard-rule set (a family) or None: none modeled
    mfma_valu_hold: bool = False    # VALU after an MFMA waits its issue slots (timing)
    ocp_fp8: bool = False           # fp8/bf8 are OCP E4M3/E5M2 (not gfx942's FNUZ)
    llvm_min: int = MIN_LLVM        # the first upstream LLVM release that knows it

    @property
    def timing_params(self) -> str:
        """The timing-model parameters file in asmevo/timing/params (it may not exist: no
        timing model for the chip)."""
        return f"{self.family}.toml"


def _cdna2(name: str, mach: int, **kw) -> Processor:
    return Processor(name, mach, CDNA2, unified_vgpr=True, vgprs=512, vgpr_granule=8,
                     max_waves=8, packed_tid=True, hazards=CDNA2, **kw)


def _cdna3(name: str, mach: int, **kw) -> Processor:
    kw = {"family": CDNA3, "packed_tid": True, "hazards": CDNA3, "mfma_valu_hold": True,
          "cu_count": 304, **kw}
    return Processor(name, mach, unified_vgpr=True, vgprs=512, vgpr_granule=8, max_waves=8,
                     architected_scratch=True, **kw)


_ROWS = (
    Processor("gfx900", 0x2C, "gfx900"),
    Processor("gfx906", 0x2F, "gfx906"),
    Processor("gfx908", 0x30, "gfx908"),
    Processor("gfx90c", 0x32, "gfx90c"),
    _cdna2("gfx90a", 0x3F, cu_count=110),
    _cdna3("gfx940", 0x40),
    _cdna3("gfx941", 0x4B),
    _cdna3("gfx942", 0x4C),
    _cdna3("gfx950", 0x4F, family=CDNA4, hazards=CDNA4, mfma_valu_hold=False, cu_count=256,
           lds_bytes=160 * 1024, ocp_fp8=True, llvm_min=20),
    Processor("gfx9-generic", 0x51, "gfx9-generic"),
    _cdna3("gfx9-4-generic", 0x5F, packed_tid=False, mfma_valu_hold=False, cu_count=None),
)
PROCESSORS: dict[str, Processor] = {p.name: p for p in _ROWS}
MACH: dict[int, str] = {p.mach: p.name for p in _ROWS}

# the other processors LLVM names (llvm/BinaryFormat/ELF.h, LLVM 22): only to say
# which one a refused file is for
OTHER_MACH = {
    0x20: "gfx600", 0x21: "gfx601", 0x22: "gfx700", 0x23: "gfx701", 0x24: "gfx702",
    0x25: "gfx703", 0x26: "gfx704", 0x28: "gfx801", 0x29: "gfx802", 0x2A: "gfx803",
    0x2B: "gfx810", 0x2D: "gfx902", 0x2E: "gfx904", 0x31: "gfx909", 0x33: "gfx1010",
    0x34: "gfx1011", 0x35: "gfx1012", 0x36: "gfx1030", 0x37: "gfx1031", 0x38: "gfx1032",
    0x39: "gfx1033", 0x3A: "gfx602", 0x3B: "gfx705", 0x3C: "gfx805", 0x3D: "gfx1035",
    0x3E: "gfx1034", 0x41: "gfx1100", 0x42: "gfx1013", 0x43: "gfx1150", 0x44: "gfx1103",
    0x45: "gfx1036", 0x46: "gfx1101", 0x47: "gfx1102", 0x48: "gfx1200", 0x49: "gfx1250",
    0x4A: "gfx1151", 0x4E: "gfx1201", 0x52: "gfx10-1-generic", 0x53: "gfx10-3-generic",
    0x54: "gfx11-generic", 0x55: "gfx1152", 0x58: "gfx1153", 0x59: "gfx12-generic",
    0x5A: "gfx1251",
}

def processor(name: str) -> Processor:
    """The row for ``name`` (an unknown name gets the defaults of an older GFX9 chip,
    with its own name as family)."""
    p = PROCESSORS.get(name)
    return p if p is not None else Processor(name, 0, name)


def family(name: str) -> str:
    """gfx90a, gfx942, ... grouped: the ISA the emulator and rules key on."""
    return processor(name).family


def names(pred=lambda p: True) -> tuple[str, ...]:
    """The known processors for which ``pred(row)`` holds, in e_flags order."""
    return tuple(p.name for p in _ROWS if pred(p))


def hazard_families() -> tuple[str, ...]:
    """The families with a hazard model."""
    return tuple(dict.fromkeys(p.hazards for p in _ROWS if p.hazards))
