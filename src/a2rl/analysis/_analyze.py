"""`a2rl analyze RUN`: what the agent did, computed from evidence the harness recorded
(ledger, code snapshots, artifact index, transcript), never from text the agent wrote about
itself. The run-level analysis and the files it writes (analysis.json, summary.jsonl,
summary.md), after the run and live."""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import Any

from a2rl._util import atomic_write_text
from a2rl.analysis._audit import audit, contamination, data_files, ground_truth_audit
from a2rl.analysis._command_reader import CommandReader
from a2rl.analysis._experiments import (
    artifact_experiments,
    traced_experiments,
    training_launches,
    transcript_experiments,
)
from a2rl.analysis._iterations import IterationBuilder
from a2rl.analysis._markdown import hms, render_iteration, render_markdown
from a2rl.analysis._methods import route_of
from a2rl.analysis._phases import phase_times, turn_phases
from a2rl.analysis._run_evidence import parse_warnings
from a2rl.analysis._trained_data import train_visible, trained_texts
from a2rl.analysis._transcript_lines import executed_scripts
from a2rl.analysis._verdicts import recorded_verdicts
from a2rl.capture import read_artifacts, read_snapshots, snapshot_files
from a2rl.schema import (
    ExecEvent,
    FailureType,
    Finding,
    IterationSummary,
    ProcessMetrics,
    RunAnalysis,
    RunRecord,
    SubmissionRecord,
    current_submissions,
    load_run,
)


def _run_failure(run: RunRecord, subs: list[SubmissionRecord],
                 no_valid: bool) -> tuple[FailureType | None, str | None]:
    """The whole run's failure type. An agent command that never ran (exit 126/127: not
    executable / not found) without a single submission is the setup's failure, not the
    agent's coding."""
    code = run.agent_exit_code
    if not subs and code in (126, 127):
        what = "was not found" if code == 127 else "could not be executed"
        return ("harness/setup failure",
                f"the agent command {what} (exit {code} after {run.timings.agent_s:.0f} s); "
                "see agent/transcript.log")
    if no_valid:
        return "early coding failure", "no valid submission in the whole run"
    return None, None


def _submissions(run_dir: Path, run: RunRecord) -> list[SubmissionRecord]:
    """The agent's submissions. The ledger is the source of truth; run.json's copy is used when
    the ledger is gone. A hidden-final run's test-split record is the harness's own evaluation,
    not an iteration of the agent's (it is `RunAnalysis.final`)."""
    ledger = run_dir / "ledger.jsonl"
    subs = current_submissions(ledger) if ledger.exists() else list(run.submissions)
    return [r for r in subs if r.split != "test"]


def _measured_seen(run: RunRecord) -> set[str] | None:
    """Keyed ids of the held-out items the task measured in its train-visible data, from the
    baseline's per-item record (None when the task does not measure that overlap)."""
    if run.baseline is None:
        return None
    parts = [v for v in (run.baseline.items, run.baseline.test_items)
             if v is not None and v.keys is not None and v.seen is not None]
    if not parts:
        return None
    return {k for v in parts for k, s in zip(v.keys or [], v.seen or [], strict=True) if s}


def analyze_run(run_dir: Path, *, heldout: list[dict[str, Any]] | None = None) -> RunAnalysis:
    """Compute the analysis of a finished run and (re)write summary.jsonl, summary.md and
    analysis.json from scratch (what extensions add to it: `a2rl.extensions.add_to_analysis`)."""
    run: RunRecord = load_run(run_dir)
    subs = _submissions(run_dir, run)
    builder = IterationBuilder(run_dir, run.task.level if run.task else "L1")
    iterations = [builder.add(rec) for rec in subs]
    analysis = _run_level(run_dir, run, subs, builder, iterations, heldout)
    write_analysis(run_dir, analysis)
    return analysis


