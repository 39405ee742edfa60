"""The exec trace as a run extension (`RunConfig.exec_trace`): the sandbox's command line
wrapped in strace, the raw log turned into agent/exec.jsonl once the agent is gone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from a2rl._secrets import scrub
from a2rl._util import atomic_write_text
from a2rl.capture import parse_exec_log
from a2rl.extensions import AgentLaunch, RunExtension, TaskPart, extensions
from a2rl.extensions.exec_trace._trace import strace_available, traced_command

if TYPE_CHECKING:
    from a2rl.schema import RunConfig


@extensions.register("exec-trace")
class ExecTraceExtension(RunExtension):
    """Skipped with a note when strace is absent or cannot follow the sandbox's processes."""

    name = "exec-trace"
    hook_order = 10
    enabled_by_name = False

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self.strace: str | None = None
        self.hide: list[list[str]] = []

    @classmethod
    def enabled(cls, config: RunConfig) -> bool:
        return config.exec_trace

    def wrap_command(self, launch: AgentLaunch) -> None:
        # The tracer runs outside the sandbox, around its command line, and writes the log
        # itself: nothing inside can reach the log (no descriptor, no path, no /proc).
        sandbox = launch.sandbox
        self.strace = strace_available() if sandbox.traceable else None
        if not self.strace:
            launch.console.print("[yellow]the programs the agent runs are not recorded: " +
                                 ("strace is not installed (apt-get install strace)[/]"
                                  if sandbox.traceable else
                                  f"a tracer cannot follow the {sandbox.kind} sandbox's "
                                  "processes[/]"))
            return
        log = _log(launch)
        log.unlink(missing_ok=True)
        launch.argv = traced_command(launch.argv, strace=self.strace, log=log,
                                     extra_syscalls=tuple(launch.trace_syscalls))
        # The sandbox's own programs are not the agent's: bwrap itself, the bridge.
        from a2rl.sandbox import BRIDGE_CODE

        self.hide = [[launch.argv[launch.argv.index("--") + 1]]] if sandbox.sandboxed else []
        self.hide.append([sys.executable, "-c", BRIDGE_CODE])
        launch.trace_hide = self.hide

    def agent_starting(self, part: TaskPart, launch: AgentLaunch) -> None:
        part.record.exec_traced = self.strace is not None

    def agent_exited(self, launch: AgentLaunch) -> None:
        log = _log(launch)
        if not self.strace or not log.exists():
            return
        if launch.secrets:  # argv and environments of the agent's programs may hold a key
            log.write_text(scrub(log.read_text(errors="replace"), launch.secrets))
        assert launch.started_epoch is not None
        events = parse_exec_log(log.read_text(errors="replace"), launch.started_epoch,
                                hide=self.hide)
        atomic_write_text(launch.agent_dir / "exec.jsonl",
                          "".join(e.model_dump_json() + "\n" for e in events))


def _log(launch: AgentLaunch) -> Path:
    return launch.agent_dir / "exec.log"
