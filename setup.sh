#!/usr/bin/env bash
# Install what asmevo needs on a fresh Debian/Ubuntu machine: LLVM with the AMDGPU
# target (llvm-mc, ld.lld, llvm-objdump, clang) and the Python package with its test extras.
set -euo pipefail
cd "$(dirname "$0")"

have_llvm() {
  for d in "${ASMEVO_LLVM_DIR:-}" /opt/rocm/llvm/bin /usr/lib/llvm-*/bin; do
    [ -n "$d" ] && [ -x "$d/llvm-mc" ] && [ -x "$d/ld.lld" ] && [ -x "$d/llvm-objdump" ] && return 0
  done
  return 1
}

if ! have_llvm || [ ! -x /usr/lib/llvm-19/bin/clang ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq llvm-19 lld-19 clang-19 >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e ".[dev,distributed,plot,serve]"
echo "asmevo set up: $(python3 -c 'import asmevo; print(asmevo.__version__)'), LLVM at $(python3 -c 'from asmevo.targets.amdgpu.toolchain import find_toolchain as f; print(f().bin_dir)')"
