"""Runs on disk → tidy rows: one per run, one per submission.

Reads only what the harness wrote outside the workspace (run.json, ledger.jsonl, analysis.json,
agent/events.jsonl); a run made by another harness (`a2rl import`) has the same layout and loads
the same way. Discovery never descends into a run's `workspace/`: the agent writes there and
could plant a forged run.json.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl.schema import (
    AgentEvent,
    RunAnalysis,
    RunRecord,
    SubmissionRecord,
    current_submissions,
    load_run,
    read_json,
    read_jsonl,
)

AUDIT_FLAG_KINDS: tuple[str, ...] = ("contamination", "privileged-api", "other-model",
                                     "third-party-llm", "distillation", "substituted-model")
"""Audit finding kinds that mark a run's score as possibly not earned by post-training alone
(held-out overlap, privileged task information, foreign models or LLM APIs, read from code or
measured: a data script calling an LLM API, a submitted model that is not the base's)."""

PROVENANCE_COLUMNS: tuple[str, ...] = ("a2rl_version", "agent_cli_version", "driver_model",
                                       "task_data_sha256")
"""What a run was made with (`RunRecord.provenance`): runs pooled in one cell should agree."""

# Folders of a run directory that hold agent-written or bulky content: never searched for runs.
_NO_DESCEND = {"workspace", "artifacts", "evals", "code-history.git", "agent", "rescores",
               ".git", "__pycache__"}
_MAX_DEPTH = 4


@dataclass
class LoadedRun:
    """One run directory with its records (analysis and events when present)."""

    path: Path
    record: RunRecord
    analysis: RunAnalysis | None
    submissions: list[SubmissionRecord]
    events: list[AgentEvent] | None
    problems: list[str] = field(default_factory=list)
    """What could not be read (a damaged analysis.json): shown, never fatal."""
    labels: dict[str, str] | None = None
    """The labels a sweep's matrix gave the run's cell (task, agent, driver); None outside
    a sweep."""


def find_run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Every run directory (a folder with run.json) in or under `paths`: a run directory itself,
    a runs folder (runs/<task>/<run_id>), or a folder of runs folders (a sweep's output)."""
    found: list[Path] = []
    for root in paths:
        root = Path(root)
        if not root.exists():
            raise A2RLError(f"{root} does not exist",
                            "pass a runs folder (./runs), a run directory or a sweep's output folder")
        found.extend(_walk(root, 0))
    seen: set[Path] = set()
    out: list[Path] = []
    for p in found:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _walk(folder: Path, depth: int) -> Iterator[Path]:
    if (folder / "run.json").is_file():
        yield folder
        return  # a run's own subfolders hold no runs
    if depth >= _MAX_DEPTH:
        return
    try:
        children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return
    for child in children:
        if child.name not in _NO_DESCEND:
            yield from _walk(child, depth + 1)


def load_runs(paths: Iterable[Path]) -> tuple[list[LoadedRun], list[tuple[Path, str]]]:
    """The runs under `paths` and, separately, the run directories that could not be read
    (path, reason): a damaged run.json must not hide the others."""
    runs: list[LoadedRun] = []
    bad: list[tuple[Path, str]] = []
    cache: dict[Path, dict[str, dict[str, str]]] = {}
    for run_dir in find_run_dirs(paths):
        try:
            runs.append(load_one(run_dir, cache))
        except A2RLError as exc:
            bad.append((run_dir, exc.message))
        except Exception as exc:  # any unreadable record is reported, not raised
            bad.append((run_dir, f"{type(exc).__name__}: {exc}"))
    runs.sort(key=lambda r: (r.record.created_at, r.record.run_id))
    return runs, bad


def sweep_labels(run_dir: Path, cache: dict[Path, dict[str, dict[str, str]]] | None = None
                 ) -> dict[str, str] | None:
    """The labels the sweep's matrix gave the run's cell (`task`: the task entry's label,
    `agent`, `driver`), when the run lies in a sweep directory (DIR/runs/<task>/<run_id>
    beside DIR/sweep.json); None otherwise. Read from the cell states the driver writes
    (DIR/cells/<id>/cell.json, outside every workspace), once per sweep directory with `cache`.
    """
    sweep_dir = run_dir.parent.parent.parent
    if run_dir.parent.parent.name != "runs" or not (sweep_dir / "sweep.json").is_file():
        return None
    key = sweep_dir.resolve()
    cache = {} if cache is None else cache
    if key not in cache:
        by_run: dict[str, dict[str, str]] = {}
        for path in sorted((sweep_dir / "cells").glob("*/cell.json")):
            try:
                state = json.loads(path.read_text())
                spec = state["spec"]
                labels = {"task": str(spec["task_label"]), "agent": str(spec["agent_label"]),
                          "driver": str(spec["driver_label"])}
                for attempt in state.get("attempts", []):
                    by_run[str(attempt["run_id"])] = labels
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a damaged cell state: its runs keep their own names
        cache[key] = by_run
    return cache[key].get(run_dir.name)


def load_one(run_dir: Path, labels_cache: dict[Path, dict[str, dict[str, str]]] | None = None
             ) -> LoadedRun:
    record = load_run(run_dir)
    problems: list[str] = []
    ledger = run_dir / "ledger.jsonl"
    subs = current_submissions(ledger) if ledger.exists() else list(record.submissions)
    analysis: RunAnalysis | None = None
    if (run_dir / "analysis.json").exists():
        try:
            analysis = read_json(run_dir / "analysis.json", RunAnalysis)
        except A2RLError as exc:
            problems.append(f"analysis.json unreadable ({exc.message}); run `a2rl analyze`")
    else:
        problems.append("no analysis.json (run `a2rl analyze` on it)")
    events: list[AgentEvent] | None = None
    if (run_dir / "agent" / "events.jsonl").exists():
        try:
            events = read_jsonl(run_dir / "agent" / "events.jsonl", AgentEvent)
        except A2RLError as exc:
            problems.append(f"agent/events.jsonl unreadable ({exc.message})")
    return LoadedRun(run_dir, record, analysis, subs, events, problems,
                     sweep_labels(run_dir, labels_cache))


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def agent_stack(record: RunRecord, labels: dict[str, str] | None = None) -> str:
    """The benchmark's row label: scaffold × driver (`claude-code · claude-sonnet-4-5`). In a
    sweep, the names its matrix gave the agent and driver (`labels`). A `cmd:` agent the
    matrix did not name is `cmd:` + a short hash of its command line (a long shell line is
    no readable label, and repeats of the same command must share a row)."""
    agent = record.config.agent
    named = (labels or {}).get("agent")
    if named and not (agent.startswith("cmd:") and named == "cmd"):
        agent = named
    elif agent.startswith("cmd:"):
        import hashlib

        agent = "cmd:" + hashlib.sha256(agent.encode()).hexdigest()[:8]
    driver = record.config.driver
    if driver and (labels or {}).get("driver") not in (None, "default"):
        driver = (labels or {})["driver"]
    label = f"{agent} · {driver}" if driver else agent
    arm = scaffold_of(record)
    # The scaffold ablation's arms are different stacks: each gets its own leaderboard row.
    return f"{label} + {arm}" if arm else label


def stack_of(run: LoadedRun) -> str:
    """The run's row label (see agent_stack), with its sweep's names when it has them."""
    return agent_stack(run.record, run.labels)


def scaffold_of(record: RunRecord) -> str | None:
    """The experience-driven scaffold's components of a run (`journal,skills`), None when the
    run was autonomous."""
    scaffold = getattr(record.config, "scaffold", None)
    components = getattr(scaffold, "components", None)
    return ",".join(components) if components else None


def study_of(record: RunRecord) -> str | None:
    """The study a run belongs to, when the run record names one (sweeps set it)."""
    value = getattr(record.config, "study", None)
    if value is None:
        return None
    return str(getattr(value, "name", value))


def task_level(record: RunRecord) -> str | None:
    """L1/L2/L3 from the record, or from the task registry for an imported run (whose harness
    did not record the task's metadata)."""
    if record.task is not None:
        return record.task.level
    try:
        from a2rl.tasks import task_class

        return str(task_class(record.config.task).level)
    except A2RLError:
        return None


def audit_flags(analysis: RunAnalysis | None) -> list[str]:
    """What marks the run, sorted: the kinds of a2rl's own audit findings (heuristic or
    ground truth, see AUDIT_FLAG_KINDS), then `<basis>:<kind>` for each question a transcript
    judge or another harness's judges (bases `judge`, `posttrainbench`) answered "flagged" in
    the majority of their verdicts. Their cleared and undecided verdicts mark nothing."""
    if analysis is None:
        return []
    own = {f.kind for f in analysis.findings if f.kind in AUDIT_FLAG_KINDS and f.own}
    votes: dict[tuple[str, str], list[bool]] = {}
    for f in analysis.findings:
        if not f.own:
            votes.setdefault((f.basis, f.kind), []).append(f.severity == "warning")
    judged = {f"{basis}:{kind}" for (basis, kind), flagged in votes.items()
              if 2 * sum(flagged) > len(flagged)}
    return sorted(own) + sorted(judged)


def token_curve(events: list[AgentEvent] | None) -> list[tuple[float, float]]:
    """(seconds, cumulative input + output tokens of all models) at each usage event, in time
    order."""
    if not events:
        return []
    total = 0.0
    out: list[tuple[float, float]] = []
    for e in sorted((e for e in events if e.kind == "usage"), key=lambda e: e.t_s):
        total += (e.input_tokens or 0) + (e.output_tokens or 0)
        out.append((e.t_s, total))
    return out


def tokens_at(curve: list[tuple[float, float]], t: float | None) -> float | None:
    if not curve or t is None:
        return None
    last = 0.0
    for ts, total in curve:
        if ts > t:
            break
        last = total
    return last


def run_row(run: LoadedRun) -> dict[str, Any]:
    """One run as a flat row (the columns of `runs list --json` and `results export`)."""
    r, a = run.record, run.analysis
    m = a.metrics if a else None
    flags = audit_flags(a)
    valid = [s for s in run.submissions if s.valid and s.split != "test"]
    first_strategy = a.experiments[0].strategy if a and a.experiments else None
    usage = a.usage if a else {}
    # `tokens`: every model the agent's CLI called (what its cost prices); `tokens_main_model`:
    # the main model alone, for launchers that tell them apart (Claude Code), else None.
    tokens = (usage.get("input_tokens", 0.0) + usage.get("output_tokens", 0.0)) if usage else None
    tokens_main = (usage["main_input_tokens"] + usage.get("main_output_tokens", 0.0)) \
        if "main_input_tokens" in usage else None
    final = r.final if r.final is not None and r.final.mode == "hidden" else None
    duration = r.timings.agent_s or None
    if duration is None and r.agent_started_at and r.ended_at:
        duration = (r.ended_at - r.agent_started_at).total_seconds()
    return {
        "run_id": r.run_id,
        "path": str(run.path),
        # a sweep's task entry label (two entries of one task are two columns), else the task
        "task": run.labels["task"] if run.labels else r.config.task,
        "task_name": r.config.task,
        "level": task_level(r),
        "agent": r.config.agent,
        "driver": r.config.driver,
        "stack": stack_of(run),
        "mode": r.config.mode,
        "model": r.config.model,
        "study": study_of(r),
        # the held-out set the scores are on: scores pool only within one (results._aggregate)
        "heldout": r.task.fingerprint if r.task else (
            r.baseline.task_fingerprint if r.baseline else None),
        "scaffold": scaffold_of(r),
        "status": r.status,
        "exit_reason": r.exit_reason,
        "imported": r.imported.harness if r.imported else None,
        "sandboxed": r.sandboxed,
        "network": r.config.network,
        "isolation_flags": ",".join(r.flags),
        "audit_flags": ",".join(flags),
        "flagged": bool(flags) or not r.sandboxed,
        "baseline": _num(r.baseline.score) if r.baseline else (m.baseline if m else None),
        "best": _num(r.best.score) if r.best else None,
        "improvement": _num(r.improvement),
        "final": _num(r.final.score) if r.final else None,
        # the run's headline: the hidden final score of a --final hidden run, else its best
        "result": _num(final.score) if final else (_num(r.best.score) if r.best else None),
        "result_improvement": _num(final.improvement) if final else _num(r.improvement),
        "submissions": len([s for s in run.submissions if s.split != "test"]),
        "valid_submissions": len(valid),
        "budget_s": r.config.budget_s,
        "duration_s": duration,
        "valid_rate": m.valid_rate if m else None,
        "zero_score_rate": m.zero_score_rate if m else None,
        "time_to_first_improvement_s": m.time_to_first_improvement_s if m else None,
        "time_to_best_s": m.time_to_best_s if m else None,
        "time_used_ratio": m.time_used_ratio if m else None,
        "best_at_submission": m.best_at_submission if m else None,
        "code_files": m.code_files_written if m else None,
        "model_versions": m.model_versions if m else None,
        "route": a.route if a else None,
        "methods_attempted": ",".join(a.methods_attempted) if a else None,
        "methods_in_best": ",".join(a.methods_in_best) if a else None,
        "experiments": len(a.experiments) if a else None,
        "first_strategy": first_strategy,
        "strategy_changes": a.strategy_changes if a else None,
        "change_rate": a.change_rate if a else None,
        "tokens": tokens,
        "tokens_main_model": tokens_main,
        "cost_usd": usage.get("cost_usd") if usage else None,
        "created_at": r.created_at.isoformat(),
        **{name: getattr(r.provenance, name, None) for name in PROVENANCE_COLUMNS},
    }


def submission_rows(run: LoadedRun) -> list[dict[str, Any]]:
    """Each submission of a run as a flat row, with the best score so far and the route of the
    code behind it (from analysis.json's iterations)."""
    r = run.record
    routes = {it.submission_id: it for it in (run.analysis.iterations if run.analysis else [])}
    curve = token_curve(run.events)
    best: float | None = None
    rows: list[dict[str, Any]] = []
    for s in run.submissions:
        if s.split == "test":
            continue  # the hidden final evaluation is no point on the agent's trajectory
        score = _num(s.score) if s.valid else None
        if score is not None:
            best = score if best is None else max(best, score)
        it = routes.get(s.id)
        rows.append({
            "run_id": r.run_id, "task": run.labels["task"] if run.labels else r.config.task,
            "task_name": r.config.task, "stack": stack_of(run),
            "mode": r.config.mode, "model": r.config.model, "study": study_of(r),
            "submission_id": s.id, "seq": s.seq, "elapsed_s": s.elapsed_s,
            "elapsed_h": None if s.elapsed_s is None else s.elapsed_s / 3600,
            "tokens": tokens_at(curve, s.elapsed_s), "status": s.status, "score": score,
            "baseline": _num(s.baseline), "improvement": _num(s.improvement) if s.valid else None,
            "best_so_far": best, "ci_low": s.ci_low, "ci_high": s.ci_high,
            "significant": s.significant, "cached": s.cached, "split": s.split,
            "route": it.training_type if it else None,
            "methods": ",".join(it.methods) if it else None,
            "failure_type": it.failure_type if it else None,
        })
    return rows


def relpath(target: Path, start: Path) -> str:
    """A relative link from folder `start` to `target` (works from file:// when moved together)."""
    return Path(os.path.relpath(target, start)).as_posix()
