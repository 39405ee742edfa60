"""The skill library of the experience-driven scaffold (`--scaffold skills`).

a2rl ships a library of skills (`a2rl/extensions/scaffold/skills/<name>/SKILL.md`: YAML front
matter with `name` and `description`, then about a page of instructions, as in the Agent Skills
convention).
For a run, `prepare_skills` copies it into the workspace as `skills/` (read-only: the sandbox
binds it read-only, and the files are made read-only for unsandboxed runs) and creates the
writable `new-skills/` for skills the agent writes. After the agent stopped, `count_skill_reads`
counts every read of a skill from two independent sides:

- the exec trace (`agent/exec.log`, written by strace outside the sandbox): successful opens of
  a skill file by any process when opens were traced (`SkillMount.trace_syscalls`), else the
  programs started with a skill file on their command line (`cat skills/x/SKILL.md`);
- the transcript: tool calls of the agent's CLI naming a skill file (a Read/view tool's path in
  `agent/transcript.log`, a shell command in `agent/events.jsonl`).

It also copies the skills the agent created into the run directory (they vanish with the
workspace otherwise), checks them against the convention, and checks that the library was not
modified. The records are `a2rl.records._skills`; `load_skill_usage` is what the analysis reads.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text
from a2rl.records import (
    CreatedSkill,
    SkillConsults,
    SkillFile,
    SkillInfo,
    SkillManifest,
    SkillOrigin,
    SkillRead,
    SkillUsage,
)

LIBRARY_DIR = "skills"
"""The read-only library inside the workspace."""
CREATED_DIR = "new-skills"
"""The writable folder inside the workspace for skills the agent writes."""
RECORD_DIR = Path("scaffold") / "skills"
"""Inside the run directory: library.json, usage.json, created/<name>/."""
TRACE_SYSCALLS = ("?open", "openat", "?openat2")
"""Syscalls the exec trace must also record for opens to count (`?`: strace skips a name the
architecture lacks, e.g. `open` on arm64)."""
MERGE_S = 2.0
"""Opens of one skill by one process within this many seconds are one read (tools that open a
file twice, to probe and then to read it)."""
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_MAX_NAME, _MAX_DESCRIPTION, _MAX_FILE = 64, 1024, 1 << 20
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "fish"}


@dataclass(frozen=True)
class SkillMount:
    """What the runner needs to put the skill library into a run."""

    library: Path
    """`<workspace>/skills`: the library (host path = the agent's path under bwrap)."""
    created: Path
    """`<workspace>/new-skills`: writable, for the agent's own skills."""
    manifest: SkillManifest
    """The library as mounted (also in `<run_dir>/scaffold/skills/library.json`)."""
    read_only: list[Path] = field(default_factory=list)
    """Pass to `Sandbox.wrap(read_only=...)`: the library bound read-only over the workspace."""
    trace_syscalls: tuple[str, ...] = TRACE_SYSCALLS
    """Extra syscalls for the exec trace (`traced_command(..., extra_syscalls=...)`) so every
    open of a skill file is evidence; without them, reads count from command lines only."""

    @property
    def instructions(self) -> str:
        """`index_markdown()`: the section the scaffold appends to instructions.md."""
        return self.index_markdown()

    def index_markdown(self) -> str:
        """A short section for the agent's instructions: where the skills are, one line per
        skill (name: description), and how to add one. The bodies are read on demand."""
        lines = ["## Skills", "",
                 f"`{LIBRARY_DIR}/` (read-only) holds notes on post-training pitfalls and "
                 "recipes, one folder per skill. Read a skill's `SKILL.md` when its description "
                 "fits what you are doing:", ""]
        lines += [f"- `{LIBRARY_DIR}/{s.name}/SKILL.md`: {s.description}"
                  for s in self.manifest.skills]
        lines += ["", f"Write new skills you distil from this run into `{CREATED_DIR}/<name>/"
                  "SKILL.md` (see `skills/create-skill/SKILL.md`); they are kept with the run."]
        return "\n".join(lines) + "\n"


def library_source() -> Path:
    """The shipped library folder (inside the installed a2rl package)."""
    return Path(str(resources.files("a2rl.extensions.scaffold") / "skills"))


# ---- front matter ---------------------------------------------------------------------------
def parse_front_matter(text: str) -> tuple[dict[str, str], list[str]]:
    """The `key: value` pairs of a SKILL.md's YAML front matter (flat strings, as the convention
    uses; a folded `>`/`|` value and quoted values are read too) and the problems found."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, ["SKILL.md does not start with a `---` front matter line"]
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return {}, ["the front matter has no closing `---` line"]
    out: dict[str, str] = {}
    key: str | None = None
    for raw in lines[1:end]:
        if key is not None and raw[:1] in (" ", "\t") and raw.strip():
            out[key] = (out[key] + " " + raw.strip()).strip()
            continue
        m = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", raw)
        if not m:
            key = None
            continue
        key, value = m[1], m[2].strip()
        if value in (">", "|", ">-", "|-"):
            value = ""
        elif len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = value
    return out, []


def check_skill(folder: Path) -> tuple[str, list[str]]:
    """(description, problems) of a skill folder against the convention."""
    skill_md = folder / "SKILL.md"
    if not skill_md.is_file() or skill_md.is_symlink():
        return "", ["no regular file SKILL.md in the folder"]
    meta, problems = parse_front_matter(skill_md.read_text(errors="replace")[:_MAX_FILE])
    name, description = meta.get("name", ""), meta.get("description", "")
    if not problems:
        if not name:
            problems.append("the front matter has no `name`")
        elif name != folder.name:
            problems.append(f"front matter name {name!r} differs from the folder name "
                            f"{folder.name!r}")
        if not description:
            problems.append("the front matter has no `description`")
        elif len(description) > _MAX_DESCRIPTION:
            problems.append(f"the description is {len(description)} characters (at most "
                            f"{_MAX_DESCRIPTION})")
    if not _NAME.match(folder.name) or len(folder.name) > _MAX_NAME:
        problems.append(f"folder name {folder.name!r} is not lowercase letters, digits and "
                        f"single hyphens of at most {_MAX_NAME} characters")
    return description, problems


def _files(folder: Path) -> list[SkillFile]:
    """Regular files under `folder` (links are not followed: the agent controls new-skills/)."""
    out: list[SkillFile] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not (Path(root) / d).is_symlink())
        for name in sorted(names):
            path = Path(root) / name
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode):
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if st.st_size <= _MAX_FILE \
                else "too-large"
            out.append(SkillFile(path=path.relative_to(folder).as_posix(), sha256=digest,
                                 bytes=st.st_size))
    return sorted(out, key=lambda f: f.path)


def read_library(folder: Path) -> list[SkillInfo]:
    """The skills of a library folder; a shipped skill that breaks the convention is an error
    (tests/test_skills.py checks the shipped library)."""
    skills = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        description, problems = check_skill(sub)
        if problems:
            raise A2RLError(f"skill {sub} is malformed: {'; '.join(problems)}",
                            "fix its SKILL.md front matter (name = folder name, description)")
        skills.append(SkillInfo(name=sub.name, description=description, origin="library",
                                files=_files(sub)))
    return skills


# ---- mounting -------------------------------------------------------------------------------
def prepare_skills(workspace_dir: Path, run_dir: Path, *, source: Path | None = None) -> SkillMount:
    """Copy the library into `<workspace_dir>/skills` (read-only), create the writable
    `<workspace_dir>/new-skills`, and write `<run_dir>/scaffold/skills/library.json`.

    A copy rather than a bind of the installed package: the path is the same for every
    sandbox backend and for --no-sandbox, and the manifest's hashes tell whether it changed."""
    workspace_dir = workspace_dir.resolve()
    library, created = workspace_dir / LIBRARY_DIR, workspace_dir / CREATED_DIR
    if not workspace_dir.is_dir():
        raise A2RLError(f"workspace {workspace_dir} does not exist",
                        "build the workspace before preparing the skills")
    for path in (library, created):
        if path.exists() or path.is_symlink():
            raise A2RLError(f"{path} already exists", "prepare the skills once, in a fresh "
                            "workspace")
    src = source or library_source()
    skills = read_library(src)
    if not skills:
        raise A2RLError(f"the skill library {src} is empty", "reinstall a2rl")
    shutil.copytree(src, library, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    for root, dirs, names in os.walk(library):
        for name in names:
            (Path(root) / name).chmod(0o444)
        for name in dirs:
            (Path(root) / name).chmod(0o555)
    library.chmod(0o555)
    created.mkdir()
    manifest = SkillManifest(workspace=str(workspace_dir), library_dir=str(library),
                             created_dir=str(created), mounted_at=dt.datetime.now(dt.UTC),
                             skills=skills)
    record = run_dir / RECORD_DIR
    record.mkdir(parents=True, exist_ok=True)
    atomic_write_text(record / "library.json", manifest.model_dump_json(indent=1))
    return SkillMount(library=library, created=created, manifest=manifest, read_only=[library])


def mount_skills(workspace: Path, run_dir: Path | None = None) -> SkillMount:
    """`prepare_skills` with the run directory found from the workspace: a run's workspace is
    `<run_dir>/workspace` (the scaffold runs one task per run), so the default is its parent.
    The records must live outside the workspace (the agent can write there)."""
    workspace = workspace.resolve()
    run_dir = (run_dir or workspace.parent).resolve()
    record = run_dir / RECORD_DIR
    if record == workspace or workspace in record.parents:
        raise A2RLError(f"the skill records ({record}) would lie inside the workspace",
                        "pass the run directory (outside the workspace) as run_dir")
    return prepare_skills(workspace, run_dir)


# ---- recognising skill paths ----------------------------------------------------------------
# `skills/<name>/<file>` anywhere in a path or command line (relative, absolute, the installed
# package's copy a2rl/extensions/scaffold/skills/…, a CLI's own .claude/skills/…) and
# new-skills/<name>/….
_REF = re.compile(r"(?:(?<=[^\w.-])|^)(new-skills|skills)/([a-z0-9][a-z0-9-]*)(/[^\s\"'`;|&<>()]*)?")


@dataclass
class _Matcher:
    library: set[str]

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


_WRITE_PREFIX = re.compile(r"(?:>>?|\btee(?:\s+-\S+)*|\b(?:mkdir|touch|rm)(?:\s+-\S+)*)\s*$")


def _command_refs(matcher: _Matcher, command: str) -> Iterator[tuple[str, SkillOrigin, str]]:
    """Skill files a shell command line reads: references right after a redirection (`>`,
    `>>`), `tee`, `mkdir`, `touch` or `rm` are the agent writing, not reading."""
    for m in _REF.finditer(command):
        if _WRITE_PREFIX.search(command[:m.start()]):
            continue
        yield from matcher.refs(m[0], need_file=True)


_NOT_READERS = {"tee", "mkdir", "touch", "rm", "rmdir", "ln"}
_COPIERS = {"cp", "mv", "install", "rsync"}


# ---- the exec trace -------------------------------------------------------------------------
_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
_OPEN = re.compile(r'^(open|openat|openat2)\((?:[^,"]*,\s*)?"((?:[^"\\]|\\.)*)"(.*)$')
_RESULT = re.compile(r"\)\s*=\s*(-?\d+)")
_EXECVE = re.compile(r'^execve\("((?:[^"\\]|\\.)*)"')


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), s)


