"""Every comparison the five papers make in a table or a figure, and the ledger rows that test it.

Each :class:`Comparison` names its paper and location (``"Table 2"``, ``"Fig. 8"``) and what it
compares; its rows are the registered claims whose paper and figure match ``rows`` (a regular
expression on ``"<paper>: <paper_figure>"``). A comparison no row tests is ``not run`` and says what
it needs: data that are not offline (named), GPU-hours estimated from the authors' setup, or a
capability dynkit lacks. The tables and figures that compare nothing (an illustration, a table of
hyperparameters, a theoretical curve) are listed in :data:`NOT_COMPARISONS` with the reason.
``tests/test_ledger_inventory.py`` counts both against the papers' text."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "REVIEW",
    "MOMTR",
    "MOMRNN",
    "MOMRES",
    "CSAODE",
    "PAPER_FILES",
    "NEEDS",
    "Comparison",
    "COMPARISONS",
    "NOT_COMPARISONS",
    "not_run",
]

REVIEW = "Wang et al., momentum review"
MOMTR = "Nguyen et al., Momentum Transformer"
MOMRNN = "Nguyen et al., MomentumRNN"
MOMRES = "Sander et al., Momentum ResNets"
CSAODE = "Zhang et al., CSAODE"
PAPER_FILES = {
    REVIEW: "000_f94f7d084b37593d.txt",
    MOMTR: "001_586eb6f7d67fdcbb.txt",
    MOMRNN: "002_2089798ced8ff81f.txt",
    MOMRES: "003_ae0acdf156d180f8.txt",
    CSAODE: "004_5e2e771a3c49d20d.txt",
}
"""The plain-text copy of each paper in ``shared/papers``."""
NEEDS = ("data", "gpu", "capability")


@dataclass(frozen=True)
class Comparison:
    """One table or figure of a paper that makes a comparison.

    Parameters
    ----------
    paper, location : str
        The paper (one of :data:`PAPER_FILES`) and ``"Table N"`` or ``"Fig. N"``.
    compares : str
        What it compares, in words.
    rows : str
        A regular expression on ``"<claim.paper>: <claim.paper_figure>"`` selecting the rows that
        test it (empty: none does).
    needs, kind : str
        Without rows: what running it needs, and the kind of need (one of :data:`NEEDS`).
    """

    paper: str
    location: str
    compares: str
    rows: str = ""
    needs: str = ""
    kind: str = ""

    def __post_init__(self):
        if self.paper not in PAPER_FILES:
            raise ValueError(f"paper must be one of {sorted(PAPER_FILES)}, got {self.paper!r}")
        if not re.fullmatch(r"(Table|Fig\.) \d+", self.location):
            raise ValueError(f"location must read 'Table N' or 'Fig. N', got {self.location!r}")
        if bool(self.rows) == bool(self.needs) or (self.needs and self.kind not in NEEDS):
            raise ValueError(
                f"{self.paper} {self.location}: give rows, or needs with a kind in {NEEDS}"
            )

    def claim_ids(self, claims) -> list[str]:
        """The ids of the registered ``claims`` (a mapping id -> Comparison) that test this
        comparison."""
        if not self.rows:
            return []
        return [
            i for i, c in claims.items() if re.search(self.rows, f"{c.paper}: {c.paper_figure}")
        ]

    def to_dict(self, claims) -> dict:
        return {
            "paper": self.paper,
            "location": self.location,
            "compares": self.compares,
            "rows": self.claim_ids(claims),
            "needs": self.needs,
            "kind": self.kind,
        }


_MNIST = "MNIST is not offline (the 8x8 digits and Fashion-MNIST stand in elsewhere: pilots)"
_CIFAR = "CIFAR-10 is not offline"
_TIMIT = "TIMIT (LDC93S1, a licensed corpus) is not offline"
_PTB = "the Penn Treebank is not offline"
_LRA = (
    "the Long Range Arena data (ListOps, IMDb bytes, AAN retrieval, sequential CIFAR-10, "
    "Pathfinder) are not offline"
)
_IWSLT = "IWSLT'14 De-En is not offline"


def _gpu(hours: str, setup: str) -> str:
    return f"about {hours} GPU-hours (estimated from the authors' setup: {setup})"


COMPARISONS: tuple[Comparison, ...] = (
    # ---- the review (Wang, Xia, Nguyen, Osher) ----
    Comparison(
        REVIEW,
        "Fig. 2",
        "gradient norms through time, RNN vs MomentumRNN",
        rows=r"^Nguyen et al., MomentumRNN: Fig\. 2",
    ),
    Comparison(
        REVIEW,
        "Fig. 3",
        "train and test loss over epochs, MomentumLSTM and variants vs LSTM (MNIST, TIMIT)",
        needs=f"{_MNIST}; {_TIMIT}",
        kind="data",
    ),
    Comparison(
        REVIEW,
        "Table 1",
        "best test accuracy on MNIST and PMNIST, momentum cells vs LSTM",
        rows=r"^Nguyen et al., MomentumRNN: Table 1",
    ),
    Comparison(
        REVIEW,
        "Table 2",
        "TIMIT test and validation MSE, momentum cells vs LSTM",
        needs=_TIMIT,
        kind="data",
    ),
    Comparison(
        REVIEW,
        "Table 3",
        "Penn Treebank test perplexity, momentum cells vs LSTM",
        needs=_PTB,
        kind="data",
    ),
    Comparison(
        REVIEW,
        "Fig. 4",
        "train loss on the copying (2K steps) and adding (750 steps) tasks",
        needs=_gpu(
            "10-20", "LSTMs of 128-256 units over 750-2,000 steps for thousands of iterations"
        )
        + "; the data are synthetic, but no experiment builds them yet",
        kind="gpu",
    ),
    Comparison(
        REVIEW,
        "Fig. 5",
        "Penn Treebank train and test loss, MomentumLSTM and SRLSTM vs LSTM",
        needs=_PTB,
        kind="data",
    ),
    Comparison(
        REVIEW,
        "Fig. 6",
        "forward and backward NFE and time of NODE, ANODE, SONODE on CIFAR-10",
        needs=_CIFAR,
        kind="data",
    ),
    Comparison(
        REVIEW,
        "Fig. 7",
        "growth of ||h(t)||, GHBNODE vs HBNODE and NODE (blow-up)",
        rows=r"^Wang et al., momentum review: Fig\. 7",
    ),
    Comparison(
        REVIEW,
        "Fig. 8",
        "adjoint norm through time, (G)HBNODE-RNN vs ODE-RNN (Walker2D)",
        rows=r"^Wang et al., momentum review: Fig\. 8",
    ),
    Comparison(
        REVIEW,
        "Fig. 9",
        "point cloud separation: NFE and loss, (G)HBNODE vs NODE",
        rows=r"^Wang et al., momentum review: Fig\. 9",
    ),
    Comparison(
        REVIEW,
        "Fig. 10",
        "forward and backward NFE, time and accuracy of five ODE models on MNIST",
        rows=r"^Wang et al., momentum review: Figs\. 6, 10",
    ),
    Comparison(
        REVIEW,
        "Fig. 11",
        "forward and backward NFE against the solver's tolerance",
        rows=r"^Wang et al., momentum review: Fig\. 11",
    ),
    Comparison(
        REVIEW,
        "Fig. 12",
        "plane vibration: losses and NFE of the ODE-RNN hybrids",
        rows=r"^Wang et al., momentum review: Fig\. 12",
    ),
    Comparison(
        REVIEW,
        "Fig. 13",
        "Walker2D: losses and NFE of the ODE-RNN hybrids",
        rows=r"^Wang et al., momentum review: Fig\. 13",
    ),
    Comparison(
        REVIEW,
        "Fig. 14",
        "copy task: training loss and accuracy, momentum vs linear and softmax transformers",
        rows=r"^Nguyen et al., Momentum Transformer: Fig\. 1",
    ),
    Comparison(
        REVIEW,
        "Fig. 15",
        "MNIST image generation: convergence, adaptive momentum vs the baselines",
        needs=f"{_MNIST}; " + _gpu("20-40", "autoregressive 8-layer transformers over 784 pixels"),
        kind="data",
    ),
    Comparison(
        REVIEW,
        "Table 6",
        "MNIST generation: test bits/dim and throughput",
        needs=_MNIST,
        kind="data",
    ),
    Comparison(
        REVIEW,
        "Table 7",
        "CIFAR-10 generation: test bits/dim and throughput",
        needs=_CIFAR,
        kind="data",
    ),
    Comparison(REVIEW, "Table 8", "Long Range Arena accuracy, five tasks", needs=_LRA, kind="data"),
    Comparison(
        REVIEW,
        "Table 9",
        "IWSLT translation: BLEU and tokens per second",
        needs=_IWSLT,
        kind="data",
    ),
    # ---- Momentum Transformer ----
    Comparison(
        MOMTR,
        "Fig. 1",
        "copy task convergence: adaptive momentum, momentum, reformer, linear, softmax",
        rows=r"^Nguyen et al., Momentum Transformer: Fig\. 1",
    ),
    Comparison(MOMTR, "Table 2", "MNIST generation: test bits/dim", needs=_MNIST, kind="data"),
    Comparison(
        MOMTR, "Fig. 2", "MNIST generation: test bits/dim over training", needs=_MNIST, kind="data"
    ),
    Comparison(MOMTR, "Table 3", "CIFAR-10 generation: test bits/dim", needs=_CIFAR, kind="data"),
    Comparison(MOMTR, "Table 4", "Long Range Arena accuracy", needs=_LRA, kind="data"),
    Comparison(
        MOMTR, "Table 5", "IWSLT translation: BLEU and tokens per second", needs=_IWSLT, kind="data"
    ),
    Comparison(
        MOMTR,
        "Fig. 4",
        "ablation of the momentum connection's beta on the copy task",
        needs="a sweep of the momentum connection's beta in momseq_copy (CPU-feasible at our size; "
        "not built)",
        kind="capability",
    ),
    Comparison(
        MOMTR,
        "Fig. 5",
        "ablation of the momentum attention's beta on the copy task",
        needs="a sweep of the attention momentum beta in momseq_copy (CPU-feasible at our size; "
        "not built)",
        kind="capability",
    ),
    # ---- MomentumRNN ----
    Comparison(
        MOMRNN,
        "Fig. 2",
        "gradient norms through time, RNN vs MomentumRNN",
        rows=r"^Nguyen et al., MomentumRNN: Fig\. 2",
    ),
    Comparison(
        MOMRNN,
        "Table 1",
        "best test accuracy on MNIST and PMNIST, momentum cells vs LSTM",
        rows=r"^Nguyen et al., MomentumRNN: Table 1",
    ),
    Comparison(
        MOMRNN,
        "Fig. 3",
        "train and test loss, MomentumLSTM and variants vs LSTM (MNIST, TIMIT)",
        needs=f"{_MNIST}; {_TIMIT}",
        kind="data",
    ),
    Comparison(MOMRNN, "Table 2", "TIMIT test and validation MSE", needs=_TIMIT, kind="data"),
    Comparison(
        MOMRNN,
        "Fig. 4",
        "train loss on the copying and adding tasks",
        needs=_gpu(
            "10-20", "LSTMs of 128-256 units over 750-2,000 steps for thousands of iterations"
        )
        + "; the data are synthetic, but no experiment builds them yet",
        kind="gpu",
    ),
    Comparison(MOMRNN, "Table 3", "Penn Treebank test perplexity", needs=_PTB, kind="data"),
    Comparison(MOMRNN, "Fig. 5", "Penn Treebank train and test loss", needs=_PTB, kind="data"),
    Comparison(
        MOMRNN,
        "Table 4",
        "PMNIST accuracy, MomentumDTRIV vs DTRIV",
        needs=f"an orthogonal RNN cell (DTRIV) and its momentum variant, not built; {_MNIST}",
        kind="capability",
    ),
    Comparison(
        MOMRNN,
        "Table 5",
        "TIMIT MSE, MomentumDTRIV vs DTRIV",
        needs=f"the DTRIV cells, not built; {_TIMIT}",
        kind="capability",
    ),
    Comparison(
        MOMRNN,
        "Fig. 6",
        "train and test loss, MomentumDTRIV vs DTRIV (PMNIST, TIMIT)",
        needs=f"the DTRIV cells, not built; {_MNIST}; {_TIMIT}",
        kind="capability",
    ),
    Comparison(
        MOMRNN,
        "Fig. 7",
        "ablation of MomentumLSTM's momentum and step size (MNIST, TIMIT)",
        needs=f"{_MNIST}; {_TIMIT}",
        kind="data",
    ),
    # ---- Momentum ResNets ----
    Comparison(
        MOMRES,
        "Fig. 1",
        "fitting x -> -x^3 with tied weights: Momentum ResNet vs ResNet",
        rows=r"^Sander et al., Momentum ResNets: Fig\. 1\b",
    ),
    Comparison(
        MOMRES,
        "Fig. 2",
        "memory needed for the gradient against depth, ResNet vs Momentum ResNet",
        needs="a ledger row on the memory measurements (analysis/results/momres_memory holds a "
        "benchmark, not a row)",
        kind="capability",
    ),
    Comparison(
        MOMRES,
        "Fig. 5",
        "separating four nested rings: Momentum ResNet vs ResNet",
        rows=r"^Sander et al., Momentum ResNets: Fig\. 5",
    ),
    Comparison(
        MOMRES,
        "Table 2",
        "CIFAR-10 and CIFAR-100 test accuracy over 10 runs, Momentum ResNets vs ResNets",
        needs=f"{_CIFAR} (nor CIFAR-100); "
        + _gpu("200-400", "ResNet-18/34/101 for 200+ epochs, 10 runs each"),
        kind="data",
    ),
    Comparison(
        MOMRES,
        "Fig. 6",
        "accuracy against the momentum gamma at training and at evaluation (CIFAR-10)",
        needs=f"{_CIFAR}; " + _gpu("50-100", "Momentum ResNet-101 trained at several gammas"),
        kind="data",
    ),
    Comparison(
        MOMRES,
        "Fig. 7",
        "memory used against batch size, and accuracy against memory (ImageNet)",
        needs="ImageNet is not offline; "
        + _gpu("1,000+", "ResNet-101/152 on ImageNet for 90 epochs"),
        kind="data",
    ),
    Comparison(
        MOMRES,
        "Fig. 8",
        "fine-tuning on hymenoptera: accuracy against time, Momentum ResNet-152 vs ResNet-152",
        needs="the hymenoptera images and ImageNet-pretrained ResNet-152 weights are not offline",
        kind="data",
    ),
    Comparison(
        MOMRES,
        "Fig. 9",
        "accuracy after 120 iterations against the number of channels (CIFAR-10)",
        needs=_CIFAR,
        kind="data",
    ),
    Comparison(
        MOMRES,
        "Fig. 10",
        "LISTA: test loss against depth, Momentum ResNet, LISTA and RevNet",
        rows=r"^Sander et al., Momentum ResNets: Fig\. 10",
    ),
    Comparison(
        MOMRES,
        "Fig. 12",
        "test error and loss against depth on CIFAR-10, ResNet-101 vs Momentum ResNets-101",
        needs=f"{_CIFAR}; " + _gpu("100-200", "ResNet-101 variants at several depths"),
        kind="data",
    ),
    # ---- CSAODE ----
    Comparison(
        CSAODE,
        "Table 1",
        "test accuracy on CR, MR, MPQA, SUBJ and TREC, CSAODE variants and baselines",
        rows=r"^Zhang et al., CSAODE: Table 1",
    ),
    Comparison(
        CSAODE,
        "Fig. 4",
        "self-attention scores evolving in ODE time (continuity analysis)",
        rows=r"^Zhang et al., CSAODE: Fig\. 4",
    ),
    Comparison(
        CSAODE,
        "Table 2",
        "ablation of CSAARK on TREC (convolution, ODE block, fusion)",
        rows=r"^Zhang et al., CSAODE: Table 2",
    ),
    Comparison(
        CSAODE,
        "Fig. 5",
        "training time against step size, CSARK vs CSAARK",
        rows=r"^Zhang et al., CSAODE: Fig\. 5",
    ),
    Comparison(
        CSAODE,
        "Table 3",
        "accuracy against hidden size, step size and filter size (TREC)",
        rows=r"^Zhang et al., CSAODE: Table 3",
    ),
    Comparison(
        CSAODE,
        "Table 4",
        "SNLI and WikiQA results of the CSAODE models",
        needs="SNLI and WikiQA are not offline",
        kind="data",
    ),
)

NOT_COMPARISONS: dict[tuple[str, str], str] = {
    (REVIEW, "Fig. 1"): "an illustration of the recurrent, momentum and Adam cells",
    (
        REVIEW,
        "Table 4",
    ): "the batch size and learning rate of each data set (a setting: the recipes read it)",
    (
        REVIEW,
        "Table 5",
    ): "the parameter counts of the image classifiers (a setting: dynkit.models.from_paper)",
    (MOMTR, "Table 1"): "the momentum and step-size hyperparameters (a setting)",
    (MOMTR, "Fig. 3"): "generated MNIST samples shown side by side, no measured comparison",
    (MOMRNN, "Fig. 1"): "an illustration of the cells",
    (
        MOMRES,
        "Table 1",
    ): "properties of reversible architectures by construction (checked in dynkit.theory)",
    (MOMRES, "Fig. 3"): "an overview of four paradigms (a diagram)",
    (
        MOMRES,
        "Fig. 4",
    ): "the theoretical lambda_epsilon of Theorem 1 (checked in dynkit.theory), no experiment",
    (MOMRES, "Fig. 11"): "an illustration of Proposition 10",
    (CSAODE, "Fig. 1"): "the architecture (a diagram)",
    (CSAODE, "Fig. 2"): "the self-attention ODE solver (a diagram)",
    (CSAODE, "Fig. 3"): "the fusion layer (a diagram)",
    (
        CSAODE,
        "Fig. 6",
    ): "attention probabilities of the fusion layer visualised, no measured comparison",
}
"""The tables and figures that compare nothing, and why."""


def not_run(claims) -> list[Comparison]:
    """The comparisons no registered claim tests."""
    return [c for c in COMPARISONS if not c.claim_ids(claims)]
