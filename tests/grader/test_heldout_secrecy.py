"""The held-out seed never reaches a file a reader of the run can see, and the hidden-final split
is drawn in the grader, task-independently (real evaluation child, tiny model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from a2rl.grader import public_fingerprint, redacted_params, score_baseline
from a2rl.grader._items import restrict_to_split
from a2rl.grader._secret import item_key, split_test_keys
from a2rl.models import resolve_model
from a2rl.tasks import get_task
from conftest import TINY_TASK

SEED = 987654321


def _files_under(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*") if p.is_file()]


def test_seed_is_redacted_and_the_fingerprint_is_keyed() -> None:
    task = get_task("arith", {**TINY_TASK, "heldout_seed": SEED})
    params = redacted_params(task)
    assert str(SEED) not in str(params) and params["heldout_seed"].startswith("hmac:")
    assert public_fingerprint(task) != task.fingerprint()
    other = get_task("arith", {**TINY_TASK, "heldout_seed": SEED + 1})
    assert redacted_params(other)["heldout_seed"] != params["heldout_seed"]


def test_split_is_deterministic_disjoint_and_covers_every_item() -> None:
    task = get_task("arith", {**TINY_TASK, "n_heldout": 30})
    keys = [item_key(it) for it in task.heldout_items()]
    test = split_test_keys(keys, 0.5)
    assert len(test) == 15 and test == split_test_keys(list(reversed(keys)), 0.5)
    dev_items = restrict_to_split(get_task("arith", {**TINY_TASK, "n_heldout": 30}), "dev", 0.5)
    test_items = restrict_to_split(get_task("arith", {**TINY_TASK, "n_heldout": 30}), "test", 0.5)
    dev_q = {it["question"] for it in dev_items}
    test_q = {it["question"] for it in test_items}
    assert not dev_q & test_q and len(dev_q | test_q) == 30


@pytest.mark.slow
def test_hidden_baseline_through_the_real_child_writes_no_seed(tmp_path: Path, tiny_model: Path,
                                                              a2rl_home: Path) -> None:
    task = get_task("arith", {**TINY_TASK, "heldout_seed": SEED, "n_heldout": 8})
    base = resolve_model(str(tiny_model))
    rec = score_baseline(task, base, tmp_path / "evals" / "baseline", timeout_s=900,
                         final="hidden")
    assert rec.split == "dev" and rec.test_score is not None
    assert rec.n_items + (rec.test_n_items or 0) == 8 and rec.n_items >= 1
    assert rec.items is not None and rec.test_items is not None
    assert rec.items.keys and rec.test_items.keys
    assert not set(rec.items.keys) & set(rec.test_items.keys)
    assert rec.ci_low is not None and rec.ci_low <= rec.score <= (rec.ci_high or 0)
    job = (tmp_path / "evals" / "baseline" / "job.json").read_text()
    assert "hmac:" in job
    leaks = [p for p in _files_under(tmp_path, a2rl_home / "baselines")
             if str(SEED).encode() in p.read_bytes()]
    assert leaks == []


def test_redacted_params_restore_on_this_installation_only(a2rl_home: Path) -> None:
    from a2rl import A2RLError
    from a2rl.grader._secret import restore_task

    own = get_task("arith", {k: v for k, v in TINY_TASK.items() if k != "heldout_seed"})
    restored = restore_task("arith", redacted_params(own))
    assert restored.heldout_items() == own.heldout_items()
    explicit = get_task("arith", {**TINY_TASK, "heldout_seed": SEED})
    with pytest.raises(A2RLError, match="redacted"):
        restore_task("arith", redacted_params(explicit))
    again = restore_task("arith", redacted_params(explicit), seeds={"heldout_seed": SEED})
    assert again.heldout_items() == explicit.heldout_items()


@pytest.mark.slow
def test_hidden_final_run_end_to_end_with_the_real_child(tmp_path: Path, tiny_model: Path,
                                                         model_copy, a2rl_home: Path) -> None:
    from a2rl.grader import Grader, GraderConfig, read_final
    from a2rl.schema import RunConfig
    from conftest import perturb

    task = get_task("arith", {**TINY_TASK, "heldout_seed": SEED, "n_heldout": 8})
    base = resolve_model(str(tiny_model))
    run_dir = tmp_path / "run"
    ws = run_dir / "workspace"
    (ws / "output").mkdir(parents=True)
    baseline = score_baseline(task, base, run_dir / "evals" / "baseline", timeout_s=900,
                              final="hidden")
    g = Grader(run_dir, ws, task, base, baseline,
               GraderConfig(RunConfig(budget_s=600, final="hidden", eval_timeout_s=900,
                                   runs_dir=str(tmp_path))))
    g.start_clock()
    perturb(model_copy(ws / "output" / "v1"), scale=0.05)
    r = g.submit("output/v1", final=True)
    assert r.status == "scored" and r.split == "dev" and r.ci_low is not None
    result = g.run_final()
    g.close()
    assert result.status == "scored" and result.chosen_by == "agent"
    assert result.n_items == baseline.test_n_items and result.test_baseline == baseline.test_score
    assert result.significant is not None and read_final(run_dir) == result
    dev, test = g.ledger.get("s0001"), g.ledger.get("s0002")
    assert dev.n_items == baseline.n_items and test.split == "test" and test.final_of == "s0001"
    leaks = [p for p in _files_under(run_dir) if p.is_file() and "blobs" not in p.parts
             and str(SEED).encode() in p.read_bytes()]
    assert leaks == []


@pytest.mark.parametrize("name", ["arith", "alfworld", "deepsearchqa", "webshop"])
def test_every_secret_marked_option_is_redacted(name: str) -> None:
    """Redaction follows the mark on the field (`secret_field()`), not a list kept elsewhere: a
    task whose held-out seed is marked only on its field still never shows it in a record."""
    task = get_task(name, {"heldout_seed": 987654321})
    assert "heldout_seed" in task.params.secret_fields()
    shown = redacted_params(task)
    assert str(shown["heldout_seed"]).startswith("hmac:")
    assert "987654321" not in repr(shown)
