"""The scaffold's state during a run: journal, evaluator agent, plan review, revision checkpoints.

One `Scaffold` per task run, attached to its grader (it tees the grader's events). The files in
`runs/<task>/<run_id>/scaffold/` are the authoritative, append-only copies; the agent reaches
them only through the grader's `/scaffold/...` endpoints (`a2rl.extensions.scaffold._endpoints`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2rl._errors import A2RLError
from a2rl._util import utcnow
from a2rl.extensions.scaffold import _prompts
from a2rl.extensions.scaffold._llm import ScaffoldLLM
from a2rl.extensions.scaffold._prompts import normalize_strategy
from a2rl.schema import (
    DATA_SOURCES,
    PARADIGMS,
    STAGE_STRUCTURES,
    CheckpointEvent,
    Decision,
    EvaluatorReport,
    JournalEntry,
    JournalKind,
    Plan,
    PlanEvent,
    PlanReview,
    PlanStatus,
    ScaffoldConfig,
    ScaffoldNotice,
    Strategy,
    StrategyChange,
    SubmissionRecord,
    Suggestion,
    TrainOutput,
    append_jsonl,
    read_jsonl,
)

if TYPE_CHECKING:
    from a2rl.grader import Grader
    from a2rl.tasks import Task

log = logging.getLogger("a2rl.scaffold")

JOURNAL, EVALUATIONS, PLANS, CHECKPOINTS, LLM_CALLS = (
    "journal.jsonl", "evaluations.jsonl", "plans.jsonl", "checkpoints.jsonl", "llm_calls.jsonl")
REVIEWS = "reviews"
"""`a2rl review` writes a person's review here as `<plan_id>.json`; the scaffold ingests it."""
MAX_JOURNAL = 5000
MAX_PLANS = 20
"""Each plan costs a reviewer call: an agent looping on revisions is stopped here."""
SCORED = ("scored", "baseline_copy")
EVALUATED = ("scored", "baseline_copy", "failed")

def strategy_fix() -> str:
    return (f"use k in {list(PARADIGMS)}, d in {list(DATA_SOURCES)}, g in "
            f"{list(STAGE_STRUCTURES)}")


def code_files(code_dir: Path, *, max_bytes: int = 64 << 10, max_files: int = 200) -> dict[str, str]:
    """Text files under the workspace's code/ (no links followed, large and binary ones out)."""
    out: dict[str, str] = {}
    if not code_dir.is_dir():
        return out
    for root, dirs, files in os.walk(code_dir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in
                         ("__pycache__", "node_modules", "wandb", "checkpoints"))
        for name in sorted(files):
            path = Path(root) / name
            if len(out) >= max_files:
                return out
            try:
                if path.is_symlink() or path.stat().st_size > max_bytes:
                    continue
                raw = path.read_bytes()
            except OSError:
                continue
            if b"\0" in raw[:4096]:
                continue
            out[str(path.relative_to(code_dir.parent))] = raw.decode(errors="replace")
    return out


