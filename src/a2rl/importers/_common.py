"""What every importer shares: building an a2rl run directory from another harness's files.

An imported run directory has the layout `a2rl analyze` reads: run.json (marked `imported`),
ledger.jsonl, workspace/ (the harness's task folder: its text files, no weights), a code
snapshot of that workspace tagged with each submission and `final`, and agent/ with the
agent's transcript (per-line times in transcript.times) and the events a2rl's parser for that
CLI reads from it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._walk import rmtree
from a2rl.importers._source import Source, find_marked
from a2rl.schema import AgentEvent, write_json

log = logging.getLogger("a2rl.importers")
TIMESTAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\] ?")
"""A per-line timestamp prefix as PostTrainBench writes it: `[2026-04-03T14:05:32Z] `."""
TEXT_SUFFIXES = (".py", ".sh", ".bash", ".yaml", ".yml", ".json", ".toml", ".cfg", ".md", ".txt",
                 ".jinja", ".ipynb")
MAX_TEXT_BYTES = 1 << 20
SKIP_DIRS = {"__pycache__", ".git", "wandb", "node_modules", ".cache", "hf_cache"}


def parse_time(value: str) -> dt.datetime:
    """An ISO time; a naive one is taken as UTC (the caller says so in the import notes)."""
    t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def strip_timestamps(lines: Iterable[str]) -> tuple[list[str], list[dt.datetime | None]]:
    """Lines without their `[ISO-time] ` prefix, and the time of each (None where a line had
    none: a continuation of a multi-line record)."""
    out: list[str] = []
    times: list[dt.datetime | None] = []
    for line in lines:
        m = TIMESTAMP.match(line)
        if m:
            out.append(line[m.end():])
            times.append(parse_time(m.group(1)))
        else:
            out.append(line)
            times.append(None)
    return out, times


def relative_times(times: list[dt.datetime | None], start: dt.datetime) -> list[float]:
    """Seconds after `start` for each line; a line without a time gets the previous line's."""
    out: list[float] = []
    last = 0.0
    for t in times:
        if t is not None:
            last = max(0.0, (t - start).total_seconds())
        out.append(round(last, 3))
    return out


def interpolate(n: int, anchors: list[tuple[int, float]]) -> list[float]:
    """Times for lines 0..n-1 from a few (line, seconds) anchors, linear in between and flat
    after the last: for streams without per-line times whose submissions have known times."""
    pts = sorted(anchors)
    clean: list[tuple[int, float]] = []
    for i, t in pts:  # keep the anchors that move forward in both line and time
        if not clean or (i > clean[-1][0] and t >= clean[-1][1]):
            clean.append((i, t))
    out: list[float] = []
    k = 0
    for line in range(n):
        while k + 1 < len(clean) and clean[k + 1][0] <= line:
            k += 1
        if not clean:
            out.append(0.0)
        elif line <= clean[0][0]:
            out.append(clean[0][1])
        elif k + 1 < len(clean):
            (i0, t0), (i1, t1) = clean[k], clean[k + 1]
            out.append(round(t0 + (t1 - t0) * (line - i0) / (i1 - i0), 3))
        else:
            out.append(clean[-1][1])
    return out


def copy_text_tree(src: Source, rel_dir: str, dst: Path) -> list[str]:
    """Copy the text files (code, configs, notes) under `rel_dir` of a harness's folder; weights
    and data blobs stay where they are. Links, special files and odd names are refused (in
    `src.refused`). Returns the regular files left out (binary or large), for the notes."""
    skipped: list[str] = []
    dst.mkdir(parents=True, exist_ok=True)
    strip = len(rel_dir.strip("/")) + 1 if rel_dir.strip("/") else 0
    for rel, dir_fd, size in src.files(rel_dir, SKIP_DIRS):
        if not rel.endswith(TEXT_SUFFIXES) or size > MAX_TEXT_BYTES:
            skipped.append(rel)
            continue
        data = src.read_in(dir_fd, rel, MAX_TEXT_BYTES, "a workspace text file")
        if data is None:
            continue
        target = dst / rel[strip:]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return skipped


def write_transcript(agent_dir: Path, lines: list[str], times: list[float]) -> None:
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "transcript.log").write_text("".join(line + "\n" for line in lines))
    (agent_dir / "transcript.times").write_text("".join(f"{t:.3f}\n" for t in times))


