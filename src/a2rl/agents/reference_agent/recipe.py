"""The reference agent's decisions, kept free of I/O so they can be tested without a model.

* `TimePlan`: how the time actually left is split between generating, training and checking
  candidates, from measured rates (never a fixed step count).
* `lr_factor`: the learning-rate multiplier of a training run sized in seconds (linear warm-up
  over a few steps, then a cosine over the wall-clock time).
* `self_generated_targets`: rejection-sampled training targets from the model's own
  completions on train questions (kept when right; the final number swapped for the correct one
  when only that number is wrong), so SFT teaches the answers in the model's own wording instead
  of forcing a bare-answer format the small model cannot compute in.
* `select_candidates`: which checkpoints to submit, judged on a train-visible dev split.
* `rft_rows`: supervised rows from interactive rollouts (rejection-sampling fine-tuning).
* `arith_reward`: the rule reward of the GRPO variant.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

RECIPES = ("sft", "rft", "grpo", "rollout-rft")
"""The pipeline's recipes (`--recipe`, the agent's `--agent-opt recipe=`)."""


@dataclass(frozen=True)
class Flag:
    """One command-line flag of the pipeline."""

    kind: type[str] | type[int] | type[float]
    default: str | int | float | None
    help: str


FLAGS: dict[str, Flag] = {
    "recipe": Flag(str, None, "default: rft for arith, sft for other static tasks, rollout-rft "
                              "for interactive ones"),
    "steps": Flag(int, 0, "train this many steps (0 = size the training from the time left)"),
    "lr": Flag(float, 1e-4, "the learning rate of SFT"),
    "grpo_lr": Flag(float, 5e-6, "the learning rate of GRPO"),
    "num_generations": Flag(int, 4, "completions per prompt (grpo)"),
    "batch_size": Flag(int, 8, "training batch size"),
    "max_train": Flag(int, 0, "train rows used at most (0 = all)"),
    "dev": Flag(int, 48, "train rows set aside as the dev split"),
    "candidates": Flag(int, 3, "checkpoints saved evenly in time and judged on dev"),
    "max_submit": Flag(int, 2, "candidates submitted at most"),
    "samples": Flag(int, 1, "sampled passes besides the greedy one (rft; rollouts per round)"),
    "temperature": Flag(float, 0.7, "sampling temperature"),
    "gen_items": Flag(int, 300, "with --steps: train questions to sample (rft)"),
    "gen_fraction": Flag(float, 0.15, "share of the time left for rejection sampling (rft)"),
    "gen_rate": Flag(float, 0.2, "seconds per generated item assumed when there is no dev split"),
    "max_new_tokens": Flag(int, 16, "the evaluator's token limit (description.md)"),
    "margin": Flag(float, 25.0, "seconds kept for saving, submitting and exiting"),
    "startup": Flag(float, 25.0, "seconds the training process needs to load its libraries and "
                                 "model"),
    "rounds": Flag(int, 2, "rollout-and-train rounds (interactive tasks)"),
    "episodes": Flag(int, 0, "train episodes rolled out per round (0 = all)"),
    "min_reward": Flag(float, 1.0, "a rollout is kept when its reward is at least this"),
}
"""The pipeline's command-line flags (`--batch-size` is `batch_size` here): the reference
agent's `--agent-opt` keys, their types, defaults and help."""

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_HEDGE = re.compile(r"\b(?:or|not|never|either|maybe|perhaps|possibly|probably|could|might|"
                    r"than|instead|but|unless|nor|isn't|wasn't)\b", re.IGNORECASE)
# The completion's answer line ends in "= <number>" (optionally a period): a shown computation
# whose result alone can be corrected without touching the model's wording.
_EQUALS_RESULT = re.compile(r"^(?P<head>.*=\s*)(?P<num>-?\d+(?:\.\d+)?)\s*\.?\s*$")


def extract_answer(completion: str) -> str:
    """The answer the `arith` evaluator reads (its description.md, "Answer extraction"):
    inside <answer>…</answer> if present, else the first line, trailing period dropped; when
    that is not a plain number, the last number in it, unless the line hedges or rejects."""
    text = completion.strip()
    if "<answer>" in text and "</answer>" in text.split("<answer>", 1)[1]:
        text = text.split("<answer>", 1)[1].split("</answer>", 1)[0]
    else:
        text = text.split("\n", 1)[0]
    text = text.strip()
    text = text[:-1].strip() if text.endswith(".") else text
    if _NUMBER.fullmatch(text):
        return text
    numbers = _NUMBER.findall(text)
    if len(numbers) > 1 and _HEDGE.search(text):
        return text  # a hedge or a rejection ("either 19 or 20") is no answer
    return numbers[-1] if numbers else text


