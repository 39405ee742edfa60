"""What the evaluator agent and the plan reviewer are asked, and the JSON they must answer.

Inputs are only what the agent itself can see or produce: its code, its journal, the score
history the grader already returned, and the submitted model's outputs on train-visible items.
Nothing held-out (items, answers, per-item verdicts) is ever put into a prompt.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from a2rl.schema import (
    DATA_SOURCES,
    PARADIGMS,
    STAGE_STRUCTURES,
    JournalEntry,
    Plan,
    Strategy,
    StrategyChange,
    TrainOutput,
)

_ALIASES = {
    "sft": "full SFT", "full sft": "full SFT", "full-sft": "full SFT", "fullsft": "full SFT",
    "lora": "PEFT", "qlora": "PEFT", "peft": "PEFT", "adapter": "PEFT",
    "rl": "RL", "grpo": "RL", "ppo": "RL", "rloo": "RL", "reinforce": "RL", "dapo": "RL",
    "preference": "preference", "dpo": "preference", "orpo": "preference", "kto": "preference",
    "simpo": "preference", "distillation": "distillation", "kd": "distillation",
    "reward model": "reward model", "rm": "reward model",
    "curated": "curated", "given": "curated", "provided": "curated", "train": "curated",
    "self-generated": "self-generated", "self generated": "self-generated",
    "synthetic": "self-generated", "generated": "self-generated", "mixed": "mixed",
    "from base": "from base", "base": "from base", "from checkpoint": "from checkpoint",
    "checkpoint": "from checkpoint", "from-checkpoint": "from checkpoint",
    "from-base": "from base",
}


def normalize_strategy(value: Any) -> Any:
    """A strategy dict with common spellings mapped onto the trajectory study's vocabulary (GRPO → RL,
    LoRA → PEFT, base → from base, ...); anything else is left for validation to reject."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for key in ("k", "d", "g"):
        v = out.get(key)
        if isinstance(v, str):
            out[key] = _ALIASES.get(v.strip().lower(), v.strip())
    return out


VOCABULARY = (f"Strategy vocabulary (the trajectory study): k (training paradigm) is one of "
              f"{', '.join(PARADIGMS)}; d (data source) one of {', '.join(DATA_SOURCES)}; "
              f"g (stage structure) one of {', '.join(STAGE_STRUCTURES)}.")

EVALUATOR_SYSTEM = (
    "You are the evaluator agent beside an autonomous ML engineer who post-trains a language "
    "model for a benchmark. You see its code, its experiment journal and its score history. "
    "You never see the benchmark's held-out items. Answer with ONE JSON object and nothing "
    "else. " + VOCABULARY)

REVIEWER_SYSTEM = (
    "You review the plan of an autonomous ML engineer who is about to post-train a language "
    "model for a benchmark, before its first training run. Approve a sound plan; ask for a "
    "revision when the strategy, data, budget split or evaluation plan has a clear problem. "
    "Answer with ONE JSON object and nothing else. " + VOCABULARY)


class Expectation(BaseModel):
    """Stage 1 of an evaluation: the evaluator's expectation before it sees the score."""

    model_config = ConfigDict(extra="ignore")

    expectation: str = Field(min_length=1)


class RawSuggestion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    level: Literal["execution", "strategy"]
    text: str = Field(min_length=1)
    change: StrategyChange | None = None
    target: str | None = None

    @field_validator("change", mode="before")
    @classmethod
    def _spellings(cls, value: Any) -> Any:
        return normalize_strategy(value)


class Diagnosis(BaseModel):
    """Stage 2: diagnosis and typed suggestions, after the score and outputs."""

    model_config = ConfigDict(extra="ignore")

    diagnosis: str = Field(min_length=1)
    suggestions: list[RawSuggestion] = Field(default_factory=list, max_length=8)


