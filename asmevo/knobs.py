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
