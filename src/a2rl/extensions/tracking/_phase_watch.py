"""Reads the agent's phase every `phase_every_s` seconds while it works and hands each change
to the tracker. Each read parses what the trace gained since the last one and labels the
programs so far, so on a long run the wait between reads grows to keep the watch under `_DUTY`
of one core. A failure to read is said once and never stops the run or the watch."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from a2rl.capture import ExecLogReader

_DUTY = 0.05
"""The largest share of one core the watch spends reading."""

if TYPE_CHECKING:
    from a2rl.agents import Agent
    from a2rl.analysis import PhaseNow
    from a2rl.extensions.tracking._live import LiveTracker


class PhaseWatch:
    """One task part's phase watch: a daemon thread from `start()` until `stop()`."""

    def __init__(self, tracker: LiveTracker, run_dir: Path, *, agent: Agent, agent_dir: Path,
                 started_epoch: float, traced: bool, hide: Sequence[Sequence[str]],
                 every_s: float, say: Callable[[str], None]) -> None:
        self.tracker, self.run_dir, self.agent, self.agent_dir = tracker, run_dir, agent, agent_dir
        self.started_epoch, self.traced, self.hide = started_epoch, traced, hide
        self.every_s, self.say = every_s, say
        self.last: str | None = None
        """The phase logged last."""
        self._stop = threading.Event()
        self._failed = False
        self._wait_s = every_s
        self._trace = ExecLogReader(started_epoch, hide=hide) if traced else None
        """Parses each line of the growing exec log once."""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=f"phases-{run_dir.name}",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _read(self) -> PhaseNow | None:
        from a2rl.analysis import phase_so_far

        now_s = time.time() - self.started_epoch
        events = None
        if not self.traced:
            events = self.agent.live_events(self.agent_dir)
        return phase_so_far(self.run_dir, now_s, exec_t0=self.started_epoch if self.traced
                            else None, hide=self.hide, agent_events=events, trace=self._trace)

    def poll(self) -> None:
        """Read the phase now; log it if it changed."""
        with self._lock:
            began = time.monotonic()
            try:
                now = self._read()
            except Exception as exc:  # diagnostics: say once, keep watching
                if not self._failed:
                    self._failed = True
                    self.say(f"reading the agent's phase failed: {type(exc).__name__}: {exc}")
                return
            finally:
                self._wait_s = max(self.every_s, (time.monotonic() - began) / _DUTY)
            if now is None or now.phase == self.last:
                return
            self.last = now.phase
            self.tracker.phase(now)

    def _loop(self) -> None:
        while not self._stop.wait(self._wait_s):
            self.poll()

    def stop(self) -> None:
        """End the watch, then read once more (the phase the agent ended in)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.poll()
