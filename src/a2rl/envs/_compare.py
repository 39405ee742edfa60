"""Agreement of two engines' trajectories of the same episodes (as details.jsonl rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def same_steps(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]],
               labels: tuple[str, str] = ("a", "b")) -> tuple[int, int, list[str]]:
    """(identical steps, steps, first difference per episode) of two runs' trajectories of the
    same episodes, matched by `episode_id`. Steps match while both episodes agree; after the
    first differing completion the episodes see different observations, so every later step
    (of either) counts as different."""
    same, total, diffs = 0, 0, []
    by_id = {t["episode_id"]: t for t in b}
    for ta in a:
        tb = by_id[ta["episode_id"]]
        total += max(len(ta["steps"]), len(tb["steps"]))
        for i, (sa, sb) in enumerate(zip(ta["steps"], tb["steps"], strict=False)):
            if sa["completion"] != sb["completion"]:
                diffs.append(f"{ta['episode_id']} step {i}: {labels[0]} {sa['completion']!r} / "
                             f"{labels[1]} {sb['completion']!r}")
                break
            same += 1
    return same, total, diffs
