"""The exec trace: every program the agent runs, recorded by strace outside the sandbox
(`RunConfig.exec_trace`). The records it leaves (agent/exec.log, agent/exec.jsonl) are read by
`a2rl.capture` (`parse_exec_log`, `parse_file_opens`, `read_exec_events`), the one
reader of strace's log."""

from a2rl.extensions.exec_trace._trace import strace_available, traced_command

__all__ = ["strace_available", "traced_command"]
