"""The report's memory of earlier builds (`<site>/.a2rl-cache/runs/`, a JSON file per run
folder), so that building the site again reads and renders only the runs that changed.

One entry per run folder, valid while the folder's fingerprint is unchanged: the size and
modification time of every record the site reads from it (FINGERPRINTED, and each evaluation's
details), the labels its sweep gave it, and the SITE_KEY of the code and policy that built it.
An entry holds what the overview pages need of the run: its table row, its submission rows, a
light copy of its records (run.json, the ledger's submissions, analysis.json without the
per-program and per-turn lists; no agent events), the charts the trajectories page shows, and
the path of the run page already written. The files are JSON (a cache that could run code would
let whoever edits a site folder run code in the next build); an unreadable or foreign one is
ignored, and its run is then read again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from a2rl.results import LoadedRun
from a2rl.schema import RunAnalysis, RunRecord, SubmissionRecord

CACHE_DIR = ".a2rl-cache"
FORMAT = 1
FINGERPRINTED = ("run.json", "ledger.jsonl", "analysis.json", "agent/events.jsonl",
                 "agent/transcript.log", "agent/transcript.times", "agent/exec.jsonl",
                 "grader.log", "summary.md", "scaffold.json", "import_manifest.json",
                 "code-history.jsonl", "evals")
"""The records a run's pages are built from (a change to any of them rebuilds the run)."""
_LIGHT_ANALYSIS_DROPS = ("commands", "turns", "iterations")
"""analysis.json lists the overview pages do not read (the run page reads the full file)."""


def fingerprint(run_dir: Path, labels: dict[str, str] | None) -> str:
    """The identity of what the site reads from `run_dir`: size and mtime of each record (not
    followed through links), of each evaluation's folder and details, and the sweep labels."""
    parts: list[str] = [json.dumps(labels, sort_keys=True)]
    for rel in FINGERPRINTED:
        parts.append(f"{rel}:{_stat(run_dir / rel)}")
    evals = run_dir / "evals"
    if evals.is_dir() and not evals.is_symlink():
        try:
            names = sorted(os.listdir(evals))
        except OSError:
            names = []
        for name in names:
            parts.append(f"evals/{name}:{_stat(evals / name / 'details.jsonl')}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _stat(path: Path) -> str:
    try:
        st = path.lstat()
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_mode}"


def site_key(policy: str) -> str:
    """The code and options that built a cache: a2rl's version, the report package's own
    files (its modules, templates and assets) and the policy. Another key: every run again."""
    from a2rl import __version__

    h = hashlib.sha256(f"{FORMAT}:{__version__}:{policy}".encode())
    root = files("a2rl.report")
    for folder in (root, root.joinpath("templates"), root.joinpath("assets")):
        for item in sorted(folder.iterdir(), key=lambda p: p.name):
            if item.is_file() and item.name.endswith((".py", ".html", ".js", ".css")):
                h.update(item.name.encode() + b"\0" + item.read_bytes())
    return h.hexdigest()


@dataclass
class Entry:
    """What the site keeps of one run between builds."""

    fingerprint: str
    run: LoadedRun
    """The run's records, light: no agent events, analysis without its long lists."""
    row: dict[str, Any]
    subs: list[dict[str, Any]]
    page: str | None = None
    """The run page (relative to the site), None for a run the policy drops."""
    figures: dict[str, str | None] = field(default_factory=dict)
    """Chart JSON of the run for the overview pages (None: nothing to draw)."""

    def to_json(self) -> dict[str, Any]:
        r = self.run
        return {"fingerprint": self.fingerprint, "path": str(r.path),
                "record": r.record.model_dump(mode="json"),
                "analysis": r.analysis.model_dump(mode="json") if r.analysis else None,
                "submissions": [s.model_dump(mode="json") for s in r.submissions],
                "problems": r.problems, "labels": r.labels, "row": self.row, "subs": self.subs,
                "page": self.page, "figures": self.figures}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Entry:
        run = LoadedRun(Path(d["path"]), RunRecord.model_validate(d["record"]),
                        RunAnalysis.model_validate(d["analysis"]) if d["analysis"] else None,
                        [SubmissionRecord.model_validate(s) for s in d["submissions"]], None,
                        list(d["problems"]), d["labels"])
        return cls(d["fingerprint"], run, d["row"], d["subs"], d["page"], d["figures"])


def light(run: LoadedRun) -> LoadedRun:
    """`run` without what the overview pages never read: its agent events and the long
    per-program, per-turn and per-iteration lists of its analysis."""
    analysis = run.analysis.model_copy(update={k: [] for k in _LIGHT_ANALYSIS_DROPS}) \
        if run.analysis else None
    return LoadedRun(run.path, run.record, analysis, run.submissions, None, run.problems,
                     run.labels)


class RunCache:
    """The entries of earlier builds of one site (a file per run folder), and the build under
    way: only the entries of runs read again are written."""

    def __init__(self, out: Path, key: str) -> None:
        self.out = out
        self.folder = out / CACHE_DIR / "runs"
        self.key = key
        self.kept: set[str] = set()

    def _file(self, run_dir: Path) -> Path:
        return self.folder / f"{hashlib.sha256(str(run_dir).encode()).hexdigest()[:32]}.json"

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None  # none yet, or damaged: the run is read again
        return data if isinstance(data, dict) else None

    def get(self, run_dir: Path, fp: str) -> Entry | None:
        """The entry of `run_dir` when it was built by this code and policy, its fingerprint
        is unchanged and its page is still on disk."""
        d = self._read(self._file(run_dir))
        if not d or d.get("key") != self.key or d.get("path") != str(run_dir) \
                or d.get("fingerprint") != fp:
            return None
        if d.get("page") and not (self.out / str(d["page"])).is_file():
            return None
        try:
            return Entry.from_json(d)
        except (KeyError, TypeError, ValueError):
            return None

    def keep(self, run_dir: Path) -> None:
        """`run_dir`'s entry stays as it is."""
        self.kept.add(self._file(run_dir).name)

    def put(self, run_dir: Path, entry: Entry) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._file(run_dir)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": self.key, **entry.to_json()}, separators=(",", ":")))
        tmp.replace(path)
        self.kept.add(path.name)

    def drop_stale(self) -> list[str]:
        """Forget the runs of earlier builds that this build did not meet (their folder is
        gone or unreadable now); returns their run pages."""
        pages: list[str] = []
        if not self.folder.is_dir():
            return pages
        for path in self.folder.iterdir():
            if path.name in self.kept:
                continue
            d = self._read(path) if path.suffix == ".json" else None
            if d and isinstance(d.get("page"), str):
                pages.append(d["page"])
            path.unlink(missing_ok=True)
        return pages
