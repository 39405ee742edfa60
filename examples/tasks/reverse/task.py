"""Reverse a made-up word. Train items come from a public seed, held-out ones from a secret one."""

import json
import random
from pathlib import Path
from typing import Any, ClassVar

from a2rl.inference import GenerationSettings
from a2rl.tasks import ItemVerdict, StaticTextTask, TaskParams, installation_seed, secret_field, tasks

TRAIN_SEED = 0


class ReverseParams(TaskParams):
    n_train: int = 500
    """Items written to data/train.jsonl."""
    n_heldout: int = 100
    """Items the grader scores."""
    heldout_seed: int = secret_field(default_factory=lambda: installation_seed("reverse-heldout"))
    """Seed of the held-out items (default: this installation's secret seed)."""


def make_items(seed: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(4, 8))) for _ in range(n)]
    return [{"id": f"{seed}-{i}", "word": w, "answer": w[::-1]} for i, w in enumerate(words)]


@tasks.register("reverse")
class ReverseTask(StaticTextTask):
    name = "reverse"
    level = "L1"
    reward_kind = "rule"
    version = "1"
    Params = ReverseParams
    params: ReverseParams
    generation: ClassVar[GenerationSettings] = GenerationSettings(max_new_tokens=16)

    def heldout_items(self) -> list[dict[str, Any]]:
        return make_items(self.params.heldout_seed, self.params.n_heldout)

    def messages(self, item: dict[str, Any]) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"Spell {item['word']} backwards. Reply with only that."}]

    def score_completion(self, item: dict[str, Any], completion: str) -> ItemVerdict:
        answer = completion.strip().strip("`.").strip()
        return ItemVerdict(score=float(answer == item["answer"]), extracted=answer)

    def gold_answer(self, item: dict[str, Any]) -> str | None:  # `a2rl certify` attacks it
        return str(item["answer"])

    def write_train_data(self, data_dir: Path) -> list[Path]:
        # Never "train minus held-out": the gap would reveal the test set. Draw independently.
        rows = make_items(TRAIN_SEED, self.params.n_train)
        data_dir.mkdir(parents=True, exist_ok=True)
        (path := data_dir / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return [path]

    def description(self, *, chat_preview: Any = None) -> str:
        msgs = self.messages(make_items(TRAIN_SEED, 1)[0])
        return self.render_template(n_train=self.params.n_train, n_heldout=self.params.n_heldout,
                                    prompt=chat_preview(msgs) if chat_preview else json.dumps(msgs))
