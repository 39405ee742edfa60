"""`a2rl import posttrainbench DIR`: one PostTrainBench result folder as an a2rl run.

PostTrainBench (aisa-group/PostTrainBench, src/run_task.sh) writes one folder per run,
`$RESULTS/<agent>_<config>_<N>h[…]/<task>_<model>_<cluster>/`, holding:
- `output.log`, whose first line is the run's arguments (task, agent, model, cluster, hours,
  agent config, GPUs);
- `solve_out.txt`: the agent CLI's stream with each line prefixed `[ISO-time] `;
- `time_taken.txt` (HH:MM:SS of the agent's run), `prompt.txt` (the prompt the agent got:
  agent/prompt.md and the events' first `prompt` event);
- `task/`: the agent's working folder at the end (its scripts, timer.sh, evaluate.py);
- `final_model/` and `metrics.json`, the score of the final model on the held-out benchmark
  (evaluated once, after the agent stopped);
- the harness's own judges' verdicts: `judgement_<judge>[_rerun].json` (and
  `judgement_multi_runs/`), or in older folders `contamination_judgement.txt` and
  `disallowed_model_judgement.txt` (`_posttrainbench_verdicts`: imported as findings).
There is one submission (the final model): PostTrainBench has no grader the agent can query.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Literal

from a2rl._errors import A2RLError
from a2rl._util import utcnow
from a2rl.importers._common import (
    copy_text_tree,
    new_run_dir,
    parse_agent_events,
    relative_times,
    removed_on_failure,
    safe_id,
    snapshot,
    strip_timestamps,
    write_events,
    write_transcript,
)
from a2rl.importers._posttrainbench_verdicts import read_verdicts
from a2rl.importers._source import MAX_JSON_BYTES, MAX_NOTE_BYTES, MAX_STREAM_BYTES, Source
from a2rl.schema import (
    ImportInfo,
    ModelInfo,
    RunConfig,
    RunRecord,
    SubmissionRecord,
    SubmissionStatus,
    Timings,
    append_jsonl,
    write_json,
)

HARNESS: Literal["posttrainbench"] = "posttrainbench"
_HMS = re.compile(r"^(\d+):(\d{2}):(\d{2})$")
# Metric names inspect/PostTrainBench evaluations report, most specific first.
_SCORE_KEYS = ("accuracy", "pass@1", "mean", "score", "win_rate", "exact_match")


def _hms(text: str) -> float | None:
    m = _HMS.match(text.strip())
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3)) if m else None


def _arguments(folder: Path, src: Source) -> dict[str, str]:
    """The run's arguments: the first line of output.log (`echo "$@"` in run_task.sh), else
    the folder names."""
    out: dict[str, str] = {}
    log = src.read_text("output.log", MAX_STREAM_BYTES, "the run's arguments")
    if log is not None:
        first = next(iter(log.splitlines()), "").split()
        names = ("task", "agent", "model", "cluster", "hours", "agent_config", "gpus")
        if len(first) >= 5 and re.fullmatch(r"\d+(\.\d+)?", first[4]):
            out.update(zip(names, first, strict=False))
    if "agent" not in out:
        parent = folder.parent.name  # <agent>_<config>_<N>h…
        m = re.match(r"^(?P<agent>[a-z0-9]+(?:_[a-z]+)*?)_(?P<config>.+?)_(?P<hours>\d+)h", parent)
        if m:
            out.setdefault("agent", m.group("agent"))
            out.setdefault("agent_config", m.group("config"))
            out.setdefault("hours", m.group("hours"))
    if "task" not in out:
        out["task"] = folder.name.split("_", 1)[0]
    return out


def _score(metrics: dict[str, object]) -> tuple[float | None, str | None]:
    """The headline metric on a2rl's 0–100 scale, and how it was mapped."""
    numeric = {k: float(v) for k, v in metrics.items()
               if isinstance(v, int | float) and not isinstance(v, bool)}
    key = next((k for k in _SCORE_KEYS if k in numeric), None) or next(iter(numeric), None)
    if key is None:
        return None, None
    value = numeric[key]
    if 0.0 <= value <= 1.0:
        return round(value * 100, 4), f"metrics.json {key} × 100 (a 0–1 fraction)"
    return round(value, 4), f"metrics.json {key} as is (already on a 0–100 scale)"


