"""Iterations: one summary per submission (its route, methods, configuration, scripts, code
diff, failure type and training excerpt), built in arrival order after the run or live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from a2rl.analysis._command_reader import CommandReader
from a2rl.analysis._detection import Detection
from a2rl.analysis._experiments import command_files
from a2rl.analysis._markdown import hms
from a2rl.analysis._methods import route_of
from a2rl.analysis._run_evidence import AgentLog, read_agent_log, workspace_files
from a2rl.analysis._shell_commands import simple_commands
from a2rl.analysis._train_config import args_config, saved_data_source, script_config
from a2rl.analysis._transcript_lines import TranscriptLines, executed_scripts
from a2rl.capture import diff_stat, parse_exec_log, read_exec_events, read_snapshots, snapshot_files
from a2rl.schema import ExecEvent, FailureType, IterationSummary, SubmissionRecord


def training_excerpt(path: str, source: str, found: Detection, *, before: int = 3,
                     after: int = 14) -> str:
    """The lines around the first training-method evidence (trainer/config construction)."""
    lines = source.splitlines()
    numbers = [int(e.split(":")[0].removeprefix("line ")) for ev in found.evidence.values()
               for e in ev if e.startswith("line ")]
    first = min((n for n in numbers if n > 0 and not lines[n - 1].lstrip().startswith(
        ("import", "from"))), default=1)
    lo, hi = max(1, first - before), min(len(lines), first + after)
    return f"# {path}, lines {lo}-{hi}\n" + "\n".join(lines[lo - 1:hi])


def _failure(rec: SubmissionRecord, *, level: str, methods: set[str], trained: bool,
             best_before: float | None, had_valid_before: bool) -> tuple[FailureType | None, str | None]:
    if rec.status == "baseline_copy":
        return None, None
    if rec.status == "rejected" and had_valid_before:
        # Refused before evaluation (its path, its size) after a working model: no training to
        # judge, so never a training collapse; the grader's reason stays as the evidence.
        return None, rec.error or "refused by the grader"
    if rec.valid and rec.improvement is None:
        return None, None  # no baseline (an imported run without one): improvement unknown
    improving = rec.valid and rec.score is not None and rec.improvement is not None \
        and rec.improvement > 0 and (best_before is None or rec.score >= best_before)
    if improving:
        return None, None
    if not rec.valid:
        if had_valid_before:
            return ("training collapse/instability",
                    f"{rec.status} after earlier valid submissions: {rec.error}")
        if not trained:
            return "early coding failure", f"{rec.status} before any training ran: {rec.error}"
        return "early coding failure", f"{rec.status}: {rec.error}"
    assert rec.score is not None
    if best_before is not None and rec.score < best_before - 1.0:
        return ("training collapse/instability",
                f"score {rec.score:.2f} fell below the earlier best {best_before:.2f}")
    if level == "L3" and methods and not (methods & {"GRPO", "PPO"}):
        return "static shortcut without transfer", "only supervised training on static data"
    if level == "L3" and methods & {"GRPO", "PPO"}:
        return "rollout construction failure", "RL code present but no improvement"
    return "reward/data design failure", f"training ran ({', '.join(sorted(methods)) or 'unknown'}) " \
                                         f"but the score did not improve ({rec.improvement:+.2f})"


class IterationBuilder:
    """Turns submissions into IterationSummary records, one at a time, in arrival order.

    Used after the run (a2rl analyze) and live, as each submission finishes (the runner appends
    the result to summary.jsonl / summary.md). Only evidence recorded so far is used: the code
    snapshot taken when the submission arrived and the transcript up to now.
    """

    def __init__(self, run_dir: Path, level: str, exec_t0: float | None = None) -> None:
        self.run_dir, self.level, self.exec_t0 = run_dir, level, exec_t0
        self.best: float | None = None
        self.had_valid = False
        self.prev_elapsed = 0.0
        self.methods_by_path: dict[str, set[str]] = {}
        self.trained_by_path: dict[str, bool] = {}
        self.data_by_path: dict[str, str] = {}
        self._analyzed: dict[tuple[str, str], Detection] = {}
        self._prev_commit: str | None = None
        self._agent_log: AgentLog | None = None
        self._fallback: dict[str, str] | None = None

    @property
    def fallback_files(self) -> dict[str, str]:
        """For runs without code snapshots: the workspace as it is now (read once, on demand)."""
        if self._fallback is None:
            self._fallback = {} if read_snapshots(self.run_dir) else \
                workspace_files(self.run_dir / "workspace")
        return self._fallback

    def agent_log(self) -> AgentLog | None:
        """The agent's event log (read once it exists)."""
        if self._agent_log is None:
            self._agent_log = read_agent_log(self.run_dir)
        return self._agent_log

    def transcript(self) -> TranscriptLines:
        """agent/transcript.log, read as it is when iterated (a live run's grows)."""
        return TranscriptLines(self.run_dir / "agent" / "transcript.log")

    def exec_events(self) -> list[ExecEvent] | None:
        """The exec trace: final (exec.jsonl) after the run, parsed from the raw log during it."""
        events = read_exec_events(self.run_dir)
        raw = self.run_dir / "agent" / "exec.log"
        if events is None and self.exec_t0 is not None and raw.exists():
            events = [ExecEvent.model_validate(e, from_attributes=True)
                      for e in parse_exec_log(raw.read_text(errors="replace"), self.exec_t0)]
        return events

    def methods_in(self, files: dict[str, str], until: float | None = None
                   ) -> tuple[set[str], bool, list[str]]:
        """Methods of everything launched up to `until`: from the exec trace, else from the
        agent's event log, else from script names in a plain transcript."""
        reader = CommandReader(files)
        launches: list[list[str]] = []
        events = self.exec_events()
        agent_log = self.agent_log() if events is None else None
        if events is not None:
            launches = [ev.argv for ev in events if until is None or ev.start_s <= until]
        elif agent_log is not None:
            launches = [argv for ev in agent_log.events if ev.kind == "command" and ev.command
                        and (until is None or ev.t_s <= until) for argv in simple_commands(ev.command)]
        else:
            launches = [["python", p] for p in sorted(executed_scripts(self.transcript(), files))]
        methods: set[str] = set()
        trained = False
        ran: set[str] = set()
        seen: set[tuple[str, ...]] = set()
        for argv in launches:
            if tuple(argv) in seen:
                continue
            seen.add(tuple(argv))
            found = reader.analyze_argv(argv)
            if found is None:
                continue
            for path in command_files(argv, reader):
                ran.add(path)
                self._analyzed.setdefault((path, files[path]), found)
            if found.trains or found.methods - {"PEFT"}:
                methods |= found.methods
            trained |= found.trains
        return methods, trained, sorted(ran)

    def add(self, rec: SubmissionRecord) -> IterationSummary:
        snap = next((s for s in read_snapshots(self.run_dir) if s.tag == rec.id), None)
        files = snapshot_files(self.run_dir, snap.commit) if snap else self.fallback_files
        methods, trained, ran = self.methods_in(files, until=rec.elapsed_s)
        rel_model = rec.model_path
        if rec.resolved_path:
            try:
                rel_model = str(Path(rec.resolved_path).relative_to(
                    (self.run_dir / "workspace").resolve()))
            except ValueError:
                pass
        self.methods_by_path[rel_model] = methods
        self.trained_by_path[rel_model] = trained
        self.data_by_path[rel_model] = saved_data_source(files, rel_model)
        config: dict[str, Any] = {}
        for path in ran:
            config.update({k: v for k, v in script_config(files[path]).items() if k not in config})
        config.update(args_config(files, rel_model))
        route: str = route_of(methods, trained=trained, copy=rec.status == "baseline_copy") \
            if snap or files else "unknown (no snapshot)"
        failure, evidence = _failure(rec, level=self.level, methods=methods, trained=trained,
                                     best_before=self.best, had_valid_before=self.had_valid)
        elapsed = rec.elapsed_s
        stat = diff_stat(self.run_dir, self._prev_commit, snap.commit) if snap else []
        if snap:
            self._prev_commit = snap.commit
        excerpt = None
        for path in ran:
            found = self._analyzed.get((path, files[path]))
            if found and found.trains and path.endswith(".py"):
                excerpt = training_excerpt(path, files[path], found)
                break
            if found and found.trains and path.endswith((".yaml", ".yml", ".json", ".sh")):
                # A config- or script-driven launch: its first lines say what it trains.
                head = files[path].splitlines()[:20]
                excerpt = f"# {path}, lines 1-{len(head)}\n" + "\n".join(head)
                break
        item = IterationSummary(
            index=rec.seq, submission_id=rec.id, elapsed_marker=hms(elapsed), elapsed_s=elapsed,
            duration_s=round(elapsed - self.prev_elapsed, 2) if elapsed is not None else None,
            status=rec.status, score=rec.score, improvement=rec.improvement, training_type=route,
            methods=sorted(methods), failure_type=failure, failure_evidence=evidence, config=config,
            changed_files=snap.changed[:50] if snap else [], scripts=ran, diff_stat=stat[:20],
            excerpt=excerpt)
        if elapsed is not None:
            self.prev_elapsed = elapsed
        if rec.valid and rec.score is not None:
            self.had_valid = True
            self.best = rec.score if self.best is None else max(self.best, rec.score)
        return item
