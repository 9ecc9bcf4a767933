"""Translation validation: an accepted edit proved equivalent to K0 where a solver can
decide it (docs/prover.md)."""
