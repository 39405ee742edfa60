"""Start the agent in its sandbox, capture its transcript, and stop it at the budget."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from a2rl.runner._records import ExitReason


class AgentProcess:
    """The agent's process group. stdout+stderr go to `transcript` (outside the workspace)."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path, transcript: Path,
                 echo: Callable[[str], None] | None = None, pass_fds: tuple[int, ...] = ()) -> None:
        transcript.parent.mkdir(parents=True, exist_ok=True)
        self._log = transcript.open("ab")
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, pass_fds=pass_fds)
        self._pump = threading.Thread(target=self._copy_output, args=(echo,), daemon=True)
        self._pump.start()

    def _copy_output(self, echo: Callable[[str], None] | None) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            self._log.flush()
            if echo:
                # progress bars redraw with \r: show only the last state of the line
                text = line.decode(errors="replace").rstrip("\n").split("\r")[-1].rstrip()
                if text:
                    echo(text)

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def supervise(self, remaining: Callable[[], float], *, grace_s: float,
                  tick: Callable[[], None] | None = None) -> tuple[ExitReason, int | None]:
        """Wait for exit or for the budget to run out (SIGTERM, grace, SIGKILL)."""
        reason: ExitReason = "agent_exited"
        try:
            while self.proc.poll() is None:
                if remaining() <= 0:
                    reason = "budget_exhausted"
                    self.stop(grace_s)
                    break
                if tick:
                    tick()
                time.sleep(0.5)
        except KeyboardInterrupt:
            reason = "interrupted"
            self.stop(grace_s)
        return reason, self.proc.returncode

    def stop(self, grace_s: float) -> None:
        self.signal_group(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        # Children that ignored SIGTERM (or outlived the leader) are killed with the group.
        self.signal_group(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        self._pump.join(timeout=5)
        self._log.close()
