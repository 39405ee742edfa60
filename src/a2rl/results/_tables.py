"""The long tables of many runs, like inspect_ai's dataframes: one row per evaluated item
(`samples`), per message (`messages`) and per agent event (`events`).

- samples: each evaluation a run recorded (evals/<submission>/details.jsonl, and the base
  model's evals/baseline/): the item's id, prompt, the model's completion, what the grader
  extracted, the reference answer and the verdict (`score`; `reward` and `success` for
  interactive tasks), with the task's own per-item metrics beside them;
- messages: what the agent received (`user`/`system`: the prompts), said (`assistant`) and
  got back from each tool (`tool`: the call's output, its command and error flag), in turn order;
- events: every line of agent/events.jsonl, flat, its `extra` as a JSON object.

Only what the harness wrote outside the workspace is read; a run folder's evaluation files are
not followed when they are links.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from a2rl.results._load import LoadedRun, stack_of
from a2rl.schema import AgentEvent

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SAMPLE_COLUMNS = ("item_id", "prompt", "completion", "extracted", "answer", "score")


def _run_columns(run: LoadedRun) -> dict[str, Any]:
    r = run.record
    return {"run_id": r.run_id, "task": run.labels["task"] if run.labels else r.config.task,
            "stack": stack_of(run)}


def _details(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a details.jsonl; a line that is no JSON object is passed over."""
    if path.is_symlink() or not path.is_file():
        return
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                yield row


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def sample_row(row: dict[str, Any]) -> dict[str, Any]:
    """One evaluated item: a static task's row (id, prompt, completion, extracted, answer,
    score, metrics) or an interactive task's trajectory (episode_id, steps, reward, success)."""
    steps = row.get("steps") if isinstance(row.get("steps"), list) else []
    first = steps[0] if steps and isinstance(steps[0], dict) else {}
    last = steps[-1] if steps and isinstance(steps[-1], dict) else {}
    out: dict[str, Any] = {
        "item_id": row.get("id", row.get("episode_id")),
        "prompt": row.get("prompt", first.get("observation")),
        "completion": row.get("completion", last.get("completion")),
        "extracted": row.get("extracted"),
        "answer": row.get("answer"),
        "score": row.get("score", row.get("reward")),
    }
    if steps:
        out["steps"] = len(steps)
    for key, value in row.items():  # the task's own per-item metrics and verdicts
        if key in ("id", "episode_id", "steps", "messages") or not _scalar(value):
            continue
        out[key if key not in out else f"item_{key}"] = value
    return {k: (json.dumps(v) if not _scalar(v) else v) for k, v in out.items()}


def sample_rows(run: LoadedRun) -> list[dict[str, Any]]:
    """Every evaluated item of a run: the baseline's, then each submission's in order."""
    base = _run_columns(run)
    evals = run.path / "evals"
    splits = {s.id: s.split for s in run.submissions}
    rows: list[dict[str, Any]] = []
    for sid in ["baseline", *(s.id for s in run.submissions)]:
        if not _SAFE_ID.match(sid):
            continue
        for i, row in enumerate(_details(evals / sid / "details.jsonl")):
            rows.append({**base, "submission_id": sid, "split": splits.get(sid),
                         "item": i, **sample_row(row)})
    return rows


def message_rows(run: LoadedRun) -> list[dict[str, Any]]:
    """The agent's conversation: prompts, its own messages and each tool call's output."""
    base = _run_columns(run)
    rows: list[dict[str, Any]] = []
    events = run.events or []
    for i, ev in enumerate(events):
        if ev.kind == "prompt":
            role = "system" if ev.extra.get("source") == "system" else "user"
            rows.append(_message(base, ev, role, ev.text))
        elif ev.kind == "message":
            role = "tool" if ev.extra.get("role") == "observation" else "assistant"
            row = _message(base, ev, role, ev.text)
            row["is_error"] = ev.extra.get("error") == "1" or None
            rows.append(row)
        elif ev.kind == "tool_call":
            detail = events[i + 1] if i + 1 < len(events) and events[i + 1].turn == ev.turn \
                and events[i + 1].kind in ("command", "file_edit") else None
            row = _message(base, ev, "tool", ev.output if ev.output is not None
                           else detail.output if detail else None)
            row.update(tool_name=ev.name, tool_call_id=ev.extra.get("tool_use_id"),
                       command=detail.command if detail else None,
                       path=detail.path if detail else None,
                       exit_code=detail.exit_code if detail else None,
                       is_error=ev.is_error if ev.is_error is not None
                       else detail.is_error if detail else None,
                       output_chars=ev.output_chars)
            rows.append(row)
    for n, row in enumerate(rows):
        row["message"] = n
    return rows


def _message(base: dict[str, Any], ev: AgentEvent, role: str, text: str | None) -> dict[str, Any]:
    return {**base, "message": 0, "turn": ev.turn, "t_s": ev.t_s, "role": role, "text": text}


def event_rows(run: LoadedRun) -> list[dict[str, Any]]:
    """Every agent event of a run, flat, in file order (`extra` as a JSON object)."""
    base = _run_columns(run)
    rows: list[dict[str, Any]] = []
    for i, ev in enumerate(run.events or []):
        row = ev.model_dump()
        row["extra"] = json.dumps(row["extra"], sort_keys=True) if row["extra"] else None
        rows.append({**base, "event": i, **row})
    return rows


TABLES = {"samples": sample_rows, "messages": message_rows, "events": event_rows}
"""Table name → the function giving a run's rows of it."""

__all__ = ["TABLES", "event_rows", "message_rows", "sample_row", "sample_rows"]
