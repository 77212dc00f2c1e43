"""NFE counting, stiffness, work-precision and NFE-vs-tolerance sweeps."""
