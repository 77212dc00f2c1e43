"""Bad inputs to every public entry point end in a clear error (issue 14, sections 5 and 6).

For every public callable of ``dk.models``, ``dk.tasks`` and ``dk.io`` and every ``dynkit`` command,
generated bad inputs (hypothesis, derandomised) must end in ``ValueError``/``TypeError``/
``dk.SolverError`` whose message names the argument and says what it got -- never another exception
type (a *raw* crash) and never a result (*accepted*). On the command line: exit status 2 and a last
line ``dynkit CMD: error: ...`` naming the argument (or the value given), no traceback.

The suite grows with the API: the public callables are enumerated from the modules, and one without
cases here fails :func:`test_every_public_entry_point_has_bad_input_cases`.

Some cases must end in a correct result instead (``checked``): one that returns something wrong
counts as *wrong*. ``python tests/test_bad_inputs.py`` runs every case and prints the counts: cases,
clear (a named error or a correct result), terse (the right type but a message without the
argument's name), raw, accepted, wrong -- the last three must be zero.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import types
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynkit as dk
import dynkit.io
import dynkit.models as M
import dynkit.tasks as T

sys.path.insert(0, os.path.dirname(__file__))
from shared_data import SENTENCE_DATA  # noqa: E402

torch.set_num_threads(1)
LEDGER: Counter = Counter()
PROBLEMS: list = []
# raise at the first unclear outcome (tests); False: record them all (the survey in main())
STRICT = True
EXAMPLES = 8  # generated bad values per argument

# --------------------------------------------------------------------------------------------------
# classification


class Unclear(AssertionError):
    pass


def attempt(entry: str, arg: str, thunk, bad=None, names=None) -> str:
    """Run ``thunk`` (which passes a bad ``arg``) and classify what happens; raise unless clear.

    clear: ValueError/TypeError/SolverError whose message names the argument (any of ``names``)
    and says what it received ("got ...", or Python's own "... was given" for a call that takes no
    arguments).
    """
    names = names or (arg,)
    try:
        thunk()
    except (ValueError, TypeError, dk.SolverError) as err:
        message = str(err)
        named = any(n in message for n in names)
        says = "got" in message or "was given" in message
        outcome = "clear" if named and says else "terse"
        detail = f"{type(err).__name__}: {message}"
    except Exception as err:  # noqa: BLE001 - exactly what this suite is looking for
        outcome, detail = "raw", f"{type(err).__name__}: {err}"
    else:
        outcome, detail = "accepted", "no error"
    LEDGER["cases"] += 1
    LEDGER[outcome] += 1
    if outcome != "clear":
        _report(Unclear(f"{entry}: bad {arg}={bad!r:.60}: {outcome}: {detail[:300]}"))
    return outcome


def checked(entry: str, case: str, thunk, correct) -> str:
    """A case that must end in a correct result: ``correct(thunk())`` true is clear, false is
    *wrong*, an exception is *raw*."""
    try:
        result = thunk()
    except Exception as err:  # noqa: BLE001
        outcome, detail = "raw", f"{type(err).__name__}: {err}"
    else:
        outcome, detail = (
            ("clear", "") if correct(result) else ("wrong", f"wrong result {result!r:.200}")
        )
    LEDGER["cases"] += 1
    LEDGER[outcome] += 1
    if outcome != "clear":
        _report(Unclear(f"{entry}: {case}: {outcome}: {detail[:300]}"))
    return outcome


def _report(problem: Unclear) -> None:
    if STRICT:
        raise problem
    PROBLEMS.append(str(problem))


def fuzz(entry: str, arg: str, call, strategy, n: int = EXAMPLES, names=None) -> None:
    """``call(bad)`` for ``n`` generated bad values of ``arg``."""

    @settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(bad):
        attempt(entry, arg, lambda: call(bad), bad, names)

    run()


def builder(cls, **defaults):
    """``build(**overrides)``: ``cls`` called with valid ``defaults``, some replaced by bad
    values."""
    return lambda **overrides: cls(**{**defaults, **overrides})


def constructor(entry: str, build, bad_args: dict, n: int = EXAMPLES) -> None:
    """``build(**{arg: bad})`` for every bad argument (the others valid)."""
    for arg, strategy in bad_args.items():
        fuzz(entry, arg, lambda bad, arg=arg: build(**{arg: bad}), strategy, n)


# --------------------------------------------------------------------------------------------------
# bad values

NAN, INF = float("nan"), float("inf")
NOT_NUMBERS = [None, "1", [1], True]


def bad_int(minimum: int = 1):
    return st.one_of(
        st.integers(max_value=minimum - 1), st.sampled_from([2.5, NAN, INF, *NOT_NUMBERS])
    )


def bad_real_above(low: float = 0.0, inclusive: bool = False):
    """Bad values for a finite real > low (>= low with ``inclusive``)."""
    below = st.floats(max_value=low, exclude_max=inclusive, allow_nan=False)
    return st.one_of(below, st.sampled_from([NAN, INF, None, "1", True]))


def bad_unit(closed_high: bool = False):
    """Bad values for a real in [0, 1) (or [0, 1])."""
    return st.one_of(
        st.floats(max_value=0, exclude_max=True, allow_nan=False),
        st.floats(min_value=1.0, exclude_min=closed_high, allow_nan=False),
        st.sampled_from([NAN, None, "0.5", True]),
    )


SOME_BAD_INT = bad_int().filter(lambda v: v is not None)  # for an optional size (None: the default)
# a perceptron's hidden widths: a positive int or a non-empty sequence of them ([1] is a good value)
BAD_WIDTHS = st.one_of(
    SOME_BAD_INT.filter(lambda v: not isinstance(v, (list, tuple))),
    st.sampled_from([(), [], (0,), (2.5,), (3, -1)]),
)
BAD_REAL = st.sampled_from([NAN, INF, -INF, None, "1", True])  # for any finite real
BAD_BOOL = st.sampled_from([1, 0, "yes", None, 1.0])


def not_none(strategy):
    """``strategy`` without ``None`` (for an argument whose ``None`` means its default)."""
    return strategy.filter(lambda v: v is not None)


def bad_choice(allowed):
    return st.one_of(
        st.text(max_size=8).filter(lambda s: s not in allowed), st.sampled_from([None, 3, 1.5])
    )


def bad_tensor_values(shape, dtype=torch.float32):
    """Tensors of the right shape holding nan or inf."""
    return st.sampled_from([NAN, INF, -INF]).map(lambda v: torch.full(shape, v, dtype=dtype))


NOT_TENSORS = st.sampled_from([None, 3, "x", [[1.0, 2.0]], np.ones((2, 3))])
NOT_MODULES = st.sampled_from([None, 3, "field", [1, 2], lambda t, h: h])

# --------------------------------------------------------------------------------------------------
# dk.models


def _mlp(width=3, hidden=4):
    return M.MLPField(width, hidden)


def _node(cls=M.HBNODE, width=3, **kw):
    return cls(_mlp(width), **kw)


def _models_neural_ode():
    cases = {}
    for name in ("NODE", "ANODE", "SONODE", "HBNODE", "GHBNODE"):
        cls = getattr(M, name)

        def run(cls=cls, name=name):
            width = 6 if name == "SONODE" else 3  # SONODE's field sees [h, v]
            aug = {"augment_dim": 0} if name not in ("NODE",) else {}
            build = builder(cls, field=M.MLPField(width, 4), **aug)
            bad = {
                "field": NOT_MODULES,
                "rtol": bad_real_above(),
                "atol": bad_real_above(),
                "method": bad_choice(()),
                "solver": bad_choice(("torchdiffeq", "dynkit")),
                "t1": BAD_REAL,
                "adjoint": BAD_BOOL,
            }
            if name != "NODE":
                bad["augment_dim"] = bad_int(0)
            if name in ("HBNODE", "GHBNODE"):
                bad.update(omega=BAD_REAL, epsilon=bad_real_above(), learn_gamma=BAD_BOOL)
            if name == "GHBNODE":
                bad.update(
                    chi=BAD_REAL, learn_xi=BAD_BOOL, activation=st.sampled_from([None, 3, "tanh"])
                )
            for arg, strategy in bad.items():
                fuzz(name, arg, lambda v, arg=arg: build(**{arg: v}), strategy)
            model = build()
            fuzz(
                name,
                "x",
                model,
                st.one_of(
                    NOT_TENSORS,
                    bad_tensor_values((2, 3)),
                    st.integers(1, 6).filter(lambda w: w != 3).map(lambda w: torch.ones(2, w)),
                    st.just(torch.ones(2, 3, dtype=torch.int64)),
                ),
            )

        cases[name] = run
    return cases


def _models_fields():
    def mlp():
        constructor(
            "MLPField",
            builder(M.MLPField, in_dim=3, hidden=4),
            {
                "in_dim": bad_int(),
                "hidden": bad_int(),
                "out_dim": SOME_BAD_INT,
                "time": BAD_BOOL,
                "activation": st.sampled_from([3, "elu"]),
            },
        )
        field = M.MLPField(3, 4)
        fuzz(
            "MLPField",
            "h",
            lambda h: field(torch.tensor(0.0), h),
            st.one_of(
                NOT_TENSORS,
                st.integers(1, 6).filter(lambda w: w != 3).map(lambda w: torch.ones(2, w)),
            ),
        )

    def conv():
        constructor(
            "ConvField",
            builder(M.ConvField, in_channels=2, hidden=4),
            {
                "in_channels": bad_int(),
                "hidden": bad_int(),
                "out_channels": SOME_BAD_INT,
                "time": BAD_BOOL,
            },
        )
        field = M.ConvField(2, 4)
        fuzz(
            "ConvField",
            "h",
            lambda h: field(torch.tensor(0.0), h),
            st.one_of(
                NOT_TENSORS,
                st.sampled_from([torch.ones(1, 3, 4, 4), torch.ones(2, 2), torch.ones(1, 2, 4)]),
            ),
        )

    def conv_initial():
        constructor(
            "ConvInitial",
            builder(M.ConvInitial, in_channels=2, out_channels=3, hidden=4),
            {"in_channels": bad_int(), "out_channels": bad_int(), "hidden": bad_int()},
        )
        net = M.ConvInitial(2, 3, 4)
        fuzz(
            "ConvInitial",
            "x",
            net,
            st.one_of(NOT_TENSORS, st.sampled_from([torch.ones(1, 3, 4, 4), torch.ones(2, 2)])),
        )

    def wrapper(name, n_scalars):
        cls = getattr(M, name)

        def run():
            scalars = [M.damping(), M.skip_coefficient()][:n_scalars]
            fuzz(name, "field", lambda f: cls(f, *scalars), NOT_MODULES)
            if n_scalars:
                fuzz(
                    name,
                    "gamma",
                    lambda g: cls(_mlp(), g, *scalars[1:]),
                    st.sampled_from([0.5, None, "gamma"]),
                )
            if name in ("SecondOrder", "HeavyBall", "GeneralizedHeavyBall"):
                width = 6 if name == "SecondOrder" else 3
                rhs = cls(M.MLPField(width, 4), *scalars)
                fuzz(
                    name,
                    "z",
                    lambda z: rhs(torch.tensor(0.0), z),
                    st.sampled_from([torch.ones(2, 5), torch.ones(2, 7), torch.ones(3)]),
                )

        return run

    def damping():
        fuzz("damping", "omega", lambda v: M.damping(v), BAD_REAL)
        fuzz("damping", "epsilon", lambda v: M.damping(epsilon=v), bad_real_above())
        fuzz("damping", "learnable", lambda v: M.damping(learnable=v), BAD_BOOL)

    def skip():
        fuzz("skip_coefficient", "chi", lambda v: M.skip_coefficient(v), BAD_REAL)
        fuzz("skip_coefficient", "learnable", lambda v: M.skip_coefficient(learnable=v), BAD_BOOL)

    return {
        "MLPField": mlp,
        "ConvField": conv,
        "ConvInitial": conv_initial,
        "damping": damping,
        "skip_coefficient": skip,
        "FirstOrder": wrapper("FirstOrder", 0),
        "SecondOrder": wrapper("SecondOrder", 0),
        "HeavyBall": wrapper("HeavyBall", 1),
        "GeneralizedHeavyBall": wrapper("GeneralizedHeavyBall", 2),
    }


def _models_blocks():
    def ode_block():
        build = builder(M.ODEBlock, dynamics=M.FirstOrder(_mlp()))
        constructor(
            "ODEBlock",
            build,
            {
                "dynamics": NOT_MODULES,
                "t0": BAD_REAL,
                "t1": BAD_REAL,
                "solver": bad_choice(("torchdiffeq", "dynkit")),
                "method": bad_choice(()),
                "rtol": bad_real_above(),
                "atol": bad_real_above(),
                "adjoint": BAD_BOOL,
                "step_size": st.sampled_from([0.0, NAN, INF, "0.1"]),
            },
        )
        attempt(
            "ODEBlock",
            "method",
            lambda: build(solver="dynkit", method="rk4"),
            "rk4",
            names=("step_size",),
        )
        attempt("ODEBlock", "method", lambda: build(method="ark4"), "ark4")
        block = build()
        fuzz("ODEBlock", "z0", block, st.one_of(NOT_TENSORS, bad_tensor_values((2, 3))))
        fuzz("ODEBlock.set_tolerance", "rtol", block.set_tolerance, bad_real_above())

    def ode_blocks():
        fuzz("ode_blocks", "module", M.ode_blocks, NOT_TENSORS)

    def set_tolerance():
        fuzz("set_tolerance", "module", lambda m: M.set_tolerance(m, 1e-3), NOT_TENSORS)
        attempt(
            "set_tolerance",
            "module",
            lambda: M.set_tolerance(torch.nn.Linear(2, 2), 1e-3),
            "Linear",
        )
        fuzz("set_tolerance", "rtol", lambda v: M.set_tolerance(_node(), v), bad_real_above())
        fuzz(
            "set_tolerance",
            "atol",
            lambda v: M.set_tolerance(_node(), 1e-3, v),
            st.sampled_from([0.0, -1.0, NAN, INF, "1"]),
        )

    def classifier():
        constructor(
            "Classifier",
            builder(M.Classifier, ode=_node(), in_shape=(3,), n_outputs=2),
            {
                "ode": NOT_MODULES,
                "in_shape": st.sampled_from([(), (0,), (-1,), (2.5,), "3", None, 3]),
                "n_outputs": bad_int(),
                "bound": st.sampled_from([0.0, -1.0, NAN, INF, "1", True]),
            },
        )
        net = M.Classifier(_node(), (3,), 2)
        fuzz(
            "Classifier",
            "x",
            net,
            st.one_of(NOT_TENSORS, st.sampled_from([torch.ones(2, 4), torch.ones(2, 3, 1)])),
        )

    def from_paper():
        fuzz(
            "from_paper", "model", lambda m: M.from_paper(m, "digits"), bad_choice(tuple(M.MODELS))
        )
        fuzz(
            "from_paper",
            "task",
            lambda t: M.from_paper("hbnode", t),
            bad_choice(("mnist", "digits")),
        )
        fuzz(
            "from_paper",
            "method",
            lambda m: M.from_paper("hbnode", "digits", method=m),
            bad_choice(()),
        )
        fuzz(
            "from_paper",
            "rtol",
            lambda v: M.from_paper("hbnode", "digits", rtol=v),
            bad_real_above(),
        )
        attempt(
            "from_paper", "bogus_option", lambda: M.from_paper("hbnode", "digits", bogus_option=1)
        )

    def count_parameters():
        fuzz("count_parameters", "module", M.count_parameters, NOT_TENSORS)

    return {
        "ODEBlock": ode_block,
        "ode_blocks": ode_blocks,
        "set_tolerance": set_tolerance,
        "Classifier": classifier,
        "from_paper": from_paper,
        "count_parameters": count_parameters,
    }


def _models_csaode():
    def csaode():
        build = builder(M.CSAODE, vocab_size=10, n_classes=2, d=4, embed_dim=4)
        constructor(
            "CSAODE",
            build,
            {
                "vocab_size": bad_int(2),
                "n_classes": bad_int(2),
                "d": bad_int(),
                "embed_dim": bad_int(),
                "window": bad_int(),
                "n_blocks": bad_int(),
                "solver": bad_choice(("rk", "rkf", "ark")),
                "step": st.one_of(
                    st.floats(max_value=0.0, allow_nan=False),
                    st.floats(min_value=1.0, exclude_min=True),
                    st.sampled_from([NAN, None, "0.2"]),
                ),
                "rtol": bad_real_above(),
                "atol": bad_real_above(),
                "architecture": bad_choice(("ode", "blocks")),
                "dropout": bad_unit(),
                "convolution": BAD_BOOL,
                "ffn_hidden": BAD_BOOL,
            },
        )
        model = build()
        tokens = st.one_of(
            NOT_TENSORS,
            st.integers(10, 10**6).map(lambda i: torch.tensor([[1, i]])),  # beyond vocab
            st.integers(-(10**6), -1).map(lambda i: torch.tensor([[1, i]])),  # negative ids
            st.sampled_from(
                [
                    torch.tensor([[1.0, 2.0]]),
                    torch.tensor([1, 2]),  # float, 1-D
                    torch.tensor([[True, False]]),
                    torch.tensor([[0, 0]]),
                ]
            ),
        )  # bool, all pad
        fuzz("CSAODE", "tokens", model, tokens)
        fuzz(
            "CSAODE",
            "mask",
            lambda m: model(torch.tensor([[1, 2]]), m),
            st.sampled_from([torch.ones(1, 3, dtype=torch.bool), "mask", 3]),
        )
        fuzz(
            "CSAODE.attention_over_time",
            "tokens",
            lambda t: model.attention_over_time(t, [0.5]),
            tokens,
        )
        fuzz(
            "CSAODE.attention_over_time",
            "times",
            lambda t: model.attention_over_time(torch.tensor([[1, 2]]), t),
            st.sampled_from([[NAN], [-1.0], [99.0], ["a"]]),
        )

    return {"CSAODE": csaode}


def _models_momentum_resnet():
    lin = lambda: torch.nn.Linear(4, 4)  # noqa: E731

    def momentum_resnet():
        build = builder(M.MomentumResNet, functions=[lin()], gamma=0.9)
        constructor(
            "MomentumResNet",
            build,
            {
                "functions": st.sampled_from([[], lin(), [3], None, "f"]),
                "gamma": bad_unit(closed_high=True),
                "init_speed": st.sampled_from([3, "zero"]),
                "exact": BAD_BOOL,
                "frac_bits": bad_int(1),
                "preserve_rng_state": BAD_BOOL,
            },
        )
        for exact in (True, False):
            net = build(exact=exact)
            x_bad = st.one_of(
                NOT_TENSORS,
                bad_tensor_values((2, 4), torch.float64),
                st.sampled_from(
                    [torch.ones(2, 5, dtype=torch.float64), torch.ones(2, 4, dtype=torch.int64)]
                ),
            )
            fuzz("MomentumResNet", "x", net, x_bad)
            fuzz(
                "MomentumResNet",
                "v",
                lambda v: net(torch.ones(2, 4, dtype=torch.float64), v),
                st.sampled_from([torch.ones(2, 3, dtype=torch.float64), torch.ones(2, 4), "v"]),
            )

    def revnet():
        build = builder(M.RevNet, phi_functions=[lin()], psi_functions=[lin()])
        constructor(
            "RevNet",
            build,
            {
                "phi_functions": st.sampled_from([[], lin(), [3], None]),
                "psi_functions": st.sampled_from([[], [lin(), lin()], None]),
                "exact": BAD_BOOL,
                "frac_bits": bad_int(1),
                "preserve_rng_state": BAD_BOOL,
            },
        )
        fuzz("RevNet.tied", "depth", lambda d: M.RevNet.tied(lin(), lin(), d), bad_int())
        net = build(exact=False)
        fuzz(
            "RevNet",
            "x",
            net,
            st.one_of(
                NOT_TENSORS,
                bad_tensor_values((2, 4), torch.float64),
                st.just(torch.ones(2, 3, dtype=torch.float64)),
            ),
        )

    def stage():
        fuzz("MomentumStage", "momentum", M.MomentumStage, st.sampled_from([None, lin(), "m"]))
        fuzz("ResidualBranch", "block", M.ResidualBranch, st.sampled_from([None, 3, "block"]))

    def to_momentum():
        fuzz(
            "to_momentum_resnet",
            "stage",
            lambda s: M.to_momentum_resnet(s, 0.9),
            st.sampled_from([[], [3], "stage"]),
        )
        fuzz(
            "to_momentum_resnet",
            "gamma",
            lambda g: M.to_momentum_resnet([lin()], g),
            bad_unit(closed_high=True),
        )

    def buffer():
        fuzz(
            "InformationBuffer",
            "shape",
            lambda s: M.InformationBuffer(s, Fraction(1, 2)),
            st.sampled_from([(-1,), (2.5,), "3", None]),
        )
        fuzz(
            "InformationBuffer",
            "ratio",
            lambda r: M.InformationBuffer((2,), r),
            st.sampled_from([0.5, Fraction(3, 2), Fraction(-1, 2), "1/2", None, NAN]),
        )
        fuzz(
            "InformationBuffer",
            "device",
            lambda d: M.InformationBuffer((2,), Fraction(1, 2), d),
            st.sampled_from(["nosuch", 3.5, None]).filter(lambda d: d is not None),
        )
        buf = M.InformationBuffer((2,), Fraction(1, 2))
        fuzz(
            "InformationBuffer.multiply",
            "c",
            buf.multiply,
            st.sampled_from([torch.ones(2), torch.ones(3, dtype=torch.int64)]),
        )

    return {
        "MomentumResNet": momentum_resnet,
        "RevNet": revnet,
        "MomentumStage": stage,
        "ResidualBranch": stage,
        "to_momentum_resnet": to_momentum,
        "InformationBuffer": buffer,
    }


def _qkv(b=1, h=1, n=3, d=2):
    return torch.randn(b, h, n, d), torch.randn(b, h, n, d), torch.randn(b, h, n, d)


def _models_attention():
    def qkv_cases(entry, fn, **fixed):
        q, k, v = _qkv()
        for pos, name in enumerate("qkv"):

            def call(bad, pos=pos):
                args = [q, k, v]
                args[pos] = bad
                return fn(*args, **fixed)

            fuzz(
                entry,
                name,
                call,
                st.one_of(
                    NOT_TENSORS,
                    bad_tensor_values((1, 1, 3, 2)),
                    st.sampled_from(
                        [torch.ones(1, 1, 3), torch.ones(1, 1, 3, 2, dtype=torch.int64)]
                    ),
                ),
            )
        fuzz(entry, "causal", lambda c: fn(q, k, v, causal=c, **fixed), BAD_BOOL)

    def softmax():
        qkv_cases("softmax_attention", M.softmax_attention)

    def linear():
        qkv_cases("linear_attention", M.linear_attention)
        q, k, v = _qkv()
        fuzz(
            "linear_attention",
            "eps",
            lambda e: M.linear_attention(q, k, v, eps=e),
            bad_real_above(),
        )
        fuzz("linear_attention", "chunk", lambda c: M.linear_attention(q, k, v, chunk=c), bad_int())
        fuzz(
            "linear_attention",
            "feature_map",
            lambda f: M.linear_attention(q, k, v, feature_map=f),
            st.sampled_from(["relu", 3]),
        )

    def momentum(entry, fn):
        def run():
            qkv_cases(entry, fn, beta=0.5)
            q, k, v = _qkv()
            fuzz(entry, "beta", lambda b: fn(q, k, v, b), bad_unit())
            fuzz(entry, "gamma", lambda g: fn(q, k, v, 0.5, g), bad_real_above())
            fuzz(entry, "eps", lambda e: fn(q, k, v, 0.5, eps=e), bad_real_above())

        return run

    def step():
        q, k, v = (t[:, :, 0] for t in _qkv())
        fn = M.momentum_attention_step
        fuzz("momentum_attention_step", "beta", lambda b: fn(q, k, v, None, b), bad_unit())
        fuzz(
            "momentum_attention_step",
            "gamma",
            lambda g: fn(q, k, v, None, 0.5, g),
            bad_real_above(),
        )
        fuzz(
            "momentum_attention_step",
            "q",
            lambda x: fn(x, k, v, None, 0.5),
            st.one_of(NOT_TENSORS, bad_tensor_values((1, 1, 2)), st.just(torch.ones(1, 1, 3))),
        )
        fuzz(
            "momentum_attention_step",
            "state",
            lambda s: fn(q, k, v, s, 0.5),
            st.sampled_from([(1, 2), "s", [1]]),
        )

    def weights():
        fuzz(
            "momentum_weights", "beta", lambda b: M.momentum_weights(torch.arange(3), b), bad_unit()
        )
        fuzz(
            "momentum_weights",
            "n",
            lambda n: M.momentum_weights(n, 0.5),
            st.sampled_from([torch.tensor([-1.0]), torch.tensor([NAN]), [1, 2], 3]),
        )

    def adaptive():
        g = torch.ones(3)
        fuzz(
            "adaptive_momentum",
            "grad",
            lambda x: M.adaptive_momentum(x, g),
            st.one_of(NOT_TENSORS, bad_tensor_values((3,)), st.just(torch.ones(4))),
        )
        fuzz("adaptive_momentum", "grad_prev", lambda x: M.adaptive_momentum(g, x), NOT_TENSORS)
        fuzz(
            "adaptive_momentum",
            "delta",
            lambda d: M.adaptive_momentum(g, g, delta=d),
            bad_unit(closed_high=True).filter(lambda d: d != 0.0 or True),
        )
        fuzz(
            "adaptive_momentum",
            "step",
            lambda s: M.adaptive_momentum(g, g, step=s, x=g, x_prev=g),
            bad_real_above(),
        )
        fuzz(
            "adaptive_momentum",
            "x",
            lambda x: M.adaptive_momentum(g, g, step=1.0, x=x, x_prev=g),
            st.one_of(NOT_TENSORS.filter(lambda x: x is not None), st.just(torch.ones(4))),
        )

    return {
        "softmax_attention": softmax,
        "linear_attention": linear,
        "momentum_attention": momentum("momentum_attention", M.momentum_attention),
        "momentum_attention_recurrent": momentum(
            "momentum_attention_recurrent", M.momentum_attention_recurrent
        ),
        "momentum_attention_step": step,
        "momentum_weights": weights,
        "adaptive_momentum": adaptive,
    }


def _models_recurrent():
    def rnn():
        build = builder(M.MomentumRNN, input_size=2, hidden_size=3)
        constructor(
            "MomentumRNN",
            build,
            {
                "input_size": bad_int(),
                "hidden_size": bad_int(),
                "cell": bad_choice(("rnn", "lstm")),
                "rule": bad_choice(tuple(M.MOMENTUM_RULES)),
                "mu": bad_real_above(inclusive=True),
                "s": bad_real_above(),
                "beta": bad_unit(),
                "eps": bad_real_above(),
                "parametrization": bad_choice(("standard", "remark")),
            },
        )
        fuzz(
            "MomentumRNN",
            "restart_every",
            lambda r: build(rule="restart", restart_every=r),
            bad_int(),
        )
        net = build(cell="lstm")
        fuzz(
            "MomentumRNN",
            "x",
            net,
            st.one_of(
                NOT_TENSORS,
                bad_tensor_values((2, 4, 2)),
                st.sampled_from([torch.ones(2, 4, 3), torch.ones(2, 0, 2), torch.ones(4, 2)]),
            ),
        )
        x = torch.ones(2, 4, 2)
        fuzz(
            "MomentumRNN",
            "state",
            lambda s: net(x, s),
            st.sampled_from(
                [{"h": torch.ones(2, 5)}, {"h": "h"}, {"bogus": 1}, {"t": -1}, "state", [1]]
            ),
        )
        fuzz("MomentumRNN", "return_states", lambda r: net(x, return_states=r), BAD_BOOL)

    def rule():
        build = builder(M.MomentumRule, name="r", velocity=True, second_moment=False)
        constructor(
            "MomentumRule",
            build,
            {
                "name": st.sampled_from(["", None, 3]),
                "velocity": BAD_BOOL,
                "second_moment": BAD_BOOL,
                "schedule": st.sampled_from([3, "mu"]),
            },
        )

    def classifier():
        build = builder(M.SequenceClassifier, input_size=2, hidden_size=3, n_outputs=2)
        constructor(
            "SequenceClassifier",
            build,
            {
                "n_outputs": bad_int(),
                "every_step": BAD_BOOL,
                "input_size": bad_int(),
                "rule": bad_choice(("momentum",)),
            },
        )
        fuzz(
            "SequenceClassifier", "x", build(), st.one_of(NOT_TENSORS, st.just(torch.ones(2, 4, 3)))
        )

    def transformer():
        build = builder(
            M.MomentumTransformer, vocab_size=10, max_length=8, d_model=8, heads=2, layers=1, d_ff=8
        )
        constructor(
            "MomentumTransformer",
            build,
            {
                "vocab_size": bad_int(),
                "max_length": bad_int(),
                "d_model": bad_int(),
                "heads": bad_int(),
                "layers": bad_int(),
                "d_ff": bad_int(),
                "attention": bad_choice(("softmax", "linear", "momentum")),
                "beta": bad_unit(),
                "gamma": bad_real_above(),
                "connection": bad_choice(("residual", "momentum", "adaptive")),
                "connection_beta": bad_unit(),
                "connection_step": bad_real_above(),
                "causal": BAD_BOOL,
                "dropout": bad_unit(),
            },
        )
        attempt("MomentumTransformer", "heads", lambda: build(heads=3), 3)  # 8 not divisible by 3
        model = build()
        fuzz(
            "MomentumTransformer",
            "tokens",
            model,
            st.one_of(
                NOT_TENSORS,
                st.integers(10, 10**6).map(lambda i: torch.tensor([[1, i]])),
                st.integers(-(10**6), -1).map(lambda i: torch.tensor([[1, i]])),
                st.sampled_from(
                    [
                        torch.tensor([[1.0, 2.0]]),
                        torch.ones(1, 9, dtype=torch.long),
                        torch.ones(1, 0, dtype=torch.long),
                        torch.ones(2, dtype=torch.long),
                    ]
                ),
            ),
        )

    def mha():
        build = builder(M.MultiHeadAttention, d_model=8, heads=2)
        constructor(
            "MultiHeadAttention",
            build,
            {
                "d_model": bad_int(),
                "heads": bad_int(),
                "beta": bad_unit(),
                "gamma": bad_real_above(),
                "causal": BAD_BOOL,
                "attention": bad_choice(("softmax", "linear", "momentum")),
            },
        )
        fuzz(
            "MultiHeadAttention",
            "x",
            build(),
            st.one_of(
                NOT_TENSORS,
                st.sampled_from(
                    [torch.ones(1, 3, 7), torch.ones(3, 8), torch.ones(1, 3, 8, dtype=torch.long)]
                ),
            ),
        )

    def layer():
        build = builder(M.TransformerLayer, d_model=8, heads=2, d_ff=8)
        constructor(
            "TransformerLayer",
            build,
            {
                "d_ff": bad_int(),
                "connection": bad_choice(("residual",)),
                "connection_beta": bad_unit(),
                "connection_step": bad_real_above(),
                "delta": bad_unit(closed_high=True),
                "dropout": bad_unit(),
            },
        )
        fuzz(
            "TransformerLayer",
            "x",
            lambda x: build()(x, None, None),
            st.one_of(NOT_TENSORS, st.just(torch.ones(1, 3, 7))),
        )

    return {
        "MomentumRNN": rnn,
        "MomentumRule": rule,
        "SequenceClassifier": classifier,
        "MomentumTransformer": transformer,
        "MultiHeadAttention": mha,
        "TransformerLayer": layer,
    }


# --------------------------------------------------------------------------------------------------
# dk.tasks


def _tasks(tmp: Path):
    def run_training():
        rt = T.run_training
        fuzz(
            "run_training",
            "model",
            lambda m: rt(m, "point_cloud", quiet=True),
            bad_choice(("hbnode", "node")),
        )
        fuzz("run_training", "task", lambda t: rt("hbnode", t, quiet=True), bad_choice(T.TASKS))
        fuzz(
            "run_training",
            "epochs",
            lambda e: rt("hbnode", "point_cloud", epochs=e, quiet=True),
            SOME_BAD_INT,
        )
        fuzz(
            "run_training",
            "seed",
            lambda s: rt("hbnode", "point_cloud", epochs=1, seed=s, quiet=True),
            bad_int(0),
        )
        # dk.solve (the default) lacks torchdiffeq's own methods and has no adjoint for the implicit
        # ones; torchdiffeq lacks dynkit's
        fuzz(
            "run_training",
            "method",
            lambda m: rt("hbnode", "point_cloud", epochs=1, method=m, quiet=True),
            st.sampled_from(
                ["adaptive_heun", "dopri8", "rosenbrock23", "rodas4", "auto", "nosuch", 3]
            ),
        )
        fuzz(
            "run_training",
            "method",
            lambda m: rt(
                "hbnode", "point_cloud", epochs=1, method=m, quiet=True, solver="torchdiffeq"
            ),
            st.sampled_from(["ark4", "ark3", "rkf45", "nosuch", 3]),
        )
        fuzz(
            "run_training",
            "tol",
            lambda t: rt("hbnode", "point_cloud", epochs=1, tol=t, quiet=True),
            st.sampled_from([0.0, -1e-3, NAN, INF, 1.5, "1e-3"]),
        )
        fuzz(
            "run_training",
            "lr",
            lambda v: rt("hbnode", "point_cloud", epochs=1, lr=v, quiet=True),
            st.sampled_from([-1.0, NAN, INF, "0.1"]),
        )
        fuzz(
            "run_training",
            "batch_size",
            lambda v: rt("hbnode", "point_cloud", epochs=1, batch_size=v, quiet=True),
            SOME_BAD_INT,
        )
        blocker = tmp / "a_file"
        blocker.write_text("")
        attempt(
            "run_training",
            "out",
            lambda: rt(
                "hbnode", "point_cloud", epochs=1, out=blocker / "run", quiet=True, method="rk4"
            ),
            blocker / "run",
        )
        attempt(
            "run_training",
            "resume",
            lambda: rt("hbnode", "point_cloud", epochs=1, resume=True, quiet=True),
        )
        for flag in ("resume", "quiet", "full"):
            attempt(
                "run_training",
                flag,
                lambda flag=flag: rt(
                    "hbnode", "point_cloud", epochs=1, **{"quiet": True, flag: "yes"}
                ),
                "yes",
            )
        attempt(
            "run_training",
            "method",
            lambda: rt("csaark", "trec", method="rk4", data_dir=SENTENCE_DATA),
            "rk4",
        )
        attempt(
            "run_training", "model", lambda: rt("hbnode", "trec", data_dir=SENTENCE_DATA), "hbnode"
        )

    def train_csaode():
        tc = T.train_csaode
        kw = dict(data_dir=SENTENCE_DATA, quiet=True)
        fuzz("train_csaode", "dataset", lambda d: tc(d, **kw), bad_choice(T.DATASETS))
        fuzz(
            "train_csaode",
            "solver",
            lambda s: tc("trec", solver=s, **kw),
            bad_choice(("rk", "rkf", "ark")),
        )
        for arg in ("epochs", "batch_size", "max_len", "d", "embed_dim", "window", "train_subset"):
            fuzz(
                "train_csaode",
                arg,
                lambda v, arg=arg: tc("trec", **{arg: v}, **kw),
                SOME_BAD_INT,
                n=4,
            )
        for arg in ("lr", "step"):
            fuzz(
                "train_csaode",
                arg,
                lambda v, arg=arg: tc("trec", **{arg: v}, **kw),
                bad_real_above(),
                n=4,
            )
        fuzz("train_csaode", "seed", lambda v: tc("trec", seed=v, **kw), bad_int(0), n=4)
        fuzz(
            "train_csaode",
            "fold",
            lambda v: tc("mr", fold=v, **kw),
            st.sampled_from([-1, 10, 2.5, "0"]),
        )
        fuzz(
            "train_csaode",
            "schedule",
            lambda v: tc("trec", schedule=v, **kw),
            bad_choice(("constant", "paper")),
            n=4,
        )
        attempt("train_csaode", "bogus", lambda: tc("trec", bogus=3, **kw), 3)
        attempt("train_csaode", "glove", lambda: tc("trec", glove="yes", **kw), "yes")
        attempt(
            "train_csaode", "data_dir", lambda: tc("trec", data_dir=tmp / "missing", quiet=True)
        )

    def load_task():
        fuzz("load_task", "task", T.load_task, bad_choice(T.TRAINING_TASKS))
        fuzz("load_task", "seed", lambda s: T.load_task("point_cloud", seed=s), bad_int(0))
        fuzz("load_task", "full", lambda f: T.load_task("point_cloud", full=f), BAD_BOOL)

    def copy_task():
        fuzz("copy_task", "n", lambda n: T.copy_task(n, 8), bad_int())
        fuzz("copy_task", "max_length", lambda m: T.copy_task(2, m), bad_int(4))
        fuzz("copy_task", "symbols", lambda s: T.copy_task(2, 8, s), bad_int())
        fuzz("copy_task", "seed", lambda s: T.copy_task(2, 8, seed=s), bad_int(0))
        fuzz("copy_task", "fixed_length", lambda f: T.copy_task(2, 8, fixed_length=f), BAD_BOOL)

    def adding_task():
        fuzz("adding_task", "n", lambda n: T.adding_task(n, 4), bad_int())
        fuzz("adding_task", "length", lambda v: T.adding_task(2, v), bad_int(2))
        fuzz("adding_task", "seed", lambda s: T.adding_task(2, 4, seed=s), bad_int(0))

    def digit_sequences():
        fuzz(
            "digit_sequences",
            "test_fraction",
            lambda f: T.digit_sequences(test_fraction=f),
            bad_unit().filter(lambda f: f != 0.0 or True),
            n=6,
        )
        fuzz("digit_sequences", "seed", lambda s: T.digit_sequences(seed=s), bad_int(0), n=4)
        fuzz("digit_sequences", "permuted", lambda p: T.digit_sequences(p), BAD_BOOL, n=4)

    def records():
        t = torch.ones(2, 3)
        fuzz("CopyData", "tokens", lambda x: T.CopyData(x, t, t, t, 12, 11), NOT_TENSORS)
        fuzz("CopyData", "vocab_size", lambda v: T.CopyData(t, t, t, t, v, 11), bad_int(2))
        fuzz("DigitSequences", "x_train", lambda x: T.DigitSequences(x, t, t, t, None), NOT_TENSORS)
        attempt(
            "DigitSequences", "x_train", lambda: T.DigitSequences(torch.ones(3, 1), t, t, t, None)
        )

    def text_dataset():
        labels = np.array([0, 1])
        build = builder(
            T.TextDataset,
            name="x",
            sentences=[["a"], ["b"]],
            labels=labels,
            classes=("n", "p"),
            folds=np.array([0, 1]),
        )
        constructor(
            "TextDataset",
            build,
            {
                "sentences": st.sampled_from(["ab", [["a"], "b"], [[1], ["b"]], None]),
                "labels": st.sampled_from(
                    [np.array([0]), np.array([0.5, 1.0]), np.array([0, 5]), None]
                ),
                "classes": st.sampled_from([("n",), None, "np"]),
                "folds": st.sampled_from([np.array([0]), None]),
            },
        )

    def vocabulary():
        fuzz(
            "Vocabulary",
            "sentences",
            T.Vocabulary,
            st.sampled_from(["a b c", [["a"], "b c"], [[1, 2]], None, 3]),
        )
        fuzz("Vocabulary", "min_count", lambda m: T.Vocabulary([["a"]], m), bad_int())
        vocab = T.Vocabulary([["a"]])
        fuzz("Vocabulary.encode", "sentence", vocab.encode, st.sampled_from(["a b", [1], None]))

    def load_dataset():
        fuzz(
            "load_dataset",
            "name",
            lambda n: T.load_dataset(n, SENTENCE_DATA),
            bad_choice(T.DATASETS),
        )
        fuzz(
            "load_dataset",
            "n_folds",
            lambda n: T.load_dataset("mr", SENTENCE_DATA, n_folds=n),
            bad_int(2),
            n=4,
        )
        fuzz(
            "load_dataset",
            "seed",
            lambda n: T.load_dataset("mr", SENTENCE_DATA, seed=n),
            bad_int(0),
            n=4,
        )
        fuzz(
            "load_dataset",
            "data_dir",
            lambda d: T.load_dataset("mr", d),
            st.sampled_from([None, 3, str(tmp / "missing"), str(tmp / "a_file")]),
        )
        # files that exist but hold no data: empty, blank only, binary garbage, unlabeled TREC
        contents = {
            "empty": b"",
            "blank": b"\n  \n\t\n",
            "binary": bytes(range(256)) * 8,
            "nul": b"a good line\x00\n",
            "noise": os.urandom(2048).replace(b"\0", b"\1"),
        }
        for label, content in contents.items():
            folder = tmp / f"bad_{label}"
            folder.mkdir(exist_ok=True)
            for name in ("rt-polarity.neg", "rt-polarity.pos", "TREC.train", "TREC.test"):
                (folder / name).write_bytes(
                    content if name != "rt-polarity.pos" else b"a fine sentence\n"
                )
            attempt("load_dataset", "data_dir", lambda f=folder: T.load_dataset("mr", f), label)
            attempt("load_dataset", "data_dir", lambda f=folder: T.load_dataset("trec", f), label)

    return {
        "run_training": run_training,
        "train_csaode": train_csaode,
        "load_task": load_task,
        "copy_task": copy_task,
        "adding_task": adding_task,
        "digit_sequences": digit_sequences,
        "CopyData": records,
        "DigitSequences": records,
        "TextDataset": text_dataset,
        "Vocabulary": vocabulary,
        "load_dataset": load_dataset,
    }


# --------------------------------------------------------------------------------------------------
# dk.io


def _io(tmp: Path):
    blocker = tmp / "a_file"
    blocker.write_text("")

    def atomic_write():
        fuzz(
            "atomic_write",
            "path",
            lambda p: dk.io.atomic_write(p, lambda fh: None),
            st.sampled_from([None, 3, ""]),
        )
        fuzz(
            "atomic_write",
            "mode",
            lambda m: dk.io.atomic_write(tmp / "x", lambda fh: None, m),
            st.sampled_from(["r", "a", "x", 3]),
        )
        fuzz(
            "atomic_write",
            "write",
            lambda w: dk.io.atomic_write(tmp / "x", w),
            st.sampled_from([None, "text"]),
        )

    def write_json():
        fuzz(
            "write_json",
            "data",
            lambda d: dk.io.write_json(tmp / "r.json", d),
            st.sampled_from([None, [1], "x", {"a": object()}, {"a": {1, 2}}]),
        )
        fuzz(
            "write_json", "path", lambda p: dk.io.write_json(p, {}), st.sampled_from([None, 3, ""])
        )

    def save_figure():
        import matplotlib.figure

        fig = matplotlib.figure.Figure()
        fuzz(
            "save_figure",
            "fig",
            lambda f: dk.io.save_figure(f, tmp / "f.png"),
            st.sampled_from([None, 3, "fig"]),
        )
        fuzz(
            "save_figure",
            "path",
            lambda p: dk.io.save_figure(fig, p),
            st.sampled_from([None, 3, str(tmp / "f.nosuch")]),
        )

    def check_writable():
        fuzz(
            "check_writable_dir",
            "out",
            dk.io.check_writable_dir,
            st.sampled_from([None, 3, "", str(blocker), str(blocker / "sub")]),
        )

    def check_output():
        # issue 34: only a regular file or a new path; a folder, a parent that is a file, a link are
        # refused
        link = tmp / "a_link"
        if not link.is_symlink():
            link.symlink_to(blocker)
        fuzz(
            "check_output_path",
            "path",
            dk.io.check_output_path,
            st.sampled_from([None, 3, "", str(blocker / "x.json"), str(tmp), str(link)]),
        )

    def kind():
        fuzz("file_kind", "mode", dk.io.file_kind, st.sampled_from([None, "x", 2.5, -1, True]))

    def orphans():
        fuzz(
            "remove_orphan_temporaries",
            "folder",
            dk.io.remove_orphan_temporaries,
            st.sampled_from([None, 3, 2.5]),
        )
        fuzz(
            "is_temporary",
            "name",
            dk.io.is_temporary,
            st.sampled_from([None, 3, b".a.dynkit-abcdefgh.tmp"]),
        )

    def own_folder():
        foreign = tmp / "foreign"
        foreign.mkdir(exist_ok=True)
        (foreign / "notes.txt").write_text("a user's")
        fuzz(
            "check_own_folder",
            "out",
            lambda p: dk.io.check_own_folder(p, "out", ("shards",)),
            st.sampled_from([None, 3, "", "/", str(foreign)]),
        )

    def readers():
        fifo = tmp / "a_fifo"
        if not fifo.exists():
            os.mkfifo(fifo)
        for name in ("read_regular_bytes", "read_regular_text"):
            fuzz(
                name,
                "path",
                getattr(dk.io, name),
                st.sampled_from([None, 3, "", str(tmp), str(fifo)]),
            )
            fuzz(
                name,
                "max_bytes",
                lambda n, name=name: getattr(dk.io, name)(blocker, max_bytes=n),
                st.sampled_from([None, -1, 2.5, True]),
            )

    def versions():
        # no input to get wrong: an argument is Python's own TypeError naming the function
        attempt("versions", "versions", lambda: dk.io.versions(1), 1)

    def write_json_nan():
        # RFC 8259 has no NaN: the file must parse with a strict parser, the non-finite values as
        # strings
        def strict(path):
            text = Path(path).read_text()
            data = json.loads(text, parse_constant=lambda c: {}["not JSON: " + c])
            return data["x"] == "nan" and data["y"] == ["inf", "-inf"] and data["z"] == "nan"

        checked(
            "write_json",
            "non-finite floats",
            lambda: dk.io.write_json(
                tmp / "n.json", {"x": float("nan"), "y": [INF, -INF], "z": np.float32("nan")}
            ),
            strict,
        )

    def jsonable():
        # any object has a JSON form (str at worst); only a container holding itself has none
        cyclic: list = [1]
        cyclic.append({"again": cyclic})
        attempt("jsonable", "x", lambda: dk.io.jsonable(cyclic), "a list inside itself")
        checked(
            "jsonable",
            "NaN",
            lambda: json.dumps(dk.io.jsonable({"x": [NAN, INF]}), allow_nan=False),
            lambda text: text == '{"x": ["nan", "inf"]}',
        )

    def write_json_all():
        write_json()
        write_json_nan()

    def to_pandas():
        fuzz(
            "to_pandas",
            "records",
            dk.io.to_pandas,
            st.sampled_from([None, 3, "rows", [1, 2], {"a": 1}]),
        )

    return {
        "atomic_write": atomic_write,
        "write_json": write_json_all,
        "save_figure": save_figure,
        "check_writable_dir": check_writable,
        "check_output_path": check_output,
        "file_kind": kind,
        "remove_orphan_temporaries": orphans,
        "is_temporary": orphans,
        "check_own_folder": own_folder,
        "read_regular_bytes": readers,
        "read_regular_text": readers,
        "versions": versions,
        "jsonable": jsonable,
        "to_pandas": to_pandas,
    }


# --------------------------------------------------------------------------------------------------
# public callables of the submodules of dk.models and dk.tasks (not re-exported by the package)


def _submodules(tmp: Path):
    import dynkit.models.csaode as csaode
    import dynkit.models.exact as exact
    import dynkit.models.neural_ode as neural_ode
    import dynkit.models.node_paper as node_paper
    import dynkit.models.ode_block as ode_block
    import dynkit.tasks.images as images
    import dynkit.tasks.node_runs as node_runs
    import dynkit.tasks.point_cloud as pc
    import dynkit.tasks.silverbox as sb
    import dynkit.tasks.text as text
    import dynkit.tasks.training as training

    q = torch.ones(2, dtype=torch.int64)

    def csaode_helpers():
        fuzz("position_encoding", "length", lambda n: csaode.position_encoding(n, 4), bad_int())
        fuzz("position_encoding", "d", lambda d: csaode.position_encoding(3, d), bad_int())
        fuzz(
            "position_encoding", "c", lambda c: csaode.position_encoding(3, 4, c), bad_real_above()
        )
        fuzz(
            "horizon",
            "step",
            csaode.horizon,
            st.one_of(bad_real_above(), st.floats(min_value=1.0, exclude_min=True)),
        )
        fuzz(
            "expected_nfe",
            "solver",
            lambda v: csaode.expected_nfe(v, 0.2),
            bad_choice(("rk", "ark")),
        )
        fuzz("expected_nfe", "step", lambda v: csaode.expected_nfe("rk", v), bad_real_above())

    def attention_block():
        fuzz("SelfAttentionBlock", "d", csaode.SelfAttentionBlock, bad_int())
        block = csaode.SelfAttentionBlock(4)
        fuzz(
            "SelfAttentionBlock",
            "h_plus_p",
            block,
            st.one_of(NOT_TENSORS, st.just(torch.ones(1, 3, 5))),
        )
        fuzz(
            "SelfAttentionBlock",
            "key_mask",
            lambda m: block(torch.ones(1, 3, 4), m),
            st.sampled_from([torch.ones(1, 2, dtype=torch.bool), "mask", torch.ones(1, 3)]),
        )

    def exact_helpers():
        for fn in (exact.max_abs_value, exact.check_frac_bits):
            fuzz(fn.__name__, "frac_bits", fn, st.one_of(bad_int(), st.integers(min_value=53)))
        fuzz(
            "check_representable",
            "t",
            lambda t: exact.check_representable(t, "t"),
            st.one_of(NOT_TENSORS, st.just(torch.tensor([NAN])), st.just(q)),
        )
        fuzz(
            "check_representable",
            "frac_bits",
            lambda f: exact.check_representable(torch.ones(2), "t", f),
            bad_int(),
        )
        fuzz(
            "to_fixed",
            "t",
            exact.to_fixed,
            st.one_of(NOT_TENSORS, st.just(torch.tensor([NAN])), st.just(q)),
        )
        fuzz("to_fixed", "frac_bits", lambda f: exact.to_fixed(torch.ones(2), f), bad_int())
        fuzz("to_float", "q", exact.to_float, st.one_of(NOT_TENSORS, st.just(torch.ones(2))))
        fuzz("to_float", "frac_bits", lambda f: exact.to_float(q, f), bad_int())
        fuzz(
            "to_float",
            "dtype",
            lambda d: exact.to_float(q, 40, d),
            st.sampled_from([torch.int64, "float", None]),
        )
        fuzz("is_on_grid", "t", exact.is_on_grid, st.one_of(NOT_TENSORS, st.just(q)))
        fuzz(
            "floor_divmod",
            "a",
            lambda a: exact.floor_divmod(a, 3),
            st.one_of(NOT_TENSORS, st.just(torch.ones(2))),
        )
        fuzz("floor_divmod", "d", lambda d: exact.floor_divmod(q, d), bad_int())
        fuzz(
            "check_no_overflow",
            "q",
            lambda x: exact.check_no_overflow(x, "q"),
            st.one_of(NOT_TENSORS, st.just(torch.ones(2))),
        )
        fuzz("rational", "gamma", exact.rational, bad_unit(closed_high=True))
        fuzz("rational", "max_denominator", lambda m: exact.rational(0.5, m), bad_int())

    def constrained_scalar():
        build = builder(neural_ode.ConstrainedScalar, raw=0.0, transform=torch.sigmoid)
        constructor(
            "ConstrainedScalar",
            build,
            {
                "raw": BAD_REAL,
                "transform": st.sampled_from([None, 3, "sigmoid"]),
                "learnable": BAD_BOOL,
            },
        )

    def seed_batched():
        from dynkit.models import seed_batch

        authors = M.from_paper("hbnode", "plane_vibration", design="authors", window=3)
        other = M.from_paper("ghbnode", "plane_vibration", design="authors", window=3)
        fuzz(
            "SeedBatchedODERNN",
            "models",
            seed_batch.SeedBatchedODERNN,
            st.sampled_from(
                [
                    None,
                    [],
                    3,
                    "hbnode",
                    [torch.nn.Linear(1, 1)],
                    [M.from_paper("hbnode", "plane_vibration")],  # dynkit's own design
                    [authors, other],  # two configurations
                ]
            ),
        )

    def model_name():
        fuzz("check_model_name", "model", node_paper.check_model_name, bad_choice(tuple(M.MODELS)))

    def mlp_initial():
        constructor(
            "MLPInitial",
            builder(node_paper.MLPInitial, dim=2, hidden=3),
            {"dim": bad_int(), "hidden": bad_int()},
        )
        fuzz(
            "MLPInitial",
            "x",
            node_paper.MLPInitial(2, 3),
            st.one_of(
                NOT_TENSORS,
                st.sampled_from([torch.ones(2, 3), torch.ones(2), torch.tensor([[NAN, 1.0]])]),
            ),
        )

    def block_helpers():
        fuzz(
            "solver_methods",
            "solver",
            ode_block.solver_methods,
            bad_choice(("torchdiffeq", "dynkit")),
        )
        fuzz(
            "check_block_options",
            "method",
            lambda m: ode_block.check_block_options(method=m),
            bad_choice(()),
        )
        fuzz(
            "check_block_options",
            "rtol",
            lambda r: ode_block.check_block_options(rtol=r),
            bad_real_above(),
        )

    def image_helpers():
        (tmp / "bad.idx").write_bytes(b"\x01\x02\x03\x04rest")
        (tmp / "short.idx").write_bytes(
            b"\x00\x00\x08\x02\x00\x00\x00\x05"
        )  # 2-D header, cut short
        fuzz(
            "read_idx",
            "path",
            images.read_idx,
            st.sampled_from(
                [
                    None,
                    3,
                    str(tmp / "missing.idx"),
                    str(tmp / "bad.idx"),
                    str(tmp / "short.idx"),
                    str(tmp),
                ]
            ),
        )
        fuzz(
            "load_idx_images",
            "directory",
            images.load_idx_images,
            st.sampled_from([None, 3, str(tmp / "none")]),
        )
        fuzz(
            "load_idx_images",
            "n_train",
            lambda n: images.load_idx_images(tmp, n_train=n),
            SOME_BAD_INT,
        )
        fuzz(
            "fashion_mnist_available",
            "directory",
            images.fashion_mnist_available,
            st.sampled_from([None, 3]),
        )
        fuzz("load_digits_split", "test_fraction", images.load_digits_split, bad_unit(), n=4)
        fuzz(
            "load_digits_split", "seed", lambda s: images.load_digits_split(seed=s), bad_int(0), n=4
        )

    def point_cloud():
        fuzz("point_cloud", "n_inner", lambda n: pc.point_cloud(n), bad_int())
        fuzz("point_cloud", "n_outer", lambda n: pc.point_cloud(40, n), bad_int())
        fuzz(
            "point_cloud",
            "inner_radius",
            lambda r: pc.point_cloud(inner_radius=r),
            st.one_of(bad_real_above(), st.floats(min_value=0.85)),
        )
        fuzz(
            "point_cloud",
            "outer_radii",
            lambda r: pc.point_cloud(outer_radii=r),
            st.sampled_from([(1.0, 0.9), (0.4, 1.0), (0.9, INF), (NAN, 1.0), None, 3, (1.0,)]),
        )
        fuzz("point_cloud", "seed", lambda s: pc.point_cloud(seed=s), bad_int(0))

    def silverbox():
        fuzz("silverbox", "t_end", lambda t: sb.silverbox(t), bad_real_above())
        fuzz("silverbox", "n_points", lambda n: sb.silverbox(1.0, n), bad_int(2))
        for arg in ("omega", "zeta", "cubic", "gain"):
            fuzz(
                "silverbox", arg, lambda v, arg=arg: sb.silverbox(1.0, 3, **{arg: v}), BAD_REAL, n=4
            )
        fuzz("silverbox", "seed", lambda s: sb.silverbox(1.0, 3, seed=s), bad_int(0), n=4)
        fuzz("silverbox_windows", "n_points", lambda n: sb.silverbox_windows(n), bad_int(2), n=4)
        fuzz(
            "silverbox_windows",
            "length",
            lambda v: sb.silverbox_windows(200, length=v),
            bad_int(2),
            n=4,
        )
        fuzz(
            "silverbox_windows",
            "drop",
            lambda v: sb.silverbox_windows(200, drop=v),
            bad_unit(),
            n=4,
        )
        fuzz(
            "silverbox_windows",
            "seed",
            lambda v: sb.silverbox_windows(200, seed=v),
            bad_int(0),
            n=4,
        )

    def multisine():
        fuzz("Multisine.random", "n", lambda n: sb.Multisine.random(n), bad_int())
        fuzz(
            "Multisine.random",
            "max_frequency",
            lambda f: sb.Multisine.random(max_frequency=f),
            bad_real_above(0.05, inclusive=False),
        )
        fuzz("Multisine.random", "amplitude", lambda a: sb.Multisine.random(amplitude=a), BAD_REAL)
        fuzz(
            "Multisine",
            "frequencies",
            lambda f: sb.Multisine(f, np.zeros(2), 1.0),
            st.sampled_from([None, "f", np.array([NAN, 1.0])]),
        )
        fuzz("Multisine", "t", sb.Multisine.random(), st.sampled_from(["t", None, np.array([NAN])]))

    def node_runs_helpers():
        fuzz(
            "node_runs.run_training",
            "model",
            lambda m: node_runs.run_training(m, "point_cloud"),
            bad_choice(tuple(M.MODELS)),
        )
        fuzz(
            "train_model",
            "epochs",
            lambda e: node_runs.train_model("hbnode", "point_cloud", epochs=e),
            SOME_BAD_INT,
        )
        fuzz(
            "train_model",
            "task",
            lambda t: node_runs.train_model("hbnode", t),
            bad_choice(node_runs.TRAINING_TASKS),
        )
        logits, y = torch.zeros(4, 3), torch.tensor([0, 1, 2, 0])
        fuzz(
            "loss_and_accuracy",
            "logits",
            lambda x: node_runs.loss_and_accuracy(x, y),
            st.one_of(NOT_TENSORS, st.just(torch.zeros(3, 3)), bad_tensor_values((4, 3))),
        )
        fuzz(
            "loss_and_accuracy",
            "y",
            lambda t: node_runs.loss_and_accuracy(logits, t),
            st.sampled_from(
                [torch.tensor([0, 1, 5, 0]), torch.tensor([0, 1]), torch.zeros(4), None]
            ),
        )
        fuzz(
            "loss_and_accuracy",
            "objective",
            lambda o: node_runs.loss_and_accuracy(logits[:, :1], y % 2, o),
            bad_choice(node_runs.OBJECTIVES),
        )
        fuzz(
            "trivial_loss",
            "y",
            node_runs.trivial_loss,
            st.sampled_from(
                [
                    None,
                    torch.zeros(2, 2, dtype=torch.long),
                    "y",
                    torch.tensor([-1, 0]),
                    torch.tensor([0.5, 1.0]),
                    torch.tensor([NAN, 1.0]),
                    torch.zeros(0, dtype=torch.long),
                ]
            ),
        )
        fuzz(
            "trivial_loss",
            "objective",
            lambda o: node_runs.trivial_loss(y, o),
            bad_choice(node_runs.OBJECTIVES),
        )
        fuzz(
            "train_model",
            "design",
            lambda d: node_runs.train_model("hbnode", "point_cloud", epochs=1, design=d),
            bad_choice(("dynkit", "authors")),
        )
        fuzz("batches_of", "batch_size", lambda b: node_runs.batches_of(logits, y, b), bad_int())
        fuzz(
            "batches_of",
            "y",
            lambda t: node_runs.batches_of(logits, t, 2),
            st.sampled_from([None, torch.ones(3)]),
        )
        fuzz("evaluator", "batch_size", lambda b: node_runs.evaluator(logits, y, b), bad_int())
        fuzz(
            "evaluator",
            "x",
            lambda x: node_runs.evaluator(x, y),
            st.sampled_from([None, torch.ones(3, 3)]),
        )
        net = M.from_paper("hbnode", "point_cloud", method="rk4", step_size=1.0)
        fuzz(
            "nfe_step",
            "batch",
            lambda b: node_runs.nfe_step(net, b),
            st.sampled_from(
                [None, (torch.ones(2, 2),), (torch.ones(2, 3), torch.ones(2)), "batch"]
            ),
        )
        fuzz(
            "nfe_step",
            "model",
            lambda m: node_runs.nfe_step(m, (torch.ones(2, 2), torch.ones(2))),
            NOT_TENSORS,
        )
        fuzz(
            "TaskSettings", "batch_size", lambda b: node_runs.TaskSettings(b, 1e-3, 1, 2), bad_int()
        )
        fuzz("TaskSettings", "lr", lambda v: node_runs.TaskSettings(8, v, 1, 2), bad_real_above())

    def text_helpers():
        fuzz("decode_line", "raw", text.decode_line, st.sampled_from([None, 3, "text"]))
        fuzz(
            "read_lines",
            "path",
            lambda p: list(text.read_lines(p)),
            st.sampled_from([None, 3, str(tmp / "none")]),
        )
        fuzz(
            "pad_batch",
            "encoded",
            text.pad_batch,
            st.sampled_from([[], [[]], [[1], []], ["ab"], [[1.5]], None, [[-1]]]),
        )
        fuzz(
            "pad_batch",
            "max_len",
            lambda m: text.pad_batch([[1, 2]], m),
            st.sampled_from([0, -1, 1.5, "2"]),
        )
        vocab = T.Vocabulary([["a", "b"]])
        words, vectors = ["a"], np.ones((1, 3), dtype=np.float32)
        fuzz(
            "embedding_matrix",
            "vocab",
            lambda v: text.embedding_matrix(v, words, vectors, 3),
            NOT_TENSORS,
        )
        fuzz(
            "embedding_matrix",
            "words",
            lambda w: text.embedding_matrix(vocab, w, vectors, 3),
            st.sampled_from([["a", "b"], None, "a"]),
        )
        fuzz(
            "embedding_matrix",
            "vectors",
            lambda v: text.embedding_matrix(vocab, words, v, 3),
            st.sampled_from([np.ones(3), None, np.full((1, 3), NAN)]),
        )
        fuzz(
            "embedding_matrix",
            "dim",
            lambda d: text.embedding_matrix(vocab, words, vectors, d),
            bad_int(),
        )
        fuzz("glove_embeddings", "vocab", lambda v: text.glove_embeddings(v, 50), NOT_TENSORS)
        fuzz("glove_embeddings", "dim", lambda d: text.glove_embeddings(vocab, d), bad_int())
        opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
        fuzz("paper_schedule", "optimizer", lambda o: text.paper_schedule(o, 4), NOT_TENSORS)
        fuzz("paper_schedule", "steps_per_epoch", lambda n: text.paper_schedule(opt, n), bad_int())
        fuzz(
            "paper_schedule",
            "warmup_epochs",
            lambda w: text.paper_schedule(opt, 4, w),
            bad_real_above(inclusive=True),
        )
        fuzz(
            "paper_schedule",
            "lr_decay",
            lambda d: text.paper_schedule(opt, 4, 1.0, d),
            st.one_of(bad_real_above(), st.floats(min_value=1.0, exclude_min=True)),
        )
        # no input to get wrong: an argument is Python's own TypeError naming the function
        attempt(
            "default_data_dir",
            "default_data_dir",
            lambda: text.default_data_dir("shared"),
            "shared",
        )
        data = text.TextDataset(
            "toy",
            [["a"], ["b"], ["c"]],
            np.array([0, 1, 0]),
            ("x", "y"),
            is_test=np.array([False, False, True]),
        )
        fuzz("training_split", "data", lambda d: text.training_split(d, 0, 0, None), NOT_TENSORS)
        fuzz(
            "training_split",
            "fold",
            lambda f: text.training_split(data, f, 0, None),
            st.sampled_from([1, -1, 2.5]),
        )
        fuzz("training_split", "seed", lambda s: text.training_split(data, 0, s, None), bad_int(0))
        fuzz(
            "training_split",
            "train_subset",
            lambda n: text.training_split(data, 0, 0, n),  # None: all of them
            st.one_of(st.integers(max_value=0), st.sampled_from([2.5, NAN, "3", True])),
        )

    def training_helpers():
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        fit_ = lambda **kw: training.fit(
            **{
                "model": model,
                "optimizer": opt,
                "batches": lambda g: [],  # noqa: E731
                "step": lambda m, b: (None, {}),
                "epochs": 1,
                "progress": False,
                **kw,
            }
        )
        constructor(
            "fit",
            fit_,
            {
                "model": NOT_TENSORS,
                "optimizer": NOT_TENSORS,
                "batches": st.sampled_from([None, 3]),
                "step": st.sampled_from([None, 3]),
                "epochs": bad_int(),
                "seed": bad_int(0),
                "evaluate": st.sampled_from([3, "x"]),
                "backward": BAD_BOOL,
                "progress": BAD_BOOL,
                "manifest": st.sampled_from([3, "m", [1]]),
                "checkpoint_dir": st.sampled_from([3, str(tmp / "a_file" / "x")]),
                "scheduler": st.sampled_from([3, "s"]),
            },
        )
        (tmp / "a_file").write_text("") if not (tmp / "a_file").exists() else None
        fuzz("epoch_generator", "seed", lambda s: training.epoch_generator(s, 0), bad_int(0))
        fuzz("epoch_generator", "epoch", lambda e: training.epoch_generator(0, e), bad_int(0))
        fuzz(
            "plain",
            "value",
            training.plain,
            st.sampled_from([object(), {1.5: 2}, [lambda: 0], {"a": {3}}]),
        )
        fuzz(
            "save_checkpoint",
            "model",
            lambda m: training.save_checkpoint(tmp / "c.pt", m, opt, 0, training.History()),
            NOT_TENSORS,
        )
        fuzz(
            "save_checkpoint",
            "epoch",
            lambda e: training.save_checkpoint(tmp / "c.pt", model, opt, e, training.History()),
            bad_int(0),
        )
        fuzz(
            "save_checkpoint",
            "history",
            lambda h: training.save_checkpoint(tmp / "c.pt", model, opt, 0, h),
            st.sampled_from([None, [1], "h"]),
        )
        fuzz(
            "load_checkpoint",
            "checkpoint",
            training.load_checkpoint,  # a path, a directory, an empty file
            st.sampled_from([None, 3, str(tmp / "none.pt"), str(tmp / "a_file"), str(tmp)]),
        )
        fuzz("run_manifest", "model", lambda m: training.run_manifest(m, opt, 0), NOT_TENSORS)
        fuzz(
            "run_manifest",
            "options",
            lambda o: training.run_manifest(model, opt, 0, options=o),
            st.sampled_from([3, "o", [1]]),
        )
        fuzz("read_manifest", "folder", training.read_manifest, st.sampled_from([None, 3]))
        (tmp / "bad_manifest").mkdir(exist_ok=True)
        (tmp / "bad_manifest" / "manifest.json").write_text("{not json")
        attempt(
            "read_manifest",
            "manifest.json",
            lambda: training.read_manifest(tmp / "bad_manifest"),
            "{not json",
        )
        fuzz(
            "check_resume",
            "options",
            lambda o: training.check_resume(tmp, o, {"seed": 0}),
            st.sampled_from([{"seed": 1}, {}, None, 3]),
        )  # a differing option is a refusal naming it

    def records():
        fuzz("History", "epochs", training.History, st.sampled_from([None, 3, "e", [1]]))

    return {
        "dynkit.models.csaode.position_encoding": csaode_helpers,
        "dynkit.models.csaode.horizon": csaode_helpers,
        "dynkit.models.csaode.expected_nfe": csaode_helpers,
        "dynkit.models.csaode.SelfAttentionBlock": attention_block,
        **{
            f"dynkit.models.exact.{n}": exact_helpers
            for n in (
                "max_abs_value",
                "check_frac_bits",
                "check_representable",
                "to_fixed",
                "to_float",
                "is_on_grid",
                "floor_divmod",
                "check_no_overflow",
                "rational",
            )
        },
        "dynkit.models.neural_ode.ConstrainedScalar": constrained_scalar,
        "dynkit.models.node_paper.check_model_name": model_name,
        "dynkit.models.seed_batch.SeedBatchedODERNN": seed_batched,
        "dynkit.models.node_paper.MLPInitial": mlp_initial,
        "dynkit.models.ode_block.solver_methods": block_helpers,
        "dynkit.models.ode_block.check_block_options": block_helpers,
        **{
            f"dynkit.tasks.images.{n}": image_helpers
            for n in ("read_idx", "load_idx_images", "fashion_mnist_available", "load_digits_split")
        },
        "dynkit.tasks.point_cloud.point_cloud": point_cloud,
        "dynkit.tasks.silverbox.silverbox": silverbox,
        "dynkit.tasks.silverbox.Multisine": multisine,
        "dynkit.tasks.silverbox.silverbox_windows": silverbox,
        **{
            f"dynkit.tasks.node_runs.{n}": node_runs_helpers
            for n in (
                "TaskSettings",
                "loss_and_accuracy",
                "batches_of",
                "nfe_step",
                "evaluator",
                "run_training",
                "train_model",
                "trivial_loss",
            )
        },
        **{
            f"dynkit.tasks.text.{n}": text_helpers
            for n in (
                "decode_line",
                "read_lines",
                "pad_batch",
                "glove_embeddings",
                "embedding_matrix",
                "paper_schedule",
                "default_data_dir",
                "training_split",
            )
        },
        **{
            f"dynkit.tasks.training.{n}": training_helpers
            for n in (
                "epoch_generator",
                "plain",
                "save_checkpoint",
                "load_checkpoint",
                "run_manifest",
                "read_manifest",
                "check_resume",
                "fit",
            )
        },
        "dynkit.tasks.training.History": records,
    }


# --------------------------------------------------------------------------------------------------
# ODE-RNN hybrids and the time-series tasks


def _tiny_windows(n=4, length=3, d_in=2, d_out=1, forecast=1):
    return T.Windows(
        torch.ones(n, length, d_in),
        torch.ones(n, length),
        torch.ones(n, length, d_out),
        torch.ones(n, forecast, d_out),
        torch.ones(n, forecast),
    )


def _tiny_task():
    return T.TimeSeriesTask(
        "tiny", _tiny_windows(), _tiny_windows(), _tiny_windows(), ("u", "y"), ("y",), "a test"
    )


def _time_series():
    import dynkit.tasks.plane_vibration as pv
    import dynkit.tasks.walker2d as wk

    def ode_rnn():
        build = builder(
            M.ODERNN, model="hbnode", n_inputs=2, n_outputs=1, hidden=3, method="rk4", step_size=1.0
        )
        not_callable = st.sampled_from([None, 3, "tanh", [torch.tanh]])
        constructor(
            "ODERNN",
            build,
            {
                "model": bad_choice(M.HYBRIDS),
                "n_inputs": bad_int(),
                "n_outputs": bad_int(),
                "hidden": bad_int(),
                "augment": bad_int(0),
                "field_width": BAD_WIDTHS,
                "cell_width": BAD_WIDTHS,
                "activation": not_callable,
                "sigma": not_callable,
                "residual": BAD_BOOL,
                "rtol": bad_real_above(),
            },
        )
        model = build()
        gaps = torch.ones(2, 4)
        fuzz(
            "ODERNN",
            "x",
            lambda x: model(x, gaps),
            st.one_of(
                NOT_TENSORS,
                bad_tensor_values((2, 4, 2)),
                st.just(torch.ones(2, 4, 3)),
                st.just(torch.ones(2, 4)),
                st.just(torch.ones(2, 4, 2, dtype=torch.int64)),
            ),
        )
        fuzz(
            "ODERNN",
            "gaps",
            lambda g: model(torch.ones(2, 4, 2), g),
            st.one_of(
                NOT_TENSORS, bad_tensor_values((2, 4)), st.just(torch.ones(2, 5)), st.just(-gaps)
            ),
        )
        fuzz("ODERNN", "keep_states", lambda k: model(torch.ones(2, 4, 2), gaps, k), BAD_BOOL)
        z = model.initial_state(2, gaps)
        fuzz(
            "ODERNN",
            "z",
            lambda v: model.forecast(v, torch.ones(2, 3)),
            st.one_of(NOT_TENSORS, bad_tensor_values(tuple(z.shape)), st.just(torch.ones(2, 5))),
        )
        fuzz(
            "ODERNN",
            "gaps",
            lambda g: model.forecast(z, g),
            st.one_of(
                NOT_TENSORS,
                bad_tensor_values((2, 3)),
                st.just(torch.ones(3, 3)),
                st.just(-torch.ones(2, 3)),
            ),
        )

    def adjoint_norms():
        no_grad = torch.ones(2, 3)
        fuzz(
            "adjoint_norms",
            "states",
            M.adjoint_norms,
            st.sampled_from(
                [None, 3, "x", [], (), [None], [no_grad], [torch.ones(2, 3, requires_grad=True)]]
            ),
        )

    def windows():
        shapes = {
            "x": (2, 3, 1),
            "gaps": (2, 3),
            "targets": (2, 3, 1),
            "future": (2, 1, 1),
            "future_gaps": (2, 1),
        }
        build = builder(T.Windows, **{k: torch.ones(shape) for k, shape in shapes.items()})
        constructor(
            "Windows",
            build,
            {
                k: st.sampled_from(
                    [
                        None,
                        3,
                        "x",
                        np.ones(shape),
                        torch.ones(5),
                        torch.ones(shape, dtype=torch.int64),
                        torch.ones((3,) + shape[1:]),
                    ]
                )
                for k, shape in shapes.items()
            },
        )

    def task():
        w = _tiny_windows()
        build = builder(
            T.TimeSeriesTask,
            name="tiny",
            train=w,
            val=w,
            test=w,
            inputs=("u", "y"),
            outputs=("y",),
            note="a test",
        )
        not_windows = st.sampled_from(
            [None, 3, "windows", torch.ones(2, 3), {"x": torch.ones(2, 3, 1)}]
        )
        constructor(
            "TimeSeriesTask",
            build,
            {
                "name": st.sampled_from([None, "", 3, ("tiny",)]),
                "train": not_windows,
                "val": not_windows,
                "test": not_windows,
                "inputs": st.sampled_from([None, (), ["u"], "u"]),
                "outputs": st.sampled_from([None, (), ["y"], "y"]),
                "note": st.sampled_from([None, 3, ["n"]]),
                "config": st.sampled_from([None, [1], "c"]),
                "source": bad_choice(("measured", "simulated")),
            },
        )

    def load_time_series():
        lt = T.load_time_series
        fuzz(
            "load_time_series", "name", lt, bad_choice(("walker2d", "plane_vibration", "silverbox"))
        )
        fuzz(
            "load_time_series",
            "source",
            lambda v: lt("silverbox", source=v),
            bad_choice(("measured", "simulated")),
        )
        attempt("load_time_series", "bogus", lambda: lt("silverbox", bogus=3), 3)
        # the simulated stand-in's options
        sim = lambda **o: lt("silverbox", source="simulated", **o)  # noqa: E731
        fuzz("load_time_series", "n_points", lambda v: sim(n_points=v), bad_int(2), n=4)
        fuzz("load_time_series", "length", lambda v: sim(length=v), bad_int(2), n=4)
        fuzz("load_time_series", "drop", lambda v: sim(drop=v), bad_unit(), n=4)
        fuzz("load_time_series", "seed", lambda v: sim(seed=v), bad_int(0), n=4)
        # the measured series' options (checked before the file is read)
        fuzz(
            "load_time_series",
            "length",
            lambda v: lt("silverbox", length=v),
            not_none(bad_int(2)),
            n=4,
        )
        fuzz(
            "load_time_series",
            "max_windows",
            lambda v: lt("plane_vibration", max_windows=v),
            not_none(bad_int(1)),
            n=4,
        )
        fuzz(
            "load_time_series",
            "split_seed",
            lambda v: lt("plane_vibration", split_seed=v),
            not_none(bad_int(0)),
            n=4,
        )
        fuzz("load_time_series", "verify", lambda v: lt("silverbox", verify=v), BAD_BOOL, n=4)

    def measured_series():
        import dataclasses

        import dynkit.tasks.measured as ms
        import dynkit.tasks.silverbox as sb

        constructor(
            "SeriesFile",
            builder(ms.SeriesFile, name="x.csv", columns=("a", "b"), sha256_prefix="0123abcd"),
            {
                "name": st.sampled_from([None, "", "a/b.csv", 3]),
                "columns": st.sampled_from([None, (), ("a", ""), ["a", "b"], ("a", "a"), 3]),
                "sha256_prefix": st.sampled_from([None, "", "0123", "0123ABCD", "xyzxyzxy", 3]),
                "first_row_only": st.sampled_from([None, "a", ("c",), ("a", "b"), 3]),
            },
            n=4,
        )
        protocol = builder(
            ms.MeasuredProtocol,
            **{f.name: getattr(sb.MEASURED, f.name) for f in dataclasses.fields(sb.MEASURED)},
        )
        constructor(
            "MeasuredProtocol",
            protocol,
            {
                "name": st.sampled_from([None, "", 3]),
                "file": st.sampled_from([None, "silverbox.csv", 3]),
                "inputs": st.sampled_from([None, (), ("V3",), "V1", ["V1"]]),
                "outputs": st.sampled_from([None, (), ("V3",), "V2"]),
                "scaling": bad_choice(ms.SCALINGS),
                "factor": bad_real_above(),
                "span": not_none(bad_int(2)),
                "margin": bad_int(0),
                "keep": st.sampled_from([0.0, -0.1, 1.5, NAN, None, "1"]),
                "noise_draw": BAD_BOOL,
                "split": st.sampled_from(
                    [None, (1, 1), (0, 1, 1), (1, 1, 0), (1.0, 0, 4), [1, 0, 4], (1, -1, 4)]
                ),
                "split_seed": bad_int(0),
                "length": bad_int(2),
                "forecast": bad_int(1),
                "description": st.sampled_from([None, "", 3]),
                "sources": st.sampled_from([None, "", 3]),
            },
            n=4,
        )
        attempt(
            "default_directory", "default_directory", lambda: ms.default_directory("here"), "here"
        )
        good = sb.MEASURED.file
        fuzz(
            "read_series",
            "file",
            lambda v: ms.read_series(v),
            st.sampled_from([None, "silverbox.csv", 3]),
            n=4,
        )
        fuzz(
            "read_series",
            "directory",
            lambda v: ms.read_series(good, v),
            st.sampled_from(["", 3, True]),
            n=4,
        )
        fuzz("read_series", "min_rows", lambda v: ms.read_series(good, min_rows=v), bad_int(1), n=4)
        fuzz("read_series", "verify", lambda v: ms.read_series(good, verify=v), BAD_BOOL, n=4)
        fuzz(
            "load_measured",
            "protocol",
            lambda v: ms.load_measured(v),
            st.sampled_from([None, "silverbox", 3]),
            n=4,
        )
        for arg, minimum in (("length", 2), ("forecast", 1), ("split_seed", 0), ("max_windows", 1)):
            fuzz(
                "load_measured",
                arg,
                lambda v, arg=arg: ms.load_measured(sb.MEASURED, **{arg: v}),
                not_none(bad_int(minimum)),
                n=4,
            )
        fuzz(
            "silverbox_measured",
            "max_windows",
            lambda v: sb.silverbox_measured(max_windows=v),
            not_none(bad_int(1)),
            n=4,
        )
        fuzz(
            "silverbox_measured_drive",
            "directory",
            lambda v: sb.silverbox_measured_drive(v),
            st.sampled_from(["", 3, True]),
            n=3,
        )
        fuzz(
            "silverbox_measured_drive",
            "verify",
            lambda v: sb.silverbox_measured_drive(verify=v),
            BAD_BOOL,
            n=4,
        )
        fuzz(
            "plane_vibration_measured",
            "length",
            lambda v: pv.plane_vibration_measured(length=v),
            not_none(bad_int(2)),
            n=4,
        )
        fuzz(
            "plane_vibration_measured",
            "forecast",
            lambda v: pv.plane_vibration_measured(forecast=v),
            not_none(bad_int(1)),
            n=4,
        )
        # the forecast must stay inside the 100 samples held back after the last start index
        attempt(
            "plane_vibration_measured",
            "forecast",
            lambda: pv.plane_vibration_measured(forecast=102),
            102,
        )

    def train_hybrid():
        model, data = M.ODERNN("node", 2, 1, 2, method="rk4", step_size=1.0), _tiny_task()
        good = dict(epochs=1, batch_size=2, lr=1e-3)

        def train(**overrides):
            args = {"model": model, "task": data, **good, **overrides}
            return T.train_hybrid(args.pop("model"), args.pop("task"), **args)

        constructor(
            "train_hybrid",
            train,
            {
                "model": st.one_of(NOT_MODULES, st.just(torch.nn.Linear(2, 1))),
                "task": st.sampled_from([None, 3, "silverbox", _tiny_windows()]),
                "epochs": bad_int(),
                "batch_size": bad_int(),
                "lr": bad_real_above(),
                "seed": bad_int(0),
                "loss_weights": st.sampled_from(
                    [(1.0, 0.0), (1.0, -1.0, 1.0), (NAN, 0.0, 1.0), "1", None]
                ),
                "validate": BAD_BOOL,
                "quiet": BAD_BOOL,
                "lr_schedule": bad_choice(("constant", "cosine", "step")),
                "lr_steps": st.sampled_from([((0, 1e-4),), ((5, -1.0),), ((5,),), "5", None]),
                "clip_norm": st.sampled_from([0.0, -1.0, NAN, "1"]),
                "shrink": st.sampled_from([0.0, -0.01, NAN, "1"]),
                "nfe_tol": st.sampled_from([0.0, -1e-6, NAN, INF, "1e-6", True]),
            },
            n=4,
        )
        attempt(
            "train_hybrid", "model", lambda: train(model=M.ODERNN("node", 3, 1, 2)), "n_inputs=3"
        )

    from dynkit.tasks import time_series as TS

    def StepRestarts():
        def build(optimizer=None, steps=((2, 1e-4),), batches_per_epoch=3):
            optimizer = (
                torch.optim.Adam([torch.nn.Parameter(torch.ones(1))])
                if optimizer is None
                else optimizer
            )
            return TS.StepRestarts(optimizer, steps, batches_per_epoch)

        constructor(
            "StepRestarts",
            build,
            {
                "optimizer": st.sampled_from([3, "adam", torch.nn.Linear(1, 1)]),
                "steps": st.sampled_from([((0, 1e-4),), ((2, -1.0),), ((2,),), "2", None]),
                "batches_per_epoch": bad_int(),
            },
            n=4,
        )

    def shrink_parameters():
        constructor(
            "shrink_parameters",
            lambda model=None, factor=0.01: TS.shrink_parameters(
                torch.nn.Linear(1, 1) if model is None else model, factor
            ),
            {"model": st.sampled_from([3, "net", torch.ones(2)]), "factor": bad_real_above()},
            n=4,
        )

    def walker2d():
        build = builder(wk.walker2d)
        constructor(
            "walker2d",
            build,
            {
                "n_episodes": bad_int(3),
                "steps": bad_int(2),
                "length": bad_int(2),
                "drop": bad_unit(),
                "seed": bad_int(0),
            },
            n=4,
        )
        attempt("walker2d", "steps", lambda: wk.walker2d(steps=64, length=64), 64)

    def plane_vibration():
        build = builder(pv.plane_vibration)
        constructor(
            "plane_vibration",
            build,
            {
                "n_points": bad_int(2),
                "length": bad_int(2),
                "forecast": bad_int(),
                "drop": bad_unit(),
                "seed": bad_int(0),
            },
            n=4,
        )
        # a series too short for one window of each part: the error names length + forecast
        attempt(
            "plane_vibration", "n_points", lambda: pv.plane_vibration(20), 20, names=("length",)
        )

    return {
        "dynkit.models.ODERNN": ode_rnn,
        "dynkit.models.adjoint_norms": adjoint_norms,
        "dynkit.tasks.Windows": windows,
        "dynkit.tasks.TimeSeriesTask": task,
        "dynkit.tasks.load_time_series": load_time_series,
        "dynkit.tasks.train_hybrid": train_hybrid,
        "dynkit.tasks.time_series.StepRestarts": StepRestarts,
        "dynkit.tasks.time_series.shrink_parameters": shrink_parameters,
        "dynkit.tasks.walker2d.walker2d": walker2d,
        "dynkit.tasks.plane_vibration.plane_vibration": plane_vibration,
        **{
            f"dynkit.tasks.{name}": measured_series
            for name in (
                "measured.SeriesFile",
                "measured.MeasuredProtocol",
                "measured.default_directory",
                "measured.read_series",
                "measured.load_measured",
                "silverbox.silverbox_measured",
                "silverbox.silverbox_measured_drive",
                "plane_vibration.plane_vibration_measured",
            )
        },
    }


# --------------------------------------------------------------------------------------------------
# the command line

_OS_ERRORS = (
    "OSError",
    "PermissionError",
    "FileNotFoundError",
    "NotADirectoryError",
    "FileExistsError",
    "IsADirectoryError",
)
_SOLVER_ERRORS = (
    "SolverError",
    "StepSizeUnderflow",
    "MaxStepsExceeded",
    "NonFiniteState",
    "VectorFieldError",
)


def cli_attempt(command: str, arg: str, argv: list[str], value: str | None = None) -> str:
    """``dynkit COMMAND argv``: clear = exit 2, last line ``dynkit COMMAND: error: ...`` naming
    ``arg`` (or the value given), no traceback; a caught-all exception only for OS and solver
    errors."""
    from dynkit.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main([command, *argv, "--quiet"])
        except SystemExit as exc:  # pragma: no cover - main returns codes
            code = exc.code
        except Exception as exc:  # noqa: BLE001
            code, err = "raised", io.StringIO(f"{type(exc).__name__}: {exc}")
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    caught_all = "(run with --debug" in last
    prefix = f"dynkit {command}: error: "
    named = arg in last or (value is not None and value in last)
    raw = (
        code == "raised"
        or "Traceback" in err.getvalue()
        or (caught_all and not last[len(prefix) :].startswith(_OS_ERRORS + _SOLVER_ERRORS))
    )
    if code == 0:
        outcome = "accepted"
    elif raw:
        outcome = "raw"
    else:
        outcome = "clear" if code == 2 and last.startswith(prefix) and named else "terse"
    LEDGER["cases"] += 1
    LEDGER[outcome] += 1
    if outcome != "clear":
        _report(
            Unclear(f"dynkit {command} {' '.join(argv)}: {outcome} (exit {code}): {last[:300]}")
        )
    return outcome


def _cli_commands() -> list[str]:
    """The subcommands of ``dynkit``, read from its parser (so a new command needs cases here)."""
    from dynkit import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


ODE_FILES = {
    "ok.py": "import numpy as np\ndef f(t, y): return -y\ny0 = np.array([1.0])\nt = np.linspace(0, 1, "  # noqa: E501
    "3)\n",
    "strings.py": "def f(t, y): return -y\ny0 = ['a']\nt = [0.0, 1.0]\n",
    "short_t.py": "def f(t, y): return -y\ny0 = [1.0]\nt = [0.0]\n",
    "no_f.py": "y0 = [1.0]\nt = [0.0, 1.0]\n",
    "syntax.py": "def f(t, y) return -y\n",
    "raises.py": "raise RuntimeError('broken module')\n",
    "exits.py": "import sys\nsys.exit(0)\n",
}
HUGE = "9" * 23  # --seed 99999999999999999999999: was torch's "Overflow when unpacking long long"
DIGITS = "9" * 5000  # past Python's int-string limit: was silently the string


def _cli(tmp: Path):
    for name, text in ODE_FILES.items():
        (tmp / name).write_text(text)
    blocker = tmp / "a_file"
    blocker.write_text("")
    ok = str(tmp / "ok.py")

    def verify():
        for value in ("0", "-3", "x", "1.5"):
            cli_attempt("verify", "--instances", ["--instances", value], value)
        cli_attempt("verify", "--seed", ["--seed", "x"], "x")
        cli_attempt("verify", "--seed", ["--seed", HUGE], HUGE)
        cli_attempt("verify", "claim", ["no_such_claim"], "no_such_claim")

    def derive():
        cli_attempt("derive", "derivation", ["nosuch"], "nosuch")
        cli_attempt("derive", "--latex", ["--latex", "--markdown", "x"])
        cli_attempt(
            "derive", "derivation", ["--all", "nope"], "nope"
        )  # was: every derivation, exit 0

    def solve_like(command):
        def run():
            cli_attempt(command, "SPEC", [str(tmp / "missing.py")], "missing.py")
            cli_attempt(command, "SPEC", [f"{ok}:nosuch"], "nosuch")
            cli_attempt(command, "SPEC", [f"{ok}:"], f"{ok}:")
            for name, arg in (
                ("strings.py", "y0"),
                ("short_t.py", "t"),
                ("no_f.py", "f"),
                ("syntax.py", "SPEC"),
                ("raises.py", "SPEC"),
                ("exits.py", "sys.exit"),
            ):
                cli_attempt(command, arg, [str(tmp / name)], name)
            cli_attempt(command, "--method", [ok, "--method", "nosuch"], "nosuch")
            for value in ("-1", "x", "nan", "0"):
                cli_attempt(command, "rtol", [ok, "--rtol", value], value)
            for value in (DIGITS, "1e-3x", "[1, 2", "'open"):  # look like literals, do not parse
                cli_attempt(command, "--param", [ok, "--param", f"mu={value}"], value[:20])
            if command == "solve":
                for value in ("0", "nan", "x"):
                    cli_attempt(
                        command, "step_size", [ok, "--method", "rk4", "--step-size", value], value
                    )
                cli_attempt(command, "--max-steps", [ok, "--max-steps", "0"], "0")
                cli_attempt(command, "step_size", [ok, "--method", "rk4"])
                for method in (
                    "dopri5",
                    "bosh3",
                ):  # was: silently the first step of the adaptive method
                    cli_attempt(
                        command,
                        "--step-size",
                        [ok, "--method", method, "--step-size", "0.1"],
                        method,
                    )

        return run

    def nfe_sweep():
        cli_attempt("nfe-sweep", "model", ["--models", "nosuch"], "nosuch")
        cli_attempt("nfe-sweep", "task", ["--task", "nosuch"], "nosuch")
        for value in ("x", "-1", "0"):
            cli_attempt("nfe-sweep", "tolerances", ["--tolerances", value], value)
        cli_attempt("nfe-sweep", "--n-batches", ["--n-batches", "0"], "0")
        cli_attempt("nfe-sweep", "--seed", ["--seed", "x"], "x")
        cli_attempt("nfe-sweep", "--seed", ["--seed", HUGE], HUGE)
        for option, value in (
            ("--models", ""),
            ("--models", ",,"),
            ("--tolerances", ""),
            ("--tolerances", "1e-3,"),
        ):
            cli_attempt("nfe-sweep", option, [option, value])  # was: the defaults, silently
        for out in (
            blocker,
            blocker / "sub",
            Path("/proc/x"),
        ):  # was: "File exists" after the whole sweep
            cli_attempt("nfe-sweep", "--out", ["--out", str(out)], str(out))

    def train():
        base = ["--model", "hbnode", "--task", "point_cloud"]
        cli_attempt("train", "model", ["--model", "nosuch", "--task", "digits"], "nosuch")
        cli_attempt("train", "task", ["--model", "hbnode", "--task", "nosuch"], "nosuch")
        cli_attempt("train", "model", ["--model", "hbnode", "--task", "trec"], "hbnode")
        for value in ("0", "-2", "x"):
            cli_attempt("train", "--epochs", [*base, "--epochs", value], value)
        for method in ("ark4", "ark3", "rkf45", "nosuch"):
            cli_attempt("train", "method", [*base, "--method", method], method)
        for value in ("-1", "0", "nan", "inf", "x"):
            cli_attempt("train", "tol", [*base, "--tol", value], value)
        cli_attempt("train", "out", [*base, "--out", str(blocker / "run")], str(blocker))
        cli_attempt("train", "resume", [*base, "--resume"])
        cli_attempt("train", "--seed", [*base, "--seed", "x"], "x")
        cli_attempt("train", "--seed", [*base, "--seed", HUGE], HUGE)
        cli_attempt(
            "train",
            "data_dir",
            ["--model", "csaark", "--task", "trec", "--data-dir", str(tmp / "missing")],
            "missing",
        )
        cli_attempt(
            "train", "method", ["--model", "csaark", "--task", "trec", "--method", "rk4"], "rk4"
        )

    def report():
        cli_attempt("report", "--seed", ["--seed", "x"], "x")
        cli_attempt("report", "out", ["--out", str(blocker / "report")], str(blocker))
        for out in (blocker, Path("/proc/x")):  # was: a bare OSError
            cli_attempt("report", "--out", ["--out", str(out)], str(out))
        cli_attempt("report", "--seed", ["--seed", HUGE], HUGE)

    def run():
        cheap = ["momseq_attention_scaling", "--scale", "smoke"]
        cli_attempt("run", "experiment", ["nosuch"], "nosuch")
        cli_attempt("run", "--scale", ["nosuch", "--scale", "huge"], "huge")
        cli_attempt("run", "--backend", [*cheap, "--backend", "dask"], "dask")
        cli_attempt("run", "device", [*cheap, "--device", "tpu"], "tpu")
        for value in ("x", "1,1"):
            cli_attempt("run", "seeds", [*cheap, "--seeds", value], value)
        cli_attempt(
            "run", "out", [*cheap, "--seeds", "0", "--out", str(blocker / "run")], str(blocker)
        )
        for value in ("", ",,", f"1,{HUGE}", "-1", "1.5"):
            cli_attempt("run", "--seeds", [*cheap, "--seeds", value])
        for out in (blocker, Path("/proc/x")):  # was: a bare OSError
            cli_attempt("run", "--out", [*cheap, "--out", str(out)], str(out))
        cli_attempt("run", "--device", [*cheap, "--device", "cuda:x"], "cuda:x")
        cli_attempt("run", "--device", [*cheap, "--device", "cuda:99"], "cuda:99")
        cli_attempt(
            "run", "address", [*cheap, "--address", "head:6379"], "head:6379"
        )  # was: ignored

    def ledger():
        cli_attempt("ledger", "results", ["--results", str(blocker)], str(blocker))
        cli_attempt("ledger", "results", ["--results", str(tmp / "missing")], "missing")
        cli_attempt(
            "ledger",
            "json",
            ["--results", str(tmp), "--json", str(blocker / "l.json")],
            str(blocker),
        )

    def build_kernels():
        cli_attempt("build-kernels", "methods", ["--methods", "rodas9"], "rodas9")
        cli_attempt("build-kernels", "--methods", ["--methods", ""])
        cli_attempt("build-kernels", "--methods", ["--methods", "rodas5,,bdf"])

    return {
        "verify": verify,
        "derive": derive,
        "build-kernels": build_kernels,
        "solve": solve_like("solve"),
        "stiffness": solve_like("stiffness"),
        "nfe-sweep": nfe_sweep,
        "train": train,
        "report": report,
        "run": run,
        "ledger": ledger,
    }


# --------------------------------------------------------------------------------------------------
# the registry, the API it must cover, the tests


def _experiments(tmp: Path):
    import dynkit.experiments as E

    blocker = tmp / "a_file_too"
    blocker.write_text("")
    cheap = "momseq_attention_scaling"

    def run():
        call = lambda **kw: E.run(
            cheap, **{"scale": "smoke", "seeds": (0,), "out": tmp / "run", **kw}
        )
        for arg, values in (
            ("out", [blocker, blocker / "sub", "/proc/x", "/etc/passwd", ""]),
            ("device", ["cuda:x", "tpu", "cuda:99", 3, None]),
            # 1.5 ran seed 1, "012" seeds 0, 1, 2, True seed 1
            ("seeds", [(1.5,), "012", (True,), (2**40,), (-1,), (), (1, 1), None, 3]),
            ("scale", ["huge", None]),
            ("backend", ["dask", None]),
        ):
            for bad in values:
                attempt("experiments.run", arg, lambda bad=bad, arg=arg: call(**{arg: bad}), bad)
        attempt(
            "experiments.run", "address", lambda: call(address="head:6379"), "head:6379"
        )  # was: ignored
        attempt("experiments.run", "experiment", lambda: E.run("nosuch", out=tmp / "run"), "nosuch")

    def shards():
        for bad in [(1.5,), "012", (True,), (2**40,)]:
            attempt(
                "experiments.shards",
                "seeds",
                lambda bad=bad: E.shards(cheap, "smoke", bad, tmp),
                bad,
            )

    return {"dynkit.experiments.run": run, "dynkit.experiments.shards": shards}


def cases(tmp: Path) -> dict:
    """Public name -> a function running its bad-input cases."""
    registry = {}
    for part in (
        _models_neural_ode(),
        _models_fields(),
        _models_blocks(),
        _models_csaode(),
        _models_momentum_resnet(),
        _models_attention(),
        _models_recurrent(),
    ):
        registry.update({f"dynkit.models.{k}": v for k, v in part.items()})
    registry.update({f"dynkit.tasks.{k}": v for k, v in _tasks(tmp).items()})
    registry.update({f"dynkit.io.{k}": v for k, v in _io(tmp).items()})
    registry.update(_submodules(tmp))
    registry.update(_time_series())
    registry.update({f"dynkit {k}": v for k, v in _cli(tmp).items()})
    registry.update(_experiments(tmp))
    return registry


def _public_callables(module, defined_in=None):
    for name in dir(module):  # dir, not vars: a lazy package's names load on first use
        obj = getattr(module, name)
        if name.startswith("_") or isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue  # an exception class takes whatever message it is given
        if (
            getattr(obj, "__module__", "") == defined_in
            if defined_in
            else getattr(obj, "__module__", "").startswith("dynkit")
        ):
            yield name, obj


def public_api() -> list[str]:
    """Every public callable (function or class) of dk.models, dk.tasks and dk.io -- those the
    packages export and those of their public submodules -- and every command."""
    import importlib
    import pkgutil

    names, seen = [], set()
    for module in (dk.models, dk.tasks, dk.io):
        for name, obj in _public_callables(module):
            names.append(f"{module.__name__}.{name}")
            seen.add(id(obj))
    for package in (dk.models, dk.tasks):
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, obj in _public_callables(module, defined_in=module.__name__):
                if id(obj) not in seen:
                    names.append(f"{module.__name__}.{name}")
                    seen.add(id(obj))
    names += [f"dynkit {c}" for c in _cli_commands()]
    names += ["dynkit.experiments.run", "dynkit.experiments.shards"]  # the experiments' doors
    return sorted(names)


PUBLIC = public_api()


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    return cases(tmp_path_factory.mktemp("bad_inputs"))


def test_every_public_entry_point_has_bad_input_cases(registry):
    missing = sorted(set(PUBLIC) - set(registry))
    stale = sorted(set(registry) - set(PUBLIC))
    assert not missing, (
        f"public entry points without bad-input cases in tests/test_bad_inputs.py: {missing}"
    )
    assert not stale, f"cases for names that are no longer public: {stale}"


def _first_names(registry: dict) -> set:
    """One name per case function (several names can share one, e.g. the helpers of a module)."""
    first = {}
    for name in PUBLIC:
        if name in registry:
            first.setdefault(registry[name], name)
    return set(first.values())


@pytest.mark.parametrize("name", PUBLIC)
def test_bad_inputs_end_in_a_clear_error(registry, name):
    if name not in registry:
        pytest.fail(f"{name} has no bad-input cases")
    if name not in _first_names(registry):
        return  # its cases run under the first name sharing them
    before = LEDGER["cases"]
    registry[name]()
    assert LEDGER["cases"] > before  # every registered name really tries something


def test_the_classifier_can_fail(monkeypatch):
    # planted violations: a raw crash, a silent result and a message without the argument's name
    with pytest.raises(Unclear, match="raw"):
        attempt("planted", "n", lambda: [][1])
    with pytest.raises(Unclear, match="accepted"):
        attempt("planted", "n", lambda: 42)
    with pytest.raises(Unclear, match="terse"):
        attempt("planted", "n", lambda: int("x"))
    monkeypatch.setattr(
        dk.tasks, "run_training", lambda *a, **k: {}["model"]
    )  # a KeyError deep inside
    with pytest.raises(
        Unclear, match="raw"
    ):  # the CLI's catch-all for a non-OS, non-solver exception
        cli_attempt("train", "model", ["--model", "hbnode", "--task", "point_cloud"])
    with pytest.raises(Unclear, match="wrong"):
        checked("planted", "a wrong sum", lambda: 1 + 1, lambda result: result == 3)
    for key in ("raw", "accepted", "terse", "wrong"):
        LEDGER[key] -= 1  # planted, not counted
    LEDGER["raw"] -= 1
    LEDGER["cases"] -= 5


def main() -> int:
    import tempfile

    global STRICT
    STRICT = False
    with tempfile.TemporaryDirectory() as tmp:
        registry = cases(Path(tmp))
        problems = PROBLEMS
        first = _first_names(registry)
        for name in PUBLIC:
            if name not in registry:
                problems.append(f"{name}: no cases")
            elif name in first:
                registry[name]()
    print(
        f"public entry points: {len(PUBLIC)} ({sum(n.startswith('dynkit ') for n in PUBLIC)} "
        f"commands)"
    )
    print(
        f"bad-input cases: {LEDGER['cases']}; clear: {LEDGER['clear']}; terse: {LEDGER['terse']}; "
        f"raw: {LEDGER['raw']}; accepted: {LEDGER['accepted']}; wrong: {LEDGER['wrong']}"
    )
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
