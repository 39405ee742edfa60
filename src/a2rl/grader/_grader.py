"""The grader: the run's single clock, submission rules, serialized evaluation, the ledger."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from a2rl._util import utcnow
from a2rl.grader._artifact import SubmissionRejected, resolve_submission, snapshot_submission
from a2rl.grader._baseline import BaselineRecord
from a2rl.grader._evaluation import EvalFailed, EvalJob, run_evaluation
from a2rl.grader._ledger import Ledger
from a2rl.grader._records import StatusResponse, SubmissionRecord, SubmitResponse
from a2rl.models import ResolvedModel, weights_bytes
from a2rl.tasks import EvalOutcome, Task

Evaluator = Callable[..., EvalOutcome]
"""`run_evaluation`-compatible: (job, *, timeout_s, on_progress) -> EvalOutcome."""

log = logging.getLogger("a2rl.grader")


class GraderEvents(Protocol):
    """Hooks the harness uses to show progress; they must not raise."""

    def submission_received(self, record: SubmissionRecord) -> None: ...
    def eval_progress(self, record: SubmissionRecord, done: int, total: int) -> None: ...
    def submission_finished(self, record: SubmissionRecord, best: float | None) -> None: ...


@dataclass
class GraderConfig:
    budget_s: float
    """The agent's budget on the grader's clock (seconds)."""
    eval_timeout_s: float = 3600.0
    """An evaluation running longer is killed and the submission marked failed."""
    max_artifact_bytes: int | None = None
    """Largest accepted submission; default 4 × the base model's weights + 256 MiB."""


@dataclass
class _Job:
    record: SubmissionRecord
    done: threading.Event


