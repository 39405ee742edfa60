"""Append-only, fsync'd JSONL ledger of submissions, safe under concurrent writers."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from a2rl._util import utcnow
from a2rl.grader._records import BestSoFar, SubmissionRecord


class Ledger:
    """`ledger.jsonl` in the run directory (never inside the workspace).

    Every state change appends a full SubmissionRecord line; nothing is ever rewritten. Id
    allocation and appends happen under a thread lock and an flock on `ledger.lock`, so several
    grader threads or processes on the same run never hand out the same id.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_path = path.with_suffix(".lock")
        self._thread_lock = threading.RLock()
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        path.chmod(0o600)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock, open(self._lock_path, "a") as lock_fh:
            fcntl.flock(lock_fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_fh, fcntl.LOCK_UN)

    def _append_unlocked(self, record: SubmissionRecord) -> None:
        line = record.model_dump_json() + "\n"
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                # A crash tore the previous line; start ours on a fresh line so it stays valid.
                line = "\n" + line
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def _lines(self) -> list[SubmissionRecord]:
        out = []
        with self.path.open() as fh:
            for raw in fh:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    out.append(SubmissionRecord.model_validate_json(raw))
                except ValidationError:
                    # A torn last line after a crash; earlier lines stay readable.
                    continue
        return out

    def history(self) -> list[SubmissionRecord]:
        """Every line, in the order written (the full audit trail)."""
        with self._thread_lock:
            return self._lines()

    def records(self) -> list[SubmissionRecord]:
        """Current state of each submission (last line per id), in arrival order."""
        latest: dict[str, SubmissionRecord] = {}
        for rec in self.history():
            latest[rec.id] = rec
        return sorted(latest.values(), key=lambda r: r.seq)

    def get(self, submission_id: str) -> SubmissionRecord | None:
        return next((r for r in self.records() if r.id == submission_id), None)

    def create(self, **fields: Any) -> SubmissionRecord:
        """Allocate the next id and append the first line of a new submission."""
        with self._locked():
            seq = len({r.id for r in self._lines()}) + 1
            record = SubmissionRecord(id=f"s{seq:04d}", seq=seq, **fields)
            self._append_unlocked(record)
            return record

    def update(self, record: SubmissionRecord, **changes: Any) -> SubmissionRecord:
        new = record.model_copy(update=changes)
        SubmissionRecord.model_validate(new.model_dump())  # type-check the changes
        with self._locked():
            self._append_unlocked(new)
        return new

    def mark_interrupted(self) -> list[SubmissionRecord]:
        """After a restart: close submissions left `pending` by a previous grader process."""
        closed = []
        for rec in self.records():
            if rec.status == "pending":
                closed.append(self.update(rec, status="interrupted", finished_at=utcnow(),
                                          error="the grader stopped before this evaluation "
                                                "finished; submit the model again"))
        return closed

    def best(self) -> BestSoFar | None:
        valid = [r for r in self.records() if r.valid and r.score is not None]
        if not valid:
            return None
        top = max(valid, key=lambda r: (r.score, -r.seq))
        return BestSoFar(submission_id=top.id, score=float(top.score or 0.0))

    def find_scored(self, artifact_hash: str, fingerprint: str) -> SubmissionRecord | None:
        """An earlier, fully evaluated submission with identical weights (the eval cache)."""
        for rec in self.records():
            if (rec.status == "scored" and not rec.cached and rec.artifact_hash == artifact_hash
                    and rec.task_fingerprint == fingerprint):
                return rec
        return None


def dump_jsonl(records: list[SubmissionRecord]) -> str:
    return "".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in records)
