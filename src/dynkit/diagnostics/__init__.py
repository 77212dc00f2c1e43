"""Pure measurement: NFE counting, stiffness and work-precision over any callable or module.

Sweeps that train models to measure them (NFE vs tolerance) are experiments:
:mod:`dynkit.experiments`.
"""

from .nfe import BatchNFE, NFECounter, backward_nfe, counters, forward_nfe, reset_nfe, tolerance_key
from .stiffness import StiffnessReport, stability_boundary, stiffness_report
from .work_precision import PROBLEMS, WorkPrecisionTable, nfe_ratio_at_matched_error, work_precision
