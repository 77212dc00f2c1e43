"""fit: exact resume with a learning-rate scheduler, step-owned backward, unchanged default
behaviour."""

import pytest
import torch

from dynkit.tasks.text import paper_schedule
from dynkit.tasks.training import (
    CHECKPOINT_NAME,
    MANIFEST_NAME,
    CheckpointError,
    History,
    TrainingError,
    epoch_generator,
    fit,
    load_checkpoint,
    save_checkpoint,
)

torch.set_num_threads(1)
X = torch.linspace(-1, 1, 40).reshape(20, 2)
Y = X @ torch.tensor([[1.5], [-0.5]]) + 0.3
N_BATCHES = 4  # 20 samples in batches of 5
GAMMA = 0.8


def batches(generator):
    order = torch.randperm(len(Y), generator=generator)
    for i in range(0, len(Y), 5):
        yield X[order[i : i + 5]], Y[order[i : i + 5]]


def step(model, batch):
    x, y = batch
    noise = 0.01 * torch.randn(y.shape)  # draws from the global state: resume must restore it
    loss = (model(x) - y - noise).pow(2).mean()
    return loss, {"abs_noise": float(noise.abs().mean())}


def make(scheduled: bool):
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    # LambdaLR computes the rate from its own step count (a chainable scheduler such as
    # ExponentialLR would also continue from the optimiser's restored lr), so only a restored
    # scheduler resumes exactly.
    scheduler = (
        torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: GAMMA**s) if scheduled else None
    )
    return model, optimizer, scheduler


def train(epochs, scheduled=True, **kwargs):
    model, optimizer, scheduler = make(scheduled)
    history = fit(
        model,
        optimizer,
        batches,
        step,
        epochs,
        seed=5,
        scheduler=scheduler,
        progress=False,
        **kwargs,
    )
    return model, history


def test_scheduler_resume_is_exact(tmp_path):
    model_a, full = train(3, checkpoint_dir=tmp_path / "a")
    train(1, checkpoint_dir=tmp_path / "b")
    model_b, resumed = train(3, checkpoint_dir=tmp_path / "b", resume=True)
    # Exact equality: the same floating-point operations in the same order.
    assert full.epochs == resumed.epochs
    for p, q in zip(model_a.parameters(), model_b.parameters()):
        assert torch.equal(p, q)
    # The schedule really advanced once per optimiser step and was restored, not restarted:
    # lr after epoch e is 0.1 * GAMMA ** (e * N_BATCHES) (exact up to float rounding, rel 1e-12).
    assert full.column("lr") == pytest.approx(
        [0.1 * GAMMA ** (e * N_BATCHES) for e in (1, 2, 3)], rel=1e-12
    )


def test_resume_with_a_scheduler_from_a_checkpoint_without_one_raises(tmp_path):
    # Restarting the schedule silently would break exact resume, so it is refused.
    train(1, scheduled=False, checkpoint_dir=tmp_path / "b")
    with pytest.raises(ValueError, match="scheduler"):
        train(2, checkpoint_dir=tmp_path / "b", resume=True)


def test_without_scheduler_matches_a_plain_loop(tmp_path):
    model, history = train(2, scheduled=False, checkpoint_dir=tmp_path)
    assert "lr" not in history.epochs[0]
    assert load_checkpoint(tmp_path / CHECKPOINT_NAME)["scheduler"] is None
    # An independent loop doing what fit documents: seed, per-epoch generator,
    # zero_grad/backward/step.
    ref, optimizer, _ = make(False)
    torch.manual_seed(5)
    losses = []
    for epoch in range(2):
        total = 0.0
        for batch in batches(epoch_generator(5, epoch)):
            optimizer.zero_grad()
            loss, _ = step(ref, batch)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total / N_BATCHES)
    assert history.column("train_loss") == losses
    for p, q in zip(model.parameters(), ref.parameters()):
        assert torch.equal(p, q)


def test_step_owned_backward_matches_fit_backward():
    def step_with_backward(model, batch):
        loss, metrics = step(model, batch)
        loss.backward()
        return loss, metrics

    model_a, a = train(2)
    model_b, optimizer, scheduler = make(True)
    b = fit(
        model_b,
        optimizer,
        batches,
        step_with_backward,
        2,
        seed=5,
        scheduler=scheduler,
        progress=False,
        backward=False,
    )
    assert a.epochs == b.epochs
    for p, q in zip(model_a.parameters(), model_b.parameters()):
        assert torch.equal(p, q)


