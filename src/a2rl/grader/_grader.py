"""The grader: the run's single clock, submission rules, serialized evaluation, the ledger."""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text, utcnow
from a2rl.grader._artifact import (
    DISK_RESERVE_BYTES,
    SubmissionRejected,
    clean_path_text,
    folder_content_key,
    open_submission,
    prune_snapshot,
    snapshot_submission,
)
from a2rl.grader._baseline import BaselineRecord
from a2rl.grader._evaluation import EvalFailed, read_item_values, run_evaluation
from a2rl.grader._items import ItemValues, unseen_score
from a2rl.grader._ledger import Ledger
from a2rl.grader._secret import public_fingerprint, secret_fields
from a2rl.grader._stats import is_significant, paired_difference, score_interval
from a2rl.models import ResolvedModel, weights_bytes
from a2rl.schema import (
    TERMINAL_STATUSES,
    BestSoFar,
    EvalJob,
    FinalDesignation,
    FinalResult,
    RunConfig,
    Split,
    StatusResponse,
    SubmissionRecord,
    SubmitResponse,
)
from a2rl.tasks import EvalOutcome, Task

Evaluator = Callable[..., EvalOutcome]
"""`run_evaluation`-compatible: (job, *, timeout_s, on_progress) -> EvalOutcome."""

log = logging.getLogger("a2rl.grader")

FINAL_FILE = "final.json"
_HOST_PATH = re.compile(r"(?<![\w.<>])/(?:[\w.@+-]+/)+([\w.@+-]+)")
DESIGNATION_FILE = "final-designation.json"


class GraderEvents(Protocol):
    """Hooks the harness uses to show progress. The grader survives hooks that raise."""

    def submission_received(self, record: SubmissionRecord) -> None: ...
    def eval_progress(self, record: SubmissionRecord, done: int, total: int) -> None: ...
    def submission_finished(self, record: SubmissionRecord, best: float | None) -> None: ...


@dataclass
class GraderConfig:
    run: RunConfig
    """The run's options the grader applies: the agent's time limit (`agent_time_limit_s`),
    the evaluation time limit, --final and its test share, the submission cap and interval,
    and which snapshots stay on disk (--keep-artifacts)."""
    max_artifact_bytes: int | None = None
    """Largest accepted submission; default 4 × the base model's weights + 256 MiB."""
    disk_reserve_bytes: int = DISK_RESERVE_BYTES
    """Free space a copy must leave on the run's disk."""


@dataclass
class _Job:
    record: SubmissionRecord
    done: threading.Event
    final: bool = False


