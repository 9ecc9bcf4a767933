#!/usr/bin/env bash
# Install what asmevo needs on a fresh Debian/Ubuntu machine: LLVM with the AMDGPU
# target (llvm-mc, ld.lld, llvm-objdump, clang), an LLVM that knows gfx950 (>= 20:
# Debian's llvm-22/lld-22, next to 19), and the Python package with its test extras in
# a virtual environment of the checkout's own, .venv (the system's Python is left
# alone: Debian 12+ and Ubuntu 23.04+ mark it externally managed, PEP 668).
# Then: .venv/bin/python -m asmevo ... (or .venv/bin/asmevo ...).
#
#   PYTHON=/path/to/python3.X ./setup.sh    the interpreter to make .venv with (>= 3.11;
#                                           default: python3 on PATH)
#   ASMEVO_VENV=DIR ./setup.sh              another place for the environment
#
# Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")"

PY="${PYTHON:-python3}"
VENV="${ASMEVO_VENV:-.venv}"
EXTRAS="dev,distributed,plot,serve,llm,hip,browser-tests,prove"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
updated=""
apt_install() {
  [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

have_llvm() {
  for d in "${ASMEVO_LLVM_DIR:-}" /opt/rocm/llvm/bin /usr/lib/llvm-*/bin; do
    [ -n "$d" ] && [ -x "$d/llvm-mc" ] && [ -x "$d/ld.lld" ] && [ -x "$d/llvm-objdump" ] && return 0
  done
  return 1
}

# an installation whose llvm-mc knows gfx950 (LLVM 19 does not: it warns and ignores it)
knows_gfx950() {
  for d in "${ASMEVO_LLVM_DIR:-}" /opt/rocm/llvm/bin /usr/lib/llvm-*/bin; do
    [ -n "$d" ] && [ -x "$d/llvm-mc" ] && [ -x "$d/ld.lld" ] && [ -x "$d/llvm-objdump" ] || continue
    "$d/llvm-mc" -triple=amdgcn-amd-amdhsa --mcpu=gfx950 </dev/null 2>&1 >/dev/null \
      | grep -q "not a recognized processor" || return 0
  done
  return 1
}

# 1. Python: an interpreter >= 3.11 that can make a virtual environment with pip in it
#    (Debian and Ubuntu ship venv's ensurepip apart, as python3-venv / python3.X-venv)
if ! command -v "$PY" >/dev/null; then
  [ -n "${PYTHON:-}" ] && { echo "setup.sh: PYTHON=$PY is not an interpreter" >&2; exit 2; }
  apt_install python3 python3-venv python3-pip
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup.sh: $("$PY" -V 2>&1) is too old: asmevo needs Python >= 3.11 (set PYTHON=...)" >&2
  exit 2
fi
if [ ! -x "$VENV/bin/python" ] && ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
  ver="$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  apt_install "python$ver-venv" python3-pip
fi

# 2. LLVM
pkgs=""
if ! have_llvm || [ ! -x /usr/lib/llvm-19/bin/clang ]; then pkgs="llvm-19 lld-19 clang-19"; fi
knows_gfx950 || pkgs="$pkgs llvm-22 lld-22"
if [ -n "${pkgs// /}" ]; then
  [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
  if [[ "$pkgs" == *llvm-22* ]] && ! apt-cache show llvm-22 >/dev/null 2>&1; then
    echo "setup.sh: no llvm-22 package here; gfx950 objects need LLVM >= 20 (set ASMEVO_LLVM_DIR)" >&2
    pkgs="${pkgs/llvm-22 lld-22/}"
  fi
  if [ -n "${pkgs// /}" ]; then apt_install $pkgs; fi
fi

# 3. the environment and the package (editable: the checkout is what runs)
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
"$VPY" -m pip install -q --disable-pip-version-check -e ".[$EXTRAS]"
# the package's bytecode, written here even where PYTHONDONTWRITEBYTECODE is set: every
# asmevo process (a search, each test's CLI run) then reads it instead of compiling
# ~450 modules again (0.3-0.5 s per process start on 2 cores)
"$VPY" -m compileall -q -j 0 asmevo operators archive >/dev/null
"$VPY" - "$VENV" <<'EOF'
import sys
import asmevo
from asmevo.targets.amdgpu.toolchain import ToolchainError, find_toolchain
def llvm(p):
    try:
        return find_toolchain(p).describe()
    except ToolchainError as exc:
        return f"none ({exc})"
from asmevo.emu.isa import native    # built now (cached per machine), not in the first search
print(f"asmevo set up in {sys.argv[1]} (Python {sys.version.split()[0]}): {asmevo.__version__}; "
      f"gfx942: {llvm('gfx942')}; gfx950: {llvm('gfx950')}; emulator float32: {native.status()}")
print(f"run it as {sys.argv[1]}/bin/python -m asmevo ... (or {sys.argv[1]}/bin/asmevo ...)")
EOF