def import_run(folder: Path, runs_dir: Path, *, run_id: str | None = None,
               baseline: float | None = None, force: bool = False) -> Path:
    """Build an a2rl run directory from one PostTrainBench result folder; returns its path.
    The folder is untrusted input (see `_source`): what it holds is read, never followed."""
    folder = folder.resolve()
    if not folder.is_dir():
        raise A2RLError(f"{folder} is not a folder", "pass a PostTrainBench result folder "
                        "(<results>/<agent>_<config>_<N>h/<task>_<model>_<cluster>)")
    with Source(folder) as src:
        return _import(folder, src, runs_dir, run_id=run_id, baseline=baseline, force=force)


def _import(folder: Path, src: Source, runs_dir: Path, *, run_id: str | None,
            baseline: float | None, force: bool) -> Path:
    if not src.exists("solve_out.txt") and not src.is_dir("task"):
        raise A2RLError(f"{folder} has neither solve_out.txt nor task/: not a PostTrainBench "
                        "result folder", "pass the folder run_task.sh wrote (it holds "
                        "solve_out.txt, task/, final_model/, metrics.json)")
    args = _arguments(folder, src)
    task = args.get("task", "unknown")
    unrecovered = ["code history (PostTrainBench keeps the task folder's end state only)",
                   "exec trace (every program the agent ran)", "artifact index of model folders"]
    reconstructed: list[str] = []

    lines: list[str] = []
    stamps: list[dt.datetime | None] = []
    trace = src.read_text("solve_out.txt", MAX_STREAM_BYTES, "the agent's trace")
    if trace is not None:
        lines, stamps = strip_timestamps(trace.splitlines())
    else:
        unrecovered.append("the agent's trace (solve_out.txt is missing or refused)")
    known = [t for t in stamps if t is not None]
    taken = src.read_text("time_taken.txt", MAX_NOTE_BYTES, "the agent's wall time")
    agent_s = _hms(taken) if taken is not None else None
    if agent_s is None and known:
        agent_s = (known[-1] - known[0]).total_seconds()
        reconstructed.append("agent time: from the first and last trace timestamps")
    if agent_s is None:
        unrecovered.append("the agent's wall time (no time_taken.txt, no timestamps)")
    hours = float(args["hours"]) if args.get("hours") else None

    run_id = safe_id(run_id or f"ptb-{folder.parent.name}-{folder.name}")
    run_dir = new_run_dir(runs_dir, safe_id(task), run_id, force=force)
    with removed_on_failure(run_dir):
        return _fill(folder, src, run_dir, runs_dir, args=args, run_id=run_id, lines=lines,
                     stamps=stamps, agent_s=agent_s, hours=hours, baseline=baseline,
                     unrecovered=unrecovered, reconstructed=reconstructed)


