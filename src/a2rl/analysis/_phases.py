"""Phase of each program the agent ran and of each model turn, and time per phase (the trajectory study's
phase labels).

Labels come from what ran: the launch form and the script or config it ran (read by
`_command_reader.CommandReader`: a training launch is SFT or RL by the method it trains), waiting
(`sleep`, `wait`, `watch`, `tail -f`, polling loops, `timer.sh` anywhere on a command line,
the grader's /status), evaluation (the grader's /submit, evaluation scripts), setup and
exploration programs. An exec trace gives programs; an agent event log gives turns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from a2rl.analysis._command_reader import CommandReader
from a2rl.analysis._launchers import launched_file, parse_launch
from a2rl.analysis._run_evidence import SlimAgentEvent
from a2rl.analysis._shell_commands import simple_commands
from a2rl.schema import AgentEvent, ExecEvent

PHASES = ("exploration", "data/setup", "SFT", "RL", "evaluation", "debugging", "journal/skill",
          "checkpoint/waiting")
_SHELLS = {"bash", "sh", "dash", "zsh", "env", "timeout", "nohup", "a2rl-agent", "strace", "setsid",
           "xargs", "nice", "stdbuf", "time"}
_EXPLORE = {"ls", "cat", "head", "less", "find", "grep", "rg", "wc", "du", "df", "tree",
            "nvidia-smi", "free", "nproc", "which", "stat", "file", "pwd", "jq", "ps", "top",
            "htop", "echo", "printf", "cd", "date", "uptime", "lscpu", "tail", "diff", "awk", "sort"}
_SETUP = {"pip", "pip3", "uv", "apt-get", "apt", "conda", "wget", "git", "cp", "mv", "mkdir", "tar",
          "unzip", "ln", "rm", "chmod", "huggingface-cli", "hf", "curl", "rsync", "touch"}
_WAIT = {"sleep", "wait", "watch"}
_EDITORS = {"tee", "sed", "vi", "vim", "nano"}
_LAUNCHERS = {"python", "torchrun", "deepspeed", "accelerate", "trl", "llamafactory-cli", "lmf",
              "jupyter", "papermill", "ipython",
              "axolotl", "tune"}
# Tools that read a background job's output or wait for it (Claude Code's BashOutput /
# TaskOutput / Monitor, kill and wake-up tools): polling, not exploring.
WAIT_TOOLS = {"BashOutput", "TaskOutput", "Monitor", "KillShell", "KillBash", "TaskStop",
              "ScheduleWakeup", "Wait", "wait", "sleep", "write_stdin"}
# Most specific first: a command line that launches training and then polls is training.
_PRIORITY = ("RL", "SFT", "evaluation", "checkpoint/waiting", "debugging", "data/setup",
             "journal/skill", "exploration")


def _is_timer(arg: str) -> bool:
    return PurePosixPath(arg).name == "timer.sh"


def script_of(ev: ExecEvent) -> str | None:
    """The script or config a program ran (python x.py, accelerate launch … x.py,
    llamafactory-cli train x.yaml)."""
    return launched_file(ev.argv)


def argv_phase(argv: list[str], reader: CommandReader, failed_before: set[str]) -> str | None:
    """Phase of one simple command, or None for plumbing (shells, interpreter shims)."""
    if not argv:
        return None
    if any(_is_timer(a) for a in argv):
        return "checkpoint/waiting"
    launch = parse_launch(argv)
    if launch is None:
        return None
    name = PurePosixPath(launch.argv[0]).name if launch.argv else ""
    args = " ".join(launch.argv[1:])
    if name in _WAIT or name == "tail" and re.search(r"(^|\s)-(f|F|-follow)\b", args):
        return "checkpoint/waiting"
    if name == "curl" and "/submit" in args:
        return "evaluation"
    if name == "curl" and "/status" in args:
        return "checkpoint/waiting"
    launcher = launch.launcher
    if launcher in _LAUNCHERS or name.startswith("python"):
        found = reader.analyze_argv(launch.argv)
        if found is not None and found.trains:
            return "RL" if found.kind == "RL" else "SFT"
        target = launch.script or launch.module or ""
        base = PurePosixPath(target).name.lower()
        if launch.module in ("pip", "venv", "ensurepip"):
            return "data/setup"
        if launch.module is not None and "reference_agent" in launch.module:
            return None  # the reference agent's own driver process
        if target and target in failed_before:
            return "debugging"
        if re.search(r"(eval|test|score|bench|lm_eval|infer|predict|generate)", base) or \
                launch.module in ("lm_eval", "evalplus") or name == "lm_eval":
            return "evaluation"
        if re.search(r"(data|prep|gen|build|make|download|convert|format|process)", base):
            return "data/setup"
        if found is not None and "merging" in found.methods:
            return "data/setup"
        return "exploration"  # python -c … and REPL pokes
    if launcher == "bash":
        return None  # its commands are labelled on their own (traced children, or split lines)
    if name in _EDITORS and re.search(r"\.(md|txt)\b", args):
        return "journal/skill"
    if name in _EXPLORE:
        return "exploration"
    if name in _SETUP:
        return "data/setup"
    return None


def classify(ev: ExecEvent, reader: CommandReader, failed_before: set[str]) -> str | None:
    """Phase of one traced program, or None for plumbing."""
    name = PurePosixPath(ev.program).name
    if name in _SHELLS or name.startswith("pyenv"):
        # `bash timer.sh` is waiting; other shells are plumbing: their children are traced.
        return "checkpoint/waiting" if any(_is_timer(a) for a in ev.argv[1:3]) else None
    return argv_phase([ev.program, *ev.argv[1:]] if ev.argv else [ev.program], reader,
                      failed_before)


def command_phase(command: str, reader: CommandReader, failed_before: set[str]) -> str | None:
    """Phase of a shell command line (several simple commands): the most specific one."""
    phases = [p for argv in simple_commands(command)
              if (p := argv_phase(argv, reader, failed_before)) is not None]
    if re.search(r"\b(while|until)\b[^\n]*\bsleep\b", command):
        phases.append("checkpoint/waiting")  # a polling loop
    for p in _PRIORITY:
        if p in phases:
            return p
    return None


def span_union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def phase_times(events: list[ExecEvent], reader: CommandReader,
                horizon: float) -> tuple[list[tuple[ExecEvent, str]], dict[str, float]]:
    """Label each program and sum the wall time covered by each phase (intervals may overlap
    across phases, e.g. waiting on an evaluation while training runs)."""
    labelled: list[tuple[ExecEvent, str]] = []
    failed: set[str] = set()
    spans: dict[str, list[tuple[float, float]]] = {p: [] for p in PHASES}
    for ev in events:
        phase = classify(ev, reader, failed)
        script = script_of(ev)
        if script and ev.exit_code not in (0, None):
            failed.add(script)
        elif script and ev.exit_code == 0:
            failed.discard(script)
        if phase is None:
            continue
        labelled.append((ev, phase))
        spans[phase].append((ev.start_s, ev.end_s if ev.end_s is not None else horizon))
    return labelled, {p: round(span_union(v), 2) for p, v in spans.items() if v}


def turn_phases(events: Sequence[AgentEvent | SlimAgentEvent], reader: CommandReader,
                horizon: float) -> tuple[list[dict[str, object]], dict[str, float]]:
    """Phase of each model turn from what it did (commands, file edits), and time per phase:
    the time from a turn to the next one goes to the phase of the turn that launched it."""
    by_turn: dict[int, list[AgentEvent | SlimAgentEvent]] = {}
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
                if (phase := command_phase(ev.command, reader, failed)) is not None:
                    votes.append(phase)
                for argv in simple_commands(ev.command):
                    script = launched_file(argv)
                    if script and ev.exit_code not in (0, None):
                        failed.add(script)
            elif ev.kind == "tool_call" and ev.name in WAIT_TOOLS:
                votes.append("checkpoint/waiting")
            elif ev.kind == "file_edit" and ev.path:
                votes.append("journal/skill" if ev.path.endswith((".md", ".txt")) else "data/setup")
        ranked = [p for p in ("RL", "SFT", "evaluation", "checkpoint/waiting", "debugging")
                  if p in votes]
        phase = ranked[0] if ranked else max(set(votes), key=votes.count) if votes else "exploration"
        labels.append({"turn": turn, "start_s": start, "phase": phase})
        seconds[phase] = round(seconds.get(phase, 0.0) + max(0.0, end - start), 2)
    return labels, seconds
