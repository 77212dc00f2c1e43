"""NFE counting, stiffness, work-precision and NFE-vs-tolerance sweeps."""
from .nfe import BatchNFE, NFECounter, backward_nfe, counters, forward_nfe, reset_nfe
