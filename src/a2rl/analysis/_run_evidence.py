"""The evidence `a2rl analyze` reads besides the ledger and the snapshots: the agent's event
log, the transcript parser's report and, for runs without code snapshots, the
workspace's text files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from a2rl._walk import read_text_files
from a2rl.schema import AgentEvent, EventKind, iter_jsonl

_USAGE_KEYS = ("input_tokens", "output_tokens", "main_input_tokens", "main_output_tokens",
               "cost_usd")
"""Every model the CLI called (input/output_tokens) and the main model alone (main_*, from
launchers that tell them apart)."""


class SlimAgentEvent(NamedTuple):
    """What the analysis reads of an agent event: when, in which turn, what it ran or touched
    (none of the tool's output or the model's text, the bulk of a long run's log)."""

    kind: EventKind
    turn: int
    t_s: float
    end_s: float | None
    name: str | None
    command: str | None
    exit_code: int | None
    path: str | None


@dataclass(frozen=True)
class AgentLog:
    """agent/events.jsonl as the analysis reads it: every event, slim, and the token usage
    summed over the usage events."""

    events: list[SlimAgentEvent]
    usage: dict[str, float]


def read_agent_log(run_dir: Path) -> AgentLog | None:
    """agent/events.jsonl read a line at a time (None when the run has no event log)."""
    path = run_dir / "agent" / "events.jsonl"
    if not path.exists():
        return None
    events: list[SlimAgentEvent] = []
    usage: dict[str, float] = {}
    for ev in iter_jsonl(path, AgentEvent):
        events.append(SlimAgentEvent(ev.kind, ev.turn, ev.t_s, ev.end_s, ev.name, ev.command,
                                     ev.exit_code, ev.path))
        for key in _USAGE_KEYS:
            value = getattr(ev, key)
            if value is not None:
                usage[key] = usage.get(key, 0.0) + float(value)
    return AgentLog(events, usage)


def parse_warnings(run_dir: Path) -> list[str]:
    """The transcript parser's own account of what it could not read (agent/parse_report.json,
    written by the launchers' parsers), as lines for analysis.json."""
    path = run_dir / "agent" / "parse_report.json"
    if not path.exists():
        return []
    try:
        report = json.loads(path.read_text())
    except ValueError:
        return [f"{path} is not JSON: the parser's report is unreadable"]
    if not isinstance(report, dict):
        return []
    out = [str(w) for w in report.get("warnings") or [] if w]
    unparsed = report.get("unparsed_lines")
    if isinstance(unparsed, int) and unparsed and not any("unread" in w for w in out):
        out.append(f"{unparsed} transcript line(s) looked like JSON but could not be read")
    unknown = report.get("unknown_types")
    if isinstance(unknown, dict) and unknown:
        out.append("event types the parser does not know (skipped): " + ", ".join(
            f"{k} ×{v}" for k, v in sorted(unknown.items())))
    out += [f"the CLI reported: {e}" for e in report.get("cli_errors") or []]
    return out


def workspace_files(workspace: Path, *, max_bytes: int = 1 << 20) -> dict[str, str]:
    """Text files of a workspace that can say what ran (code, shell scripts, configs), for
    runs without code snapshots (imported runs)."""
    suffixes = (".py", ".sh", ".yaml", ".yml", ".json", ".toml", ".cfg", ".md", ".txt", ".ipynb")
    return read_text_files(
        workspace, max_bytes=max_bytes,
        enter=lambda rel: not any(part.startswith(".") or part in ("__pycache__", "node_modules",
                                                                    "wandb")
                                  for part in rel.split("/")),
        accept=lambda rel: rel.endswith(suffixes) and not rel.rsplit("/", 1)[-1].startswith("."))

