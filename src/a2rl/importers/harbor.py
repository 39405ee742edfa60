"""`a2rl import harbor JOB_DIR` and `a2rl export harbor RUN…`: Harbor trials as a2rl runs and
back.

Harbor (harbor-framework/harbor) writes a job folder with one folder per trial,
`<job>/<task>__<id>/`, holding `config.json` (the trial's configuration: task, agent name and
model, timeouts), `result.json` (task_name, trial_name, agent_info, agent_result with the token
totals and cost, verifier_result.rewards, exception_info, started_at/finished_at and the
agent_execution interval), `agent/trajectory.json` (the agent's ATIF trajectory, see
`a2rl.importers.atif`), `verifier/` (reward.txt or reward.json, the test output) and
`artifacts/` (files collected from the environment). The trajectory becomes the run's event
log; the files its tool calls wrote in full (a write tool's content, `cat > file <<EOF`) and
the artifacts become its workspace, so that the analysis reads the scripts it ran; the
verifier's reward becomes one scored submission at the agent's end (the submissions
themselves where the trajectory was written by `a2rl export`).

The trial folder is untrusted (see `_source`): nothing in it is followed, sizes are checked
before reading, paths the agent named are kept only when they stay inside the workspace, and
every part is read and checked before the run folder is made; a failure while writing removes
the half-written run folder.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import shutil
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import ValidationError

from a2rl._errors import A2RLError
from a2rl._util import utcnow
from a2rl.agents import jsonl_line
from a2rl.importers._atif import Trajectory, iso
from a2rl.importers._common import (
    MAX_TEXT_BYTES,
    TEXT_SUFFIXES,
    copy_text_tree,
    new_run_dir,
    parse_time,
    safe_id,
    snapshot,
)
from a2rl.importers._source import MAX_DEPTH, MAX_JSON_BYTES, MAX_NOTE_BYTES, Source, bad_name, find_marked
from a2rl.importers.atif import (
    edited_path,
    events_of_trajectory,
    number,
    read_trajectory,
    shell_command,
    submissions_of,
    trajectory_of_run,
    written_text,
)
from a2rl.schema import (
    BestSoFar,
    ExitReason,
    ImportInfo,
    ModelInfo,
    RunConfig,
    RunRecord,
    SubmissionRecord,
    Timings,
    append_jsonl,
    current_submissions,
    load_run,
    write_json,
)

HARNESS: Literal["harbor"] = "harbor"
TRAJECTORY = "agent/trajectory.json"
MAX_WRITTEN_FILES = 2000
"""Files rebuilt from the trajectory's writes; the rest are left out (and said so)."""
_AGENT_ROOTS = ("app", "workspace", "testbed", "code", "root", "tmp", "project", "repo")
"""First folders of the absolute paths agents in Harbor's containers work under."""
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)(\w+)\1([^\n]*)\n(.*?)\n[ \t]*\2[ \t]*(?=\n|$)", re.S)
_WRITER_BEFORE = re.compile(r"(?:\bcat|\btee(?:\s+-a)?)\s*(?:>>?\s*)?([^\s<>|;&]+)?\s*$")
_REDIRECT_AFTER = re.compile(r"^\s*>>?\s*([^\s<>|;&]+)")


# --- import -------------------------------------------------------------------------------


def find_trials(root: Path) -> list[Path]:
    """The trial folders under `root` (itself included): those holding agent/trajectory.json.
    No link is followed while searching."""
    return sorted({p.parent for p in find_marked(root, "trajectory.json") if p.name == "agent"})


def workspace_path(name: str) -> str | None:
    """A path the agent named, relative to its working folder: absolute paths under the
    usual container roots (/app, /workspace, /root, /home/<user>, …) lose that root. None when
    it leaves the workspace (`..`, /etc/…) or holds a name a file system should not get."""
    p = PurePosixPath(name.strip())
    parts = list(p.parts)
    if p.is_absolute():
        parts = parts[1:]
        if len(parts) > 2 and parts[0] == "home":
            parts = parts[2:]
        elif parts and parts[0] in _AGENT_ROOTS:
            parts = parts[1:]
        else:
            return None
    parts = [x for x in parts if x != "."]
    if not parts or len(parts) > MAX_DEPTH or any(x == ".." or bad_name(x) for x in parts):
        return None
    return "/".join(parts)


