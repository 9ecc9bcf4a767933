#!/bin/bash
# Build what the lent GPU machine (no LLVM, no z3, no network; Python 3.12) needs to run
# asmevo's AMD path and the NVIDIA operators, into .devbundle/ and .whl/ (both git-excluded):
#   .devbundle/llvm19.tar.xz  llvm-mc, ld.lld, llvm-objdump/objcopy/readelf 19 + libLLVM, and the
#                             libraries Debian 12 links them with (z3 4.8.12, ICU 72, libxml2,
#                             libedit, libbsd), plus Debian's python3-z3 (pure Python, on libz3)
#   .devbundle/clang19.tar.xz clang 19 + libclang-cpp + its headers (experiments/bench_emufuzz.py)
#   .devbundle/nvbin.tar.xz   ptxas-blackwell (CUDA 13.4: the corpus PTX is 9.4), nvdisasm and
#                             cuobjdump from the triton 3.9.0 wheel
#   .devbundle/env.sh         sourced there: PYTHONPATH, LD_LIBRARY_PATH, ASMEVO_LLVM_DIR,
#                             ASMEVO_CUDA_BIN for the bundles unpacked under /opt
#   .whl/                     pyelftools and deap for CPython 3.12 (the image has numpy, pandas,
#                             joblib, msgpack, cuda-bindings)
# A call carries at most 64 MiB with the checkout (about 11 MB): llvm19 (43 MB) and nvbin or
# clang19 (13-16 MB) go in separate calls; unpacked under /opt they stay while the machine is
# warm. On the machine:  tar -C /opt -xJf .devbundle/llvm19.tar.xz; . .devbundle/env.sh
# Run from the checkout's root on Debian 12 with llvm-19, lld-19, clang-19 installed.
set -euo pipefail
root=$(pwd); stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p .devbundle .whl "$stage/b/llvm-19/bin" "$stage/b/llvm-19/lib" "$stage/b/lib" "$stage/b/py" \
         "$stage/c/b/llvm-19/bin" "$stage/c/b/llvm-19/lib" "$stage/nv/nvbin"
grep -qx '/.devbundle/' .git/info/exclude 2>/dev/null || printf '/.devbundle/\n/.whl/\n' >> .git/info/exclude
L=/usr/lib/llvm-19
for t in llvm-objdump llvm-mc lld llvm-objcopy llvm-readobj; do cp -L "$L/bin/$t" "$stage/b/llvm-19/bin/"; done
ln -s lld "$stage/b/llvm-19/bin/ld.lld"; ln -s llvm-readobj "$stage/b/llvm-19/bin/llvm-readelf"
cp -L "$L/lib/libLLVM.so.19.1" "$stage/b/llvm-19/lib/"
for l in libz3.so.4 libicuuc.so.72 libicudata.so.72 libxml2.so.2 libedit.so.2 libbsd.so.0 libmd.so.0; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$stage/b/lib/"
done
ln -s libz3.so.4 "$stage/b/lib/libz3.so"
(cd "$stage" && apt-get download python3-z3 >/dev/null && dpkg -x python3-z3_*.deb z3deb)
cp -r "$stage"/z3deb/usr/lib/python3/dist-packages/z3 "$stage/b/py/"
cp -L "$L/bin/clang" "$stage/c/b/llvm-19/bin/"; ln -s clang "$stage/c/b/llvm-19/bin/clang-19"
cp -L "$L/lib/libclang-cpp.so.19.1" "$stage/c/b/llvm-19/lib/"
mkdir -p "$stage/c/b/llvm-19/lib/clang/19"; cp -r "$L/lib/clang/19/include" "$stage/c/b/llvm-19/lib/clang/19/"
tar -C "$stage" -cf - b | xz -T0 -8 > .devbundle/llvm19.tar.xz
tar -C "$stage/c" -cf - b | xz -T0 -8 > .devbundle/clang19.tar.xz
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    -d "$stage/w" triton==3.9.0 pyelftools==0.33 deap==1.4.4
(cd "$stage/w" && unzip -q triton-*.whl 'triton/backends/nvidia/bin/*' && \
    cp triton/backends/nvidia/bin/{ptxas-blackwell,nvdisasm,cuobjdump} "$stage/nv/nvbin/")
tar -C "$stage/nv" -cf - nvbin | xz -T0 -8 > .devbundle/nvbin.tar.xz
cp "$stage"/w/pyelftools-*.whl "$stage"/w/deap-*.whl .whl/
cat > .devbundle/env.sh <<'ENV'
export PYTHONPATH=/tmp/site:/opt/b/py:$PWD PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
export LD_LIBRARY_PATH=/opt/b/lib ASMEVO_LLVM_DIR=/opt/b/llvm-19/bin ASMEVO_CUDA_BIN=/opt/nvbin
ENV
ls -la "$root/.devbundle" "$root/.whl"
