"""Per-item values from an evaluation (for confidence intervals), and restricting a task to a
subset of its held-out items (for the hidden-final split) without changing the task.

Both run in the evaluation child: the items never reach the grader process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2rl.grader._secret import item_key, split_test_keys
from a2rl.schema import ItemValues
from a2rl.tasks import EvalOutcome, Task

# Per-item value fields, in the order they are tried: static tasks (`score`), pairwise judges
# (`win`), interactive episodes (`success` for sparse tasks, `reward` for dense ones).
_VALUE_FIELDS = ("score", "win", "success", "reward")




class SplitError(ValueError):
    """The task's held-out items cannot be split (too few, or the task ignores the subset)."""


def _numeric(row: dict[str, Any], name: str) -> float | None:
    value = row.get(name)
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and 0.0 <= float(value) <= 1.0:
        return float(value)
    return None


def item_values(outcome: EvalOutcome, items: list[dict[str, Any]],
                seen: list[bool] | None = None) -> ItemValues:
    """Read one value per item from the outcome's details; the field whose mean best matches the
    score wins (a task whose score is a mean of a field matches exactly). `seen`: per item,
    whether it also occurs in the train-visible data (kept only when it lines up with the
    values)."""
    rows = [r for r in outcome.details if isinstance(r, dict) and r.get("kind") != "summary"]
    best: tuple[float, str, list[float]] | None = None
    for name in _VALUE_FIELDS:
        values = [_numeric(r, name) for r in rows]
        if not rows or any(v is None for v in values):
            continue
        vals = [float(v) for v in values if v is not None]
        gap = abs(100.0 * sum(vals) / len(vals) - outcome.score)
        if best is None or gap < best[0]:
            best = (gap, name, vals)
    if best is None:
        return ItemValues(keys=None, values=[], field=None)
    _, name, vals = best
    aligned = len(items) == len(vals)
    keys = [item_key(it) for it in items] if aligned else None
    return ItemValues(keys=keys, values=vals, field=name,
                      seen=list(seen) if aligned and seen is not None
                      and len(seen) == len(vals) else None)


def heldout_seen(task: Task, items: list[dict[str, Any]]) -> list[bool] | None:
    """The task's own measurement of which of `items` occur in its train-visible data (tasks
    that draw the splits independently define `heldout_seen`; None for the others)."""
    measure = getattr(task, "heldout_seen", None)
    return [bool(s) for s in measure(items)] if callable(measure) else None


def unseen_score(values: ItemValues) -> tuple[float, int] | None:
    """(score 0–100, item count) over the items that do not occur in the train-visible data;
    None when membership was not measured or no item is unseen."""
    if values.seen is None or len(values.seen) != len(values.values):
        return None
    unseen = [v for v, s in zip(values.values, values.seen, strict=True) if not s]
    if not unseen:
        return None
    return round(100.0 * sum(unseen) / len(unseen), 4), len(unseen)


def restrict_to_split(task: Task, split: str, test_fraction: float) -> list[dict[str, Any]]:
    """Make `task` evaluate only its dev or test items; return those items.

    Tasks read their items through `heldout_items()` (static tasks) or `heldout_episodes()`
    (interactive ones); both are shadowed on this instance. The caller checks afterwards that the
    evaluation scored exactly that many items, so a task that reads its items some other way fails
    loudly instead of being scored on the wrong set."""
    items = task.heldout_items()
    keys = [item_key(it) for it in items]
    try:
        test = split_test_keys(keys, test_fraction)
    except ValueError as exc:
        raise SplitError(f"task {task.name}: {exc}") from exc

    return restrict_to_items(task, lambda key: (key in test) == (split == "test"))


def restrict_to_items(task: Task, keep: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Make `task` evaluate only the held-out items whose `item_key` `keep` accepts; return
    them. `heldout_items()` and `heldout_episodes()` are shadowed on this instance."""
    kept = [it for it in task.heldout_items() if keep(item_key(it))]
    episodes_of = getattr(task, "heldout_episodes", None)
    if callable(episodes_of):
        episodes = [e for e in episodes_of() if keep(item_key(e.model_dump()))]
        object.__setattr__(task, "heldout_episodes", lambda: episodes)
    object.__setattr__(task, "heldout_items", lambda: kept)
    return kept
