"""Where DeepSearchQA's questions come from: the Hub's `DSQA-full.csv` with its fixed seeded
split, and the offline train world's files shipped in `data/`."""

from __future__ import annotations

import csv
import hashlib
from importlib import resources
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl.tasks._lib.hub import hub_dataset_file
from a2rl.tasks.deepsearchqa.grading import SET, SINGLE, expected_items

HUB_REPO = "google/deepsearchqa"
HUB_FILE = "DSQA-full.csv"
SPLIT_SEED = 20250101
"""Fixed: the hub split must be the same for every run, agent and baseline."""
N_HELDOUT = 200
N_TRAIN = 100
OFFLINE_DIR = ("data",)


def answer_type_of(raw: str) -> str:
    return SET if "set" in raw.casefold() else SINGLE


def data_path(name: str) -> Path:
    """A package data file as a filesystem path (the sandbox masks and reveals by path)."""
    return Path(str(resources.files(__package__).joinpath(*OFFLINE_DIR, name)))


def offline_text(name: str) -> str:
    return resources.files(__package__).joinpath(*OFFLINE_DIR, name).read_text(encoding="utf-8")


def hub_csv() -> Path:
    """`DSQA-full.csv` from the Hub (or its cache)."""
    return hub_dataset_file(HUB_REPO, HUB_FILE, "DeepSearchQA")


def load_hub_rows(path: Path | None = None) -> list[dict[str, Any]]:
    """Question records from DSQA-full.csv; rows without a problem or an answer are dropped."""
    path = path or hub_csv()
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = {"problem", "answer", "answer_type"} - set(reader.fieldnames or [])
            if missing:
                raise ValueError(f"missing columns: {', '.join(sorted(missing))}")
            raw = list(reader)
    except (OSError, ValueError, csv.Error) as exc:
        raise A2RLError(f"{HUB_REPO}/{HUB_FILE} in the Hugging Face cache is unreadable: {exc}",
                        "delete it from the cache and download it again") from exc
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, r in enumerate(raw):
        problem, answer = (r.get("problem") or "").strip(), (r.get("answer") or "").strip()
        rid = f"dsqa-{(r.get('example_id') or '').strip() or i}"
        if not problem or not answer or rid in seen:
            continue
        seen.add(rid)
        kind = answer_type_of(r.get("answer_type") or "")
        rows.append({"id": rid, "question": problem, "answer": answer, "answer_type": kind,
                     "answer_items": expected_items(answer, kind),
                     "category": (r.get("problem_category") or "").strip()})
    return rows


def split_hub(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, held-out): rows ordered by sha256(f"{SPLIT_SEED}:{id}"); the first N_HELDOUT are
    held out, the next N_TRAIN train-visible. Independent of the file's row order."""
    order = sorted(rows, key=lambda r: hashlib.sha256(f"{SPLIT_SEED}:{r['id']}".encode()).hexdigest())
    return order[N_HELDOUT:N_HELDOUT + N_TRAIN], order[:N_HELDOUT]