class ReviewReply(BaseModel):
    """The reviewer's reply; validated into a PlanReview."""

    model_config = ConfigDict(extra="ignore")

    verdict: Literal["approve", "revise"]
    rationale: str = Field(min_length=1)
    requested_changes: list[str] = Field(default_factory=list)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + f"\n[... {len(text) - n} more characters]"


def code_block(files: dict[str, str], *, limit: int = 24000) -> str:
    out, used = [], 0
    for path in sorted(files):
        body = _clip(files[path], 6000)
        if used + len(body) > limit:
            out.append(f"--- {path} (omitted: prompt size limit)")
            continue
        used += len(body)
        out.append(f"--- {path}\n{body}")
    return "\n".join(out) or "(no files under code/ yet)"


def journal_block(entries: list[JournalEntry], *, last: int = 30) -> str:
    lines = [f"[{e.id} {e.kind} by {e.author} at {e.elapsed_s:.0f} s] {_clip(e.text, 800)}"
             for e in entries[-last:]]
    return "\n".join(lines) or "(empty)"


def history_block(history: list[tuple[str, str, float | None]]) -> str:
    return "\n".join(f"{sid}: {status}, score {score}" for sid, status, score in history) or \
        "(no earlier submissions)"


def expectation_prompt(*, task: str, baseline: float, submission: str, model_path: str,
                       strategy: Strategy | None, code: dict[str, str],
                       journal: list[JournalEntry],
                       history: list[tuple[str, str, float | None]]) -> str:
    return "\n\n".join([
        f"Stage 1 of 2 (expectation). Task: {task}. Base model score: {baseline}. The agent "
        f"just submitted {model_path} as {submission}; you have not seen its score yet.",
        "The agent's stated strategy: " + (strategy.model_dump_json() if strategy else
                                           "(not stated)"),
        "Earlier submissions:\n" + history_block(history),
        "Experiment journal (latest entries):\n" + journal_block(journal),
        "The agent's code (code/):\n" + code_block(code),
        'State what score you expect and why. Reply: {"expectation": "<two or three '
        'sentences>"}'])


def diagnosis_prompt(*, expectation: str, score: float | None, status: str,
                     outputs: list[TrainOutput]) -> str:
    shown = [{"id": o.id, "prompt": _clip(o.prompt, 600), "completion": _clip(o.completion, 600),
              "score": o.score} for o in outputs]
    return "\n\n".join([
        "Stage 2 of 2 (diagnosis). Your expectation was: " + expectation,
        f"The grader's result: status {status}, score {score} (on held-out items you do not "
        "see).",
        "The submitted model's outputs on train-visible items (score 1 = correct):\n" +
        (json.dumps(shown, indent=1) if shown else "(none available)"),
        "Diagnose compactly what happened and suggest what to do next. Type every suggestion: "
        '"execution" (inside the current strategy: a hyperparameter, a bug, formatting, '
        'data cleaning; name the setting or code element in "target") or "strategy" (a change '
        'of k, d or g; give the new values in "change"). Reply: {"diagnosis": "<at most five '
        'sentences>", "suggestions": [{"level": "execution", "text": "...", "target": '
        '"learning_rate"}, {"level": "strategy", "text": "...", "change": {"k": "RL"}}]}'])


def review_prompt(*, task: str, baseline: float, budget_s: float, plan: Plan,
                  earlier: list[tuple[Plan, str]]) -> str:
    parts = [f"Task: {task}. Base model score: {baseline}. Budget: {budget_s / 3600:.2f} h.",
             "The plan:\n" + plan.model_dump_json(indent=1)]
    if earlier:
        parts.append("Earlier plans and their reviews:\n" + "\n".join(
            f"{p.model_dump_json()} -> {r}" for p, r in earlier[-3:]))
    parts.append('Reply: {"verdict": "approve" | "revise", "rationale": "<why, two to four '
                 'sentences>", "requested_changes": ["<what to change>", ...]}')
    return "\n\n".join(parts)
