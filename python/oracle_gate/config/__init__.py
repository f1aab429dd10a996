"""The gate's own files, parsed and validated: matrices, ledgers, lockfiles, notes, owners."""
