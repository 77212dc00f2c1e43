"""NFE counting, stiffness, work-precision and NFE-vs-tolerance sweeps."""
from .stiffness import StiffnessReport, stability_boundary, stiffness_report
from .work_precision import PROBLEMS, WorkPrecisionTable, nfe_ratio_at_matched_error, work_precision
