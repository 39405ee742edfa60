"""Append-only, fsync'd JSONL ledger of submissions, safe under concurrent writers.

The ledger file is the durable record; the current state lives in memory. A request reads only
the lines other processes appended since this process last looked (an offset into the file), so
the cost of a request does not grow with the number of submissions already recorded.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from a2rl._util import utcnow
from a2rl.schema import BestSoFar, SubmissionRecord, best_submission


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
        self._offset = 0
        self._history: list[SubmissionRecord] = []
        self._latest: dict[str, SubmissionRecord] = {}
        self.lines_parsed = 0
        """Ledger lines parsed by this process so far (tests check it stays O(new lines))."""
        self._refresh()

    # -- reading ----------------------------------------------------------------------------
    def _refresh(self) -> None:
        """Take in the complete lines appended since the last look (by any process)."""
        with self._thread_lock, open(self.path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n")
        if end < 0:
            return  # nothing new, or only a torn/partial line still being written
        for raw in data[:end].split(b"\n"):
            raw = raw.strip()
            if not raw:
                continue
            self.lines_parsed += 1
            try:
                rec = SubmissionRecord.model_validate_json(raw)
            except ValidationError:
                continue  # a torn line after a crash; the lines around it stay readable
            self._history.append(rec)
            self._latest[rec.id] = rec
        self._offset += end + 1

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock, open(self._lock_path, "a") as lock_fh:
            fcntl.flock(lock_fh, fcntl.LOCK_EX)
            try:
                self._refresh()
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
        # Our own line: take it in without parsing it back.
        self._offset = os.stat(self.path).st_size
        self._history.append(record)
        self._latest[record.id] = record

    def history(self) -> list[SubmissionRecord]:
        """Every line, in the order written (the full audit trail)."""
        with self._thread_lock:
            self._refresh()
            return list(self._history)

    def records(self) -> list[SubmissionRecord]:
        """Current state of each submission (last line per id), in arrival order."""
        with self._thread_lock:
            self._refresh()
            return sorted(self._latest.values(), key=lambda r: r.seq)

    def count(self) -> int:
        with self._thread_lock:
            self._refresh()
            return len(self._latest)

    def get(self, submission_id: str) -> SubmissionRecord | None:
        with self._thread_lock:
            self._refresh()
            return self._latest.get(submission_id)

    # -- writing ----------------------------------------------------------------------------
    def create(self, **fields: Any) -> SubmissionRecord:
        """Allocate the next id and append the first line of a new submission."""
        with self._locked():
            seq = len(self._latest) + 1
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

    # -- views ------------------------------------------------------------------------------
    def best(self, split: str | None = None) -> BestSoFar | None:
        """Best valid score; hidden-final test records never count (they are not feedback)."""
        return best_submission(self.records(), split)

    def find_scored(self, content_key: str, fingerprint: str,
                    split: str = "all") -> SubmissionRecord | None:
        """An earlier, fully evaluated submission with identical files (the eval cache)."""
        for rec in self.records():
            if (rec.status == "scored" and not rec.cached and rec.content_key == content_key
                    and rec.task_fingerprint == fingerprint and rec.split == split):
                return rec
        return None