class Grader:
    """Owns everything the agent must not touch. Rules (also in the workspace instructions):

    - a submission must be a folder under workspace/output/, reached without following any
      symlink, holding a full safetensors checkpoint; it is snapshotted at once and the snapshot
      is evaluated;
    - files identical to the base model (weights and every other file) are recorded as
      `baseline_copy` with the baseline score;
    - files identical to an earlier scored submission reuse its score (`cached`), still recorded;
    - evaluations run one at a time; requests arriving after the budget is spent are rejected;
      a submission accepted before the deadline is evaluated to the end;
    - every request ends in a terminal ledger record, whatever goes wrong.
    """

    def __init__(self, run_dir: Path, workspace: Path, task: Task, base: ResolvedModel,
                 baseline: BaselineRecord, config: GraderConfig,
                 events: GraderEvents | None = None,
                 evaluator: Evaluator = run_evaluation) -> None:
        self._evaluator = evaluator
        self.run_dir, self.workspace, self.task, self.base = run_dir, workspace, task, base
        self.baseline, self.config, self.events = baseline, config, events
        if config.run.final == "hidden" and baseline.split != "dev":
            raise A2RLError("a hidden-final run needs the baseline scored on the dev split",
                            "score it with score_baseline(..., final='hidden')")
        self.feedback_split: Split = "dev" if config.run.final == "hidden" else "all"
        self.fingerprint = public_fingerprint(task)
        self.ledger = Ledger(run_dir / "ledger.jsonl")
        for rec in self.ledger.mark_interrupted():
            log.warning("submission %s was pending at restart; marked interrupted", rec.id)
        self.max_bytes = config.max_artifact_bytes or 4 * weights_bytes(base.path) + (256 << 20)
        self.artifacts = run_dir / "artifacts"
        # Pinned: every submission path is walked from this descriptor (see _artifact).
        self._ws_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._base_key: str | None = None
        self._clock_start: float | None = None
        self._accepting = True
        self._last_accepted: float | None = None
        self._admit_lock = threading.Lock()
        self._artifact_lock = threading.RLock()
        self._designated: str | None = self._read_designation()
        self._protected: set[str] = set()
        """Submissions sent with `final: true` whose designation is still to come: kept."""
        self._final_lock = threading.Lock()
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
        return max(0.0, self.config.run.agent_time_limit_s - self.elapsed())

    def stop_accepting(self) -> None:
        self._accepting = False

    @property
    def accepting(self) -> bool:
        return self._accepting and self.remaining() > 0

    # -- hooks ----------------------------------------------------------------------------
    def _emit(self, name: str, *args: Any) -> None:
        """Call an event hook; a hook that raises (e.g. a console choking on text the agent
        chose) is logged and never reaches the worker or the request."""
        if self.events is None:
            return
        try:
            getattr(self.events, name)(*args)
        except Exception:
            log.exception("event hook %s failed", name)

    # -- submissions ----------------------------------------------------------------------
    def _new(self, model_path: str, **fields: Any) -> SubmissionRecord:
        rec = self.ledger.create(received_at=utcnow(),
                                 elapsed_s=round(self.elapsed(), 3) if self._clock_start else None,
                                 model_path=model_path, baseline=self.baseline.score,
                                 task_fingerprint=self.fingerprint, split=self.feedback_split,
                                 **fields)
        self._emit("submission_received", rec)
        return rec

    def _finish(self, rec: SubmissionRecord, **changes: Any) -> SubmissionRecord:
        rec = self.ledger.update(rec, finished_at=utcnow(), **changes)
        log.info("submission %s %s score=%s error=%s", rec.id, rec.status, rec.score, rec.error)
        if rec.split != "test":
            best = self.ledger.best()
            self._emit("submission_finished", rec, best.score if best else None)
            self._prune()
        return rec

    def _reject(self, shown: str, error: str, **fields: Any) -> SubmitResponse:
        rec = self._new(shown, status="pending", **fields)
        return self.response(self._finish(rec, status="rejected", error=error))

    def _counted(self) -> int:
        """Submissions that count against the cap (accepted for evaluation)."""
        return sum(1 for r in self.ledger.records()
                   if r.split != "test" and r.status != "rejected")

    def _admission(self) -> str | None:
        """Why a new submission is refused now (budget, cap, rate), or None."""
        if not self.accepting:
            return "the budget is spent; no more submissions are accepted"
        cap = self.config.run.max_submissions
        if cap is not None and self._counted() >= cap:
            return (f"this run allows {cap} submissions and all are used; "
                    "no more are evaluated")
        gap = self.config.run.min_interval_s
        if gap and self._last_accepted is not None:
            wait = gap - (time.monotonic() - self._last_accepted)
            if wait > 0:
                return (f"submissions are limited to one every {gap:.0f} s; "
                        f"submit again in {wait:.0f} s")
        return None

    def submit(self, model_path: object, *, wait: bool = True,
               final: bool = False) -> SubmitResponse:
        """Record, snapshot and (queue for) evaluation. Never raises: whatever goes wrong,
        the request ends in a terminal ledger record and a response saying why."""
        shown = clean_path_text(model_path)
        holder: list[SubmissionRecord] = []
        try:
            return self._submit(model_path, shown, wait=wait, final=final, holder=holder)
        except Exception as exc:
            log.exception("submission %r crashed the grader's request handler", shown)
            error = (f"grader error ({type(exc).__name__}); the submission was not evaluated. "
                     "Submit again; if it repeats, the operator will find it in grader.log")
            try:
                rec = holder[-1] if holder else self._new(shown, status="pending")
                current = self.ledger.get(rec.id) or rec
                if current.status not in TERMINAL_STATUSES:
                    current = self._finish(current, status="failed", error=error)
                return self.response(current)
            except Exception:
                log.exception("could not record the crashed submission %r", shown)
                return SubmitResponse(submission_id=None, status="failed", score=None,
                                      baseline=self.baseline.score, improvement=None, best=None,
                                      n_submissions=0, error=error)

    def _submit(self, model_path: object, shown: str, *, wait: bool, final: bool,
                holder: list[SubmissionRecord]) -> SubmitResponse:
        with self._admit_lock:
            refusal = self._admission()
            if refusal is not None:
                return self._reject(shown, refusal)
            try:
                with self._artifact_lock, \
                        open_submission(model_path, self._ws_fd, self.workspace) as (fd, rel):
                    snap = snapshot_submission(
                        fd, rel, self.artifacts, self.max_bytes,
                        reserve=self.config.disk_reserve_bytes)
                    rec = self._new(shown, status="pending", resolved_path=rel,
                                    artifact_hash=snap.artifact_hash,
                                    content_key=snap.content_key,
                                    artifact_dir=str(snap.path.relative_to(self.run_dir)))
                    holder.append(rec)
            except SubmissionRejected as exc:
                return self._reject(shown, str(exc))
            self._last_accepted = time.monotonic()
        if snap.artifact_hash == self.base.content_hash and snap.content_key == self._base_content():
            rec = self._finish(rec, status="baseline_copy", score=self.baseline.score,
                               improvement=0.0, eval_seconds=0.0, n_items=self.baseline.n_items,
                               ci_low=self.baseline.ci_low, ci_high=self.baseline.ci_high,
                               ci_method=self.baseline.ci_method, significant=False,
                               unseen_score=self.baseline.unseen_score,
                               n_unseen=self.baseline.n_unseen,
                               note="these files are identical to the base model; "
                                    "it scores the baseline")
            if final:
                self._designate(rec)
            return self.response(rec)
        if final:
            self._protected.add(rec.id)
        job = _Job(rec, threading.Event(), final=final)
        with self._pending_lock:
            self._pending += 1
        self._queue.put(job)
        if not wait:
            return self.response(rec)
        job.done.wait()
        return self.response(self.ledger.get(rec.id) or rec)

    def _base_content(self) -> str:
        if self._base_key is None:
            self._base_key = folder_content_key(self.base.path, self.base.content_hash)
        return self._base_key

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                self._evaluate(job.record)
                if job.final:
                    current = self.ledger.get(job.record.id)
                    if current is not None and current.valid:
                        self._designate(current)
                    self._protected.discard(job.record.id)
                    self._prune()
            except Exception as exc:  # never let the worker die: record and go on
                log.exception("evaluation of %s crashed", job.record.id)
                try:
                    current = self.ledger.get(job.record.id) or job.record
                    if current.status not in TERMINAL_STATUSES:
                        self._finish(current, status="failed",
                                     error=f"grader error ({type(exc).__name__}); the "
                                           "submission was not scored. Submit again")
                except Exception:
                    log.exception("could not record the failure of %s", job.record.id)
            finally:
                with self._pending_lock:
                    self._pending -= 1
                job.done.set()

    def _baseline_items(self, split: Split) -> ItemValues | None:
        return self.baseline.test_items if split == "test" else self.baseline.items

    def _score_fields(self, outcome: EvalOutcome, out_dir: Path, split: Split,
                      baseline_score: float) -> dict[str, Any]:
        """n_items, the CI and the significance flag of one finished evaluation."""
        values = read_item_values(out_dir)
        interval = score_interval(values.values, outcome.score) if values else None
        paired = None
        base = self._baseline_items(split)
        if values and values.keys and base and base.keys:
            paired = paired_difference(dict(zip(values.keys, values.values, strict=True)),
                                       dict(zip(base.keys, base.values, strict=True)))
        unseen = unseen_score(values) if values else None
        return {"n_items": outcome.n_items,
                "unseen_score": unseen[0] if unseen else None,
                "n_unseen": unseen[1] if unseen else None,
                "ci_low": interval.low if interval else None,
                "ci_high": interval.high if interval else None,
                "ci_method": interval.method if interval else None,
                "significant": is_significant(interval, baseline_score, paired)}

    def _job(self, rec: SubmissionRecord, artifact_dir: str, split: Split) -> EvalJob:
        return EvalJob(task=self.task.spec(), model_dir=str(self.run_dir / artifact_dir),
                       chat_template_from=str(self.base.path),
                       out_dir=str(self.run_dir / "evals" / rec.id), split=split,
                       test_fraction=self.config.run.test_fraction,
                       secret_fields=sorted(secret_fields(self.task.params)), snapshot=True)

    def _evaluate(self, rec: SubmissionRecord) -> None:
        assert rec.content_key and rec.artifact_dir
        earlier = self.ledger.find_scored(rec.content_key, self.fingerprint, rec.split)
        if earlier is not None and earlier.score is not None:
            self._finish(rec, status="scored", cached=True, cached_from=earlier.id,
                         score=earlier.score, improvement=round(earlier.score - rec.baseline, 4),
                         eval_seconds=0.0, n_items=earlier.n_items, ci_low=earlier.ci_low,
                         ci_high=earlier.ci_high, ci_method=earlier.ci_method,
                         significant=earlier.significant, unseen_score=earlier.unseen_score,
                         n_unseen=earlier.n_unseen)
            return
        job = self._job(rec, rec.artifact_dir, rec.split)
        start = time.monotonic()

        def progress(done: int, total: int) -> None:
            self._emit("eval_progress", rec, done, total)

        try:
            outcome = self._evaluator(job, timeout_s=self.config.run.eval_timeout_s,
                                      on_progress=progress)
        except EvalFailed as exc:
            self._finish(rec, status="failed", eval_seconds=round(time.monotonic() - start, 2),
                         error=f"{self._public_error(str(exc), rec)}. Check that the folder "
                               "loads with AutoModelForCausalLM.from_pretrained and generates "
                               "text")
            return
        self._finish(rec, status="scored", score=outcome.score,
                     improvement=round(outcome.score - rec.baseline, 4),
                     eval_seconds=round(time.monotonic() - start, 2),
                     **self._score_fields(outcome, Path(job.out_dir), rec.split, rec.baseline))

    def _public_error(self, text: str, rec: SubmissionRecord) -> str:
        """An evaluation error as the agent may read it: the snapshot is called by the path the
        agent submitted, and no other host path survives (only its last component)."""
        if rec.artifact_dir:
            text = text.replace(str(self.run_dir / rec.artifact_dir), rec.resolved_path or "")
        text = text.replace(str(self.run_dir), "<run>").replace(str(self.base.path), "<model>")
        return _HOST_PATH.sub(lambda m: "…/" + m.group(1), text)

    # -- artifacts ------------------------------------------------------------------------
    def _prune(self) -> None:
        """Apply --keep-artifacts: delete snapshots no kept record needs (never a pending one,
        the best one or the designated final). Failures are logged, never raised."""
        policy = self.config.run.keep_artifacts
        if policy == "all":
            return
        try:
            with self._artifact_lock:
                records = self.ledger.records()
                best = self.ledger.best()
                keep: set[str] = set()
                known: set[str] = set()
                for r in records:
                    if not r.artifact_dir:
                        continue
                    known.add(r.artifact_dir)
                    wanted = (r.status == "pending" or r.id == self._designated
                              or r.id in self._protected
                              or (best is not None and r.id == best.submission_id)
                              or (policy == "scored" and r.status == "scored"))
                    if wanted:
                        keep.add(r.artifact_dir)
                for rel in known - keep:
                    if prune_snapshot(self.artifacts, self.run_dir / rel):
                        log.info("artifact %s pruned (--keep-artifacts %s)", rel, policy)
        except Exception:
            log.exception("pruning artifacts failed")

    # -- the hidden final -----------------------------------------------------------------
    def _read_designation(self) -> str | None:
        try:
            data = json.loads((self.run_dir / DESIGNATION_FILE).read_text())
            return str(data["submission_id"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _designate(self, rec: SubmissionRecord) -> FinalDesignation:
        self._designated = rec.id
        atomic_write_text(self.run_dir / DESIGNATION_FILE,
                          json.dumps({"submission_id": rec.id, "at": utcnow().isoformat()}))
        log.info("submission %s designated as the final model", rec.id)
        return FinalDesignation(submission_id=rec.id, model_path=rec.model_path,
                                dev_score=rec.score)

    def designate_final(self, *, submission_id: object = None,
                        model_path: object = None) -> FinalDesignation:
        """POST /final: choose the model scored on the hidden test split at the end. It must be
        a valid (scored) submission of this run. Raises SubmissionRejected with the reason."""
        if self.config.run.final != "hidden":
            raise SubmissionRejected("this run has no hidden final evaluation (--final off)",
                                     "every submission's score is final; nothing to designate")
        if not self.accepting:
            raise SubmissionRejected("the budget is spent; the final model can no longer change",
                                     "designate it before the budget runs out")
        records = [r for r in self.ledger.records() if r.split != "test"]
        if submission_id is not None:
            chosen = [r for r in records if r.id == submission_id]
            what = f"submission {clean_path_text(submission_id)!r}"
        elif model_path is not None:
            wanted = clean_path_text(model_path).strip("/")
            chosen = [r for r in records if r.model_path.strip("/") == wanted
                      or r.resolved_path == wanted]
            what = f"model_path {clean_path_text(model_path)!r}"
        else:
            raise SubmissionRejected("POST /final needs a submission_id or a model_path",
                                     'send {"submission_id": "s0003"} or {"model_path": '
                                     '"output/v3"} (a model you already submitted)')
        valid = [r for r in chosen if r.valid]
        if not valid:
            raise SubmissionRejected(f"{what} is not a scored submission of this run",
                                     "submit the model first (POST /submit) and designate it "
                                     "once it is scored; GET /submissions lists them")
        chosen_rec = valid[-1]
        if chosen_rec.status == "scored" and not (
                chosen_rec.artifact_dir and (self.run_dir / chosen_rec.artifact_dir).is_dir()):
            raise SubmissionRejected(f"{what} was scored but its snapshot is no longer kept "
                                     f"(--keep-artifacts {self.config.run.keep_artifacts})",
                                     "submit that folder again with \"final\": true")
        return self._designate(chosen_rec)

    def final_result(self) -> FinalResult | None:
        """The final evaluation's record (final.json), or None before run_final()."""
        try:
            return FinalResult.model_validate_json((self.run_dir / FINAL_FILE).read_text())
        except (OSError, ValueError):
            return None

    def run_final(self) -> FinalResult:
        """Score the final model once on the hidden test split (after the agent ended and every
        dev evaluation finished). Idempotent: a second call returns the first result."""
        with self._final_lock:
            done = self.final_result()
            if done is not None and done.status in ("scored", "off", "no_candidate"):
                return done
            result = self._run_final()
            atomic_write_text(self.run_dir / FINAL_FILE, result.model_dump_json(indent=2))
            return result

    def _run_final(self) -> FinalResult:
        dev_baseline = self.baseline.score
        if self.config.run.final != "hidden":
            return FinalResult(mode="off", status="off", submission_id=None, record_id=None,
                               chosen_by="none", model_path=None, dev_score=None,
                               dev_baseline=dev_baseline, score=None, test_baseline=None,
                               improvement=None)
        self.stop_accepting()
        self.wait_idle()
        test_baseline = self.baseline.test_score
        records = {r.id: r for r in self.ledger.records()}
        earlier = [r for r in records.values() if r.split == "test" and r.status == "scored"]
        cand: SubmissionRecord | None = None
        chosen_by: Any = "none"
        if self._designated and self._designated in records and records[self._designated].valid:
            cand, chosen_by = records[self._designated], "agent"
        else:
            best = self.ledger.best()
            if best is not None:
                cand, chosen_by = records[best.submission_id], "best_dev"
        common: dict[str, Any] = {"mode": "hidden", "chosen_by": chosen_by,
                                  "dev_baseline": dev_baseline, "test_baseline": test_baseline}
        if cand is None:
            return FinalResult(status="no_candidate", submission_id=None, record_id=None,
                               model_path=None, dev_score=None, score=None, improvement=None,
                               error="no valid submission on the dev split", **common)
        common.update(submission_id=cand.id, model_path=cand.model_path, dev_score=cand.score)
        test = next((r for r in earlier if r.final_of == cand.id), None)
        if test is None:
            test = self._final_record(cand, test_baseline)
        if test.status != "scored":
            return FinalResult(status="failed", record_id=test.id, score=None, improvement=None,
                               error=test.error, **common)
        return FinalResult(status="scored", record_id=test.id, score=test.score,
                           improvement=test.improvement, ci_low=test.ci_low,
                           ci_high=test.ci_high, significant=test.significant,
                           n_items=test.n_items, **common)

    def _final_record(self, cand: SubmissionRecord, test_baseline: float | None) -> \
            SubmissionRecord:
        base = test_baseline if test_baseline is not None else 0.0
        rec = self.ledger.create(received_at=utcnow(), elapsed_s=None,
                                 model_path=cand.model_path, resolved_path=cand.resolved_path,
                                 artifact_hash=cand.artifact_hash, content_key=cand.content_key,
                                 artifact_dir=cand.artifact_dir, status="pending", baseline=base,
                                 task_fingerprint=self.fingerprint, split="test",
                                 final_of=cand.id)
        if cand.status == "baseline_copy":
            return self._finish(rec, status="scored", score=base, improvement=0.0,
                                eval_seconds=0.0, n_items=self.baseline.test_n_items,
                                ci_low=self.baseline.test_ci_low,
                                ci_high=self.baseline.test_ci_high, significant=False)
        if not cand.artifact_dir or not (self.run_dir / cand.artifact_dir).is_dir():
            return self._finish(rec, status="failed",
                                error="the final model's snapshot is no longer on disk")
        job = self._job(rec, cand.artifact_dir, "test")
        start = time.monotonic()
        try:
            outcome = self._evaluator(job, timeout_s=self.config.run.eval_timeout_s,
                                      on_progress=None)
        except EvalFailed as exc:
            return self._finish(rec, status="failed", error=self._public_error(str(exc), rec),
                                eval_seconds=round(time.monotonic() - start, 2))
        except Exception as exc:
            log.exception("the final evaluation crashed")
            return self._finish(rec, status="failed", error=f"grader error ({type(exc).__name__})")
        return self._finish(rec, status="scored", score=outcome.score,
                            improvement=round(outcome.score - base, 4),
                            eval_seconds=round(time.monotonic() - start, 2),
                            **self._score_fields(outcome, Path(job.out_dir), "test", base))

    # -- views ----------------------------------------------------------------------------
    def feedback_records(self) -> list[SubmissionRecord]:
        """What the agent may be shown: every record except the hidden test evaluation."""
        return [r for r in self.ledger.records() if r.split != "test"]

    def _public_best(self) -> BestSoFar | None:
        """The best submission as the agent may see it: without the unseen-items score, whose
        gap to the score would tell how the model does on the train-visible held-out items."""
        best = self.ledger.best()
        return best.model_copy(update={"unseen_score": None}) if best else None

    def response(self, rec: SubmissionRecord) -> SubmitResponse:
        return SubmitResponse(submission_id=rec.id, status=rec.status, score=rec.score,
                              baseline=rec.baseline, improvement=rec.improvement,
                              best=self._public_best(),
                              n_submissions=len(self.feedback_records()),
                              cached=rec.cached, error=rec.error, ci_low=rec.ci_low,
                              ci_high=rec.ci_high, significant=rec.significant, split=rec.split,
                              note=rec.note)

    def status(self) -> StatusResponse:
        cap = self.config.run.max_submissions
        return StatusResponse(task=self.task.name, baseline=self.baseline.score,
                              best=self._public_best(),
                              n_submissions=len(self.feedback_records()),
                              remaining_seconds=round(self.remaining(), 1),
                              budget_seconds=self.config.run.agent_time_limit_s,
                              elapsed_seconds=round(self.elapsed(), 1), pending=self._pending,
                              accepting=self.accepting, final_mode=self.config.run.final,
                              final_designated=self._designated,
                              submissions_left=None if cap is None
                              else max(0, cap - self._counted()))

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every accepted submission is evaluated. False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._pending:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def close(self) -> None:
        self.stop_accepting()
        self._queue.put(None)
        self._worker.join(timeout=5)
        # Nothing stays pending past the grader's life. An evaluation still running (the harness
        # gave up waiting) is closed as interrupted; should it finish after all, its scored line
        # follows and, being the last, wins.
        try:
            for rec in self.ledger.mark_interrupted():
                log.warning("submission %s was still pending at close; marked interrupted", rec.id)
        except Exception:
            log.exception("could not close pending submissions")
        self._prune()
        fd, self._ws_fd = self._ws_fd, -1
        if fd >= 0:
            os.close(fd)


def read_final(run_dir: Path) -> FinalResult | None:
    """A run's hidden-final headline (`final.json`), for run.json, the console and analysis.
    None when the run had no final evaluation (yet)."""
    try:
        return FinalResult.model_validate_json((run_dir / FINAL_FILE).read_text())
    except (OSError, ValueError):
        return None