def is_correct(completion: str, answer: str) -> bool:
    return extract_answer(completion) == str(answer).strip()


def corrected(completion: str, answer: str) -> str | None:
    """The completion's first line with its final "= N" replaced by the correct answer, or
    None when the line is not of that shape (then no safe correction exists)."""
    line = completion.strip().split("\n", 1)[0].strip()
    match = _EQUALS_RESULT.match(line)
    if match is None:
        return None
    return f"{match.group('head')}{str(answer).strip()}"


def self_generated_targets(rows: Sequence[dict[str, Any]],
                           samples: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """One SFT row per train question that has a usable target.

    `samples[i]` are the model's completions for `rows[i]` (each row has `prompt` and
    `answer`). A correct completion is kept as it is (the shortest first line of the correct
    ones: the answer line is what is scored, and rambling after it is not worth teaching);
    otherwise the shortest completion of the "… = N" shape, with N corrected; otherwise the
    question is skipped. Each row records its `source` (self or corrected)."""
    out: list[dict[str, Any]] = []
    for row, completions in zip(rows, samples, strict=True):
        answer = str(row["answer"])
        right = [c.strip().split("\n", 1)[0].strip() for c in completions if is_correct(c, answer)]
        right = [c for c in right if c]
        if right:
            out.append({"prompt": row["prompt"], "answer": min(right, key=len), "source": "self"})
            continue
        fixed = [f for f in (corrected(c, answer) for c in completions) if f]
        if fixed:
            out.append({"prompt": row["prompt"], "answer": min(fixed, key=len),
                        "source": "corrected"})
    return out


def sft_rows(task: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The train rows of a static task as {prompt, answer}: the user message the evaluator sends
    (each task's description.md) and the assistant reply to teach.

    arith and gsm8k rows carry both (gsm8k's answer is the worked solution ending in
    `#### N`, the format its strict metric reads); alpacaeval's reply is `output`; humaneval's
    is the pre-filled start of the turn (the code fence and the signature) followed by the
    reference body and the closing fence."""
    if task == "humaneval":
        from a2rl.tasks.humaneval.task import response_prefix, user_message

        return [{"prompt": user_message(r),
                 "answer": response_prefix(r) + r["canonical_solution"].rstrip("\n") + "\n```"}
                for r in rows]
    out = []
    for i, r in enumerate(rows):
        reply = r.get("answer", r.get("output"))
        if "prompt" not in r or reply is None:
            raise ValueError(f"train row {i} of {task} has neither prompt+answer nor "
                             f"prompt+output (keys: {sorted(r)})")
        out.append({**r, "prompt": r["prompt"], "answer": str(reply)})
    return out


_CALCULATE = re.compile(r"^Calculate (?P<expr>.+?)\.?$")


def worked_target(question: str, answer: str) -> str | None:
    """The shape the model itself answers arith in ("61 - 24 = 37": the expression, then the
    result), with the correct result: a target needing no sampling, used for the questions
    rejection sampling left without one (or all, when there was no time to sample). Teaching
    the bare answer instead makes the small model compute in one token and breaks it."""
    match = _CALCULATE.match(question.strip())
    return f"{match.group('expr').strip()} = {str(answer).strip()}" if match else None


def with_worked_targets(rows: Sequence[dict[str, Any]],
                        targets: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`targets` plus a worked target for every row of `rows` whose prompt has none yet."""
    have = {t["prompt"] for t in targets}
    out = list(targets)
    for r in rows:
        if r["prompt"] in have or "question" not in r:
            continue
        text = worked_target(r["question"], r["answer"])
        if text is not None:
            out.append({"prompt": r["prompt"], "answer": text, "source": "worked"})
    return out


def split_dev(rows: Sequence[dict[str, Any]], n_dev: int, seed: int = 0
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, dev): a fixed random `n_dev` rows set aside to judge candidates, never trained on."""
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_dev = max(0, min(n_dev, len(rows) // 2))
    dev = [rows[i] for i in sorted(order[:n_dev])]
    train = [rows[i] for i in sorted(order[n_dev:])]
    return train, dev


@dataclass(frozen=True)
class TimePlan:
    """How many seconds each phase of the static recipe gets, from what is left."""

    generate_items: int
    """Train questions to sample the model on (rejection sampling)."""
    train_seconds: float
    """Wall-clock seconds of SFT."""
    n_candidates: int
    """Checkpoints saved during training (evenly spaced in time) and judged on dev."""
    feasible: bool
    """False when not even a minimal run fits; the agent then stops without training."""


def plan_time(remaining_s: float, *, gen_s_per_item: float, n_dev: int, n_train_rows: int,
              max_candidates: int = 3, gen_fraction: float = 0.15, margin_s: float = 20.0,
              min_train_s: float = 30.0) -> TimePlan:
    """Split `remaining_s` (from the grader's clock, after the dev split of the base model has
    been generated at `gen_s_per_item`): a share `gen_fraction` for sampling train questions,
    the dev check of each candidate, a margin for saving and submitting, and the rest training.
    Fewer candidates when time is short: training comes first, one candidate at least."""
    dev_check_s = 1.3 * n_dev * gen_s_per_item  # 1.3: load time and a busier machine
    generate_items = int(min(n_train_rows, max(0.0, gen_fraction * remaining_s) / gen_s_per_item))
    for n in range(max_candidates, 0, -1):
        train_s = (remaining_s - margin_s - generate_items * gen_s_per_item - n * dev_check_s)
        if train_s >= min_train_s * n:
            return TimePlan(generate_items, train_s, n, True)
    # Short of time: drop the sampling, keep one candidate.
    train_s = remaining_s - margin_s - dev_check_s
    return TimePlan(0, max(0.0, train_s), 1, train_s >= min_train_s)


def lr_factor(step: int, elapsed_s: float, total_s: float, warmup_steps: int = 5) -> float:
    """Multiplier of the peak learning rate at optimizer step `step` (0-based), `elapsed_s`
    into a run of `total_s` seconds: linear warm-up over `warmup_steps` steps, then a cosine
    over the wall clock, so the schedule ends at 0 when the time is up however fast steps are."""
    warm = min(1.0, (step + 1) / max(1, warmup_steps))
    progress = min(1.0, max(0.0, elapsed_s / max(1e-9, total_s)))
    return warm * 0.5 * (1.0 + math.cos(math.pi * progress))


def checkpoint_times(total_s: float, n: int) -> list[float]:
    """Elapsed seconds at which the n candidates are saved (the last one at the end)."""
    return [total_s * (k + 1) / n for k in range(n)]


class TimeKeeper:
    """What a training run sized in seconds does after each optimizer step: how many of the
    evenly spaced checkpoints are due, and whether to stop. `finish` gives the checkpoints still
    owed when training ended early (the data ran out): they are the final model."""

    def __init__(self, total_s: float, n_checkpoints: int) -> None:
        self.total_s = total_s
        self.pending = checkpoint_times(total_s, max(1, n_checkpoints))

    def after_step(self, elapsed_s: float) -> tuple[int, bool]:
        """(checkpoints to save now, stop training)."""
        due = 0
        while self.pending and elapsed_s >= self.pending[0] - 1e-9:
            self.pending.pop(0)
            due += 1
        return due, elapsed_s >= self.total_s

    def finish(self) -> int:
        owed, self.pending = len(self.pending), []
        return owed


@dataclass(frozen=True)
class Candidate:
    path: str
    dev_score: float


def select_candidates(candidates: Iterable[Candidate], base_dev: float, *,
                      max_submit: int = 2) -> list[Candidate]:
    """Which checkpoints to submit, best dev score first: those that beat the base model on
    the dev split (up to `max_submit`); when none does, the single best one (a run that
    submits nothing reports nothing), so the grader still scores the recipe's best guess."""
    ranked = sorted(candidates, key=lambda c: -c.dev_score)
    better = [c for c in ranked if c.dev_score > base_dev]
    return better[:max_submit] if better else ranked[:1]


def rft_rows(trajectories: Iterable[dict[str, Any]], *, min_reward: float) -> list[dict[str, Any]]:
    """Supervised rows from the kept trajectories of interactive rollouts: every assistant
    step of a successful (or reward >= `min_reward`) trajectory, with the conversation before
    it as the prompt. Identical (prompt, completion) pairs are kept once, so an episode solved
    the same way by several samples does not outweigh the others."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for t in trajectories:
        if not (t.get("success") or float(t.get("reward", 0.0)) >= min_reward):
            continue
        msgs = t["messages"]
        for i, m in enumerate(msgs):
            if m["role"] != "assistant":
                continue
            key = repr((msgs[:i], m["content"]))
            if key in seen:
                continue
            seen.add(key)
            rows.append({"prompt_messages": msgs[:i], "completion": m["content"]})
    return rows


def arith_reward(completions: Sequence[Any], answer: Sequence[str]) -> list[float]:
    """GRPO reward: 1 when the evaluator would read the right answer, else 0; plus 0.1 when the
    completion is one short non-empty line (the shape the evaluator reads best). `completions`
    are strings or conversational message lists, as TRL passes them."""
    rewards = []
    for completion, gold in zip(completions, answer, strict=True):
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        score = 1.0 if is_correct(text, gold) else 0.0
        first = text.strip().split("\n", 1)[0]
        one_line = bool(first.strip()) and text.strip() == first and len(first) <= 40
        rewards.append(score + (0.1 if one_line else 0.0))
    return rewards
