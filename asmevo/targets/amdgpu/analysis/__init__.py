"""Instruction-level analysis of AMDGPU (GFX9: gfx90a, gfx942) assembly.

``effects`` decodes what each instruction reads, writes and waits on;
``liveness`` and the dependency DAG build on it; ``waitcnt`` models the
memory counters; ``hazards`` checks the manual wait states; ``problems``
turns both checks into the static gate's verdict.
"""
