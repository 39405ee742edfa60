"""The phase the agent is in while the run goes (for live tracking), by the same labels as the
run's analysis (`_phases`).

With an exec trace the raw strace log written so far is parsed on the agent's clock (each line
once, by a reader the caller keeps): the phase is that of the most specific program running
now, else that of the program started last (the agent is thinking between programs).
Without one, the agent's event log so far: the phase of its last turn. Scripts are read from
the workspace as they are now (the agent's code folder and the workspace root, text files
only, bounded), since the latest code snapshot may predate the script just launched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from a2rl._walk import read_text_files
from a2rl.analysis._command_reader import CommandReader
from a2rl.analysis._phases import _PRIORITY, PHASES, phase_times, turn_phases
from a2rl.capture import ExecLogReader
from a2rl.schema import AgentEvent, ExecEvent

_TEXT = (".py", ".sh", ".yaml", ".yml", ".json", ".toml", ".cfg")
_MAX_FILES = 2000
_MAX_BYTES = 1 << 20
_MAX_TOTAL = 32 << 20
_SKIP = {"__pycache__", "node_modules", "wandb", ".git", ".venv", "output"}


@dataclass(frozen=True)
class PhaseNow:
    """The agent's phase at `at_s` (seconds since the agent started)."""

    phase: str
    since_s: float
    """When the program or turn that set the phase started."""
    at_s: float
    seconds: dict[str, float] = field(default_factory=dict)
    """Time per phase so far (the analysis' phase_seconds, up to now)."""
    source: str = "exec trace"
    """What the phase was read from: "exec trace" or "agent events"."""

    @property
    def index(self) -> int:
        """The phase's position in `PHASES` (a number a tracker can chart)."""
        return PHASES.index(self.phase)


def live_files(workspace: Path) -> dict[str, str]:
    """Text files that can say what a command runs: the workspace's top level and its folders
    other than output/, hidden and tool folders; at most `_MAX_FILES` files of ≤ 1 MiB and
    32 MiB in all, never through a link, never blocking on a FIFO, any depth of folders (an
    agent's workspace is untrusted)."""
    return read_text_files(
        workspace, enter=lambda rel: not any(part in _SKIP or part.startswith(".")
                                             for part in rel.split("/")),
        accept=lambda rel: rel.endswith(_TEXT) and not rel.rsplit("/", 1)[-1].startswith("."),
        max_bytes=_MAX_BYTES, max_total=_MAX_TOTAL, max_files=_MAX_FILES)


def _from_trace(events: list[ExecEvent], reader: CommandReader, now_s: float) -> PhaseNow | None:
    labelled, seconds = phase_times(events, reader, horizon=now_s)
    if not labelled:
        return None
    running = [(ev, phase) for ev, phase in labelled if ev.end_s is None or ev.end_s > now_s]
    if running:
        rank = {p: i for i, p in enumerate(_PRIORITY)}
        ev, phase = min(running, key=lambda item: (rank.get(item[1], len(rank)),
                                                   -item[0].start_s))
    else:
        ev, phase = max(labelled, key=lambda item: item[0].start_s)
    return PhaseNow(phase=phase, since_s=ev.start_s, at_s=now_s, seconds=seconds)


def phase_so_far(run_dir: Path, now_s: float, *, exec_t0: float | None,
                 hide: Sequence[Sequence[str]] = (),
                 agent_events: list[AgentEvent] | None = None,
                 trace: ExecLogReader | None = None) -> PhaseNow | None:
    """The agent's phase `now_s` seconds after it started; None when nothing it did has a
    phase yet. `exec_t0` (epoch seconds of the agent's start) says the run is traced; `hide`
    names the sandbox's own programs in the trace. `trace`, kept by a caller that asks again
    and again, reads only what the log gained since the last call."""
    reader = CommandReader(live_files(run_dir / "workspace"))
    raw = run_dir / "agent" / "exec.log"
    if exec_t0 is not None and raw.is_file():
        trace = trace or ExecLogReader(exec_t0, hide=hide)
        events = [ExecEvent.model_validate(e, from_attributes=True) for e in trace.poll(raw)]
        found = _from_trace(events, reader, now_s)
        if found is not None:
            return found
    if agent_events:
        turns, seconds = turn_phases(agent_events, reader, now_s)
        if turns:
            last = turns[-1]
            return PhaseNow(phase=str(last["phase"]), since_s=float(str(last["start_s"])),
                            at_s=now_s, seconds=seconds, source="agent events")
    return None
