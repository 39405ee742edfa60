"""`a2rl certify`: how much score a task's own scorer gives to behaviour that is not the skill.

Each adversarial class (`a2rl.certify._policies`) answers every certified held-out item; the
task's `score_offline` scores the answers exactly as it scores a model's. A class *wins* when its
best variant scores above the upper end of the base model's 95 % interval on the same items. The
certificate also holds a reference solution's score (the task's `reference_completion`): a
scorer that fails its own right answers is broken the other way.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from a2rl._errors import A2RLError
from a2rl.certify._policies import PolicyClass, PolicyContext, as_completions, policy_classes
from a2rl.grader import ScoreInterval, item_key, item_values, restrict_to_items, score_interval
from a2rl.tasks import EvalOutcome, Task, predictions_from_rows

CERTIFICATE_FORMAT = 1
DEFAULT_ITEMS = 40
"""Held-out items certified by default (a seeded sample; `--items 0` takes all)."""

Status = Literal["scored", "not-applicable", "not-run"]


class Scored(BaseModel):
    """One score on the certified items."""

    status: Status
    score: float | None = None
    """0–100, as the task reports it."""
    interval: ScoreInterval | None = None
    """Its 95 % interval, from the per-item values."""
    reason: str | None = None
    """Why it was not scored (not-applicable, not-run)."""


class ClassResult(Scored):
    """One adversarial class on the certified items."""

    name: str
    description: str
    variants: int = 0
    """Variants tried; the class scores as its best."""
    best_variant: int | None = None
    """Index of the best variant (0-based)."""
    wins: bool | None = None
    """Scores above the base model's interval (None: no base score to compare with)."""


class Certificate(BaseModel):
    """`certificate.json`: the record of one `a2rl certify` run."""

    format: int = CERTIFICATE_FORMAT
    task: str
    task_version: str
    fingerprint: str
    """The task's evaluation fingerprint (version, options, held-out items)."""
    scorer: str
    created_at: dt.datetime
    a2rl_version: str
    items: int
    """Held-out items certified (a seeded sample of the task's)."""
    base_model: str | None
    base: Scored
    reference: Scored
    classes: list[ClassResult] = Field(default_factory=list)

    @property
    def winners(self) -> list[str]:
        return [c.name for c in self.classes if c.wins]

    @property
    def passed(self) -> bool | None:
        """True: no class wins; False: some class does; None: undecided (no class could be
        scored, or one scored above zero with no base model to compare with)."""
        if self.winners:
            return False
        if not any(c.status == "scored" for c in self.classes):
            return None
        if any(c.wins is None and c.status == "scored" and (c.score or 0) > 0
               for c in self.classes):
            return None
        return True


def _scored(outcome: EvalOutcome, items: list[dict[str, Any]]) -> Scored:
    values = item_values(outcome, items)
    return Scored(status="scored", score=round(outcome.score, 4),
                  interval=score_interval(values.values, outcome.score))


def _predictions(ids: Sequence[str], answers: Sequence[list[str]]) -> list[Any]:
    return predictions_from_rows(({"id": i, "completions": list(a)}
                                  for i, a in zip(ids, answers, strict=True)), "certify")


def _score(task: Task, ids: list[str], answers: list[list[str]],
           items: list[dict[str, Any]]) -> Scored:
    try:
        outcome = task.score_offline(_predictions(ids, answers))
    except A2RLError as exc:  # a judge not configured, an engine missing: said, not hidden
        return Scored(status="not-run", reason=f"{exc.message}" + (f" ({exc.fix})" if exc.fix
                                                                   else ""))
    return _scored(outcome, items)