def _run_level(run_dir: Path, run: RunRecord, subs: list[SubmissionRecord],
               builder: IterationBuilder, iterations: list[IterationSummary],
               heldout: list[dict[str, Any]] | None) -> RunAnalysis:
    transcript = builder.transcript()
    grader_log = (run_dir / "grader.log").read_text(errors="replace") \
        if (run_dir / "grader.log").exists() else ""
    snapshots = {s.tag: s for s in read_snapshots(run_dir)}
    artifacts = read_artifacts(run_dir)
    notes: list[str] = []
    if not snapshots and not builder.fallback_files:
        notes.append("no code snapshots were recorded; methods and routes are unknown")
    elif not snapshots:
        notes.append("no code snapshots: methods are read from the workspace as it was at the end")
    if heldout is None:
        notes.append("held-out items not loaded: contamination not checked")
    final_snap = snapshots.get("final") or (list(snapshots.values())[-1] if snapshots else None)
    final_files = snapshot_files(run_dir, final_snap.commit) if final_snap else builder.fallback_files
    iterations = list(iterations)
    all_methods, all_trained, _ = builder.methods_in(final_files)
    best_rec = next((r for r in subs if run.best and r.id == run.best.submission_id), None)
    best_iter = next((it for it in iterations if best_rec and it.submission_id == best_rec.id), None)
    run_route = best_iter.training_type if best_iter else route_of(all_methods, trained=all_trained,
                                                                   copy=False) \
        if final_snap or final_files else "unknown (no snapshot)"
    agent_s = run.timings.agent_s or None
    no_valid = not any(r.valid for r in subs)
    failure_type, failure_evidence = _run_failure(run, subs, no_valid)
    iterations.append(IterationSummary(
        index=len(subs) + 1, submission_id=None, elapsed_marker=hms(agent_s),
        elapsed_s=agent_s, duration_s=round(agent_s - builder.prev_elapsed, 2) if agent_s else None,
        status=run.exit_reason or run.status, exit_code=run.agent_exit_code,
        score=run.best.score if run.best else None, improvement=run.improvement,
        training_type=run_route, methods=sorted(all_methods),
        failure_type=failure_type, failure_evidence=failure_evidence,
        changed_files=final_snap.changed[:50] if final_snap else [],
        scripts=sorted(executed_scripts(transcript, final_files))))

    valid = [r for r in subs if r.valid]
    # Imported runs carry no baseline.json: the harness's baseline is on its submissions.
    baseline = run.baseline.score if run.baseline else next(
        (r.baseline for r in subs if not math.isnan(r.baseline)), None)
    improving = [r for r in subs if r.valid and r.improvement is not None and r.improvement > 0]
    budget = run.config.budget_s
    last_elapsed = max((r.elapsed_s for r in subs if r.elapsed_s is not None), default=None)
    metrics = ProcessMetrics(
        baseline=baseline, best=run.best.score if run.best else None, improvement=run.improvement,
        scores=[r.score for r in subs], submissions=len(subs),
        valid_rate=round(len(valid) / len(subs), 4) if subs else None,
        zero_score_rate=round(sum(1 for r in subs if r.status == "failed" or r.score == 0)
                              / len(subs), 4) if subs else None,
        best_at_submission=best_rec.seq if best_rec else None,
        time_to_first_improvement_s=improving[0].elapsed_s if improving else None,
        time_to_best_s=best_rec.elapsed_s if best_rec else None,
        time_used_ratio=round(run.timings.agent_s / budget, 4) if budget else None,
        last_submit_gap_s=round(budget - last_elapsed, 2) if last_elapsed is not None else None,
        code_files_written=len([p for p in final_files if p.startswith("code/") or
                                (p.endswith((".py", ".sh")) and not p.startswith("output/"))]),
        model_versions=len({a.path for a in artifacts}))

    events = builder.exec_events()
    agent_log = builder.agent_log()
    labelled: list[tuple[ExecEvent, str]] = []
    phase_seconds: dict[str, float] = {}
    reader = CommandReader(final_files)
    ws = run_dir / "workspace"
    if events is not None:
        labelled, phase_seconds = phase_times(events, reader, horizon=agent_s or 0.0)
        experiments = traced_experiments(labelled, reader, ws, artifacts)
    elif agent_log is not None:
        notes.append("no exec trace: experiments are the training commands of the agent's "
                     "event log, joined to the workspace's scripts and configs")
        experiments = transcript_experiments(agent_log.events, reader, ws, artifacts)
    else:
        notes.append("no exec trace (strace missing or disabled): experiments come from the "
                     "artifact index, scripts from the transcript")
        experiments = artifact_experiments(artifacts, builder.methods_by_path,
                                           builder.data_by_path, builder.trained_by_path)
    pairs = list(zip(experiments, experiments[1:], strict=False))
    changes = sum(1 for a, b in pairs if (a.strategy, a.data_source, a.stage) !=
                  (b.strategy, b.data_source, b.stage))
    turns: list[dict[str, Any]] = []
    turn_seconds: dict[str, float] = {}
    usage: dict[str, float] = {}
    if agent_log is not None:
        turns, turn_seconds = turn_phases(agent_log.events, reader, agent_s or 0.0)
        usage = dict(agent_log.usage)
    else:
        notes.append("no agent event log (agent/events.jsonl): phases are labelled per program "
                     "the agent ran, not per model turn")

    base_hash = run.model.content_hash if run.model else None
    given = train_visible(run_dir, run)
    notes += given.notes
    # Data files the traced training launches read, checked on their own (ground truth); the
    # task's untouched files among them hold only what the task gave.
    trained = {rel: text for rel, text in trained_texts(
        [ev.argv for ev, _ in training_launches(labelled, reader)], reader, ws).items()
        if given.original.get(rel) != text}
    seen = _measured_seen(run)
    findings = audit(task=run.config.task, code=final_files, transcript=transcript,
                     grader_log=grader_log,
                     rejected_errors=[r.error or "" for r in subs if r.status == "rejected"],
                     base_copies=[a.path for a in artifacts
                                  if base_hash and a.weights_hash == base_hash],
                     data_texts={rel: text for rel, text in (data_files(ws) | given.agent_written)
                                 .items() if rel not in trained},
                     heldout=heldout or [], train_texts=given.original, seen=seen)
    findings = _drop_base_model_loads(findings, run)
    findings += given.findings
    findings += contamination(trained, heldout or [], train_texts=given.original, seen=seen,
                              where="data files the traced training programs read",
                              basis="ground-truth")
    findings += ground_truth_audit(run_dir, submissions=subs,
                                   base=Path(run.model.path) if run.model else None,
                                   driver_base_url=run.config.driver_base_url)
    verdicts, verdict_notes = recorded_verdicts(run_dir, run, findings,
                                                heldout_checked=heldout is not None)
    findings += verdicts
    notes += verdict_notes
    if not run.sandboxed and run.imported is not None:
        findings.append(Finding(
            kind="unsandboxed", severity="warning", message=f"imported from {run.imported.harness}: "
            "the agent ran without OS isolation of that harness's grader and held-out data"))
    elif not run.sandboxed:
        findings.append(Finding(
            kind="unsandboxed", severity="critical", message="the agent ran without a sandbox "
            "(--no-sandbox): isolation of held-out data and the ledger was not enforced"))
    if run.imported is not None:
        notes.append(f"imported from {run.imported.harness} ({run.imported.source}); not "
                     "recovered: " + "; ".join(run.imported.unrecovered))
    analysis = RunAnalysis(
        run_id=run.run_id, task=run.config.task, route=run_route, final=run.final,
        methods_attempted=sorted(all_methods | {m for it in iterations for m in it.methods}),
        methods_in_best=best_iter.methods if best_iter else [], metrics=metrics,
        experiments=experiments, strategy_changes=changes,
        change_rate=round(changes / len(pairs), 4) if pairs else None,
        persistence=round(1 - changes / len(pairs), 4) if pairs else None, iterations=iterations,
        turns=turns, turn_phase_seconds=turn_seconds, usage=usage,
        findings=findings, sandboxed=run.sandboxed, notes=notes, exec_traced=events is not None,
        imported_from=run.imported.harness if run.imported else None,
        parse_warnings=parse_warnings(run_dir),
        phase_seconds=phase_seconds,
        commands=[{"start_s": ev.start_s, "end_s": ev.end_s, "exit_code": ev.exit_code,
                   "phase": phase, "argv": " ".join(ev.argv)[:1000]} for ev, phase in labelled])
    return analysis


