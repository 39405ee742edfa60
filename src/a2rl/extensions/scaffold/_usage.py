"""How the agent used the skill library, counted after it stopped (`count_skill_reads`): every
read of a skill from two independent sides (the exec trace and the agent's events, `_reads`),
the skills the agent created (copied into the run directory: they vanish with the workspace
otherwise, and checked against the convention), and whether the library was modified. The
records are `a2rl.schema._skills`; `load_skill_usage` is what the analysis reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text
from a2rl.extensions.scaffold._library import (
    CREATED_DIR,
    MAX_DESCRIPTION,
    MAX_FILE,
    RECORD_DIR,
    check_skill,
    skill_files,
)
from a2rl.extensions.scaffold._reads import SkillMatcher, event_reads, exec_reads, open_reads
from a2rl.schema import (
    AgentEvent,
    CreatedSkill,
    SkillConsults,
    SkillInfo,
    SkillManifest,
    SkillOrigin,
    SkillRead,
    SkillUsage,
    read_json,
    read_jsonl,
)

MERGE_S = 2.0
"""Opens of one skill by one process within this many seconds are one read (tools that open a
file twice, to probe and then to read it)."""


def count_skill_reads(run_dir: Path, *, merge_s: float = MERGE_S) -> SkillUsage:
    """Count every read of a skill in a finished run and record the skills the agent created;
    writes `<run_dir>/scaffold/skills/usage.json` (and `created/<name>/`) and returns it.
    Needs `library.json` from `prepare_skills`; the workspace must still exist for the created
    skills and the tamper check (recomputing later keeps the copies made the first time)."""
    record = run_dir / RECORD_DIR
    if not (record / "library.json").is_file():
        raise A2RLError(f"{run_dir} has no {RECORD_DIR / 'library.json'}",
                        "the run was not made with --scaffold skills (prepare_skills writes it)")
    manifest = read_json(record / "library.json", SkillManifest)
    matcher = SkillMatcher({s.name for s in manifest.skills})
    warnings: list[str] = []

    trace_reads, traced_opens = open_reads(run_dir, matcher, merge_s)
    execs = exec_reads(run_dir, matcher)
    log = run_dir / "agent" / "exec.log"
    if execs is None and not (log.is_file() and log.stat().st_size):
        warnings.append("the run has no exec trace: reads are counted from the agent's events "
                        "only")
    elif not traced_opens:
        warnings.append("the exec trace did not record opens: trace reads are counted from "
                        "command lines only (a CLI's own Read tool shows in the agent's events)")
    events = _agent_events(run_dir)
    if events is None:
        warnings.append("no agent/events.jsonl: reads are counted from the trace only")

    reads = sorted([*trace_reads, *(execs or []), *event_reads(events or [], matcher)],
                   key=lambda r: (r.t_s is None, r.t_s or 0.0, r.source, r.skill))
    created = _created_skills(manifest, run_dir, events or []) \
        if Path(manifest.workspace).is_dir() else _previous_created(record, warnings)
    per_skill = _per_skill(reads, manifest, traced_opens)
    usage = SkillUsage(traced_opens=traced_opens, traced_execs=execs is not None,
                       transcript_read=events is not None, merge_s=merge_s, reads=reads,
                       per_skill=per_skill, total_consults=sum(c.consults for c in per_skill),
                       created=created,
                       library_modified=_modified(manifest)
                       if Path(manifest.library_dir).is_dir() else [],
                       warnings=warnings)
    atomic_write_text(record / "usage.json", usage.model_dump_json(indent=1))
    return usage


def _agent_events(run_dir: Path) -> list[AgentEvent] | None:
    """agent/events.jsonl as the launcher wrote it (None: the agent has no parser)."""
    path = run_dir / "agent" / "events.jsonl"
    return read_jsonl(path, AgentEvent) if path.is_file() else None


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


# ---- created skills and the tamper check ----------------------------------------------------
def _created_skills(manifest: SkillManifest, run_dir: Path,
                    events: Sequence[AgentEvent]) -> list[CreatedSkill]:
    created = Path(manifest.created_dir)
    if not created.is_dir() or created.is_symlink():
        return []
    edits = _edit_times(events)
    out = []
    dest_root = run_dir / RECORD_DIR / "created"
    for sub in sorted(p for p in created.iterdir() if p.is_dir() and not p.is_symlink()):
        description, problems = check_skill(sub)
        files = skill_files(sub)
        dest = dest_root / sub.name
        for f in files:
            if f.sha256 == "too-large":
                problems.append(f"{f.path} is over {MAX_FILE} bytes (not kept)")
                continue
            target = dest / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            # re-read without following links: the agent controls the folder
            fd = os.open(sub / f.path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                target.write_bytes(fh.read(MAX_FILE))
        out.append(CreatedSkill(name=sub.name, description=description[:MAX_DESCRIPTION],
                                valid=not problems, problems=problems, files=files,
                                written_s=edits.get(sub.name)))
    return out


def _edit_times(events: Sequence[AgentEvent]) -> dict[str, float]:
    """Created skill → when the agent's events first show it writing there."""
    first: dict[str, float] = {}
    for ev in events:
        if ev.kind == "file_edit" and ev.path:
            m = re.search(rf"(?:^|/){CREATED_DIR}/([a-z0-9][a-z0-9-]*)/", ev.path)
            if m:
                first.setdefault(m[1], ev.t_s)
    return first


def _previous_created(record: Path, warnings: list[str]) -> list[CreatedSkill]:
    warnings.append("the workspace is gone: created skills are those recorded before")
    usage = record / "usage.json"
    return read_json(usage, SkillUsage).created if usage.is_file() else []


def _modified(manifest: SkillManifest) -> list[str]:
    library = Path(manifest.library_dir)
    now = {(s.name, f.path): f.sha256 for s in _safe_library(library) for f in s.files}
    then = {(s.name, f.path): f.sha256 for s in manifest.skills for f in s.files}
    return sorted(f"{name}/{path}" for name, path in set(now) | set(then)
                  if now.get((name, path)) != then.get((name, path)))


def _safe_library(library: Path) -> list[SkillInfo]:
    if not library.is_dir() or library.is_symlink():
        return []
    return [SkillInfo(name=p.name, description="", origin="library", files=skill_files(p))
            for p in sorted(library.iterdir()) if p.is_dir() and not p.is_symlink()]


# ---- what the analysis reads ----------------------------------------------------------------
def load_skill_usage(run_dir: Path) -> SkillUsage | None:
    """`scaffold/skills/usage.json` of a run (None when the run had no skills scaffold or was
    not counted yet): what the analysis reports as skill consults and created skills."""
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
