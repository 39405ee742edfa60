"""Shared evaluation for static text tasks: render prompts, generate once, score each item."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from a2rl.inference import GenerationSettings
from a2rl.tasks._core.task import EvalOutcome, ProgressCounter, Task


def distinct_questions(items: Iterable[dict[str, Any]], n: int,
                       exclude: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The first `n` items whose `question` is new (not in `exclude`, not seen before): how
    generated splits are deduplicated and kept disjoint."""
    seen = set(exclude)
    kept: list[dict[str, Any]] = []
    for item in items:
        if item["question"] in seen:
            continue
        seen.add(item["question"])
        kept.append(item)
        if len(kept) == n:
            break
    return kept


class ItemVerdict(BaseModel):
    score: float
    """0..1 for this item."""
    extracted: str
    """The answer the scorer read out of the completion."""
    metrics: dict[str, float] = {}
    """Per-item values of secondary metrics (averaged ×100 into EvalOutcome.metrics)."""


class StaticTextTask(Task):
    """A task scored by one greedy completion per held-out prompt."""

    generation: ClassVar[GenerationSettings]

    @abstractmethod
    def messages(self, item: dict[str, Any]) -> list[dict[str, str]]:
        """The chat the evaluator sends for this item (documented in description.md)."""

    @abstractmethod
    def score_completion(self, item: dict[str, Any], completion: str) -> ItemVerdict: ...

    def evaluate(self, model_dir: Path, *, chat_template_from: Path | None,
                 on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
        from a2rl.inference import load_engine

        items = self.heldout_items()
        engine = load_engine(model_dir, chat_template_from=chat_template_from)
        prompts = [engine.apply_chat_template(self.messages(item)) for item in items]
        progress = ProgressCounter(len(items), on_progress)

        completions = engine.generate(prompts, self.generation, progress)
        engine.close()
        details = []
        total = 0.0
        sums: dict[str, float] = {}
        for item, prompt, completion in zip(items, prompts, completions, strict=True):
            verdict = self.score_completion(item, completion)
            total += verdict.score
            for key, value in verdict.metrics.items():
                sums[key] = sums.get(key, 0.0) + value
            details.append({"prompt": prompt, "completion": completion,
                            "extracted": verdict.extracted, "answer": item.get("answer"),
                            "score": verdict.score, **verdict.metrics})
        n = max(1, len(items))
        metrics = {k: round(100.0 * v / n, 4) for k, v in sums.items()}
        return EvalOutcome(score=round(100.0 * total / n, 4), n_items=len(items),
                           details=details, metrics=metrics)
