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


def native() -> bool:
    """``ASMEVO_NATIVE`` (default on; ``0`` off): the emulator's compiled float32 path
    (:mod:`asmevo.emu.isa.native`), bit-identical to its numpy path, which runs without it."""
    return os.environ.get("ASMEVO_NATIVE", "1") != "0"


def c_compiler() -> str | None:
    """``CC``: the C compiler :mod:`asmevo.emu.isa.native` builds with (default: the first of
    cc, gcc, clang, clang-19 on PATH)."""
    return os.environ.get("CC") or None


def cuda_bin() -> Path | None:
    """``ASMEVO_CUDA_BIN``: a directory holding nvdisasm, ptxas, cuobjdump (searched first)."""
    value = os.environ.get("ASMEVO_CUDA_BIN")
    return Path(value) if value else None


def cuda_home() -> Path | None:
    """``CUDA_HOME``: a CUDA install whose ``bin`` holds the NVIDIA tools."""
    value = os.environ.get("CUDA_HOME")
    return Path(value) if value else None


# -- input limits ---------------------------------------------------------------------------
# Specs and configs come from anywhere. Each limit below bounds one thing an input asks
# asmevo to allocate or run; its default fits every committed spec (large sizes included)
# and config. An input past a limit is refused before anything is allocated, with a
# message naming the environment variable that raises the limit, so a user who means it
# can. Values are read at each check, not at import, so a test or a caller can change them.

from dataclasses import dataclass as _dataclass  # noqa: E402  (this block's own imports)

from asmevo.errors import AsmevoError as _AsmevoError  # noqa: E402


class KnobError(_AsmevoError):
    """An environment knob set to something that is not a positive integer."""


@_dataclass(frozen=True)
class Limit:
    """One input limit: an environment variable, its default, and what it counts."""

    env: str
    default: int
    what: str                    # "bytes in one buffer": what the number counts

    @property
    def value(self) -> int:
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default
        try:
            value = int(raw.replace("_", ""))
        except ValueError:
            raise KnobError(f"{self.env}={raw!r}: must be a positive integer") from None
        if value < 1:
            raise KnobError(f"{self.env}={raw!r}: must be a positive integer")
        return value

    def exceeded(self, value: int, key: str) -> str | None:
        """None within the limit, else the refusal: the key, the value, the knob to raise."""
        limit = self.value
        if value <= limit:
            return None
        return (f"{key}: {value:,} {self.what} is over the limit of {limit:,} "
                f"(set {self.env} to raise it)")


MAX_BUFFER_BYTES = Limit("ASMEVO_MAX_BUFFER_BYTES", 1 << 30, "bytes in one buffer")
MAX_LAUNCH_BYTES = Limit("ASMEVO_MAX_LAUNCH_BYTES", 1 << 31, "bytes of buffers in one launch")
MAX_WORKGROUPS = Limit("ASMEVO_MAX_WORKGROUPS", 1 << 24, "workgroups in one launch")
MAX_WORK_ITEMS = Limit("ASMEVO_MAX_WORK_ITEMS", (1 << 32) - 1, "work-items in one launch")
MAX_BLOCK = Limit("ASMEVO_MAX_BLOCK", 1024, "work-items per workgroup")
MAX_DYNAMIC_LDS = Limit("ASMEVO_MAX_DYNAMIC_LDS", 64 << 10, "bytes of dynamic LDS")
MAX_DYNAMIC_STACK = Limit("ASMEVO_MAX_DYNAMIC_STACK", 1 << 20, "private bytes per lane")
MAX_EXPRESSION_CHARS = Limit("ASMEVO_MAX_EXPRESSION_CHARS", 1000, "characters in an expression")
MAX_EXPRESSION_NODES = Limit("ASMEVO_MAX_EXPRESSION_NODES", 200,
                             "syntax nodes in an expression")
