"""Issue 17, class 2: the train split of a generated task must not reveal its held-out items.

The attack (what a red team did on arith): the train generator and its seed are public, so the
agent regenerates the train stream and lists the questions that the stream holds but
`data/train.jsonl` lacks. When train was built by dropping held-out questions from that stream,
that gap was the test set (99 of 200 held-out questions recovered). With the splits drawn
independently, the gap is only the stream's unused tail and hits held-out items at chance.

A second, statistical attack: a question missing from train is no likelier to be tested than
one present in it (with any disjoint split it would be, since frequent questions that train
lacks must have gone to the test side).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from a2rl.tasks import get_task
from a2rl.tasks._core.static import distinct_questions
from a2rl.tasks._lib.splits import check_disjoint_streams, stream_seed
from a2rl.tasks.arith.task import TRAIN_SEED as ARITH_TRAIN_SEED
from a2rl.tasks.arith.task import ArithTask
from a2rl.tasks.gsm8k.task import TRAIN_SEED as GSM8K_TRAIN_SEED
from a2rl.tasks.gsm8k.task import GSM8KTask

HELDOUT_SEED = 31337  # fixed, so the figures are reproducible; the attack never uses it
SMALL_SPACE = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 2,
               "operators": ["+", "-"], "allow_parentheses": False, "allow_negation": False}


def arith_stream(task: ArithTask, seed: int, size: int) -> list[dict[str, Any]]:
    import reasoning_gym

    return list(reasoning_gym.create_dataset(task.params.dataset, seed=seed, size=size,
                                             **task.params.generator))


def gap_attack(public_stream: list[dict[str, Any]], train: list[dict[str, Any]]) -> set[str]:
    """The questions the public train stream holds but the published train split lacks."""
    published = {e["question"] for e in train}
    return {e["question"] for e in public_stream} - published


def chance_hits(guesses: set[str], pool: list[dict[str, Any]], heldout: set[str]) -> float:
    """Expected hits of as many guesses drawn like generator questions: |guesses| × the share
    of held-out questions among distinct questions of an unrelated stream."""
    distinct = {e["question"] for e in pool}
    return len(guesses) * len(distinct & heldout) / len(distinct)


def assert_at_chance(hits: int, expected: float) -> None:
    # generous Poisson bound: expected + 4 standard deviations + 2
    assert hits <= expected + 4 * math.sqrt(expected) + 2, (hits, expected)


def test_arith_gap_attack_recovers_only_chance(a2rl_home: Path) -> None:
    task = get_task("arith", {"heldout_seed": HELDOUT_SEED})
    assert isinstance(task, ArithTask)
    p = task.params
    heldout = {e["question"] for e in task.heldout_items()}
    train = task.train_items()
    # the attacker knows the public seed, the options and how a2rl derives stream seeds
    public = arith_stream(task, stream_seed("arith", "train", ARITH_TRAIN_SEED), p.n_train * 3)
    guesses = gap_attack(public, train)
    pool = arith_stream(task, stream_seed("arith", "attacker-pool", 1), 20000)
    hits = len(guesses & heldout)
    assert_at_chance(hits, chance_hits(guesses, pool, heldout))

    # The same attack against a train split built by exclusion (the public stream minus the
    # held-out questions) in a small question space (one- and two-digit operands, ~16,000
    # questions) recovers about half of the test set: the test can fail.
    small = get_task("arith", {"heldout_seed": HELDOUT_SEED, "generator": SMALL_SPACE})
    assert isinstance(small, ArithTask)
    s_heldout = {e["question"] for e in small.heldout_items()}
    s_public = arith_stream(small, stream_seed("arith", "train", ARITH_TRAIN_SEED), p.n_train * 3)
    s_pool = arith_stream(small, stream_seed("arith", "attacker-pool", 1), 20000)
    old_train = distinct_questions(s_public, p.n_train, exclude=s_heldout)
    old_hits = len(gap_attack(s_public, old_train) & s_heldout)
    assert old_hits > 50 and old_hits > 5 * chance_hits(gap_attack(s_public, old_train), s_pool,
                                                        s_heldout)


def test_arith_absence_from_train_says_nothing(a2rl_home: Path) -> None:
    # Run in a small question space, where frequent questions repeat and the two groups below
    # are large (the default space is too large for any question to be frequent).
    task = get_task("arith", {"heldout_seed": HELDOUT_SEED, "generator": SMALL_SPACE})
    assert isinstance(task, ArithTask)
    heldout = {e["question"] for e in task.heldout_items()}
    train = {e["question"] for e in task.train_items()}
    # Candidates: the 400 most frequent questions of an unrelated stream (the ones a disjoint
    # split would betray most clearly).
    pool = arith_stream(task, stream_seed("arith", "attacker-pool", 2), 40000)
    counts: dict[str, int] = {}
    for e in pool:
        counts[e["question"]] = counts.get(e["question"], 0) + 1
    frequent = sorted(counts, key=lambda q: -counts[q])[:400]

    def rates(train_questions: set[str]) -> tuple[int, float, float]:
        absent = [q for q in frequent if q not in train_questions]
        present = [q for q in frequent if q in train_questions]
        return (len(absent), sum(q in heldout for q in absent) / max(1, len(absent)),
                sum(q in heldout for q in present) / max(1, len(present)))

    n_absent, rate_absent, rate_present = rates(train)
    assert n_absent >= 40 and rate_present > 0  # both groups are large enough to compare
    # absent frequent questions are not over-represented in the test set
    assert rate_absent <= 2 * rate_present + 0.05, (rate_absent, rate_present)
    # ...while with the old construction (held-out questions removed from the public stream)
    # they are the test set's most likely members: the test can fail
    public = arith_stream(task, stream_seed("arith", "train", ARITH_TRAIN_SEED),
                          task.params.n_train * 3)
    old = {e["question"] for e in distinct_questions(public, task.params.n_train,
                                                     exclude=heldout)}
    _, old_absent, old_present = rates(old)
    assert old_absent > 2 * old_present + 0.05, (old_absent, old_present)
    # the overlap is measured and reported, and it is the chance overlap of independent draws
    overlap = task.heldout_in_train()
    assert overlap == len(heldout & train)
    assert f"by chance {overlap} of the {len(heldout)}" in " ".join(
        task.description(chat_preview=None).split())


def test_gsm8k_stand_in_gap_attack_recovers_only_chance(a2rl_home: Path) -> None:
    task = get_task("gsm8k", {"source": "offline", "heldout_seed": HELDOUT_SEED,
                              "n_train": 400, "n_heldout": 100})
    assert isinstance(task, GSM8KTask)
    heldout = {e["question"] for e in task.heldout_items()}
    train = task.train_items()
    public = task._symbolic(GSM8K_TRAIN_SEED, 400 * 3 + 20, "train")
    guesses = gap_attack(public, train)
    assert len(guesses & heldout) <= 2  # the template space is large: chance is about zero
    old_train = distinct_questions(public, 400, exclude=heldout)
    assert len(gap_attack(public, old_train)) >= len(guesses)  # (the old gap held any overlap)
    assert task.heldout_in_train() == len(heldout & {e["question"] for e in train})


def test_split_streams_never_share_generator_indices() -> None:
    """reasoning-gym draws item i with Random(seed + i): nearby raw seeds shift one stream
    onto the other, so a2rl hashes a generator seed per split and checks the ranges."""
    a = stream_seed("arith", "train", 1729)
    assert a != stream_seed("arith", "heldout", 1729) != stream_seed("gsm8k", "train", 1729)
    assert 0 <= a < 1 << 62
    check_disjoint_streams((10, 5), (15, 5))
    with pytest.raises(ValueError, match="overlap"):
        check_disjoint_streams((10, 6), (15, 5))
    # a held-out seed next to the public train seed still gives unrelated items
    near = get_task("arith", {"heldout_seed": ARITH_TRAIN_SEED + 1, "n_train": 200,
                              "n_heldout": 50})
    near_q = [e["question"] for e in near.heldout_items()]
    train_q = [e["question"] for e in near.train_items()]
    assert near_q[:20] != train_q[1:21]
