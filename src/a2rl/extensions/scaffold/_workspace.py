"""What the scaffold adds to the agent's workspace: `scaffold.sh`, a section of the instructions
per enabled component, and (component `skills`) the skill library of
`a2rl.extensions.scaffold._mount`."""

from __future__ import annotations

import importlib
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from a2rl._errors import A2RLError
from a2rl.schema import DATA_SOURCES, PARADIGMS, STAGE_STRUCTURES, ScaffoldConfig

SCRIPT = "scaffold.sh"
"""The agent's tool (read-only in the sandbox, like timer.sh)."""
SECTIONS = ("journal", "evaluator", "plan-review", "revision")
"""Components whose instructions live here (the skills' text comes from their own module)."""


def _template(name: str) -> str:
    return (resources.files("a2rl.extensions.scaffold") / "templates" / name).read_text()


def revision_triggers(config: ScaffoldConfig) -> str:
    parts = []
    if config.revision_every:
        parts.append(f"after every {config.revision_every} evaluated submissions")
    if config.revision_plateau:
        parts.append(f"after {config.revision_plateau} evaluated submissions in a row without a "
                     "new best")
    if config.revision_fractions:
        parts.append("when " + ", ".join(f"{100 * f:g}%" for f in
                                        sorted(config.revision_fractions))
                     + " of the budget is used")
    return "; ".join(parts) or "none configured"


def skills_module() -> Any:
    """`a2rl.extensions.scaffold._mount`, which provides `mount_skills(workspace: Path)` returning
    an object with `read_only: list[Path]` (paths the sandbox mounts read-only) and
    `instructions: str` (markdown for the instructions)."""
    try:
        return importlib.import_module("a2rl.extensions.scaffold._mount")
    except ImportError as exc:
        raise A2RLError("the scaffold's skills component is not installed "
                        f"(a2rl.extensions.scaffold._mount: {exc})",
                        "run without `skills` in --scaffold, or install an a2rl that has the "
                        "skill library") from exc


def instructions(config: ScaffoldConfig, skills_text: str | None) -> str:
    on = set(config.components)
    text = Template(_template("_header.md")).substitute(
        paradigms=", ".join(PARADIGMS), data_sources=", ".join(DATA_SOURCES),
        stages=", ".join(STAGE_STRUCTURES))
    for name in SECTIONS:
        if name in on:
            text += "\n" + Template(_template(f"{name}.md")).substitute(
                triggers=revision_triggers(config))
        if name == "journal" and skills_text:
            text += "\n" + skills_text.strip() + "\n"
    return text


def install(config: ScaffoldConfig, workspace: Path) -> list[Path]:
    """Write the tool and the instructions; returns the paths to mount read-only."""
    read_only: list[Path] = []
    skills_text = None
    if "skills" in config.components:
        mount = skills_module().mount_skills(workspace)
        read_only += [Path(p) for p in mount.read_only]
        skills_text = mount.instructions
    if not set(config.components) - {"skills"} and skills_text is None:
        return read_only
    script = workspace / SCRIPT
    script.write_text(_template(SCRIPT))
    script.chmod(0o555)
    read_only.append(script)
    doc = workspace / "instructions.md"
    mode = doc.stat().st_mode
    doc.chmod(0o644)
    with doc.open("a") as fh:
        fh.write(instructions(config, skills_text))
    doc.chmod(mode & 0o777)
    return read_only