def heredoc_files(command: str) -> list[tuple[str, str]]:
    """(path, text) of each file a command line writes with a heredoc: `cat > f <<'EOF'`,
    `cat <<'EOF' > f`, `tee f <<EOF`."""
    out: list[tuple[str, str]] = []
    for m in _HEREDOC.finditer(command):
        line = command[:m.start()].rsplit("\n", 1)[-1]
        before = _WRITER_BEFORE.search(line)
        after = _REDIRECT_AFTER.match(m.group(3))
        target = (after.group(1) if after else None) or (before.group(1) if before else None)
        if before and target:
            out.append((target.strip("'\""), m.group(4) + "\n"))
    return out


def written_files(traj: Trajectory) -> tuple[dict[str, str], list[str]]:
    """The files the trajectory's calls wrote in full, by workspace path (the last write of a
    path wins), and the paths left out with the reason."""
    files: dict[str, str] = {}
    left_out: list[str] = []
    for step in traj.steps:
        for call in step.tool_calls or []:
            command = shell_command(call.arguments)
            writes = heredoc_files(command) if command is not None else []
            path, text = edited_path(call.arguments), written_text(call.arguments)
            if command is None and path is not None and text is not None:
                writes.append((path, text))
            for name, body in writes:
                rel = workspace_path(name)
                if rel is None:
                    left_out.append(f"{name[:200]!r}: outside the workspace or an odd name")
                elif not rel.endswith(TEXT_SUFFIXES) or len(body.encode()) > MAX_TEXT_BYTES:
                    left_out.append(f"{rel}: not a text file of code or configuration, or over "
                                    f"{MAX_TEXT_BYTES} bytes")
                elif rel not in files and len(files) >= MAX_WRITTEN_FILES:
                    left_out.append(f"{rel}: more than {MAX_WRITTEN_FILES} files written")
                else:
                    files[rel] = body
    return files, left_out


def _json(src: Source, rel: str, use: str) -> Any:
    return src.read_json(rel, use, "repair or remove it; Harbor writes it as one JSON object")


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def _rewards(src: Source, result: dict[str, Any]) -> tuple[dict[str, float], str | None]:
    """The verifier's rewards and where they came from (result.json, else verifier/)."""
    raw = _obj(_obj(result.get("verifier_result")).get("rewards"))
    where = "result.json verifier_result.rewards"
    if not raw:
        raw = _obj(_json(src, "verifier/reward.json", "the verifier's rewards"))
        where = "verifier/reward.json"
    if not raw and (text := src.read_text("verifier/reward.txt", MAX_NOTE_BYTES,
                                          "the verifier's reward")) is not None:
        try:
            raw = {"reward": float(text.strip())}
        except ValueError:
            raw = {}
        where = "verifier/reward.txt"
    rewards = {str(k): v for k, val in raw.items() if (v := number(val)) is not None}
    return rewards, where if rewards else None


def _score(rewards: dict[str, float], where: str | None) -> tuple[float | None, str | None]:
    """The headline reward on a2rl's 0–100 scale, and how it was mapped."""
    if "score" in rewards:  # written by `a2rl export harbor`: already 0–100
        return round(rewards["score"], 4), f"{where} score as is (0–100)"
    key = "reward" if "reward" in rewards else next(iter(rewards), None)
    if key is None:
        return None, None
    value = rewards[key]
    if 0.0 <= value <= 1.0:
        return round(value * 100, 4), f"{where} {key} × 100 (a 0–1 reward)"
    return round(value, 4), f"{where} {key} as is"


def _exit_reason(exception: dict[str, Any]) -> ExitReason:
    """How the agent stopped: Harbor records a timeout or another failure as the trial's
    exception."""
    kind = str(exception.get("exception_type") or "")
    if not exception:
        return "agent_exited"
    return "budget_exhausted" if "Timeout" in kind else "harness_error"


def _task_name(trial: Path, result: dict[str, Any], config: dict[str, Any]) -> str:
    task = _obj(config.get("task"))
    named = _text(result.get("task_name")) or _text(task.get("name")) or (
        PurePosixPath(p).name if (p := _text(task.get("path"))) else None)
    return named or trial.name.split("__", 1)[0] or "unknown"