def _trace_opens(text: str, t0: float,
                 matcher: _Matcher) -> tuple[list[tuple[SkillRead, int]], bool]:
    """Successful opens of skill files in an strace log with the opening pid (kept out of the
    record: it is a host pid), and whether the log traced opens at all."""
    from a2rl.recording import join_unfinished

    reads: list[tuple[SkillRead, int]] = []
    program: dict[int, str] = {}
    saw_opens = False
    for line in join_unfinished(text):
        m = _LINE.match(line)
        if not m:
            continue
        pid, ts, call = int(m[1]), float(m[2]), m[3]
        if e := _EXECVE.match(call):
            if call.endswith("= 0"):
                program[pid] = os.path.basename(_unescape(e[1]))
            continue
        o = _OPEN.match(call)
        if not o:
            continue
        saw_opens = True
        r = _RESULT.search(o[3])
        if r and int(r[1]) >= 0:
            reads += [(read, pid) for read in _open_reads(
                _unescape(o[2]), o[3], ts, t0, program.get(pid, f"pid {pid}"), matcher)]
    return reads, saw_opens


def _open_reads(path: str, flags: str, ts: float, t0: float, prog: str,
                matcher: _Matcher) -> list[SkillRead]:
    if any(f in flags for f in ("O_DIRECTORY", "O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")):
        return []  # a listing or a write (the agent writing its own skill), not a read
    return [SkillRead(skill=s, origin=o, file=f, t_s=round(ts - t0, 3), source="open",
                      detail=prog[:80])
            for s, o, f in matcher.refs(path, need_file=True)]


