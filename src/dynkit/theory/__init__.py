"""Numerical checks of the papers' propositions (``dk.theory``).

Each ``check_*`` function takes one instance or a batch (leading axes) and returns a
:class:`CheckResult` — ``holds``, the worst ``residual`` against its ``tolerance``, the worst
``instance`` and a ``message`` — so a user's test can
``assert dk.theory.check_eigen_pairing(J, F, g).holds``. :data:`CLAIMS` lists the claims;
:func:`run_all` checks them on random instances and returns a :class:`ClaimTable`
(``print(dk.theory.run_all(100))``). Each row carries a ``verdict`` about the paper's statement *as
written* (:data:`VERDICTS`: holds, holds with correction, erratum, false as stated, undecided), the
verdict recorded in the code (``expected_verdict``), the paper's text, and for a false statement the
smallest counterexample found; a corrected statement is a separate row.

The claims live in :mod:`.claims`, one module per paper. Modules of checks: :mod:`.spectra` (review
Prop. 4; Momentum ResNets Prop. 1), :mod:`.adjoint` (review (54)-(58)), :mod:`.rnn` (MomentumRNN
(11)-(15), review Remark 4), :mod:`.heavy_ball` (Momentum Transformer Thm. 2, Prop. 3),
:mod:`.attention` (Momentum Transformer (12)-(15)), :mod:`.representation` (Momentum ResNets Prop.
4, Thms. 1-2, Lemmas 1-2, Fig. 4), :mod:`.momentum_resnet` (Momentum ResNets Props. 2-8, (3), Sect.
3.2, App. E), :mod:`.first_order` (Momentum ResNets Props. 9-10, Thm. 3, Sect. 4.2 example),
:mod:`.optimizers` (MomentumRNN (3), NAG / scheduled-restart / constant-momentum rates),
:mod:`.accelerated_rk` (CSAODE Claim 1, (10), T = ceil(1/r) and ARK cost).
"""

from types import ModuleType as _ModuleType

from ._core import VERDICTS, CheckResult, Claim, ClaimRow, ClaimTable
from .accelerated_rk import (
    ark_member,
    check_ark_equal_accuracy,
    check_ark_evaluations,
    check_ark_family_equal_accuracy,
    check_ark_final_time,
    check_ark_order,
    check_ark_stage_form,
    check_ark_start,
)
from .adjoint import (
    check_adaptive_damping_breaks_adjoint,
    check_adjoint_nonvanishing,
    check_adjoint_norm,
    check_adjoint_remarks,
    check_first_order_adjoint,
    check_ghbnode_adjoint_not_heavy_ball,
    check_hbnode_adjoint_equation,
    hbnode_jacobian,
)
from .first_order import (
    check_crossing_example,
    check_flow_orientation,
    check_linear_flow_field,
    check_not_a_real_square,
    log_periodic_field,
    smooth_field,
)
from .optimizers import (
    check_momentum_gd_form,
    check_momentum_gd_rate,
    check_nag_rate,
    check_restart_rate,
    nag_momentum,
    restart_momentum,
)
from .attention import (
    check_attention_reweighting,
    check_linear_attention_rnn,
    check_momentum_attention,
    check_momentum_connection,
    momentum_attention_closed,
    momentum_attention_recurrent,
)
from .claims import CLAIMS, run_all
from .heavy_ball import (
    adaptive_momentum,
    check_gradient_ratio_limit,
    check_heavy_ball_contraction,
    check_heavy_ball_forms,
    check_heavy_ball_momentum_index,
    check_heavy_ball_rate,
    heavy_ball_radius,
    optimal_momentum,
)
from .momentum_resnet import (
    check_backprop_formula,
    check_first_order_embedding,
    check_free_velocity,
    check_inversion,
    check_large_eps_limit,
    check_memory_bits,
    check_negative_scaling_obstruction,
    check_prop7_criterion,
    check_prop8_closed_form,
    check_small_eps_limit,
    exact_momentum_forward,
    exact_momentum_inverse,
    momentum_forward,
    momentum_inverse,
)
from .representation import (
    Representability,
    check_f_eps_prime_zeros_real,
    check_f_eps_surjective,
    check_first_order_range,
    check_lambda_eps,
    check_lambda_eps_closeness,
    check_momentum_logarithm,
    check_representable_up_to_scale,
    check_scaling_representable,
    check_representable_set_grows,
    check_psi_series,
    check_representability,
    check_threshold_boundary,
    f_eps,
    is_representable,
    lambda_eps,
    lambda_eps_mp,
    momentum_logarithm,
    psi_eps,
    psi_eps_ode,
    psi_eps_series,
)
from .rnn import (
    check_adam_rnn_remark4,
    check_gd_analogy,
    check_inverse_activation_slope,
    check_momentum_jacobian_product,
    check_momentum_rnn,
    check_reparametrisation,
    check_rnn_jacobian,
)
from .spectra import (
    check_eigen_pairing,
    check_fixed_point_iterations,
    check_revnet_continuous,
    check_revnet_instability,
    momentum_jacobian,
    pairing_roots,
    revnet_jacobian,
)

# The public names are exactly the ones imported above (each module's own list, :mod:`._core`'s
# table types and the claim registry): stated once, there.
__all__ = [
    name
    for name, value in globals().items()
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
