"""asmevo: evolve compiled GPU kernels at the assembly level, with proof of equivalence."""

__version__ = "0.1.0"
