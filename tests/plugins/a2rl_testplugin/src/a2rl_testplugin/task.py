"""`--task testplugin-upper`: write a made-up word in capitals (a static task from outside a2rl).
Train and held-out words come from different seeds; the held-out seed is secret."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, ClassVar

from a2rl.tasks import (
    GenerationSettings,
    ItemVerdict,
    StaticTextTask,
    TaskParams,
    installation_seed,
    secret_field,
)


class UpperParams(TaskParams):
    n_train: int = 20
    """Items written to data/train.jsonl."""
    n_heldout: int = 5
    """Items the grader scores."""
    heldout_seed: int = secret_field(default_factory=lambda: installation_seed("upper-heldout"))
    """Seed of the held-out items (default: this installation's secret seed)."""


def words(seed: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        word = "".join(rng.choice("bcdfgklmnprstvz") + rng.choice("aeiou") for _ in range(3))
        out.append({"id": f"{seed}-{i}", "word": word, "answer": word.upper()})
    return out


class UpperTask(StaticTextTask):
    name = "testplugin-upper"
    level = "L1"
    reward_kind = "rule"
    version = "1"
    Params: ClassVar[type[TaskParams]] = UpperParams
    params: UpperParams
    generation: ClassVar[GenerationSettings] = GenerationSettings(max_new_tokens=8)

    def heldout_items(self) -> list[dict[str, Any]]:
        return words(self.params.heldout_seed, self.params.n_heldout)

    def messages(self, item: dict[str, Any]) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Write {item['word']} in capitals. Only the word."}]

    def score_completion(self, item: dict[str, Any], completion: str) -> ItemVerdict:
        answer = completion.strip().strip("`.").strip()
        return ItemVerdict(score=float(answer == item["answer"]), extracted=answer)

    def write_train_data(self, data_dir: Path) -> list[Path]:
        data_dir.mkdir(parents=True, exist_ok=True)
        path = data_dir / "train.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in words(0, self.params.n_train)))
        return [path]

    def description(self, *, chat_preview: Any = None) -> str:
        return (f"Write each word of data/train.jsonl in capitals; {self.params.n_heldout} "
                "held-out words are scored by exact match.")
