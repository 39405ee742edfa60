"""Seeds for generated train and held-out splits that are independent of each other.

reasoning-gym draws item i of a data set with `random.Random(seed + i)`, so the streams of two
nearby seeds are the same items shifted by the seed difference: a held-out seed within a few
thousand of the public train seed would put the very same draws into both splits. Each split
therefore gets its own generator seed, hashed from (task, split, seed) into a 62-bit space where
two streams of any realistic length never share an index (`check_disjoint_streams` verifies it).
Train splits are then drawn without looking at the held-out items at all (no exclusion), so
what is absent from a train split tells nothing about the test set.
"""

from __future__ import annotations

import hashlib


def stream_seed(task: str, split: str, seed: int) -> int:
    """The generator seed of one split: a 62-bit hash of (task, split, seed)."""
    digest = hashlib.sha256(f"a2rl-split-stream:{task}:{split}:{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 2


def check_disjoint_streams(a: tuple[int, int], b: tuple[int, int]) -> None:
    """Raise ValueError when two (generator seed, length) streams share an item index."""
    (sa, na), (sb, nb) = a, b
    if sa < sb + nb and sb < sa + na:
        raise ValueError("the train and held-out generator streams overlap; pick another "
                         "heldout_seed")
