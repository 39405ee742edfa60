"""Runtime recording: code snapshots and the artifact index, at each submission and every few
minutes, driven by the snapshots extension (the grader knows nothing about it)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from a2rl.capture import ArtifactIndexer, CodeRecorder, storage_failure

log = logging.getLogger("a2rl.capture")


class RunRecorder:
    def __init__(self, run_dir: Path, workspace: Path, elapsed: Callable[[], float],
                 *, every_s: float = 300.0) -> None:
        self.code = CodeRecorder(run_dir, workspace)
        self.artifacts = ArtifactIndexer(run_dir, workspace)
        self.elapsed, self.every_s = elapsed, every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._periodic = 0
        self.failure: str | None = None

    def record(self, tag: str) -> None:
        """Snapshot now. Never raises: recording must not break a run. Why the last snapshot
        failed is kept in `failure` (None once one succeeds)."""
        try:
            self.code.snapshot(tag, self.elapsed())
            self.artifacts.scan(self.elapsed())
            self.failure = None
        except Exception as exc:
            if storage_failure(exc):  # the run's storage is full: no traceback to read
                self.failure = f"the run directory's storage refused a write ({exc})"
                log.warning("recording %s failed: %s", tag, self.failure)
            else:
                self.failure = f"{type(exc).__name__}: {exc}"
                log.exception("recording %s failed", tag)

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.every_s):
                self._periodic += 1
                self.record(f"t{self._periodic:04d}")

        self._thread = threading.Thread(target=loop, name="a2rl-recorder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=30)
        self.record("final")
