"""emufuzz: a differential fuzzer for the CPU emulator (asmevo.emu).

Random HIP programs (:mod:`generate`) are rendered to one C++ source per batch
(:mod:`render`), compiled by clang for gfx942/gfx90a at -O0..-O3 and for
x86-64 (:mod:`build`), run on the emulator and natively (:mod:`harness`) and
compared bit for bit (:mod:`compare`, with the documented compiler-semantics
exclusions of ``exclusions.toml``). :mod:`minimize` shrinks a mismatching
program to a small reproducer; :mod:`campaign` runs many batches in parallel
and keeps the failing programs so they can be re-run.
``experiments/bench_emufuzz.py`` is the command line.
"""
