"""The skill library's records: what was mounted for the agent (`scaffold/skills/library.json`)
and how the agent used it (`scaffold/skills/usage.json`), both in the run directory."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from a2rl.schema._base import Record

SKILLS_FORMAT = 1

SkillOrigin = Literal["library", "created"]
ReadSource = Literal["open", "exec", "transcript"]


class SkillFile(Record):
    """One file of a skill folder."""

    path: str
    """Path inside the skill's folder (`SKILL.md`, `reference/x.md`, …)."""
    sha256: str
    """Hex digest of its content when it was recorded."""
    bytes: int
    """Its size."""


class SkillInfo(Record):
    """One skill: a folder `<name>/` holding `SKILL.md` (YAML front matter + instructions)."""

    name: str
    """The folder name (also the `name` of the front matter when it is valid)."""
    description: str
    """The front matter's `description`: what the skill is for and when to use it."""
    origin: SkillOrigin
    """library: shipped by a2rl and mounted read-only; created: written by the agent."""
    files: list[SkillFile] = Field(default_factory=list)
    """Every regular file of the folder, sorted by path."""


class SkillManifest(Record):
    """`scaffold/skills/library.json`: the library as it was mounted, written before the agent
    starts (the reference the read counter and the tamper check use)."""

    version: int = SKILLS_FORMAT
    """Format version of this record."""
    workspace: str
    """The workspace folder the library was mounted into (host path, as the agent sees it)."""
    library_dir: str
    """The read-only library folder (`<workspace>/skills`)."""
    created_dir: str
    """The writable folder for skills the agent writes (`<workspace>/new-skills`)."""
    mounted_at: dt.datetime
    """When the library was copied into the workspace (UTC)."""
    skills: list[SkillInfo]
    """The library's skills, sorted by name."""


class SkillRead(Record):
    """One piece of evidence that the agent read a skill."""

    skill: str
    """The skill's name."""
    origin: SkillOrigin
    """Whether it is a library skill or one the agent created."""
    file: str
    """The file read, inside the skill's folder ("" when only the folder was named)."""
    t_s: float | None
    """Seconds after the agent started (None when the evidence carries no time)."""
    source: ReadSource
    """open: a successful open of the file in the exec trace (any program, any tool);
    exec: a program started with the file on its command line (when opens were not traced);
    transcript: a shell command or another tool call naming the file in the agent's events
    (agent/events.jsonl, the launcher's reading of its CLI's transcript)."""
    detail: str = ""
    """The program (open/exec) or tool name (transcript) that read it, truncated."""


class SkillConsults(Record):
    """How often one skill was consulted, per source of evidence."""

    skill: str
    """The skill's name."""
    origin: SkillOrigin
    """Whether it is a library skill or one the agent created."""
    opens: int = 0
    """Reads seen as opens in the exec trace (opens of the same skill by one process within
    `merge_s` seconds of each other are one read)."""
    execs: int = 0
    """Programs started with one of the skill's files on their command line."""
    transcript: int = 0
    """Shell commands and tool calls in the agent's events that read one of the skill's
    files."""
    consults: int = 0
    """The headline count: max(trace, transcript), where trace = opens when opens were traced,
    else execs. The two sources see the same reads from two sides (a CLI's Read tool shows in
    the transcript AND as an open), so adding them would count a read twice."""
    first_s: float | None = None
    """Seconds after the agent started of the first read (any source)."""


class CreatedSkill(Record):
    """A skill the agent wrote into the writable folder, as found when the agent stopped."""

    name: str
    """The folder name."""
    description: str
    """The front matter's description ("" when missing)."""
    valid: bool
    """Whether it follows the convention: `SKILL.md` with front matter whose `name` equals the
    folder name (lowercase letters, digits, hyphens, ≤ 64 characters) and a non-empty
    `description` (≤ 1024 characters)."""
    problems: list[str] = Field(default_factory=list)
    """What breaks the convention, one sentence each."""
    files: list[SkillFile] = Field(default_factory=list)
    """Its files (copied to `scaffold/skills/created/<name>/` in the run directory)."""
    written_s: float | None = None
    """Seconds after the agent started of the first edit event that wrote into it (None when
    the transcript has none, e.g. it was written by a shell command)."""


class SkillUsage(Record):
    """`scaffold/skills/usage.json`: skill consults per skill and the skills the agent created,
    computed after the agent stopped from the exec trace and the transcript."""

    version: int = SKILLS_FORMAT
    """Format version of this record."""
    traced_opens: bool
    """Whether the exec trace recorded file opens (then `opens` are the trace's evidence)."""
    traced_execs: bool
    """Whether an exec trace existed at all."""
    transcript_read: bool
    """Whether the agent's events (agent/events.jsonl) were there to read tool calls from."""
    merge_s: float
    """Opens of one skill by one process closer than this are counted as one read."""
    reads: list[SkillRead] = Field(default_factory=list)
    """Every piece of evidence, sorted by time."""
    per_skill: list[SkillConsults] = Field(default_factory=list)
    """Consults per skill: every library skill (zero included), then created skills that were
    read, sorted by name."""
    total_consults: int = 0
    """Sum of `consults` over `per_skill`."""
    created: list[CreatedSkill] = Field(default_factory=list)
    """Skills the agent wrote, sorted by name."""
    library_modified: list[str] = Field(default_factory=list)
    """Library files whose content differs from the mounted manifest (or that vanished or
    appeared) when the agent stopped: should be empty, since the library is read-only."""
    warnings: list[str] = Field(default_factory=list)
    """What could not be read (missing trace, unreadable transcript lines)."""