def import_run(folder: Path, runs_dir: Path, *, run_id: str | None = None,
               baseline: float | None = None, force: bool = False) -> Path:
    """Build an a2rl run directory from one Harbor trial folder; returns its path."""
    folder = folder.absolute()
    if folder.is_symlink() or not folder.is_dir():
        raise A2RLError(f"{folder} is not a folder", "pass a Harbor job folder or one trial "
                        "folder of it (<job>/<task>__<id>, holding agent/trajectory.json)")
    with Source(folder) as src:
        return _import(folder, src, runs_dir, run_id=run_id, baseline=baseline, force=force)


def _import(folder: Path, src: Source, runs_dir: Path, *, run_id: str | None,
            baseline: float | None, force: bool) -> Path:
    data = src.read_bytes(TRAJECTORY, MAX_JSON_BYTES, "the agent's trajectory")
    if data is None:
        why = next((r["reason"] for r in src.refused if r["path"] in (TRAJECTORY, "agent")),
                   "it is missing")
        raise A2RLError(f"{folder / TRAJECTORY} cannot be read: {why}",
                        "pass a Harbor trial folder whose agent wrote an ATIF trajectory (a "
                        "regular file, at most 64 MiB)")
    traj = read_trajectory(data, str(folder / TRAJECTORY))
    result = _json(src, "result.json", "the trial's result")
    config = _json(src, "config.json", "the trial's configuration")
    for name, value in (("result.json", result), ("config.json", config)):
        if value is not None and not isinstance(value, dict):
            raise A2RLError(f"{folder / name} is not a JSON object",
                            "Harbor writes one object per file; repair or remove it")
    result, config = _obj(result), _obj(config)
    unrecovered = ["exec trace (every program the agent ran)", "artifact index of model folders",
                   "code history (files are rebuilt from the trajectory's writes: their end state)"]
    reconstructed: list[str] = []
    if not result:
        unrecovered.append("the trial's result (result.json missing or refused): no agent "
                           "interval, token totals or rewards from it")

    task = _task_name(folder, result, config)
    a2rl = _obj(_obj(traj.extra).get("a2rl"))  # set where a2rl wrote the trajectory
    info = _obj(result.get("agent_info"))
    agent_cfg = _obj(config.get("agent"))
    agent = _text(info.get("name")) or _text(agent_cfg.get("name")) or traj.agent.name
    driver = _text(_obj(info.get("model_info")).get("name")) or _text(agent_cfg.get("model_name")) \
        or traj.agent.model_name
    model = _text(a2rl.get("model"))
    if model is None:
        unrecovered.append("the base model being trained (Harbor records the agent's LLM only)")
    execution = _obj(result.get("agent_execution"))
    stamps = [_time(s.timestamp) for s in traj.steps if s.timestamp]
    known = [t for t in stamps if t is not None]
    start = _time(a2rl.get("started_at")) or _time(execution.get("started_at")) \
        or _time(result.get("started_at")) or (known[0] if known else None)
    end = _time(execution.get("finished_at")) or _time(result.get("finished_at")) \
        or (known[-1] if known else None)
    agent_s = number(a2rl.get("agent_s")) or (
        max(0.0, (end - start).total_seconds()) if start and end else None)
    if start is None:
        unrecovered.append("the agent's start time (no agent_execution, no step timestamps)")
    if not known:
        reconstructed.append("per-step times: none in the trajectory; steps spread evenly over "
                             "the agent's interval")
    timeout = number(agent_cfg.get("override_timeout_sec")) or number(agent_cfg.get("max_timeout_sec"))
    budget = number(a2rl.get("budget_s")) or timeout or agent_s or 0.0

    rewards, where = _rewards(src, result)
    score, scale = _score(rewards, where)
    files, left_out = written_files(traj)
    if files:
        reconstructed.append(f"workspace: {len(files)} file(s) rebuilt from the trajectory's "
                             "file writes (write tools, heredocs), in their last written state")
    reconstructed += [f"workspace file left out: {x}" for x in left_out[:20]]
    exception = _obj(result.get("exception_info"))
    notes = {k: str(v)[:2000] for k in ("exception_type", "exception_message")
             if (v := exception.get(k)) is not None}
    if rewards:
        notes["rewards"] = json.dumps(rewards)[:2000]

    run_id = safe_id(run_id or f"harbor-{folder.parent.name}-{folder.name}")
    run_dir = new_run_dir(runs_dir, safe_id(task), run_id, force=force)
    try:
        return _write(run_dir, src, folder, traj, data, files, task=task, agent=agent, model=model,
                      driver=driver,
                      start=start, agent_s=agent_s, budget=budget, score=score, scale=scale,
                      baseline=baseline if baseline is not None else number(a2rl.get("baseline")),
                      runs_dir=runs_dir, unrecovered=unrecovered, reconstructed=reconstructed,
                      notes=notes, exit_reason=_exit_reason(exception))
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _write(run_dir: Path, src: Source, folder: Path, traj: Trajectory, data: bytes,
           files: dict[str, str], *, task: str, agent: str, model: str | None, driver: str | None,
           start: dt.datetime | None, agent_s: float | None, budget: float, score: float | None,
           scale: str | None, baseline: float | None, runs_dir: Path, unrecovered: list[str],
           reconstructed: list[str], notes: dict[str, str], exit_reason: ExitReason) -> Path:
    workspace = run_dir / "workspace"
    workspace.mkdir()
    for rel, text in files.items():
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, errors="replace")  # a lone surrogate from a JSON escape
    if src.is_dir("artifacts"):
        skipped = copy_text_tree(src, "artifacts", workspace)
        reconstructed.append("workspace: text files of the trial's artifacts/ copied"
                             + (f"; {len(skipped)} binary or large ones left out" if skipped else ""))

    agent_dir = run_dir / "agent"
    agent_dir.mkdir()
    (agent_dir / "trajectory.json").write_bytes(data)
    events = events_of_trajectory(traj, start=start, end_s=agent_s,
                                  relative=workspace_path)
    (agent_dir / "events.jsonl").write_text("".join(jsonl_line(e) for e in events))

    fingerprint = f"{HARNESS}:{task}"
    subs = _restored(traj, start, fingerprint)
    if subs:
        reconstructed.append("submissions: the a2rl run's own, carried in the trajectory's "
                             "extra.a2rl")
    else:
        at = start + dt.timedelta(seconds=agent_s or 0.0) if start else utcnow()
        subs = [SubmissionRecord(
            id="s0001", seq=1, received_at=at, elapsed_s=agent_s, model_path="(final state)",
            status="scored" if score is not None else "failed", score=score,
            baseline=baseline if baseline is not None else math.nan,
            improvement=round(score - baseline, 4) if score is not None and baseline is not None
            else None, finished_at=at, task_fingerprint=fingerprint,
            error=None if score is not None else "no verifier reward: the trial was not scored")]
        if baseline is None:
            unrecovered.append("the base model's score (Harbor has none; pass --baseline)")
    for sub in subs:
        append_jsonl(run_dir / "ledger.jsonl", sub)
    subs = current_submissions(run_dir / "ledger.jsonl")
    snapshot(run_dir, workspace, [(s.id, s.elapsed_s or 0.0) for s in subs]
             + [("final", agent_s or 0.0)])

    scored = [s for s in subs if s.valid and s.score is not None]
    best = max(scored, key=lambda s: (s.score or 0.0, -s.seq)) if scored else None
    improvement = round(best.score - baseline, 4) if best and best.score is not None \
        and baseline is not None else None
    created = start or utcnow()
    record = RunRecord(
        run_id=run_dir.name, status="finished", created_at=created,
        ended_at=created + dt.timedelta(seconds=agent_s) if start and agent_s is not None else None,
        config=RunConfig(task=task, agent=agent, model=model or "unknown", mode="free",
                         budget_s=budget, sandbox="none", eval_timeout_s=0.0, grace_s=0.0, port=0,
                         runs_dir=str(runs_dir), exec_trace=False, driver=driver),
        versions={"harness": HARNESS, "agent": traj.agent.version, "atif": traj.schema_version},
        task=None, model=ModelInfo(spec=model, source="hub", path="", content_hash="",
                                   model_type="unknown") if model else None,
        sandboxed=True, agent_events=len(events), submissions=subs, agent_started_at=start,
        best=BestSoFar(submission_id=best.id, score=best.score) if best and best.score is not None
        else None, improvement=improvement,
        exit_reason=exit_reason,
        timings=Timings(agent_s=agent_s or 0.0, total_s=agent_s or 0.0),
        imported=ImportInfo(harness=HARNESS, source=str(folder), imported_at=utcnow(),
                            agent_format=f"atif ({traj.schema_version})", score_scale=scale,
                            unrecovered=unrecovered, refused=src.refused_notes(),
                            reconstructed=reconstructed + [
                                "sandboxed: Harbor runs the agent in a container (isolation as "
                                "that harness enforces it)"],
                            harness_notes=notes))
    write_json(run_dir / "run.json", record)
    src.write_manifest(run_dir, HARNESS)
    return run_dir