def test_step_owned_backward_still_stops_on_non_finite_loss():
    model, optimizer, _ = make(False)
    before = [p.clone() for p in model.parameters()]

    def bad_step(model, batch):
        loss = model(batch[0]).sum() * float("nan")
        loss.backward()
        return loss, {}

    with pytest.raises(TrainingError, match="epoch 1, batch 1"):
        fit(model, optimizer, batches, bad_step, 1, progress=False, backward=False)
    assert all(torch.equal(p, q) for p, q in zip(before, model.parameters()))  # no update applied


def test_bad_arguments_raise():
    model, optimizer, scheduler = make(True)
    with pytest.raises(ValueError, match="resume=True needs checkpoint_dir"):
        fit(model, optimizer, batches, step, 1, resume=True, progress=False)
    other = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="scheduler must schedule the optimizer"):
        fit(model, other, batches, step, 1, scheduler=scheduler, progress=False)
    with pytest.raises(ValueError, match="backward must be a bool"):
        fit(model, optimizer, batches, step, 1, backward=1, progress=False)


def test_csaode_paper_schedule_warms_up_linearly_then_decays():
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    scheduler = paper_schedule(optimizer, steps_per_epoch=4, warmup_epochs=0.5, lr_decay=0.5)
    rates = [optimizer.param_groups[0]["lr"]]
    for _ in range(6):
        optimizer.step()
        scheduler.step()
        rates.append(optimizer.param_groups[0]["lr"])
    # warm-up of 2 steps: 1/2, 1; then halving every 4 steps: 0.5 ** (k / 4) after k post-warm-up
    # steps.
    assert rates == pytest.approx([0.5, 1.0] + [0.5 ** (k / 4) for k in range(1, 6)], rel=1e-12)
    for name, bad in (
        ("steps_per_epoch", dict(steps_per_epoch=0)),
        ("lr_decay", dict(lr_decay=1.5)),
        ("warmup_epochs", dict(warmup_epochs=-1)),
    ):
        with pytest.raises(ValueError, match=name):
            paper_schedule(optimizer, **{"steps_per_epoch": 4, **bad})


# ---------------------------------------------------------------------------------------------
# checkpoints never run code (issue 14, section 1)


