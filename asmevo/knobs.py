"""Every environment variable asmevo reads, in one place.

Stages never call ``os.getenv`` themselves; they take values from here so a
test can see (and override) the whole environment surface at once.
"""
from __future__ import annotations

import os
from pathlib import Path


def llvm_dir() -> Path | None:
    """``ASMEVO_LLVM_DIR``: a directory holding llvm-mc, ld.lld, llvm-objdump."""
    value = os.environ.get("ASMEVO_LLVM_DIR")
    return Path(value) if value else None


def rocm_path() -> Path:
    """``ROCM_PATH`` (default ``/opt/rocm``): where a ROCm install lives."""
    return Path(os.environ.get("ROCM_PATH", "/opt/rocm"))


def cache_dir() -> Path:
    """``ASMEVO_CACHE_DIR``: content-addressed build cache (default ~/.cache/asmevo)."""
    value = os.environ.get("ASMEVO_CACHE_DIR")
    return Path(value) if value else Path.home() / ".cache" / "asmevo"


def cuda_bin() -> Path | None:
    """``ASMEVO_CUDA_BIN``: a directory holding nvdisasm, ptxas, cuobjdump (searched first)."""
    value = os.environ.get("ASMEVO_CUDA_BIN")
    return Path(value) if value else None


def cuda_home() -> Path | None:
    """``CUDA_HOME``: a CUDA install whose ``bin`` holds the NVIDIA tools."""
    value = os.environ.get("CUDA_HOME")
    return Path(value) if value else None


# -- input files and external tools (hostile-files) ---------------------------------
# Every input file asmevo reads goes through asmevo.files.read_input: regular files only,
# at most this many bytes. Every external tool runs through asmevo.process.run_tool.

MAX_INPUT_BYTES = "ASMEVO_MAX_INPUT_BYTES"
TOOL_TIMEOUT_SCALE = "ASMEVO_TOOL_TIMEOUT_SCALE"


def _positive(name: str, default: float) -> float:
    from asmevo.errors import AsmevoError
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        out = float(value)
    except ValueError:
        out = -1.0
    if not out > 0 or out == float("inf"):
        raise AsmevoError(f"{name}={value!r} is not a positive number")
    return out


def max_input_bytes() -> int:
    """``ASMEVO_MAX_INPUT_BYTES`` (default 256 MiB): the largest input file asmevo reads."""
    return int(_positive(MAX_INPUT_BYTES, 256 * (1 << 20)))


def tool_timeout_scale() -> float:
    """``ASMEVO_TOOL_TIMEOUT_SCALE`` (default 1): multiplies every external tool's time limit."""
    return _positive(TOOL_TIMEOUT_SCALE, 1.0)