def _fill(folder: Path, src: Source, run_dir: Path, runs_dir: Path, *, args: dict[str, str],
          run_id: str, lines: list[str], stamps: list[dt.datetime | None],
          agent_s: float | None, hours: float | None, baseline: float | None,
          unrecovered: list[str], reconstructed: list[str]) -> Path:
    """The run folder's records, from what `_import` read of the source folder."""
    task = args.get("task", "unknown")
    known = [t for t in stamps if t is not None]
    start = known[0] if known else None
    workspace = run_dir / "workspace"
    has_task = src.is_dir("task")
    skipped = copy_text_tree(src, "task", workspace) if has_task else []
    if skipped:
        reconstructed.append(f"workspace: text files of task/ copied; {len(skipped)} binary or "
                             "large files left in the source folder")
    if not has_task:
        workspace.mkdir()
        unrecovered.append("the agent's working folder (no task/ folder, or it is refused): the "
                           "code snapshots are empty")

    fmt: str | None = None
    if lines:
        times = relative_times(stamps, start) if start else [0.0] * len(lines)
        if not known:
            unrecovered.append("per-line times (the trace has no timestamps)")
        write_transcript(run_dir / "agent", lines, times)
        fmt, events = parse_agent_events(lines, times, args.get("agent"))
        if fmt is None:
            unrecovered.append("agent events: no a2rl parser reads this trace")
        else:
            prompt = src.read_text("prompt.txt", MAX_NOTE_BYTES, "the agent's prompt")
            if prompt is None:
                unrecovered.append("the agent's prompt (no readable prompt.txt)")
            write_events(run_dir / "agent", events, fmt, lines, times, prompt=prompt)

    # The final model's score: PostTrainBench's only evaluation, after the agent stopped.
    metrics_path = folder / "metrics.json"
    score: float | None = None
    scale: str | None = None
    metrics_text = src.read_text("metrics.json", MAX_JSON_BYTES, "the final score")
    if metrics_text is not None:
        try:
            metrics = json.loads(metrics_text)
        except ValueError as exc:
            raise A2RLError(f"{metrics_path} is not JSON: {exc}", "repair or remove it") from exc
        if isinstance(metrics, dict):
            score, scale = _score(metrics)
    if baseline is None:
        unrecovered.append("the base model's score (PostTrainBench keeps baselines apart; pass "
                           "--baseline to set it)")
    received = (start + dt.timedelta(seconds=agent_s)) if start and agent_s is not None else utcnow()
    status: SubmissionStatus = "scored" if score is not None else "failed"
    sub = SubmissionRecord(
        id="s0001", seq=1, received_at=received, elapsed_s=agent_s, model_path="final_model",
        status=status, score=score,
        baseline=baseline if baseline is not None else math.nan,
        improvement=round(score - baseline, 4) if score is not None and baseline is not None else None,
        finished_at=received, task_fingerprint=f"{HARNESS}:{task}",
        error=None if score is not None else "no metrics.json: the final model was not scored "
        "(missing, unloadable, or the evaluation failed)")
    append_jsonl(run_dir / "ledger.jsonl", sub)
    snapshot(run_dir, workspace, [("s0001", agent_s or 0.0), ("final", agent_s or 0.0)])

    notes = {}
    for name in ("contamination_judgement.txt", "disallowed_model_judgement.txt"):
        if (note := src.read_text(name, MAX_NOTE_BYTES, "the harness's verdicts")) is not None:
            notes[name] = note[:2000]
    verdicts, verdict_problems = read_verdicts(folder, src, notes)
    unrecovered += [f"a verdict of PostTrainBench's judges: {p}" for p in verdict_problems]
    budget = hours * 3600 if hours else (agent_s or 0.0)
    record = RunRecord(
        run_id=run_id, status="finished", created_at=start or utcnow(),
        ended_at=received if start else None,
        config=RunConfig(task=task, agent=args.get("agent", "unknown"),
                         agent_options={"config": args["agent_config"]} if args.get("agent_config")
                         else {}, model=args.get("model", "unknown"), mode="free", budget_s=budget,
                         sandbox="none", eval_timeout_s=0.0, grace_s=0.0, port=0,
                         runs_dir=str(runs_dir), exec_trace=False),
        versions={"harness": HARNESS}, task=None,
        model=ModelInfo(spec=args.get("model", "unknown"), source="hub", path="",
                        content_hash="", model_type="unknown") if args.get("model") else None,
        sandboxed=True, agent_events=None if fmt is None else len(
            (run_dir / "agent" / "events.jsonl").read_text().splitlines()),
        submissions=[sub], agent_started_at=start,
        best=None, improvement=sub.improvement, exit_reason="agent_exited",
        timings=Timings(agent_s=agent_s or 0.0, total_s=agent_s or 0.0),
        imported=ImportInfo(harness=HARNESS, source=str(folder), imported_at=utcnow(),
                            agent_format=fmt, score_scale=scale, unrecovered=unrecovered,
                            refused=src.refused_notes(),
                            reconstructed=reconstructed + [
                                "sandboxed: PostTrainBench runs the agent in an apptainer "
                                "container (isolation as that harness enforces it)"],
                            harness_notes=notes, verdicts=verdicts))
    if score is not None:
        from a2rl.schema import BestSoFar

        record.best = BestSoFar(submission_id="s0001", score=score)
    write_json(run_dir / "run.json", record)
    src.write_manifest(run_dir, HARNESS)  # lists every file written, run.json included
    return run_dir
