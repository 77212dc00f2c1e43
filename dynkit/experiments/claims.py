"""The ledger's rows: every empirical claim of the five papers that an experiment here tests.

Each row names the paper's statement and figure, the experiment and metric that test it, and the rule
that turns our mean and 95 % CI over seeds into a verdict. The numbers the rules compare with are the
papers' effect sizes where the paper states one (cited per row), else the no-effect value.
"""
from __future__ import annotations

from .ledger import add_claim, difference, greater, less, metric, ratio

REVIEW = "Wang et al., momentum review"
MOMRES = "Sander et al., Momentum ResNets"
CSAODE = "Zhang et al., CSAODE"
MOMRNN = "Nguyen et al., MomentumRNN"
MOMTR = "Nguyen et al., Momentum Transformer"

# ---- trained heavy-ball neural ODEs (review Sect. 3.4), experiment node_trained --------------------------------
for model, label in (("hbnode", "HBNODE"), ("ghbnode", "GHBNODE")):
    for kind in ("forward", "backward"):
        add_claim(f"review.{model}_{kind}_nfe_per_epoch", paper=REVIEW,
                  claim=f"{label} needs fewer {kind} NFE per training batch than NODE",
                  paper_figure="Fig. 6 (point cloud), Fig. 10 (MNIST)", experiment="node_trained",
                  metric=f"{kind} NFE {label} / NODE, last training epoch (digits)",
                  value=ratio(f"{model}.last_epoch.{kind}_nfe", f"node.last_epoch.{kind}_nfe"),
                  rule=less(0.8, null=1.0))
add_claim("review.hbnode_nfe_tolerance_forward", paper=REVIEW,
          claim="At tight tolerance HBNODE's forward NFE stays below NODE's", paper_figure="Fig. 11",
          experiment="node_trained", metric="forward NFE HBNODE / NODE at rtol = atol = 1e-7, trained models",
          value=ratio("hbnode.forward_nfe@1e-07", "node.forward_nfe@1e-07"), rule=less(0.8, null=1.0))
add_claim("review.hbnode_nfe_tolerance_backward", paper=REVIEW,
          claim="At tight tolerance HBNODE's backward (adjoint) NFE stays below NODE's", paper_figure="Fig. 11",
          experiment="node_trained", metric="backward NFE HBNODE / NODE at rtol = atol = 1e-7, trained models",
          value=ratio("hbnode.backward_nfe@1e-07", "node.backward_nfe@1e-07"), rule=less(0.8, null=1.0))
add_claim("review.hbnode_field_less_stiff", paper=REVIEW,
          claim="Heavy-ball damping keeps the learned dynamics benign: HBNODE's trained field is less stiff than "
                "NODE's", paper_figure="Sect. 3.3-3.4 (argument, no figure)", experiment="node_trained",
          metric="log10 stiffness ratio of the trained field, HBNODE - NODE (digits)",
          value=difference("hbnode.log10_stiffness_ratio_after", "node.log10_stiffness_ratio_after"), rule=less(0.0))
