"""The recipe (:mod:`~dynkit.experiments.recipes`) of ``node_trained``: the review's image-classification NODEs
(Sect. 3.4.2, Figs. 10-11, Tables 4-5).

The paper's values are read from the review and from its authors' code, github.com/hedixia/HeavyBallNODE at commit
cd1065f (``mnist/mnist_hbnode.py``, ``mnist/mnist_train.py``); where the two disagree the recipe names both. Kept
apart from :mod:`~dynkit.experiments.node_trained` so that a recipe's wording is not part of the shards' code
identity.
"""
from __future__ import annotations

import dataclasses

from .recipes import NOT_STATED, Recipe, Setting, add_recipe
from .solver_variants import SUFFIX

MNIST = "HeavyBallNODE mnist/mnist_hbnode.py"
SMOKE = {"smoke": "smoke: seconds for the tests, nothing is decided from it"}

TRAINED = add_recipe(Recipe("node_trained", "review Sect. 3.4.2", (
    Setting("data set", "mnist", "review Sect. 3.4.2 (MNIST and CIFAR10, Figs. 10-11)", field="task",
            missing="an MNIST training task (dynkit.tasks.node_runs trains point_cloud, digits, fashion_mnist; MNIST "
                    "is not available offline)",
            reasons={"cpu": "CPU time: scikit-learn's 8x8 digits stand in for MNIST",
                     "full": "Fashion-MNIST (1x28x28, the MNIST-size models of Table 5) stands in: MNIST is not "
                             "available offline"}),
    Setting("models", ("node", "anode", "sonode", "hbnode", "ghbnode"), "review Sect. 3.4.2, Table 5",
            field="models", reasons={"cpu": "CPU time: the three models the claims compare"}),
    Setting("training tolerance", 1e-3, f"{MNIST} (--tol default 1e-3)", field="train_tol",
            reasons={"cpu": "1e-5: at 1e-3 every model on 8x8 digits sat on dopri5's floor (20 evaluations per "
                            "batch), so the per-epoch NFE rows measured the tolerance, not the model",
                     "full": "None: the task's tolerance of dynkit.models.node_paper.PAPER_TOLERANCE (1e-3)"}),
    Setting("tolerances of the NFE sweep", NOT_STATED, "review Fig. 11 (the text lists no values)",
            field="tolerances"),
    Setting("optimiser", "Adam", f"review Sect. 3.4; {MNIST} (optim.Adam)", fixed="Adam"),
    Setting("gradient clipping", "global norm 10.0", "HeavyBallNODE mnist/mnist_train.py (clip_grad_norm_ 10.0)",
            fixed="none (dynkit.tasks.node_runs.train_model)", missing="gradient clipping in train_model"),
    Setting("epochs", 40, f"{MNIST} (--niters default 40)", field="epochs",
            reasons={"cpu": "CPU time: 3 epochs of 8x8 digits", "full": "10 epochs of a Fashion-MNIST subset"}),
    Setting("seeds", "5 runs (for tries in range(5))", MNIST, fixed="the plan's seeds (analysis/plans)",
            reasons={"cpu": "a decision needs the seeds its plan fixes in advance",
                     "full": "a decision needs the seeds its plan fixes in advance"}),
), default_reasons=SMOKE))
add_recipe(dataclasses.replace(TRAINED, experiment="node_trained" + SUFFIX))  # the torchdiffeq twin: same recipe
