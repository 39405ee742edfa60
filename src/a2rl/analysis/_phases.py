"""Phase of each program the agent ran, and time per phase (paper B's phase labels).

Labels come from the exec trace: what was run, with which script, and what that script does
(from its syntax tree). An LLM agent's turn-level labels will come from its launcher's event log;
for any agent, programs are the finest evidence there is.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from a2rl.agents import AgentEvent
from a2rl.recording import ExecEvent

PHASES = ("exploration", "data/setup", "SFT", "RL", "evaluation", "debugging", "journal/skill",
          "checkpoint/waiting")
_SHELLS = {"bash", "sh", "dash", "zsh", "env", "timeout", "nohup", "a2rl-agent", "strace"}
_EXPLORE = {"ls", "cat", "head", "tail", "less", "find", "grep", "rg", "wc", "du", "df", "tree",
            "nvidia-smi", "free", "nproc", "which", "stat", "file", "pwd", "jq"}
_SETUP = {"pip", "pip3", "uv", "apt-get", "apt", "conda", "wget", "git", "cp", "mv", "mkdir", "tar",
          "unzip", "ln", "rm", "chmod", "huggingface-cli", "hf"}
_WAIT = {"sleep", "wait"}
_EDITORS = {"tee", "sed", "awk", "vi", "vim", "nano"}


def script_of(ev: ExecEvent) -> str | None:
    """The .py file a Python process ran (python x.py, python -u x.py, accelerate launch x.py)."""
    for arg in ev.argv[1:]:
        if arg.endswith(".py"):
            return arg
        if not arg.startswith("-") and arg not in ("launch", "run"):
            return None
    return None


def module_of(ev: ExecEvent) -> str | None:
    if "-m" in ev.argv[:-1]:
        return ev.argv[ev.argv.index("-m") + 1]
    return None


def classify(ev: ExecEvent, script_methods: dict[str, set[str]], failed_before: set[str]) -> str | None:
    """Phase of one program, or None for plumbing (shells, interpreter shims)."""
    name = Path(ev.program).name
    args = " ".join(ev.argv[1:])
    if name in _SHELLS or name.startswith("pyenv"):
        return None
    if name.startswith("python") or name in ("accelerate", "torchrun", "deepspeed"):
        script = script_of(ev)
        if script is not None:
            methods = script_methods.get(script, set())
            base = Path(script).name.lower()
            if script in failed_before:
                return "debugging"
            if methods & {"GRPO", "PPO"}:
                return "RL"
            if methods & {"SFT", "PEFT", "DPO", "KTO", "ORPO", "RFT", "distillation", "merging"}:
                return "SFT"
            if re.search(r"eval|test|score|bench", base):
                return "evaluation"
            if re.search(r"data|prep|gen|build|make|download|convert", base):
                return "data/setup"
            return "exploration"
        module = module_of(ev)
        if module in ("pip", "venv", "ensurepip"):
            return "data/setup"
        if module is not None and "reference_agent" in module:
            return None  # the reference agent's own driver process
        return "exploration"  # python -c … and REPL pokes
    if name == "curl" and "/submit" in args:
        return "evaluation"
    if name == "curl" and "/status" in args or name == "timer.sh" or name in _WAIT:
        return "checkpoint/waiting"
    if name in _EDITORS and re.search(r"\.(md|txt)\b", args):
        return "journal/skill"
    if name in _EXPLORE:
        return "exploration"
    if name in _SETUP:
        return "data/setup"
    return None


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def phase_times(events: list[ExecEvent], script_methods: dict[str, set[str]],
                horizon: float) -> tuple[list[tuple[ExecEvent, str]], dict[str, float]]:
    """Label each program and sum the wall time covered by each phase (intervals may overlap
    across phases, e.g. waiting on an evaluation while training runs)."""
    labelled: list[tuple[ExecEvent, str]] = []
    failed: set[str] = set()
    spans: dict[str, list[tuple[float, float]]] = {p: [] for p in PHASES}
    for ev in events:
        phase = classify(ev, script_methods, failed)
        script = script_of(ev)
        if script and ev.exit_code not in (0, None):
            failed.add(script)
        elif script and ev.exit_code == 0:
            failed.discard(script)
        if phase is None:
            continue
        labelled.append((ev, phase))
        spans[phase].append((ev.start_s, ev.end_s if ev.end_s is not None else horizon))
    return labelled, {p: round(_union(v), 2) for p, v in spans.items() if v}


def turn_phases(events: list[AgentEvent], script_methods: dict[str, set[str]],
                horizon: float) -> tuple[list[dict[str, object]], dict[str, float]]:
    """Phase of each model turn from what it did (commands, file edits), and time per phase:
    the time from a turn to the next one goes to the phase of the turn that launched it."""
    by_turn: dict[int, list[AgentEvent]] = {}
    for ev in events:
        by_turn.setdefault(ev.turn, []).append(ev)
    turns = sorted(by_turn)
    labels: list[dict[str, object]] = []
    seconds: dict[str, float] = {}
    failed: set[str] = set()
    for i, turn in enumerate(turns):
        evs = by_turn[turn]
        start = min(e.t_s for e in evs)
        end = min(e.t_s for e in by_turn[turns[i + 1]]) if i + 1 < len(turns) else horizon
        votes: list[str] = []
        for ev in evs:
            if ev.kind == "command" and ev.command:
                try:
                    argv = shlex.split(ev.command)
                except ValueError:
                    argv = ev.command.split()
                pseudo = ExecEvent(pid=0, start_s=ev.t_s, end_s=ev.end_s, exit_code=ev.exit_code,
                                   program=argv[0] if argv else "", argv=argv)
                if (phase := classify(pseudo, script_methods, failed)) is not None:
                    votes.append(phase)
                script = script_of(pseudo)
                if script and ev.exit_code not in (0, None):
                    failed.add(script)
            elif ev.kind == "file_edit" and ev.path:
                votes.append("journal/skill" if ev.path.endswith((".md", ".txt")) else "data/setup")
        # Training and RL dominate a turn that also listed files; otherwise the most frequent.
        ranked = [p for p in ("RL", "SFT", "debugging", "evaluation") if p in votes]
        phase = ranked[0] if ranked else max(set(votes), key=votes.count) if votes else "exploration"
        labels.append({"turn": turn, "start_s": start, "phase": phase})
        seconds[phase] = round(seconds.get(phase, 0.0) + max(0.0, end - start), 2)
    return labels, seconds