def parser_candidates(agent_hint: str | None) -> list[str]:
    """The registered CLI agents (those with a transcript parser), the one whose
    `import_names` the harness's agent name contains first. A plug-in that does not load is
    passed over (logged): it cannot break an import."""
    from a2rl.agents import CLIAgent, agent_class, agents

    found: dict[str, tuple[str, ...]] = {}
    for name in agents.names():
        try:
            cls = agent_class(name)
        except A2RLError as exc:
            log.warning("agent %s left out of the parsers: %s", name, exc.message)
            continue
        if issubclass(cls, CLIAgent):
            found[name] = cls.import_names
    hint = (agent_hint or "").lower()
    hinted = next((name for name, words in found.items()
                   if hint and any(w.lower() in hint for w in words)), None)
    return [hinted, *(c for c in found if c != hinted)] if hinted else list(found)


def parse_agent_events(lines: list[str], times: list[float], agent_hint: str | None
                       ) -> tuple[str | None, list[AgentEvent]]:
    """Events of the agent's stream with a2rl's parser for its CLI: the one the harness's agent
    name points at, else whichever parser reads the most events."""
    from a2rl.agents import CLIAgent, get_agent

    pairs = list(zip(times, lines, strict=True))
    candidates = parser_candidates(agent_hint)
    best: tuple[str | None, list[AgentEvent]] = (None, [])
    for name in candidates:
        agent = get_agent(name)
        if not isinstance(agent, CLIAgent):
            continue
        try:
            events = [AgentEvent.model_validate(e, from_attributes=True)
                      for e in agent.parse_events(pairs)]
        except Exception:  # noqa: BLE001 — a parser meeting another CLI's stream may fail
            continue
        commands = sum(1 for e in events if e.kind == "command")
        if agent_hint and name == candidates[0] and commands:
            return name, events
        if commands > sum(1 for e in best[1] if e.kind == "command"):
            best = (name, events)
    return best


def write_events(agent_dir: Path, events: list[AgentEvent], parser: str | None = None,
                 lines: list[str] | None = None, times: list[float] | None = None,
                 prompt: str | None = None) -> None:
    """agent/events.jsonl, and agent/parse_report.json where the launcher's parser reports on
    what it could not read (`parse_transcript`, in launchers that have it). `prompt`, the
    first prompt the harness gave the agent, is kept in agent/prompt.md and leads the events
    as a `prompt` event."""
    from a2rl.agents import PROMPT_FILE, jsonl_line, with_prompts

    if prompt is not None:
        (agent_dir / PROMPT_FILE).write_text(prompt)
        events = with_prompts(events, [], prompt)
    (agent_dir / "events.jsonl").write_text("".join(jsonl_line(e) for e in events))
    if parser is None or lines is None or times is None:
        return
    from a2rl.agents import get_agent

    report_of = getattr(get_agent(parser), "parse_transcript", None)
    if report_of is None:
        return
    try:
        result = report_of(list(zip(times, lines, strict=True)))
    except Exception:  # noqa: BLE001 — the events are written; the report is a bonus
        return
    report = getattr(result, "report", None)
    if report is not None and hasattr(report, "model_dump_json"):
        (agent_dir / "parse_report.json").write_text(report.model_dump_json(indent=2) + "\n")


def snapshot(run_dir: Path, workspace: Path, tags: list[tuple[str, float]]) -> None:
    """One code snapshot of the imported workspace per tag (the workspace's end state: the
    harness kept no history)."""
    from a2rl.capture import CodeRecorder

    recorder = CodeRecorder(run_dir, workspace)
    for tag, elapsed in tags:
        recorder.snapshot(tag, elapsed)


@contextlib.contextmanager
def removed_on_failure(run_dir: Path) -> Iterator[Path]:
    """A run folder an import is writing: removed whole when the import fails, so no folder
    without its run.json (which `runs list`, `repair` and `analyze` would trip over) is left."""
    try:
        yield run_dir
    except BaseException:
        rmtree(run_dir)
        raise


def new_run_dir(runs_dir: Path, task: str, run_id: str, *, force: bool) -> Path:
    run_dir = runs_dir / task / run_id
    if run_dir.is_symlink():
        raise A2RLError(f"{run_dir} is a symbolic link", "remove the link; an import writes "
                        "a real folder inside the runs dir")
    if run_dir.exists():
        if not force:
            raise A2RLError(f"{run_dir} already exists",
                            "pass --force to import again over it, or --run-id to choose another id")
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    return run_dir


def find_runs(root: Path, marker: str, *, limit: int = 100_000) -> list[Path]:
    """Folders under `root` (itself included) that hold `marker`: several runs of a harness
    imported in one go (a whole results tree). No link is followed while searching."""
    if os.path.lexists(root / marker):
        return [root]
    return find_marked(root, marker, limit=limit)


def safe_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:120] or "imported"


__all__ = ["Source", "copy_text_tree", "interpolate", "new_run_dir", "parse_agent_events", "parse_time",
           "relative_times", "removed_on_failure", "safe_id", "snapshot", "strip_timestamps",
           "write_events", "write_json", "write_transcript"]
