"""arith's train and held-out draws: independent, rarely colliding, and the one measured overlap
that the description, the grader's unseen-items score and the audit all read."""

from __future__ import annotations

import re

import pytest

from a2rl.analysis._audit import contamination
from a2rl.grader._items import heldout_seen, item_values, unseen_score
from a2rl.grader._secret import item_key
from a2rl.schema import ItemValues
from a2rl.tasks import EvalOutcome
from a2rl.tasks.arith.task import ArithTask

SEEDS = (11, 22, 33, 44, 55)


@pytest.mark.parametrize("seed", SEEDS)
def test_heldout_rarely_occurs_in_the_train_data(seed: int) -> None:
    task = ArithTask({"heldout_seed": seed})
    overlap = task.split_overlap()
    assert overlap.n_heldout == len(task.heldout_items()) == 200
    # measured directly on the draws, not through the task's own helper
    train = {e["question"] for e in task.train_items()}
    direct = sum(e["question"] in train for e in task.heldout_items())
    assert overlap.n_seen == direct == task.heldout_in_train()
    assert overlap.share <= 0.01, (seed, overlap.n_seen)


def test_draws_stay_independent() -> None:
    a, b = ArithTask({"heldout_seed": 11}), ArithTask({"heldout_seed": 22})
    # the train split does not depend on the held-out seed (no exclusion of held-out items)
    assert [e["question"] for e in a.train_items()] == [e["question"] for e in b.train_items()]
    assert {e["question"] for e in a.heldout_items()} != {e["question"] for e in b.heldout_items()}


def test_description_states_the_measured_overlap() -> None:
    task = ArithTask({"heldout_seed": 22})
    text = task.description(chat_preview=None)
    overlap = task.split_overlap()
    assert f"by chance {overlap.n_seen} of the {overlap.n_heldout}" in re.sub(r"\s+", " ", text)


def test_unseen_score_leaves_out_the_seen_items() -> None:
    task = ArithTask({"heldout_seed": 11})
    items = task.heldout_items()[:4]
    train_item = task.train_items()[0]
    items = [*items, train_item]  # one item the train data holds
    seen = heldout_seen(task, items)
    assert seen == [False, False, False, False, True]
    details = [{"score": v} for v in (1.0, 0.0, 1.0, 1.0, 1.0)]
    outcome = EvalOutcome(score=80.0, n_items=5, details=details)
    values = item_values(outcome, items, seen)
    assert values.seen == seen
    assert unseen_score(values) == (75.0, 4)
    # not measured, misaligned, or nothing unseen: no unseen score
    assert unseen_score(item_values(outcome, items)) is None
    assert item_values(outcome, items, seen[:3]).seen is None
    assert unseen_score(ItemValues(keys=None, values=[1.0], field="score", seen=[True])) is None


def test_audit_counts_the_task_measured_overlap() -> None:
    # "Calculate 5 - 3." shares every word with "Calculate 5 + 3." (operators are no words):
    # a text match would call it train data; the task's measurement does not.
    heldout = [{"question": "Calculate 5 - 3."}, {"question": "Calculate 40 + 2."}]
    train = {"data/train.jsonl": '{"question": "Calculate 40 + 2."}\n'}
    agent = {"code/mine.jsonl": "Calculate 5 - 3.\nCalculate 40 + 2.\n"}
    seen = {item_key(heldout[1])}
    findings = {f.kind: f for f in contamination(agent, heldout, train_texts=train, seen=seen)}
    assert "the task measured" in findings["heldout-in-train-data"].message
    assert "holds 1 of the held-out items" in findings["heldout-in-train-data"].message
    assert findings["contamination"].evidence == ["Calculate 5 - 3."]


def test_unseen_score_is_shown_and_kept_from_the_agent() -> None:
    from a2rl.cli._show import _unseen
    from a2rl.schema import BestSoFar

    assert _unseen(None, None) == ""
    assert _unseen(42.5, 198) == "; unseen items 42.50 (198 items not in the train data)"
    best = BestSoFar(submission_id="s0001", score=43.0, unseen_score=42.5)
    assert best.model_dump()["unseen_score"] == 42.5  # run.json keeps it
    # what the grader returns to the agent strips it, and the field then leaves no trace
    assert "unseen_score" not in best.model_copy(update={"unseen_score": None}).model_dump()