def _merge_opens(reads: list[tuple[SkillRead, int]], merge_s: float) -> list[SkillRead]:
    """One read per burst of opens of one skill by one process."""
    out: list[SkillRead] = []
    last: dict[tuple[int, str, str], float] = {}
    for read, pid in sorted(reads, key=lambda x: x[0].t_s or 0.0):
        key = (pid, read.origin, read.skill)
        t = read.t_s or 0.0
        if key in last and t - last[key] <= merge_s:
            last[key] = t
            continue
        last[key] = t
        out.append(read)
    return out


def _trace_t0(run_dir: Path, text: str) -> float:
    """The epoch time exec.jsonl's times count from: the first exec event matched against its
    raw line (exec.jsonl = parse_exec_log(raw, t0)), else the log's first timestamp."""
    from a2rl.recording import read_exec_events

    events = read_exec_events(run_dir) or []
    if events:
        first = events[0]
        for line in text.splitlines():
            m = _LINE.match(line)
            if m and int(m[1]) == first.pid and _EXECVE.match(m[3]):
                return float(m[2]) - first.start_s
    for line in text.splitlines():
        if m := _LINE.match(line):
            return float(m[2])
    return 0.0


def _exec_reads(run_dir: Path, matcher: _Matcher) -> list[SkillRead] | None:
    """Programs started with a skill file among their arguments. A shell's `-c` line is left
    out: the program it starts (cat, head, python) is its own exec event."""
    from a2rl.recording import read_exec_events

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


