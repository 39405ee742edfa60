"""Start the agent in its sandbox, capture its transcript, and stop it at the budget."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from a2rl._secrets import REDACTED
from a2rl._util import descendants
from a2rl.schema import ExitReason


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_LINE_CAP = 64 * 1024  # a "line" longer than this is cut into pieces (no newline ever comes)


def _die_with_harness() -> None:
    """In the child, before exec: SIGKILL when the harness dies (even by SIGKILL), so a dead
    harness never leaves a sandbox running."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class HarnessTerminated(KeyboardInterrupt):
    """The harness got SIGTERM or SIGHUP (timeout, scancel, preemption, a closed terminal): it
    is handled like Ctrl-C (the run is closed from the ledger), with its own exit reason."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class AgentProcess:
    """The agent's process group. stdout+stderr go to `transcript` (outside the workspace).

    The reader thread that drains the agent's output never dies on what the agent prints
    (invalid UTF-8, lines without end, markup): if it did, the agent would block on a full
    pipe. `echo` gets each line as plain text (control characters removed); it must not
    interpret markup. `child_setup` runs in the child before exec (the sandbox's resource
    limits).
    """

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path, transcript: Path,
                 echo: Callable[[str], None] | None = None, pass_fds: tuple[int, ...] = (),
                 secrets: list[str] | None = None,
                 child_setup: Callable[[], None] | None = None) -> None:
        transcript.parent.mkdir(parents=True, exist_ok=True)
        self._log = transcript.open("ab")
        # Arrival time of each transcript line, for event logs built from native CLI streams.
        self._times = transcript.with_suffix(".times").open("a")
        self._secrets = [s.encode() for s in (secrets or []) if s]
        self._t0 = time.monotonic()

        def preexec() -> None:
            _die_with_harness()
            if child_setup is not None:
                child_setup()

        # close_fds (the default) and no pass_fds: the sandbox inherits stdio only.
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, pass_fds=pass_fds,
                                     preexec_fn=preexec)
        self._pump = threading.Thread(target=self._copy_output, args=(echo,), daemon=True)
        self._pump.start()

    def _copy_output(self, echo: Callable[[str], None] | None) -> None:
        from a2rl._console import plain_text

        stream = self.proc.stdout
        assert stream is not None
        pending = b""
        while True:
            try:
                chunk = stream.read1(65536)  # type: ignore[attr-defined]
            except (OSError, ValueError):
                break
            if not chunk:
                break
            pending += chunk
            lines = pending.split(b"\n")
            pending = lines.pop()
            if len(pending) > _LINE_CAP:
                lines.append(pending)
                pending = b""
            for raw in lines:
                self._line(raw + b"\n", echo, plain_text)
        if pending:
            self._line(pending, echo, plain_text)

    def _line(self, line: bytes, echo: Callable[[str], None] | None,
              plain_text: Callable[[str], str]) -> None:
        for secret in self._secrets:  # nothing the harness writes may echo a key
            line = line.replace(secret, REDACTED.encode())
        try:
            self._log.write(line)
            self._log.flush()
            self._times.write(f"{time.monotonic() - self._t0:.3f}\n")
            self._times.flush()
        except (OSError, ValueError):
            pass  # a full disk must not stop the pipe from draining
        if echo:
            try:
                # progress bars redraw with \r: show only the last state of the line
                text = line.decode(errors="replace").rstrip("\n").split("\r")[-1]
                text = plain_text(text).rstrip()
                if text:
                    echo(text[:2000])
            except Exception:  # noqa: BLE001 - the echo is cosmetic; the pipe must drain
                pass

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def supervise(self, remaining: Callable[[], float], *, grace_s: float,
                  tick: Callable[[], None] | None = None,
                  limit_reached: Callable[[], bool] | None = None
                  ) -> tuple[ExitReason, int | None]:
        """Wait for exit, for the budget to run out or for `limit_reached` (the agent's spend
        at --cost-limit) to say so; then SIGTERM, grace, SIGKILL."""
        reason: ExitReason = "agent_exited"
        try:
            while self.proc.poll() is None:
                if remaining() <= 0:
                    reason = "budget_exhausted"
                    self.stop(grace_s)
                    break
                if limit_reached is not None and limit_reached():
                    reason = "cost_limit"
                    self.stop(grace_s)
                    break
                if tick:
                    tick()
                time.sleep(0.5)
        except HarnessTerminated:
            # SIGTERM/SIGHUP: the harness itself has little time left (SLURM's KillWait is
            # 30 s by default): a short grace, then the run is closed by the caller.
            self.stop(min(grace_s, 5.0))
            raise
        except KeyboardInterrupt:
            reason = "interrupted"
            self.stop(grace_s)
        return reason, self.proc.returncode

    def stop(self, grace_s: float) -> None:
        """SIGTERM to every process of the agent, `grace_s` to exit, then SIGKILL.

        The sandboxed processes run in their own session inside bwrap, so signalling bwrap's
        process group alone would not reach them (and bwrap's death kills them outright); they
        are signalled directly, found as descendants of the process we started."""
        # Not bwrap's own processes (the PID namespace's init dying would SIGKILL everything
        # at once) nor the exec tracer (it would take its tracees down): the agent's processes.
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            if _comm(pid) not in ("bwrap", "strace"):
                _kill(pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        self.signal_group(signal.SIGTERM)
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        for pid in descendants(self.proc.pid):
            _kill(pid, signal.SIGKILL)
        self.signal_group(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        self._pump.join(timeout=5)
        self._log.close()
        self._times.close()