class _Payload:
    """Unpickling this object runs ``exec`` on its code: the classic malicious pickle."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('the payload ran')",)


def _plant_malicious_checkpoint(folder, marker):
    folder.mkdir(parents=True, exist_ok=True)
    good = {
        "format": "dynkit-checkpoint/2",
        "model": {"weight": _Payload(marker)},
        "optimizer": {},
        "epoch": 0,
        "history": [],
        "random": {},
        "extra": {},
        "manifest": {},
    }
    torch.save(good, folder / CHECKPOINT_NAME)
    return folder / CHECKPOINT_NAME


def test_malicious_checkpoint_is_refused_and_its_payload_never_runs(tmp_path):
    marker = tmp_path / "marker"
    path = _plant_malicious_checkpoint(tmp_path / "run", marker)
    # The planted file is really malicious: an unrestricted load runs the payload ...
    torch.load(path, weights_only=False)
    assert marker.read_text() == "the payload ran"
    marker.unlink()
    # ... while dynkit's loader and a resume refuse it with a clear error, and nothing runs.
    with pytest.raises(CheckpointError, match="refused"):
        load_checkpoint(path)
    model, optimizer, _ = make(False)
    with pytest.raises(CheckpointError, match=f"checkpoint '{path}' refused"):
        fit(
            model,
            optimizer,
            batches,
            step,
            2,
            checkpoint_dir=path.parent,
            resume=True,
            progress=False,
        )
    assert not marker.exists()


@pytest.mark.parametrize(
    "content,match",
    [
        (b"", "refused"),  # empty file
        (b"not a checkpoint at all", "refused"),  # garbage
    ],
)
def test_damaged_checkpoints_are_refused(tmp_path, content, match):
    (tmp_path / CHECKPOINT_NAME).write_bytes(content)
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(tmp_path / CHECKPOINT_NAME)


def test_foreign_plain_checkpoint_is_refused_by_format(tmp_path):
    torch.save({"model": {}, "epoch": 3}, tmp_path / CHECKPOINT_NAME)  # loadable, but not ours
    with pytest.raises(CheckpointError, match="format"):
        load_checkpoint(tmp_path / CHECKPOINT_NAME)


def test_checkpoint_holds_only_plain_data_and_saving_refuses_anything_else(tmp_path):
    train(1, checkpoint_dir=tmp_path)
    state = load_checkpoint(tmp_path / CHECKPOINT_NAME)  # weights_only=True: tensors and plain data
    assert state["epoch"] == 0 and isinstance(state["random"]["numpy"]["key"], torch.Tensor)
    model, optimizer, _ = make(False)
    with pytest.raises(TypeError, match=r"checkpoint\['extra'\]\['bad'\]"):
        save_checkpoint(
            tmp_path / "other.pt", model, optimizer, 0, History(), extra={"bad": object()}
        )
    assert not (tmp_path / "other.pt").exists()


# ---------------------------------------------------------------------------------------------
# run folders: manifest, refusals, orphans (issue 14, section 2)


def test_fresh_run_into_a_folder_with_a_checkpoint_is_refused(tmp_path):
    train(1, checkpoint_dir=tmp_path)
    before = (tmp_path / CHECKPOINT_NAME).read_bytes()
    with pytest.raises(CheckpointError, match="already holds a run; pass resume=True"):
        train(2, checkpoint_dir=tmp_path)
    assert (tmp_path / CHECKPOINT_NAME).read_bytes() == before  # nothing overwritten


def test_resume_with_other_options_names_them(tmp_path):
    train(1, scheduled=False, checkpoint_dir=tmp_path)
    model, optimizer, _ = make(False)
    with pytest.raises(CheckpointError, match=r"different: seed \(run: 5, now: 6\)"):
        fit(
            model,
            optimizer,
            batches,
            step,
            2,
            seed=6,
            checkpoint_dir=tmp_path,
            resume=True,
            progress=False,
        )
    model, optimizer, _ = make(False)
    optimizer.param_groups[0]["lr"] = 0.5
    with pytest.raises(CheckpointError, match=r"optimizer.lr \(run: 0.1, now: 0.5\)"):
        fit(
            model,
            optimizer,
            batches,
            step,
            2,
            seed=5,
            checkpoint_dir=tmp_path,
            resume=True,
            progress=False,
        )
    model, optimizer, _ = make(False)
    with pytest.raises(CheckpointError, match=r"task \(run: '\(absent\)', now: 'other'\)"):
        fit(
            model,
            optimizer,
            batches,
            step,
            2,
            seed=5,
            checkpoint_dir=tmp_path,
            resume=True,
            progress=False,
            manifest={"task": "other"},
        )


def test_orphan_temporaries_of_an_interrupted_write_are_removed(tmp_path):
    orphan = (
        tmp_path / f".{CHECKPOINT_NAME}.dynkit-k2j4h1xz.tmp"
    )  # io.TEMP_MARKER names our temporaries
    orphan.write_bytes(b"half a checkpoint")
    unrelated = tmp_path / "notes.tmp"
    unrelated.write_text("mine")
    train(1, checkpoint_dir=tmp_path)
    assert not orphan.exists() and unrelated.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [CHECKPOINT_NAME, MANIFEST_NAME, "notes.tmp"]
    )


def test_resume_under_other_versions_warns_that_it_may_not_be_bit_exact(tmp_path):
    import json

    train(1, scheduled=False, checkpoint_dir=tmp_path)
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    manifest["versions"]["torch"] = "0.0.1"
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.warns(RuntimeWarning, match="other versions"):
        train(2, scheduled=False, checkpoint_dir=tmp_path, resume=True)


def test_manifest_and_checkpoint_of_different_runs_are_refused(tmp_path):
    # a checkpoint copied into another run's folder: the checkpoint's own record is checked too
    train(1, scheduled=False, checkpoint_dir=tmp_path / "a")
    model, optimizer, _ = make(False)
    fit(model, optimizer, batches, step, 1, seed=9, checkpoint_dir=tmp_path / "b", progress=False)
    (tmp_path / "a" / CHECKPOINT_NAME).replace(tmp_path / "b" / CHECKPOINT_NAME)
    model, optimizer, _ = make(False)
    with pytest.raises(CheckpointError, match=r"seed \(run: 5, now: 9\)"):
        fit(
            model,
            optimizer,
            batches,
            step,
            2,
            seed=9,
            checkpoint_dir=tmp_path / "b",
            resume=True,
            progress=False,
        )
