"""The skill library of the experience-driven scaffold (`--scaffold skills`) and the convention
its skills follow.

a2rl ships a library of skills (`a2rl/extensions/scaffold/skills/<name>/SKILL.md`: YAML front
matter with `name` and `description`, then about a page of instructions, as in the Agent Skills
convention). Inside a run's workspace the library is `skills/` (read-only) and the agent writes
its own skills into `new-skills/`; the records go to `scaffold/skills/` of the run directory.
Mounting is `_mount`, counting the reads afterwards `_usage`.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from importlib import resources
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.schema import SkillFile, SkillInfo

LIBRARY_DIR = "skills"
"""The read-only library inside the workspace."""
CREATED_DIR = "new-skills"
"""The writable folder inside the workspace for skills the agent writes."""
RECORD_DIR = Path("scaffold") / "skills"
"""Inside the run directory: library.json, usage.json, created/<name>/."""
MAX_FILE = 1 << 20
"""Bytes of a skill file that are hashed and kept; a larger file is recorded as too large."""
MAX_DESCRIPTION = 1024
"""Characters of a skill's description."""
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_MAX_NAME = 64


def library_source() -> Path:
    """The shipped library folder (inside the installed a2rl package)."""
    return Path(str(resources.files("a2rl.extensions.scaffold") / "skills"))


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
    meta, problems = parse_front_matter(skill_md.read_text(errors="replace")[:MAX_FILE])
    name, description = meta.get("name", ""), meta.get("description", "")
    if not problems:
        if not name:
            problems.append("the front matter has no `name`")
        elif name != folder.name:
            problems.append(f"front matter name {name!r} differs from the folder name "
                            f"{folder.name!r}")
        if not description:
            problems.append("the front matter has no `description`")
        elif len(description) > MAX_DESCRIPTION:
            problems.append(f"the description is {len(description)} characters (at most "
                            f"{MAX_DESCRIPTION})")
    if not _NAME.match(folder.name) or len(folder.name) > _MAX_NAME:
        problems.append(f"folder name {folder.name!r} is not lowercase letters, digits and "
                        f"single hyphens of at most {_MAX_NAME} characters")
    return description, problems


def skill_files(folder: Path) -> list[SkillFile]:
    """Regular files under `folder` (links are not followed: the agent controls new-skills/)."""
    out: list[SkillFile] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not (Path(root) / d).is_symlink())
        for name in sorted(names):
            path = Path(root) / name
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode):
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if st.st_size <= MAX_FILE \
                else "too-large"
            out.append(SkillFile(path=path.relative_to(folder).as_posix(), sha256=digest,
                                 bytes=st.st_size))
    return sorted(out, key=lambda f: f.path)


def read_library(folder: Path) -> list[SkillInfo]:
    """The skills of a library folder; a shipped skill that breaks the convention is an error
    (tests/extensions/test_skills.py checks the shipped library)."""
    skills = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        description, problems = check_skill(sub)
        if problems:
            raise A2RLError(f"skill {sub} is malformed: {'; '.join(problems)}",
                            "fix its SKILL.md front matter (name = folder name, description)")
        skills.append(SkillInfo(name=sub.name, description=description, origin="library",
                                files=skill_files(sub)))
    return skills