def code_digest(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return h.hexdigest()[:16]


def train_items(task: Task, into: Path) -> list[dict[str, Any]]:
    """The task's train-visible items, written by the task itself into a harness-private folder
    (the agent's copy in data/ is never read back: it only ever holds what this one holds)."""
    into.mkdir(parents=True, exist_ok=True)
    items: list[dict[str, Any]] = []
    for path in sorted(task.write_train_data(into)):
        if path.suffix != ".jsonl":
            continue
        for line in path.read_text().splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                items.append(obj)
    return items


class Scaffold:
    """Every enabled component of one task run."""

    def __init__(self, config: ScaffoldConfig, run_dir: Path, workspace: Path, task: Task,
                 *, budget_s: float) -> None:
        self.config, self.run_dir, self.workspace, self.task = config, run_dir, workspace, task
        self.budget_s = budget_s
        self.enabled = set(config.components)
        self.dir = run_dir / "scaffold"
        self.dir.mkdir(exist_ok=True)
        (self.dir / REVIEWS).mkdir(exist_ok=True)
        self.dir.chmod(0o700)
        self.llm = ScaffoldLLM(config, self.dir / LLM_CALLS)
        self.grader: Grader | None = None
        self._lock = threading.RLock()
        self._intent = threading.local()
        self._wanted: set[str] = set()
        self._reports: dict[str, EvaluatorReport] = {}
        self._evaluating: dict[str, threading.Event] = {}
        self._journal: list[JournalEntry] = []
        self._plans: list[PlanEvent] = []
        self._checkpoints: list[CheckpointEvent] = []
        self._queued: list[list[str]] = []
        self._fired_fractions: set[float] = set()
        self._since_best = 0
        self._best: float | None = None
        self._evaluated = 0
        self.strategy: Strategy | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._train: list[dict[str, Any]] | None = None
        for frac in config.revision_fractions:
            if not 0 < frac < 1:
                raise A2RLError(f"revision fraction {frac} is not inside (0, 1)",
                                "pass e.g. --scaffold-opt revision_fractions=0.25,0.5,0.75")

    # -- wiring -----------------------------------------------------------------------------
    def on(self, component: str) -> bool:
        return component in self.enabled

    def attach(self, grader: Grader) -> None:
        """Tee the grader's events and start the ticker (budget fractions, a person's reviews)."""
        self.grader = grader
        grader.events = _Tee(grader.events, self)
        self._ticker = threading.Thread(target=self._tick, name="a2rl-scaffold", daemon=True)
        self._ticker.start()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        for event in list(self._evaluating.values()):
            event.wait(timeout=self.config.llm_timeout_s * (self.config.llm_retries + 1) * 2)

    def elapsed(self) -> float:
        return round(self.grader.elapsed(), 3) if self.grader is not None else 0.0

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.check_fractions()
                self.ingest_reviews()
            except Exception:
                log.exception("scaffold ticker failed")

    def _last_submission(self) -> str | None:
        if self.grader is None:
            return None
        recs = self.grader.feedback_records()
        return recs[-1].id if recs else None

    # -- the journal ------------------------------------------------------------------------
    def add_journal(self, kind: JournalKind, text: str, *, author: str = "agent",
                    strategy: Strategy | None = None,
                    follows: list[str] | None = None) -> JournalEntry:
        with self._lock:
            if len(self._journal) >= MAX_JOURNAL:
                raise A2RLError(f"the journal is full ({MAX_JOURNAL} entries)",
                                "write fewer, longer entries")
            snaps = self.run_dir / "code-history.jsonl"
            snapshot = None
            if snaps.exists():
                lines = [ln for ln in snaps.read_text().splitlines() if ln.strip()]
                if lines:
                    try:
                        snapshot = json.loads(lines[-1]).get("tag")
                    except ValueError:
                        snapshot = None
            seq = len(self._journal) + 1
            entry = JournalEntry(seq=seq, id=f"j{seq:04d}", at=utcnow(), elapsed_s=self.elapsed(),
                                 kind=kind, author=author,  # type: ignore[arg-type]
                                 text=text[:8000], strategy=strategy, follows=follows or [],
                                 snapshot=snapshot,
                                 code_digest=code_digest(code_files(self.workspace / "code")),
                                 last_submission=self._last_submission())
            append_jsonl(self.dir / JOURNAL, entry)
            self._journal.append(entry)
            if strategy is not None and author == "agent":
                self.strategy = strategy
            return entry

    def journal(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._journal)

    # -- submissions and the evaluator ------------------------------------------------------
    def submit(self, model_path: object, *, wait: bool, final: bool,
               evaluate: bool) -> tuple[Any, ScaffoldNotice]:
        """grader.submit with the scaffold's part: the evaluator when asked (its report comes
        with a blocking reply; a non-blocking one polls), a pending decision, the plan state."""
        assert self.grader is not None
        if evaluate and not self.on("evaluator"):
            raise A2RLError('"evaluate": true needs the evaluator component',
                            "this run's scaffold has no evaluator; drop the field")
        self._intent.evaluate = evaluate
        try:
            reply = self.grader.submit(model_path, wait=wait, final=final)
        finally:
            self._intent.evaluate = False
        sid = reply.submission_id
        if wait and sid is not None and sid in self._evaluating:
            self._evaluating[sid].wait(
                timeout=self.config.llm_timeout_s * (self.config.llm_retries + 1) * 2 + 30)
        return reply, self.notice(sid)

    def notice(self, submission_id: str | None) -> ScaffoldNotice:
        with self._lock:
            report = self._reports.get(submission_id or "")
            status = ("done" if report else "pending" if submission_id in self._wanted
                      else "not_requested")
            return ScaffoldNotice(evaluator=report, evaluator_status=status,  # type: ignore[arg-type]
                                  pending_decision=self.pending_checkpoint(),
                                  plan_status=self.plan_status() if self.on("plan-review")
                                  else None)

    def report(self, submission_id: str) -> EvaluatorReport | None:
        with self._lock:
            return self._reports.get(submission_id)

    def submission_received(self, rec: SubmissionRecord) -> None:
        if getattr(self._intent, "evaluate", False):
            with self._lock:
                self._wanted.add(rec.id)
                self._evaluating[rec.id] = threading.Event()

    def submission_finished(self, rec: SubmissionRecord) -> None:
        """Called on the grader's worker thread while the evaluated snapshot still exists."""
        if rec.status == "rejected" and rec.id not in self._wanted:
            return
        if self.on("journal") and rec.status != "rejected":
            self.add_journal("eval_result", f"{rec.id} ({rec.model_path}): {rec.status}, score "
                             f"{rec.score} (baseline {rec.baseline}, improvement "
                             f"{rec.improvement})" + (f"; {rec.error}" if rec.error else ""),
                             author="harness")
        if rec.id in self._wanted:
            outputs = self._train_outputs(rec) if rec.status in SCORED else []
            threading.Thread(target=self._evaluate, args=(rec, outputs), daemon=True,
                             name=f"a2rl-evaluator-{rec.id}").start()
        if self.on("revision") and rec.status in EVALUATED:
            self._count_for_revision(rec)

    def _train_outputs(self, rec: SubmissionRecord) -> list[TrainOutput]:
        """The submitted model's answers on a few train-visible items (never held-out ones)."""
        from a2rl.tasks import StaticTextTask

        n = self.config.evaluator_items
        if n == 0 or not isinstance(self.task, StaticTextTask) or not rec.artifact_dir:
            return []
        model_dir = self.run_dir / rec.artifact_dir
        if not model_dir.is_dir():
            return []
        try:
            if self._train is None:
                self._train = train_items(self.task, self.dir / "train_view")
            items = self._train[:n]
            if not items:
                return []
            assert self.grader is not None
            prompts, samples = self.task.generate(model_dir, items,
                                                  chat_template_from=self.grader.base.path)
            scores: list[float | None] = [None] * len(items)
            try:
                outcome = self.task.score_batch(items, prompts, samples)
                scores = [float(d["score"]) if d.get("score") is not None else None
                          for d in outcome.details]
            except Exception as exc:  # judge/sandbox-scored tasks may not score train items
                log.info("train items not scored for the evaluator: %s", exc)
            return [TrainOutput(id=str(item.get("id", i)), prompt=prompts[i][-1500:],
                                completion=samples[0][i][:1500],
                                score=scores[i] if i < len(scores) else None)
                    for i, item in enumerate(items)]
        except Exception as exc:
            log.warning("train-visible outputs for %s failed: %s", rec.id, exc)
            return []

    def _history(self, before: str) -> list[tuple[str, str, float | None]]:
        assert self.grader is not None
        return [(r.id, r.status, r.score) for r in self.grader.feedback_records()
                if r.id != before and r.status != "pending"]

    def _evaluate(self, rec: SubmissionRecord, outputs: list[TrainOutput]) -> None:
        try:
            try:
                report = self._evaluation(rec, outputs)
            except Exception as exc:  # never lose the run to the evaluator
                log.exception("evaluator failed on %s", rec.id)
                report = self._failed(rec, f"evaluator error ({type(exc).__name__})",
                                      len(outputs))
            with self._lock:
                self._reports[rec.id] = report
                append_jsonl(self.dir / EVALUATIONS, report)
            if self.on("journal"):
                self.add_journal("eval_analysis", _report_text(report), author="evaluator")
        finally:
            self._evaluating[rec.id].set()

    def _failed(self, rec: SubmissionRecord, error: str, shown: int,
                expectation: str | None = None) -> EvaluatorReport:
        return EvaluatorReport(submission_id=rec.id, at=utcnow(), elapsed_s=self.elapsed(),
                               status="failed", expectation=expectation, score=rec.score,
                               strategy_at=self.strategy, outputs_shown=shown, error=error)

    def _evaluation(self, rec: SubmissionRecord, outputs: list[TrainOutput]) -> EvaluatorReport:
        assert self.grader is not None
        if rec.status not in SCORED:
            return self._failed(rec, f"the submission was not scored ({rec.status}): nothing "
                                "to evaluate", 0)
        first = self.llm.ask("evaluator-expectation", _prompts.EVALUATOR_SYSTEM,
                             _prompts.expectation_prompt(
                                 task=self.task.name, baseline=rec.baseline, submission=rec.id,
                                 model_path=rec.model_path, strategy=self.strategy,
                                 code=code_files(self.workspace / "code"),
                                 journal=[e for e in self.journal() if not (
                                     e.author == "harness" and e.text.startswith(f"{rec.id} "))],
                                 history=self._history(rec.id)),
                             _prompts.Expectation)
        if not isinstance(first.value, _prompts.Expectation):
            return self._failed(rec, f"evaluator ({first.failure}): {first.error}", len(outputs))
        expectation = first.value.expectation
        second = self.llm.ask("evaluator-diagnosis", _prompts.EVALUATOR_SYSTEM,
                              _prompts.expectation_prompt(
                                  task=self.task.name, baseline=rec.baseline, submission=rec.id,
                                  model_path=rec.model_path, strategy=self.strategy,
                                  code={}, journal=[], history=self._history(rec.id))
                              + "\n\n" + _prompts.diagnosis_prompt(
                                  expectation=expectation, score=rec.score, status=rec.status,
                                  outputs=outputs),
                              _prompts.Diagnosis)
        if not isinstance(second.value, _prompts.Diagnosis):
            return self._failed(rec, f"evaluator ({second.failure}): {second.error}",
                                len(outputs), expectation)
        suggestions = []
        for n, s in enumerate(second.value.suggestions, 1):
            change = s.change if s.level == "strategy" else None
            suggestions.append(Suggestion(id=f"{rec.id}.{n}", level=s.level, text=s.text[:1000],
                                          change=change,
                                          target=s.target[:100] if s.target else None))
        return EvaluatorReport(submission_id=rec.id, at=utcnow(), elapsed_s=self.elapsed(),
                               status="ok", expectation=expectation[:2000], score=rec.score,
                               diagnosis=second.value.diagnosis[:3000], suggestions=suggestions,
                               strategy_at=self.strategy, outputs_shown=len(outputs))

    # -- plan review ------------------------------------------------------------------------
    def submit_plan(self, plan: Plan) -> PlanEvent:
        """Record the plan and, with the LLM reviewer, review it now (a person reviews it with
        `a2rl review`; the agent polls GET /scaffold/plan)."""
        with self._lock:
            n = sum(1 for e in self._plans if e.event == "submitted") + 1
            if n > MAX_PLANS:
                raise A2RLError(f"{MAX_PLANS} plans were submitted already",
                                "go on with the latest reviewed plan")
            event = PlanEvent(plan_id=f"p{n:02d}", event="submitted", at=utcnow(),
                              elapsed_s=self.elapsed(), plan=plan)
            self._record_plan(event)
            self.strategy = plan.strategy
        if self.config.reviewer == "person":
            return event
        earlier = self._reviewed_plans()
        assert self.grader is not None
        reply = self.llm.ask("reviewer", _prompts.REVIEWER_SYSTEM, _prompts.review_prompt(
            task=self.task.name, baseline=self.grader.baseline.score, budget_s=self.budget_s,
            plan=plan, earlier=earlier), _prompts.ReviewReply)
        if isinstance(reply.value, _prompts.ReviewReply):
            review = PlanReview(**reply.value.model_dump())
            done = PlanEvent(plan_id=event.plan_id, event="reviewed", at=utcnow(),
                             elapsed_s=self.elapsed(), review=review, reviewer=self.llm.name)
        else:
            done = PlanEvent(plan_id=event.plan_id, event="review_failed", at=utcnow(),
                             elapsed_s=self.elapsed(),
                             error=f"reviewer ({reply.failure}): {reply.error}")
        with self._lock:
            self._record_plan(done)
        return done

    def _record_plan(self, event: PlanEvent) -> None:
        append_jsonl(self.dir / PLANS, event)
        self._plans.append(event)

    def _reviewed_plans(self) -> list[tuple[Plan, str]]:
        with self._lock:
            plans = {e.plan_id: e.plan for e in self._plans if e.plan is not None}
            return [(plans[e.plan_id], f"{e.review.verdict}: {e.review.rationale}")
                    for e in self._plans if e.review is not None and e.plan_id in plans]

    def plan_events(self) -> list[PlanEvent]:
        with self._lock:
            return list(self._plans)

    def plan_status(self) -> PlanStatus:
        """none, pending, approved, revise or unreviewed (the reviewer failed) for the latest
        plan."""
        with self._lock:
            submitted = [e for e in self._plans if e.event == "submitted"]
            if not submitted:
                return "none"
            latest = submitted[-1].plan_id
            outcome = [e for e in self._plans if e.plan_id == latest and e.event != "submitted"]
            if not outcome:
                return "pending"
            last = outcome[-1]
            if last.event == "review_failed" or last.review is None:
                return "unreviewed"
            return "approved" if last.review.verdict == "approve" else "revise"

    def pending_plan(self) -> PlanEvent | None:
        with self._lock:
            if self.plan_status() != "pending":
                return None
            return [e for e in self._plans if e.event == "submitted"][-1]

    def ingest_reviews(self) -> None:
        """A person's reviews written by `a2rl review` (scaffold/reviews/<plan_id>.json)."""
        if self.config.reviewer != "person" or not self.on("plan-review"):
            return
        pending = self.pending_plan()
        if pending is None:
            return
        path = self.dir / REVIEWS / f"{pending.plan_id}.json"
        if not path.exists():
            return
        try:
            review = PlanReview.model_validate_json(path.read_text())
        except ValueError as exc:
            log.warning("unreadable review %s: %s", path, exc)
            path.rename(path.with_suffix(".invalid"))
            return
        with self._lock:
            self._record_plan(PlanEvent(plan_id=pending.plan_id, event="reviewed", at=utcnow(),
                                        elapsed_s=self.elapsed(), review=review,
                                        reviewer="person"))
        path.rename(path.with_suffix(".ingested"))

    # -- revision checkpoints ---------------------------------------------------------------
    def _count_for_revision(self, rec: SubmissionRecord) -> None:
        triggers: list[str] = []
        with self._lock:
            self._evaluated += 1
            every = self.config.revision_every
            if every and self._evaluated % every == 0:
                triggers.append(f"every {every} submissions")
            if rec.status in SCORED and rec.score is not None and (
                    self._best is None or rec.score > self._best):
                self._best, self._since_best = rec.score, 0
            else:
                self._since_best += 1
            plateau = self.config.revision_plateau
            if plateau and self._since_best >= plateau:
                triggers.append(f"plateau of {plateau} submissions without a new best")
                self._since_best = 0
        if triggers:
            self.open_checkpoint(triggers)

    def check_fractions(self) -> None:
        if not self.on("revision") or self.grader is None or self.grader.elapsed() <= 0:
            return
        used = self.grader.elapsed() / self.budget_s
        with self._lock:
            due = [f for f in sorted(self.config.revision_fractions)
                   if f <= used and f not in self._fired_fractions]
            self._fired_fractions.update(due)
        if due:
            self.open_checkpoint([f"{100 * f:g}% of the budget used" for f in due])

    def open_checkpoint(self, triggers: list[str]) -> CheckpointEvent | None:
        """Open a checkpoint now, or queue it behind the one still waiting for a decision."""
        with self._lock:
            if self.pending_checkpoint() is not None:
                self._queued.append(triggers)
                return None
            n = sum(1 for e in self._checkpoints if e.event == "opened") + 1
            event = CheckpointEvent(checkpoint_id=f"c{n:02d}", event="opened", at=utcnow(),
                                    elapsed_s=self.elapsed(), triggers=triggers,
                                    after_submission=self._last_submission())
            append_jsonl(self.dir / CHECKPOINTS, event)
            self._checkpoints.append(event)
            return event

    def pending_checkpoint(self) -> CheckpointEvent | None:
        with self._lock:
            decided = {e.checkpoint_id for e in self._checkpoints if e.event == "decided"}
            return next((e for e in self._checkpoints
                         if e.event == "opened" and e.checkpoint_id not in decided), None)

    def decide(self, checkpoint_id: str, decision: Decision) -> CheckpointEvent:
        with self._lock:
            pending = self.pending_checkpoint()
            if pending is None or pending.checkpoint_id != checkpoint_id:
                raise A2RLError(f"no checkpoint {checkpoint_id!r} is waiting for a decision",
                                "GET /scaffold/decision shows the one that is (if any)")
            if decision.action == "switch" and decision.strategy is None:
                raise A2RLError("a switch needs the new strategy",
                                'add "strategy": {"k": ..., "d": ..., "g": ...}; ' +
                                strategy_fix())
            event = CheckpointEvent(checkpoint_id=checkpoint_id, event="decided", at=utcnow(),
                                    elapsed_s=self.elapsed(), decision=decision)
            append_jsonl(self.dir / CHECKPOINTS, event)
            self._checkpoints.append(event)
            if decision.strategy is not None:
                self.strategy = decision.strategy
            queued = self._queued.pop(0) if self._queued else None
        if queued:
            self.open_checkpoint(queued)
        return event

    def checkpoints(self) -> list[CheckpointEvent]:
        with self._lock:
            return list(self._checkpoints)


def _report_text(report: EvaluatorReport) -> str:
    if report.status != "ok":
        return f"evaluator on {report.submission_id}: failed ({report.error})"
    lines = [f"evaluator on {report.submission_id} (score {report.score}): expected: "
             f"{report.expectation}", f"diagnosis: {report.diagnosis}"]
    for s in report.suggestions:
        change = f" change {s.change.dimensions()}" if s.change else ""
        target = f" target {s.target}" if s.target else ""
        lines.append(f"- [{s.id} {s.level}{change}{target}] {s.text}")
    return "\n".join(lines)


class _Tee:
    """The grader's event hooks: the run's own, then the scaffold's."""

    def __init__(self, inner: Any, scaffold: Scaffold) -> None:
        self.inner, self.scaffold = inner, scaffold

    def submission_received(self, record: SubmissionRecord) -> None:
        self.scaffold.submission_received(record)
        if self.inner is not None:
            self.inner.submission_received(record)

    def eval_progress(self, record: SubmissionRecord, done: int, total: int) -> None:
        if self.inner is not None:
            self.inner.eval_progress(record, done, total)

    def submission_finished(self, record: SubmissionRecord, best: float | None) -> None:
        try:
            if self.inner is not None:
                self.inner.submission_finished(record, best)
        finally:
            self.scaffold.submission_finished(record)


def read_scaffold_files(run_dir: Path) -> dict[str, list[Any]]:
    """The scaffold's records of a finished run (empty lists where a file is missing)."""
    d = run_dir / "scaffold"

    def rows(name: str, model: Any) -> list[Any]:
        return read_jsonl(d / name, model) if (d / name).exists() else []

    return {"journal": rows(JOURNAL, JournalEntry), "evaluations": rows(EVALUATIONS,
                                                                        EvaluatorReport),
            "plans": rows(PLANS, PlanEvent), "checkpoints": rows(CHECKPOINTS, CheckpointEvent)}


__all__ = ["Scaffold", "StrategyChange", "normalize_strategy", "read_scaffold_files"]
