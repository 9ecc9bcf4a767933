#!/usr/bin/env bash
# Install what asmevo needs on a fresh Debian/Ubuntu machine: LLVM with the AMDGPU
# target (llvm-mc, ld.lld, llvm-objdump, clang), an LLVM that knows gfx950 (>= 20:
# Debian's llvm-22/lld-22, next to 19) and the Python package with its test extras.
# Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")"

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

pkgs=""
if ! have_llvm || [ ! -x /usr/lib/llvm-19/bin/clang ]; then pkgs="llvm-19 lld-19 clang-19"; fi
knows_gfx950 || pkgs="$pkgs llvm-22 lld-22"
if [ -n "$pkgs" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  if [[ "$pkgs" == *llvm-22* ]] && ! apt-cache show llvm-22 >/dev/null 2>&1; then
    echo "setup.sh: no llvm-22 package here; gfx950 objects need LLVM >= 20 (set ASMEVO_LLVM_DIR)" >&2
    pkgs="${pkgs/llvm-22 lld-22/}"
  fi
  if [ -n "${pkgs// /}" ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null
  fi
fi

python3 -m pip install -q --disable-pip-version-check -e ".[dev,distributed,plot,serve,prove]"
# the package's bytecode, written here even where PYTHONDONTWRITEBYTECODE is set: every
# asmevo process (a search, each test's CLI run) then reads it instead of compiling
# ~450 modules again (0.3-0.5 s per process start on 2 cores)
python3 -m compileall -q -j 0 asmevo operators archive >/dev/null
python3 - <<'EOF'
import asmevo
from asmevo.targets.amdgpu.toolchain import ToolchainError, find_toolchain
def llvm(p):
    try:
        return find_toolchain(p).describe()
    except ToolchainError as exc:
        return f"none ({exc})"
from asmevo.emu import native    # built now (cached per machine), not in the first search
print(f"asmevo set up: {asmevo.__version__}; gfx942: {llvm('gfx942')}; gfx950: {llvm('gfx950')}; "
      f"emulator float32: {native.status()}")
EOF
