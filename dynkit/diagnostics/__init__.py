"""NFE counting, stiffness, work-precision and NFE-vs-tolerance sweeps."""
from .nfe import (BatchNFE, NFECounter, backward_nfe, counters, forward_nfe, nfe_vs_tolerance, plot_nfe_vs_tolerance,
                  reset_nfe, tolerance_key)
