"""What of a run the site publishes: its record files as `.txt` copies (only the known record
files, and of an imported run only those its import manifest lists) and the text files of its
code snapshots. Nothing links into a run directory, so no file the agent left is opened as a
page; every copy is read without following links and cut at a bound."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2rl.report._html import _git_blob, _git_files, _read_record, clock
from a2rl.results import relpath

if TYPE_CHECKING:
    from a2rl.results import LoadedRun

MAX_SNAPSHOT_FILES = 200
MAX_RECORD_BYTES = 4 << 20
"""A record file is copied into the site up to this size (the rest is cut, and the copy says so)."""
RECORD_FILES = (("run.json", "run record"), ("analysis.json", "analysis"),
                ("ledger.jsonl", "ledger"), ("summary.md", "summary.md"),
                ("agent/transcript.log", "transcript"), ("agent/events.jsonl", "agent events"),
                ("agent/exec.jsonl", "exec trace"), ("grader.log", "grader log"),
                ("code-history.jsonl", "snapshot index"), ("scaffold.json", "scaffold record"))
"""The run records a run page publishes (as text copies); nothing else of a run directory."""
IMPORT_MANIFEST = "import_manifest.json"
"""Written by `a2rl.importers` into an imported run: its `files` are the files the import wrote."""


def publishable(r: LoadedRun) -> list[str]:
    """The record files of `r` the site may publish: the known record names, and of an
    imported run only those its import manifest lists (none when the manifest is
    unreadable) and the analysis `a2rl analyze` wrote after the import."""
    names = [rel for rel, _ in RECORD_FILES]
    if r.record.imported is None:
        return names
    raw = _read_record(r.path, IMPORT_MANIFEST, MAX_RECORD_BYTES)
    try:
        listed = json.loads(raw or b"").get("files", [])
    except (ValueError, AttributeError):
        listed = []
    allowed = {f for f in listed if isinstance(f, str)} if isinstance(listed, list) else set()
    allowed.add("analysis.json")
    return [rel for rel in names if rel in allowed] + (
        [IMPORT_MANIFEST] if raw is not None else [])


def publish_records(r: LoadedRun, folder: Path, here: Path) -> list[str]:
    """Copy the run's record files into `folder`/records as `.txt` (regular files only, never
    through a link, cut at MAX_RECORD_BYTES) and return links to the copies from `here`."""
    from markupsafe import escape

    labels = dict(RECORD_FILES) | {IMPORT_MANIFEST: "import manifest"}
    links = []
    for rel in publishable(r):
        data = _read_record(r.path, rel, MAX_RECORD_BYTES + 1)
        if data is None:
            continue
        if len(data) > MAX_RECORD_BYTES:
            data = data[:MAX_RECORD_BYTES] + (
                f"\n[cut at {MAX_RECORD_BYTES} bytes; the whole file is {rel} in the run "
                "directory]\n").encode()
        target = folder / "records" / (rel.replace("/", "__") + ".txt")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        links.append(f'<a href="{escape(relpath(target, here))}">{escape(labels[rel])}</a>')
    return links


def export_snapshots(r: LoadedRun, folder: Path, here: Path) -> list[list[Any]]:
    """Copy the text files of each submission's and the final code snapshot out of the run's
    shadow repository into `folder` (as .txt), and list them with links from `here`."""
    from markupsafe import Markup, escape

    from a2rl.capture import read_snapshots

    git_dir = r.path / "code-history.git"
    try:
        snaps = read_snapshots(r.path)
    except ValueError:
        return []
    if not snaps or not git_dir.is_dir() or shutil.which("git") is None:
        return []
    rows: list[list[Any]] = []
    for snap in snaps:
        if not (snap.tag.startswith("s") or snap.tag == "final"):
            continue  # periodic snapshots stay in the repository
        files = _git_files(git_dir, snap.commit)[:MAX_SNAPSHOT_FILES]
        links = []
        for name in files:
            blob = _git_blob(git_dir, snap.commit, name)
            if blob is None:
                continue
            safe = "/".join(_safe_part(part) for part in name.split("/"))
            target = folder / _safe_part(snap.tag) / f"{safe}.txt"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)
            links.append(f'<a href="{escape(relpath(target, here))}">{escape(name)}</a>')
        rows.append([snap.tag, clock(snap.elapsed_s), Markup("<br>".join(links) or "—"),
                     ", ".join(snap.changed[:20])])
    return rows


def _safe_part(part: str) -> str:
    """A path component that stays inside its folder: odd characters and `.`/`..` replaced."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", part)[:120]
    return "_" if cleaned in ("", ".", "..") else cleaned