def certify(task: Task, *, items: int = DEFAULT_ITEMS, seed: int = 0,
            classes: Sequence[str] | None = None,
            base_score: Callable[[Task], Scored] | Scored | None = None,
            base_model: str | None = None, lazy_base: bool = False, turns: int = 60,
            on_class: Callable[[str], None] | None = None) -> Certificate:
    """Certify `task` on a seeded sample of `items` held-out items (0: all).

    `base_score`: the base model's score on the same items, or a function computing it (called
    once); None leaves it out. `lazy_base`: call it only when some class scores above zero (a
    class that scores zero cannot beat any base model). `turns`: replies of a scripted
    interactive policy (60 outlast every task's step limit)."""
    from a2rl import __version__

    all_items = task.heldout_items()
    if not all_items:
        raise A2RLError(f"task {task.name!r} has no held-out items", "check its options")
    rng = random.Random(seed)
    keys = [item_key(it) for it in all_items]
    chosen = set(keys) if not items or items >= len(keys) else set(rng.sample(keys, items))
    kept = restrict_to_items(task, lambda k: k in chosen)
    ids = task.item_ids()
    golds = [task.gold_answer(it) for it in kept]
    pool = [g for g in golds if g is not None]

    results: list[ClassResult] = []
    for cls in policy_classes(classes):
        if on_class is not None:
            on_class(cls.name)
        results.append(_run_class(task, cls, kept, ids, golds, pool, seed, turns))

    refs = [task.reference_completion(it) for it in kept]
    if any(r is None for r in refs):
        reference = Scored(status="not-applicable",
                           reason="the task defines no reference_completion(item)")
    else:
        reference = _score(task, ids, [as_completions(task, r or "") for r in refs], kept)

    if isinstance(base_score, Scored):
        base = base_score
    elif base_score is not None and (not lazy_base or any((c.score or 0) > 0 for c in results)):
        base = base_score(task)
    else:
        base = Scored(status="not-run", reason=(
            "no class scored above zero, so no base model can be beaten: not scored"
            if base_score is not None else "no base model given"))
    upper = base.interval.high if base.interval else base.score
    for r in results:
        if r.status == "scored" and r.score is not None:
            r.wins = (r.score > upper) if upper is not None else (False if r.score == 0 else None)
    return Certificate(task=task.name, task_version=task.version, fingerprint=task.fingerprint(),
                       scorer=task.scorer(), created_at=dt.datetime.now(dt.UTC),
                       a2rl_version=__version__, items=len(kept), base_model=base_model,
                       base=base, reference=reference, classes=results)


def _run_class(task: Task, cls: PolicyClass, kept: list[dict[str, Any]], ids: list[str],
               golds: list[str | None], pool: list[str], seed: int, turns: int) -> ClassResult:
    why = cls.applies(task)
    if why is not None:
        return ClassResult(name=cls.name, description=cls.description, status="not-applicable",
                           reason=why)
    rng = random.Random(f"{seed}:{cls.name}")
    per_item = []
    for it, gold in zip(kept, golds, strict=True):
        wrong = [g for g in pool if g != gold]
        rng.shuffle(wrong)
        per_item.append(cls.variants(PolicyContext(task=task, item=it, gold=gold, wrong=wrong,
                                                   rng=rng, turns=turns)))
    n_variants = min(len(v) for v in per_item)
    best: tuple[int, Scored] | None = None
    for v in range(n_variants):
        scored = _score(task, ids, [variants[v] for variants in per_item], kept)
        if scored.status != "scored":
            return ClassResult(name=cls.name, description=cls.description, status=scored.status,
                               reason=scored.reason, variants=n_variants)
        if best is None or (scored.score or 0) > (best[1].score or 0):
            best = (v, scored)
    assert best is not None
    return ClassResult(name=cls.name, description=cls.description, status="scored",
                       score=best[1].score, interval=best[1].interval, variants=n_variants,
                       best_variant=best[0])


def base_model_score(task: Task, model: str) -> Scored:
    """The base model's score on the task's (restricted) held-out items, as the grader scores
    it (the task's own `evaluate` with the model's chat template)."""
    from a2rl.models import resolve_model

    resolved = resolve_model(model)
    outcome = task.evaluate(resolved.path, chat_template_from=resolved.path)
    return _scored(outcome, task.heldout_items())
