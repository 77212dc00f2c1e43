"""NFE counting, stiffness, work-precision and NFE-vs-tolerance sweeps."""
from .nfe import (BatchNFE, NFECounter, backward_nfe, counters, forward_nfe, nfe_vs_tolerance, plot_nfe_vs_tolerance,
                  reset_nfe, tolerance_key)
from .stiffness import StiffnessReport, stability_boundary, stiffness_report
from .work_precision import PROBLEMS, WorkPrecisionTable, nfe_ratio_at_matched_error, work_precision
