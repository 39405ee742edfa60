"""The measured overlap of a task's held-out items with its train-visible items.

Tasks that draw the two splits independently (so that the complement of the train split says
nothing about the test set) let a held-out item also occur in the train data by chance. The one
measurement of that overlap is `SplitOverlap`, computed from the actual draws: the workspace's
description states its count, the evaluation child records the per-item membership (the grader
scores the items outside it apart, the "unseen" score), and the audit reads that membership
back instead of matching texts itself, so no two places can report different counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SplitOverlap:
    """Which held-out items (in held-out order) also occur among the train-visible items."""

    seen: tuple[bool, ...]

    @property
    def n_heldout(self) -> int:
        return len(self.seen)

    @property
    def n_seen(self) -> int:
        return sum(self.seen)

    @property
    def share(self) -> float:
        """Seen items as a fraction of the held-out items (0 when there are none)."""
        return self.n_seen / self.n_heldout if self.seen else 0.0


def measure_overlap(heldout_keys: Iterable[str], train_keys: Iterable[str]) -> SplitOverlap:
    """Membership of each held-out key in the train-visible keys (exact identity: the question
    text of a procedurally generated item)."""
    train = set(train_keys)
    return SplitOverlap(seen=tuple(key in train for key in heldout_keys))
