"""`a2rl import rdagent DIR`: one RD-Agent AutoRL-Bench workspace as an a2rl run.

AutoRL-Bench (microsoft/RD-Agent, rdagent/scenarios/rl/autorl_bench) gives each run a workspace
`workspace/<task>/<run_id>_<agent>/` holding the agent's `code/` and `output/v*` models,
`scores.json` (one entry per POST /submit: submission_id, timestamp, model_path, score,
baseline_score, improvement, elapsed_seconds of the evaluation, error), `run_meta.json`
(start_time, timeout_s, last_submit_time, end_time; epoch seconds), `grading_server.log`,
and the agent CLI's stream (`agent.jsonl` for the Claude/Codex wrappers, `agent.log` for the
run driver). Streams carry no per-line times; a2rl anchors them on the submissions (the k-th
`/submit` in the stream is the k-th score entry, whose time is known) and interpolates.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path
from typing import Any, Literal

from a2rl._errors import A2RLError
from a2rl._util import utcnow
from a2rl.importers._common import (
    copy_text_tree,
    interpolate,
    new_run_dir,
    parse_agent_events,
    safe_id,
    snapshot,
    strip_timestamps,
    write_events,
    write_transcript,
)
from a2rl.importers._source import MAX_STREAM_BYTES, Source
from a2rl.schema import (
    BestSoFar,
    ImportInfo,
    RunConfig,
    RunRecord,
    SubmissionRecord,
    Timings,
    append_jsonl,
    write_json,
)

HARNESS: Literal["rdagent"] = "rdagent"
_STREAMS = ("agent.jsonl", "agent.log", "agent_log.txt", "solve_out.txt")


def _json(src: Source, name: str, use: str) -> Any:
    """The JSON file `name` of the workspace (None: missing or refused)."""
    return src.read_json(name, use, "repair it or remove it from the workspace")


def _naive_offset(entries: list[dict[str, Any]], meta: dict[str, Any]) -> tuple[float, str]:
    """scores.json timestamps are naive local times; run_meta.json's last_submit_time is the
    epoch of the last one. Their difference (rounded to 15 minutes) is the machine's UTC
    offset; without it the times are taken as UTC."""
    last = meta.get("last_submit_time")
    stamps = [str(e["timestamp"]) for e in entries if isinstance(e.get("timestamp"), str)]
    if isinstance(last, int | float) and stamps:
        naive = dt.datetime.fromisoformat(stamps[-1]).replace(tzinfo=dt.UTC).timestamp()
        offset = round((naive - float(last)) / 900) * 900
        return offset, f"scores.json times: local time, UTC offset {offset / 3600:+.2f} h from " \
                       "run_meta.json last_submit_time"
    return 0.0, "scores.json times: naive, taken as UTC (run_meta.json has no last_submit_time)"


def _epoch(stamp: str, offset: float) -> float:
    return dt.datetime.fromisoformat(stamp).replace(tzinfo=dt.UTC).timestamp() - offset


def import_run(folder: Path, runs_dir: Path, *, run_id: str | None = None,
               force: bool = False) -> Path:
    """Build an a2rl run directory from one AutoRL-Bench workspace; returns its path. The
    workspace is untrusted input (see `_source`): what it holds is read, never followed."""
    folder = folder.resolve()
    scores_path = folder / "scores.json"
    with Source(folder) as src:
        if not src.exists("scores.json"):
            raise A2RLError(f"{folder} has no scores.json: not an AutoRL-Bench workspace",
                            "pass workspace/<task>/<run_id>_<agent>/ (it holds code/, output/, "
                            "scores.json, run_meta.json)")
        entries = _json(src, "scores.json", "the submissions")
        if entries is None:
            raise A2RLError(f"{scores_path} cannot be read: {'; '.join(src.refused_notes())}",
                            "replace it with the regular file AutoRL-Bench wrote")
        return _import(folder, src, entries, runs_dir, run_id=run_id, force=force)


def _import(folder: Path, src: Source, entries: Any, runs_dir: Path, *, run_id: str | None,
            force: bool) -> Path:
    scores_path = folder / "scores.json"
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise A2RLError(f"{scores_path} is not a list of submission entries",
                        "AutoRL-Bench writes a JSON list, one object per POST /submit")
    meta = _json(src, "run_meta.json", "the run's times") or {}
    if not isinstance(meta, dict):
        meta = {}
    name = folder.name
    m = re.match(r"^(?P<run>\d{8}T\d{6})_(?P<agent>.+)$", name)
    agent = m.group("agent") if m else "unknown"
    task = folder.parent.name or "unknown"
    unrecovered = ["code history (the workspace holds its end state only)",
                   "exec trace (every program the agent ran)", "artifact index of model folders",
                   "the base model's identity and hash (run.py keeps them outside the workspace)"]
    reconstructed: list[str] = []
    offset, how = _naive_offset(entries, meta)
    reconstructed.append(how)
    start_epoch = float(meta["start_time"]) if isinstance(meta.get("start_time"), int | float) \
        else None
    if start_epoch is None and entries and isinstance(entries[0].get("timestamp"), str):
        start_epoch = _epoch(entries[0]["timestamp"], offset) - float(entries[0].get("elapsed_seconds") or 0)
        reconstructed.append("run start: the first submission's arrival (run_meta.json missing)")
    start = dt.datetime.fromtimestamp(start_epoch, dt.UTC) if start_epoch is not None else utcnow()

    run_id = safe_id(run_id or f"rdagent-{task}-{name}")
    run_dir = new_run_dir(runs_dir, safe_id(task), run_id, force=force)
    workspace = run_dir / "workspace"
    skipped = copy_text_tree(src, "", workspace)
    if skipped:
        reconstructed.append(f"workspace: text files copied; {len(skipped)} binary, linked or "
                             "large files (weights, data links) left in the source folder")

    subs: list[SubmissionRecord] = []
    baseline: float | None = None
    for i, e in enumerate(entries, 1):
        stamp = e.get("timestamp")
        finished = _epoch(stamp, offset) if isinstance(stamp, str) else None
        eval_s = float(e.get("elapsed_seconds") or 0.0)
        arrived = finished - eval_s if finished is not None else None
        score = e.get("score")
        error = e.get("error")
        base = e.get("baseline_score")
        if isinstance(base, int | float):
            baseline = float(base)
        ok = isinstance(score, int | float) and not error
        subs.append(SubmissionRecord(
            id=f"s{i:04d}", seq=i,
            received_at=dt.datetime.fromtimestamp(arrived, dt.UTC) if arrived is not None else start,
            elapsed_s=round(arrived - start_epoch, 2) if arrived is not None and start_epoch else None,
            model_path=str(e.get("model_path", "")), status="scored" if ok else "failed",
            score=float(score) if ok else None,
            baseline=float(base) if isinstance(base, int | float) else math.nan,
            improvement=float(e["improvement"]) if ok and isinstance(e.get("improvement"), int | float)
            else None, eval_seconds=eval_s,
            finished_at=dt.datetime.fromtimestamp(finished, dt.UTC) if finished is not None else None,
            error=str(error) if error else None, task_fingerprint=f"{HARNESS}:{task}"))
    for sub in subs:
        append_jsonl(run_dir / "ledger.jsonl", sub)
    if baseline is None:
        unrecovered.append("the base model's score (no baseline_score in scores.json)")

    end_epoch = meta.get("end_time") if isinstance(meta.get("end_time"), int | float) else None
    last_elapsed = max((s.elapsed_s for s in subs if s.elapsed_s is not None), default=None)
    agent_s = float(end_epoch) - start_epoch if end_epoch and start_epoch else last_elapsed
    if not end_epoch:
        reconstructed.append("agent time: up to the last submission (run_meta.json has no end_time)")

    fmt: str | None = None
    stream: str | None = None
    text: str | None = None
    for candidate in _STREAMS:  # the first present one that is a readable regular file
        if src.exists(candidate):
            text = src.read_text(candidate, MAX_STREAM_BYTES, "the agent's stream")
            if text is not None:
                stream = candidate
                break
    if stream is None or text is None:
        unrecovered.append("the agent's stream (no readable agent.jsonl / agent.log)")
    else:
        raw = text.splitlines()
        lines, stamps = strip_timestamps(raw)
        anchors = [(0, 0.0)]
        submit_lines = [i for i, line in enumerate(lines) if "/submit" in line and (
            "tool_use" in line or "command" in line or "curl" in line)]
        # One submit can show up on several lines (the call and its echo): take the first line
        # of each run of adjacent hits.
        firsts = [i for k, i in enumerate(submit_lines) if k == 0 or i - submit_lines[k - 1] > 3]
        for i, sub in zip(firsts, subs, strict=False):
            if sub.elapsed_s is not None:
                anchors.append((i, sub.elapsed_s))
        if agent_s:
            anchors.append((max(len(lines) - 1, 1), agent_s))
        times = interpolate(len(lines), anchors)
        reconstructed.append(f"per-line times: interpolated between {len(anchors)} anchors (the "
                             "start, each /submit in the stream matched to its score entry, the end)")
        write_transcript(run_dir / "agent", lines, times)
        fmt, events = parse_agent_events(lines, times, agent)
        if fmt is None:
            unrecovered.append(f"agent events: no a2rl parser reads {stream}")
        else:
            write_events(run_dir / "agent", events, fmt, lines, times)

    tags = [(s.id, s.elapsed_s or 0.0) for s in subs] + [("final", agent_s or 0.0)]
    snapshot(run_dir, workspace, tags)
    scored = [s for s in subs if s.valid and s.score is not None]
    best = max(scored, key=lambda s: (s.score or 0.0, -s.seq)) if scored else None
    timeout = meta.get("timeout_s")
    record = RunRecord(
        run_id=run_id, status="finished", created_at=start,
        ended_at=dt.datetime.fromtimestamp(float(end_epoch), dt.UTC) if end_epoch else None,
        config=RunConfig(task=task, agent=agent, model="unknown", mode="free",
                         budget_s=float(timeout) if isinstance(timeout, int | float) else agent_s or 0.0,
                         sandbox="none", eval_timeout_s=0.0, grace_s=0.0, port=0,
                         runs_dir=str(runs_dir), exec_trace=False),
        versions={"harness": HARNESS}, task=None, model=None, sandboxed=False,
        agent_events=None if fmt is None else len(
            (run_dir / "agent" / "events.jsonl").read_text().splitlines()),
        submissions=subs, agent_started_at=start,
        best=BestSoFar(submission_id=best.id, score=best.score) if best and best.score is not None
        else None,
        improvement=round(best.score - baseline, 4) if best and best.score is not None and
        baseline is not None else None, exit_reason="agent_exited",
        timings=Timings(agent_s=agent_s or 0.0, total_s=agent_s or 0.0),
        imported=ImportInfo(harness=HARNESS, source=str(folder), imported_at=utcnow(),
                            agent_format=fmt, score_scale="scores.json score as is (0–100)",
                            unrecovered=unrecovered, reconstructed=reconstructed,
                            refused=src.refused_notes()))
    write_json(run_dir / "run.json", record)
    src.write_manifest(run_dir, HARNESS)
    return run_dir
