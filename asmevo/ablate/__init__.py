"""Ablations: operator sets × kernels × seeds, each cell one resumable engine run."""
