"""Putting the skill library into a run (`--scaffold skills`): the library copied into the
workspace as `skills/` (read-only: the sandbox binds it read-only, and the files are made
read-only for unsandboxed runs), the writable `new-skills/` for skills the agent writes, the
manifest of what was mounted, and the open calls the exec trace must record so that reads can be
counted afterwards (`_usage`)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text
from a2rl.extensions.scaffold._library import (
    CREATED_DIR,
    LIBRARY_DIR,
    RECORD_DIR,
    library_source,
    read_library,
)
from a2rl.schema import SkillManifest

TRACE_SYSCALLS = ("?open", "openat", "?openat2")
"""Syscalls the exec trace must also record for opens to count (`?`: strace skips a name the
architecture lacks, e.g. `open` on arm64)."""


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