MAX_EXPONENT = Limit("ASMEVO_MAX_EXPONENT", 64, "(an exponent)")
MAX_EMULATED_WAVES = Limit("ASMEVO_EMU_MAX_WAVES", 1 << 18, "waves in one emulated launch")
MAX_POPULATION = Limit("ASMEVO_MAX_POPULATION", 4096, "individuals per island")
MAX_ISLANDS = Limit("ASMEVO_MAX_ISLANDS", 256, "islands")
MAX_GENERATIONS = Limit("ASMEVO_MAX_GENERATIONS", 1_000_000, "generations")
MAX_EVALUATIONS = Limit("ASMEVO_MAX_EVALUATIONS", 10_000_000, "evaluations")

# what a parser is asked to build: nesting, the code object's metadata note, an edit list
MAX_JSON_DEPTH = Limit("ASMEVO_MAX_JSON_DEPTH", 64, "levels of nesting")
MAX_TOML_DEPTH = Limit("ASMEVO_MAX_TOML_DEPTH", 32, "levels of nesting")
MAX_METADATA_BYTES = Limit("ASMEVO_MAX_METADATA_BYTES", 4 << 20, "bytes")
MAX_METADATA_ITEMS = Limit("ASMEVO_MAX_METADATA_ITEMS", 200_000,
                           "keys, values and list elements")
MAX_METADATA_MAP_KEYS = Limit("ASMEVO_MAX_METADATA_MAP_KEYS", 4096, "keys in one map")
MAX_METADATA_DEPTH = Limit("ASMEVO_MAX_METADATA_DEPTH", 32, "levels of nesting")
# the LLM connection: what one answer may take, on the wire, in the usage and in the archive
LLM_MAX_ANSWER_BYTES = Limit("ASMEVO_LLM_MAX_ANSWER_BYTES", 1 << 20,
                             "bytes received for one LLM answer")
LLM_MAX_STORED_ANSWER_BYTES = Limit("ASMEVO_LLM_MAX_STORED_ANSWER_BYTES", 256 << 10,
                                    "bytes of one LLM answer kept")
LLM_MAX_USAGE_TOKENS = Limit("ASMEVO_LLM_MAX_USAGE_TOKENS", 10_000_000,
                             "tokens in one usage field of an LLM answer")
# a spec's reference.py: trusted code, still run in a child with a time and memory limit
REFERENCE_SECONDS = Limit("ASMEVO_REFERENCE_SECONDS", 600, "seconds of reference.py")
REFERENCE_MEMORY_BYTES = Limit("ASMEVO_REFERENCE_MEMORY_BYTES", 16 << 30,
                               "bytes of memory for reference.py")
# the prover: what z3 may allocate for one question beyond the terms already built
# (past it the question is unknown: asmevo.prove.z3env.check)
PROVE_MEMORY_BYTES = Limit("ASMEVO_PROVE_MEMORY_BYTES", 2 << 30,
                           "bytes z3 may allocate for one question")

LIMITS = (MAX_BUFFER_BYTES, MAX_LAUNCH_BYTES, MAX_WORKGROUPS, MAX_WORK_ITEMS, MAX_BLOCK,
          MAX_DYNAMIC_LDS, MAX_DYNAMIC_STACK, MAX_EXPRESSION_CHARS, MAX_EXPRESSION_NODES,
          MAX_EXPONENT, MAX_EMULATED_WAVES, MAX_POPULATION, MAX_ISLANDS, MAX_GENERATIONS,
          MAX_EVALUATIONS, MAX_JSON_DEPTH, MAX_TOML_DEPTH, MAX_METADATA_BYTES,
          MAX_METADATA_ITEMS, MAX_METADATA_MAP_KEYS, MAX_METADATA_DEPTH, LLM_MAX_ANSWER_BYTES,
          LLM_MAX_STORED_ANSWER_BYTES, LLM_MAX_USAGE_TOKENS, REFERENCE_SECONDS,
          REFERENCE_MEMORY_BYTES, PROVE_MEMORY_BYTES)


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
