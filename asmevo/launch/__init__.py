"""Launch specs: how one kernel of a code object is run and what it should compute.

A value layer (see :mod:`asmevo.layers`): the spec and its parsing
(:mod:`~asmevo.launch.spec`), element types bit by bit
(:mod:`~asmevo.launch.dtypes`) and a launch's outputs against the spec's
reference (:mod:`~asmevo.launch.check`). Targets, the emulator, devices and
verification all read specs; nothing here imports any of them.
"""