# ---- the transcript -------------------------------------------------------------------------
_ID_KEYS = ("id", "call_id", "tool_use_id", "tool_id", "tool_call_id", "callID", "callId")
_NAME_KEYS = ("name", "tool_name", "tool", "kind", "type")
_ARG_KEYS = ("input", "parameters", "arguments", "args", "action", "state")
_SHELL_ARGS = ("command", "cmd")


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


def _tool_calls(obj: Any) -> Iterator[tuple[str, str, dict[str, Any] | str]]:
    """(call id, tool name, arguments) of every tool-call-shaped object in a transcript line,
    in any CLI's stream format: a dict with a tool name and an arguments container."""
    if isinstance(obj, list):
        for v in obj:
            yield from _tool_calls(v)
        return
    if not isinstance(obj, dict):
        return
    args_key = next((k for k in _ARG_KEYS if isinstance(obj.get(k), dict | str)), None)
    name_key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if args_key and name_key and not (args_key == "state" and "input" not in obj[args_key]):
        args = obj[args_key]
        if args_key == "state":
            args = args["input"]
        call_id = next((str(obj[k]) for k in _ID_KEYS if obj.get(k)), "")
        yield call_id, str(obj[name_key]), args
        return
    for v in obj.values():
        if isinstance(v, dict | list):
            yield from _tool_calls(v)


_SHELL_TOOL = re.compile(r"bash|shell|terminal|exec|run_command|command_execution", re.I)
_WRITE_TOOL = re.compile(r"write|edit|create|patch|replace|insert|apply|multiedit", re.I)
_WRITE_ARGS = ("content", "new_string", "old_string", "new_str", "old_str", "file_text", "patch",
               "edits")