class Grader:
    """Owns everything the agent must not touch. Rules (also in the workspace instructions):

    - a submission must resolve (symlinks followed) inside workspace/output/ and be a full
      safetensors checkpoint; it is snapshotted at once and the snapshot is evaluated;
    - weights identical to the base model are recorded as `baseline_copy` with the baseline score;
    - weights identical to an earlier scored submission reuse its score (`cached`), still recorded;
    - evaluations run one at a time; requests arriving after the budget is spent are rejected;
      a submission accepted before the deadline is evaluated to the end.
    """

    def __init__(self, run_dir: Path, workspace: Path, task: Task, base: ResolvedModel,
                 baseline: BaselineRecord, config: GraderConfig,
                 events: GraderEvents | None = None,
                 evaluator: Evaluator = run_evaluation) -> None:
        self._evaluator = evaluator
        self.run_dir, self.workspace, self.task, self.base = run_dir, workspace, task, base
        self.baseline, self.config, self.events = baseline, config, events
        self.fingerprint = task.fingerprint()
        self.ledger = Ledger(run_dir / "ledger.jsonl")
        for rec in self.ledger.mark_interrupted():
            log.warning("submission %s was pending at restart; marked interrupted", rec.id)
        self.max_bytes = config.max_artifact_bytes or 4 * weights_bytes(base.path) + (256 << 20)
        self._clock_start: float | None = None
        self._accepting = True
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._worker = threading.Thread(target=self._work, name="a2rl-eval", daemon=True)
        self._worker.start()

    # -- the clock ------------------------------------------------------------------------
    def start_clock(self) -> None:
        """Start charging the agent's budget (after the baseline is scored)."""
        if self._clock_start is None:
            self._clock_start = time.monotonic()

    def elapsed(self) -> float:
        return 0.0 if self._clock_start is None else time.monotonic() - self._clock_start

    def remaining(self) -> float:
        return max(0.0, self.config.budget_s - self.elapsed())

    def stop_accepting(self) -> None:
        self._accepting = False

    @property
    def accepting(self) -> bool:
        return self._accepting and self.remaining() > 0

    # -- submissions ----------------------------------------------------------------------
    def _new(self, model_path: str, **fields: object) -> SubmissionRecord:
        rec = self.ledger.create(received_at=utcnow(),
                                 elapsed_s=round(self.elapsed(), 3) if self._clock_start else None,
                                 model_path=model_path, baseline=self.baseline.score,
                                 task_fingerprint=self.fingerprint, **fields)
        if self.events:
            self.events.submission_received(rec)
        return rec

    def _finish(self, rec: SubmissionRecord, **changes: object) -> SubmissionRecord:
        rec = self.ledger.update(rec, finished_at=utcnow(), **changes)
        log.info("submission %s %s score=%s error=%s", rec.id, rec.status, rec.score, rec.error)
        if self.events:
            best = self.ledger.best()
            self.events.submission_finished(rec, best.score if best else None)
        return rec

    def submit(self, model_path: object, *, wait: bool = True) -> SubmitResponse:
        shown = model_path if isinstance(model_path, str) else repr(model_path)
        if not self.accepting:
            rec = self._new(shown, status="pending")
            rec = self._finish(rec, status="rejected",
                               error="the budget is spent; no more submissions are accepted")
            return self.response(rec)
        try:
            folder = resolve_submission(model_path, self.workspace)
        except SubmissionRejected as exc:
            return self.response(self._finish(self._new(shown, status="pending"),
                                              status="rejected", error=str(exc)))
        try:
            snap = snapshot_submission(folder, self.workspace, self.run_dir / "artifacts",
                                       self.max_bytes)
        except SubmissionRejected as exc:
            rec = self._new(shown, status="pending", resolved_path=str(folder))
            return self.response(self._finish(rec, status="rejected", error=str(exc)))
        rec = self._new(shown, status="pending", resolved_path=str(folder),
                        artifact_hash=snap.artifact_hash,
                        artifact_dir=str(snap.path.relative_to(self.run_dir)))
        if snap.artifact_hash == self.base.content_hash:
            rec = self._finish(rec, status="baseline_copy", score=self.baseline.score,
                               improvement=0.0, eval_seconds=0.0,
                               error="these weights are identical to the base model; "
                                     "it scores the baseline")
            return self.response(rec)
        job = _Job(rec, threading.Event())
        with self._pending_lock:
            self._pending += 1
        self._queue.put(job)
        if not wait:
            return self.response(rec)
        job.done.wait()
        return self.response(self.ledger.get(rec.id) or rec)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                self._evaluate(job.record)
            except Exception as exc:  # never let the worker die: record and go on
                log.exception("evaluation of %s crashed", job.record.id)
                self._finish(job.record, status="failed", error=f"grader error: {exc}")
            finally:
                with self._pending_lock:
                    self._pending -= 1
                job.done.set()

    def _evaluate(self, rec: SubmissionRecord) -> None:
        assert rec.artifact_hash and rec.artifact_dir
        earlier = self.ledger.find_scored(rec.artifact_hash, self.fingerprint)
        if earlier is not None and earlier.score is not None:
            self._finish(rec, status="scored", cached=True, cached_from=earlier.id,
                         score=earlier.score, improvement=round(earlier.score - rec.baseline, 4),
                         eval_seconds=0.0)
            return
        job = EvalJob(task=self.task.spec(), model_dir=str(self.run_dir / rec.artifact_dir),
                      chat_template_from=str(self.base.path),
                      out_dir=str(self.run_dir / "evals" / rec.id))
        start = time.monotonic()

        def progress(done: int, total: int) -> None:
            if self.events:
                self.events.eval_progress(rec, done, total)

        try:
            outcome = self._evaluator(job, timeout_s=self.config.eval_timeout_s,
                                     on_progress=progress)
        except EvalFailed as exc:
            self._finish(rec, status="failed", eval_seconds=round(time.monotonic() - start, 2),
                         error=f"{exc}. Check that the folder loads with "
                               "AutoModelForCausalLM.from_pretrained and generates text")
            return
        self._finish(rec, status="scored", score=outcome.score,
                     improvement=round(outcome.score - rec.baseline, 4),
                     eval_seconds=round(time.monotonic() - start, 2))

    # -- views ----------------------------------------------------------------------------
    def response(self, rec: SubmissionRecord) -> SubmitResponse:
        return SubmitResponse(submission_id=rec.id, status=rec.status, score=rec.score,
                              baseline=rec.baseline, improvement=rec.improvement,
                              best=self.ledger.best(), n_submissions=len(self.ledger.records()),
                              cached=rec.cached, error=rec.error)

    def status(self) -> StatusResponse:
        return StatusResponse(task=self.task.name, baseline=self.baseline.score,
                              best=self.ledger.best(), n_submissions=len(self.ledger.records()),
                              remaining_seconds=round(self.remaining(), 1),
                              budget_seconds=self.config.budget_s,
                              elapsed_seconds=round(self.elapsed(), 1), pending=self._pending,
                              accepting=self.accepting)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every accepted submission is evaluated. False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._pending:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def close(self) -> None:
        self.stop_accepting()
        self._queue.put(None)
        self._worker.join(timeout=5)
