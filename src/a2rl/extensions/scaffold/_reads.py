"""Where a read of a skill shows, from three records of the run that a2rl wrote itself:

- the exec trace's opens (`agent/exec.log`, written by strace outside the sandbox, read by
  `a2rl.capture.parse_file_opens`): successful opens of a skill file by any process, when the
  trace recorded opens (`_mount.TRACE_SYSCALLS`);
- the exec trace's programs (`agent/exec.jsonl`): programs started with a skill file on their
  command line (`cat skills/x/SKILL.md`);
- the agent's events (`agent/events.jsonl`, the launcher's normalised reading of its CLI's
  transcript): shell command lines, and the arguments of the other tool calls (a Read or view
  tool) that neither ran a command nor wrote a file.

What the model says and what tools return are never evidence: an agent that prints a skill's
path has not read it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2rl.capture import exec_log_t0, parse_file_opens, read_exec_events
from a2rl.extensions.scaffold._library import CREATED_DIR
from a2rl.schema import AgentEvent, SkillOrigin, SkillRead

# `skills/<name>/<file>` anywhere in a path or command line (relative, absolute, the installed
# package's copy a2rl/extensions/scaffold/skills/…, a CLI's own .claude/skills/…) and
# new-skills/<name>/….
_REF = re.compile(r"(?:(?<=[^\w.-])|^)(new-skills|skills)/([a-z0-9][a-z0-9-]*)(/[^\s\"'`;|&<>()]*)?")
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "fish"}
_NOT_READERS = {"tee", "mkdir", "touch", "rm", "rmdir", "ln"}
_COPIERS = {"cp", "mv", "install", "rsync"}
_WRITE_PREFIX = re.compile(r"(?:>>?|\btee(?:\s+-\S+)*|\b(?:mkdir|touch|rm)(?:\s+-\S+)*)\s*$")
_WRITE_TOOL = re.compile(r"write|edit|create|patch|replace|insert|apply|change", re.I)
_WRITE_ARGS = ("content", "new_string", "old_string", "new_str", "old_str", "file_text", "patch",
               "edits")


@dataclass
class SkillMatcher:
    """Recognises references to the skills of one library (and to any created skill)."""

    library: set[str]
    """The library's skill names: `skills/<other>/…` is not one of its skills."""

    def refs(self, text: str, *, need_file: bool) -> Iterator[tuple[str, SkillOrigin, str]]:
        """(skill, origin, file) for each skill reference in `text`; `need_file`: only those
        naming something inside the skill's folder (an open of the folder is a listing)."""
        for m in _REF.finditer(text):
            kind, name, rest = m[1], m[2], (m[3] or "").strip("/")
            origin: SkillOrigin = "created" if kind == CREATED_DIR else "library"
            if origin == "library" and name not in self.library:
                continue
            if need_file and not rest:
                continue
            yield name, origin, rest

    def command_refs(self, command: str) -> Iterator[tuple[str, SkillOrigin, str]]:
        """Skill files a shell command line reads: references right after a redirection (`>`,
        `>>`), `tee`, `mkdir`, `touch` or `rm` are the agent writing, not reading."""
        for m in _REF.finditer(command):
            if _WRITE_PREFIX.search(command[:m.start()]):
                continue
            yield from self.refs(m[0], need_file=True)


# ---- the exec trace -------------------------------------------------------------------------
def open_reads(run_dir: Path, matcher: SkillMatcher, merge_s: float
               ) -> tuple[list[SkillRead], bool]:
    """Opens of skill files for reading in the raw trace, one per burst of one skill by one
    process (opens within `merge_s` s of each other: tools that open a file to probe and then
    to read it), timed as exec.jsonl is; and whether the trace recorded opens."""
    log = run_dir / "agent" / "exec.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    if not text:
        return [], False
    t0 = exec_log_t0(text, read_exec_events(run_dir) or [])
    opens, traced = parse_file_opens(
        text, t0, keep=lambda path: any(matcher.refs(path, need_file=True)))
    reads: list[SkillRead] = []
    last: dict[tuple[int, str, str], float] = {}
    for o in opens:
        if not o.for_reading:
            continue  # a listing or a write (the agent writing its own skill), not a read
        program = os.path.basename(o.program) if o.program else f"pid {o.pid}"
        for skill, origin, file in matcher.refs(o.path, need_file=True):
            key = (o.pid, origin, skill)
            merged = key in last and o.t_s - last[key] <= merge_s
            last[key] = o.t_s
            if not merged:
                reads.append(SkillRead(skill=skill, origin=origin, file=file, t_s=o.t_s,
                                       source="open", detail=program[:80]))
    return reads, traced


def exec_reads(run_dir: Path, matcher: SkillMatcher) -> list[SkillRead] | None:
    """Programs started with a skill file among their arguments (None: the run was not
    traced). A shell's `-c` line is left out: the program it starts (cat, head, python) is its
    own exec event."""
    events = read_exec_events(run_dir)
    if events is None:
        return None
    reads = []
    for ev in events:
        prog = os.path.basename(ev.program)
        if prog in _SHELLS or prog in _NOT_READERS:
            continue
        # a copy reads its sources; its last argument is the destination
        args = ev.argv[1:-1] if prog in _COPIERS else ev.argv[1:]
        seen: set[tuple[str, str]] = set()
        for arg in args:
            for s, o, f in matcher.refs(arg, need_file=True):
                if (o, s) not in seen:
                    seen.add((o, s))
                    reads.append(SkillRead(skill=s, origin=o, file=f, t_s=ev.start_s,
                                           source="exec", detail=prog[:80]))
    return reads


# ---- the agent's events ---------------------------------------------------------------------
def event_reads(events: Sequence[AgentEvent], matcher: SkillMatcher) -> list[SkillRead]:
    """Reads in the agent's normalised events: each shell command line, and each other tool
    call whose arguments name a skill. A tool call the launcher followed with a `command`
    event ran that command (counted from the command line), one followed by a `file_edit`
    wrote a file, and one whose tool or arguments write (a Write or Edit the CLI refused) is
    no read either."""
    reads: list[SkillRead] = []
    for i, ev in enumerate(events):
        if ev.kind == "command" and ev.command:
            hits = {(s, o): f for s, o, f in matcher.command_refs(ev.command)}
            detail = "shell"
        elif ev.kind == "tool_call" and ev.name:
            after = events[i + 1].kind if i + 1 < len(events) else None
            args = _arguments(ev.extra.get("args", ""))
            if after in ("command", "file_edit") or _writes(ev.name, args):
                continue
            hits = {(s, o): f for text in _strings(args)
                    for s, o, f in matcher.refs(text, need_file=False)}
            detail = ev.name
        else:
            continue
        reads += [SkillRead(skill=s, origin=o, file=f, t_s=ev.t_s, source="transcript",
                            detail=detail[:80]) for (s, o), f in hits.items()]
    return reads


def _arguments(text: str) -> Any:
    """A tool call's arguments (`extra["args"]`: JSON, or the raw text when cut or not JSON)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
        if value[:1] in "{[":  # arguments serialised as a JSON string (OpenAI-style calls)
            try:
                yield from _strings(json.loads(value))
            except ValueError:
                pass
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _writes(name: str, args: Any) -> bool:
    """A tool call that writes a file: by its written content, its sub-command (file_editor
    style tools: `view` reads, `create` writes) or its tool's name."""
    fields = args if isinstance(args, dict) else {}
    if any(k in fields for k in _WRITE_ARGS):
        return True
    command = fields.get("command")
    if isinstance(command, str) and command:
        return bool(_WRITE_TOOL.search(command))
    return bool(_WRITE_TOOL.search(name))