def _restored(traj: Trajectory, start: dt.datetime | None, fingerprint: str
              ) -> list[SubmissionRecord]:
    """The submissions of an a2rl-written trajectory, those that validate."""
    out: list[SubmissionRecord] = []
    for s in submissions_of(traj) or []:
        elapsed = number(s.get("elapsed_s"))
        at = start + dt.timedelta(seconds=elapsed or 0.0) if start else utcnow()
        fields = {k: s.get(k) for k in ("id", "seq", "model_path", "status", "score",
                                        "improvement", "ci_low", "ci_high", "significant",
                                        "split", "error")}
        base = number(s.get("baseline"))
        try:
            out.append(SubmissionRecord.model_validate({
                **{k: v for k, v in fields.items() if v is not None}, "elapsed_s": elapsed,
                "received_at": at, "finished_at": at, "task_fingerprint": fingerprint,
                "model_path": str(s.get("model_path") or ""),
                "baseline": base if base is not None else math.nan}))
        except ValidationError:
            continue
    return out


# --- export -------------------------------------------------------------------------------


def write_trial(run_dir: Path, job_dir: Path) -> Path:
    """A Harbor trial folder for an a2rl run in `job_dir` (`<task>__<run id>`): config.json,
    result.json with the best score as the verifier's reward, agent/trajectory.json and
    verifier/reward.json. Returns the trial folder."""
    record = load_run(run_dir)
    traj = trajectory_of_run(run_dir)
    name = f"{safe_id(record.config.task)[:32]}__{safe_id(record.run_id)}"
    trial = job_dir / name
    if trial.is_symlink() or trial.exists():
        raise A2RLError(f"{trial} already exists", "write into an empty job folder, or remove it")
    final = (traj.final_metrics.extra or {}) if traj.final_metrics else {}
    best = number(final.get("reward"))
    rewards: dict[str, float] = {}
    if best is not None:
        rewards = {"reward": round(best / 100, 6), "score": best}
        if (gain := number(final.get("improvement"))) is not None:
            rewards["improvement"] = gain
    start = record.agent_started_at or record.created_at
    finished = start + dt.timedelta(seconds=record.timings.agent_s)
    model = traj.agent.model_name
    fm = traj.final_metrics
    config = {"task": {"path": record.config.task}, "trial_name": name,
              "agent": {"name": record.config.agent, "model_name": model,
                        "override_timeout_sec": record.config.budget_s}}
    prov = record.provenance
    result = {"task_name": record.config.task, "trial_name": name,
              "trial_uri": trial.absolute().as_uri(), "source": "a2rl",
              "task_id": {"path": record.config.task},
              "task_checksum": prov.task_data_sha256 if prov and prov.task_data_sha256 else "",
              "config": config,
              "agent_info": {"name": record.config.agent, "version": traj.agent.version,
                             "model_info": {"name": model, "provider": "unknown"} if model else None},
              "agent_result": {"n_input_tokens": fm.total_prompt_tokens if fm else None,
                               "n_cache_tokens": fm.total_cached_tokens if fm else None,
                               "n_output_tokens": fm.total_completion_tokens if fm else None,
                               "cost_usd": fm.total_cost_usd if fm else None},
              "verifier_result": {"rewards": rewards or None},
              "started_at": iso(record.created_at),
              "finished_at": iso(record.ended_at) if record.ended_at else iso(finished),
              "agent_execution": {"started_at": iso(start), "finished_at": iso(finished)}}
    (trial / "agent").mkdir(parents=True)
    (trial / "verifier").mkdir()
    (trial / "agent" / "trajectory.json").write_text(traj.to_json())
    (trial / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (trial / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    (trial / "verifier" / "reward.json").write_text(json.dumps(rewards) + "\n")
    return trial


__all__ = ["HARNESS", "find_trials", "heredoc_files", "import_run", "workspace_path",
           "write_trial", "written_files"]