def _as_dict(args: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return args


def _is_shell(name: str, args: dict[str, Any] | str) -> bool:
    """A shell tool (its commands are read from events.jsonl, the parser's own reading)."""
    if _SHELL_TOOL.search(name):
        return True
    command = next((_as_dict(args)[k] for k in _SHELL_ARGS if k in _as_dict(args)), None)
    # a file tool's sub-command (`view`, `create`) is one word; a shell line is not
    return isinstance(command, list) or (isinstance(command, str) and len(command.split()) > 1)


def _is_write(name: str, args: dict[str, Any] | str) -> bool:
    """A tool call that writes a file (the agent writing its own skill is not a read)."""
    fields = _as_dict(args)
    if any(k in fields for k in _WRITE_ARGS):
        return True
    command = fields.get("command")
    if isinstance(command, str) and command:  # file_editor-style tools: the sub-command decides
        return bool(_WRITE_TOOL.search(command))
    return bool(_WRITE_TOOL.search(name))


def _transcript_reads(run_dir: Path, matcher: _Matcher) -> tuple[list[SkillRead], bool]:
    """Tool calls naming skill files: non-shell tools (Read, view, read_file) from the raw
    transcript, once per call id; shell commands from events.jsonl (the parser's own reading
    of the same calls)."""
    from a2rl.agents import read_transcript

    agent = run_dir / "agent"
    reads: list[SkillRead] = []
    found = False
    if (agent / "transcript.log").is_file():
        found = True
        seen_ids: set[str] = set()
        for t, line in read_transcript(agent):
            start = line.find("{")
            if start < 0:
                continue
            try:
                obj = json.loads(line[start:])
            except ValueError:
                continue
            for call_id, name, args in _tool_calls(obj):
                if (call_id and call_id in seen_ids) or _is_shell(name, args) or \
                        _is_write(name, args):
                    continue
                hits = {(s, o): f for text in _strings(args)
                        for s, o, f in matcher.refs(text, need_file=False)}
                if hits and call_id:
                    seen_ids.add(call_id)
                reads += [SkillRead(skill=s, origin=o, file=f, t_s=t or None,
                                    source="transcript", detail=name[:80])
                          for (s, o), f in hits.items()]
    events = agent / "events.jsonl"
    if events.is_file():
        found = True
        from a2rl.records import AgentEvent, read_jsonl

        for ev in read_jsonl(events, AgentEvent):
            if ev.kind == "command" and ev.command:
                hits = {(s, o): f for s, o, f in _command_refs(matcher, ev.command)}
                reads += [SkillRead(skill=s, origin=o, file=f, t_s=ev.t_s, source="transcript",
                                    detail="shell") for (s, o), f in hits.items()]
    return reads, found


# ---- created skills and the tamper check ----------------------------------------------------
def _created_skills(manifest: SkillManifest, run_dir: Path) -> list[CreatedSkill]:
    created = Path(manifest.created_dir)
    if not created.is_dir() or created.is_symlink():
        return []
    edits = _edit_times(run_dir)
    out = []
    dest_root = run_dir / RECORD_DIR / "created"
    for sub in sorted(p for p in created.iterdir() if p.is_dir() and not p.is_symlink()):
        description, problems = check_skill(sub)
        files = _files(sub)
        dest = dest_root / sub.name
        for f in files:
            if f.sha256 == "too-large":
                problems.append(f"{f.path} is over {_MAX_FILE} bytes (not kept)")
                continue
            target = dest / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            # re-read without following links: the agent controls the folder
            fd = os.open(sub / f.path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                target.write_bytes(fh.read(_MAX_FILE))
        out.append(CreatedSkill(name=sub.name, description=description[:_MAX_DESCRIPTION],
                                valid=not problems, problems=problems, files=files,
                                written_s=edits.get(sub.name)))
    return out


def _edit_times(run_dir: Path) -> dict[str, float]:
    events = run_dir / "agent" / "events.jsonl"
    if not events.is_file():
        return {}
    from a2rl.records import AgentEvent, read_jsonl

    first: dict[str, float] = {}
    for ev in read_jsonl(events, AgentEvent):
        if ev.kind == "file_edit" and ev.path:
            m = re.search(rf"(?:^|/){CREATED_DIR}/([a-z0-9][a-z0-9-]*)/", ev.path)
            if m:
                first.setdefault(m[1], ev.t_s)
    return first


def _modified(manifest: SkillManifest) -> list[str]:
    library = Path(manifest.library_dir)
    now = {(s.name, f.path): f.sha256 for s in _safe_library(library) for f in s.files}
    then = {(s.name, f.path): f.sha256 for s in manifest.skills for f in s.files}
    return sorted(f"{name}/{path}" for name, path in set(now) | set(then)
                  if now.get((name, path)) != then.get((name, path)))


def _safe_library(library: Path) -> list[SkillInfo]:
    if not library.is_dir() or library.is_symlink():
        return []
    return [SkillInfo(name=p.name, description="", origin="library", files=_files(p))
            for p in sorted(library.iterdir()) if p.is_dir() and not p.is_symlink()]


# ---- counting -------------------------------------------------------------------------------
def count_skill_reads(run_dir: Path, *, merge_s: float = MERGE_S) -> SkillUsage:
    """Count every read of a skill in a finished run and record the skills the agent created;
    writes `<run_dir>/scaffold/skills/usage.json` (and `created/<name>/`) and returns it.
    Needs `library.json` from `prepare_skills`; the workspace must still exist for the created
    skills and the tamper check (recomputing later keeps the copies made the first time)."""
    from a2rl.records import read_json

    record = run_dir / RECORD_DIR
    if not (record / "library.json").is_file():
        raise A2RLError(f"{run_dir} has no {RECORD_DIR / 'library.json'}",
                        "the run was not made with --scaffold skills (prepare_skills writes it)")
    manifest = read_json(record / "library.json", SkillManifest)
    matcher = _Matcher({s.name for s in manifest.skills})
    warnings: list[str] = []

    log = run_dir / "agent" / "exec.log"
    trace_reads: list[SkillRead] = []
    traced_opens = False
    text = log.read_text(errors="replace") if log.is_file() else ""
    if text:
        raw, traced_opens = _trace_opens(text, _trace_t0(run_dir, text), matcher)
        trace_reads = _merge_opens(raw, merge_s)
    exec_reads = _exec_reads(run_dir, matcher)
    if exec_reads is None and not text:
        warnings.append("the run has no exec trace: reads are counted from the transcript only")
    elif not traced_opens:
        warnings.append("the exec trace did not record opens: trace reads are counted from "
                        "command lines only (a CLI's own Read tool shows in the transcript)")
    transcript_reads, transcript_read = _transcript_reads(run_dir, matcher)
    if not transcript_read:
        warnings.append("no transcript or events.jsonl: reads are counted from the trace only")

    reads = sorted([*trace_reads, *(exec_reads or []), *transcript_reads],
                   key=lambda r: (r.t_s is None, r.t_s or 0.0, r.source, r.skill))
    created = _created_skills(manifest, run_dir) if Path(manifest.workspace).is_dir() else \
        _previous_created(record, warnings)
    per_skill = _per_skill(reads, manifest, traced_opens)
    usage = SkillUsage(traced_opens=traced_opens, traced_execs=exec_reads is not None,
                       transcript_read=transcript_read, merge_s=merge_s, reads=reads,
                       per_skill=per_skill, total_consults=sum(c.consults for c in per_skill),
                       created=created,
                       library_modified=_modified(manifest)
                       if Path(manifest.library_dir).is_dir() else [],
                       warnings=warnings)
    atomic_write_text(record / "usage.json", usage.model_dump_json(indent=1))
    return usage


def _previous_created(record: Path, warnings: list[str]) -> list[CreatedSkill]:
    warnings.append("the workspace is gone: created skills are those recorded before")
    usage = record / "usage.json"
    if usage.is_file():
        from a2rl.records import read_json

        return read_json(usage, SkillUsage).created
    return []


def _per_skill(reads: Iterable[SkillRead], manifest: SkillManifest,
               traced_opens: bool) -> list[SkillConsults]:
    table: dict[tuple[SkillOrigin, str], SkillConsults] = {
        ("library", s.name): SkillConsults(skill=s.name, origin="library")
        for s in manifest.skills}
    for r in reads:
        c = table.setdefault((r.origin, r.skill), SkillConsults(skill=r.skill, origin=r.origin))
        if r.source == "open":
            c.opens += 1
        elif r.source == "exec":
            c.execs += 1
        else:
            c.transcript += 1
        if r.t_s is not None and (c.first_s is None or r.t_s < c.first_s):
            c.first_s = r.t_s
    for c in table.values():
        c.consults = max(c.opens if traced_opens else c.execs, c.transcript)
    return sorted(table.values(), key=lambda c: (c.origin != "library", c.skill))


def load_skill_usage(run_dir: Path) -> SkillUsage | None:
    """`scaffold/skills/usage.json` of a run (None when the run had no skills scaffold or was
    not counted yet): what the analysis reports as skill consults and created skills."""
    from a2rl.records import read_json

    path = run_dir / RECORD_DIR / "usage.json"
    return read_json(path, SkillUsage) if path.is_file() else None


def skill_consults(run_dir: Path) -> dict[str, int]:
    """Skill name → consults (library skills, zero included; created skills as
    `new-skills/<name>`), counting the run first when it has a manifest but no usage yet."""
    usage = load_skill_usage(run_dir)
    if usage is None:
        if not (run_dir / RECORD_DIR / "library.json").is_file():
            return {}
        usage = count_skill_reads(run_dir)
    return {(c.skill if c.origin == "library" else f"{CREATED_DIR}/{c.skill}"): c.consults
            for c in usage.per_skill}