def _drop_base_model_loads(findings: list[Finding], run: RunRecord) -> list[Finding]:
    """Loading the run's own base model by its hub id (how other harnesses hand it to the agent)
    is not a foreign model: keep only the evidence that names another one."""
    base = run.config.model
    if "/" not in base:
        return findings
    out = []
    for f in findings:
        if f.kind == "other-model":
            rest = [e for e in f.evidence if base not in e]
            if not rest:
                continue
            f = f.model_copy(update={"evidence": rest})
        out.append(f)
    return out


class LiveSummary:
    """Append-only summary.jsonl / summary.md written while the run goes on: one iteration as
    each submission finishes (in completion order), then the final record and the run-level
    sections when the run ends. `a2rl analyze` can always rebuild both files from evidence."""

    def __init__(self, run_dir: Path, level: str) -> None:
        self.run_dir = run_dir
        self.builder = IterationBuilder(run_dir, level)
        self.iterations: list[IterationSummary] = []
        self._lock = threading.Lock()

    def _append(self, name: str, text: str) -> None:
        with (self.run_dir / name).open("a") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())

    def submission_finished(self, rec: SubmissionRecord) -> None:
        with self._lock:
            item = self.builder.add(rec)
            self.iterations.append(item)
            self._append("summary.jsonl", item.model_dump_json() + "\n")
            self._append("summary.md", render_iteration(item) + "\n")

    def finish(self, heldout: list[dict[str, Any]] | None) -> RunAnalysis:
        with self._lock:
            run = load_run(self.run_dir)
            subs = _submissions(self.run_dir, run)
            done = {it.submission_id for it in self.iterations}
            for rec in subs:  # anything that finished without an event (e.g. interrupted)
                if rec.id not in done:
                    self.iterations.append(self.builder.add(rec))
                    self._append("summary.jsonl", self.iterations[-1].model_dump_json() + "\n")
            analysis = _run_level(self.run_dir, run, subs, self.builder, self.iterations, heldout)
            final = analysis.iterations[-1]
            self._append("summary.jsonl", final.model_dump_json() + "\n")
            atomic_write_text(self.run_dir / "summary.md", render_markdown(analysis))
            atomic_write_text(self.run_dir / "analysis.json", analysis.model_dump_json(indent=2))
            return analysis


def write_analysis(run_dir: Path, analysis: RunAnalysis) -> None:
    atomic_write_text(run_dir / "analysis.json", analysis.model_dump_json(indent=2))
    atomic_write_text(run_dir / "summary.jsonl",
                      "".join(it.model_dump_json() + "\n" for it in analysis.iterations))
    atomic_write_text(run_dir / "summary.md", render_markdown(analysis))


