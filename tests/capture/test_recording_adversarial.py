"""The code-history recorder and the artifact index against a hostile workspace: links swapped in
during a snapshot, links to host secrets and to /dev/zero, fifos, folders replaced by links."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from a2rl.capture import ArtifactIndexer, CodeRecorder, _snapshots, snapshot_files


@pytest.fixture
def ws_and_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    run = tmp_path / "run"
    ws = run / "workspace"
    (ws / "output").mkdir(parents=True)
    (ws / "train.py").write_text("print('train')\n")
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-SECRET-TOKEN\n")
    return run, ws, secret


def _all_text(run: Path, tag: str) -> str:
    commit = json.loads((run / "code-history.jsonl").read_text().splitlines()[-1])["commit"]
    return "\n".join(f"{k}:{v}" for k, v in snapshot_files(run, commit).items())


def test_links_are_recorded_as_links_never_followed(ws_and_run) -> None:
    run, ws, secret = ws_and_run
    os.symlink(secret, ws / "notes.txt")
    os.symlink("/dev/zero", ws / "zeros.bin")
    os.symlink(secret.parent, ws / "hostdir")
    os.mkfifo(ws / "pipe")
    rec = CodeRecorder(run, ws, max_file_bytes=1 << 16)
    done = threading.Event()
    threading.Thread(target=lambda: (rec.snapshot("t0001", 1.0), done.set()), daemon=True).start()
    assert done.wait(60), "the snapshot blocked (fifo or /dev/zero read)"
    text = _all_text(run, "t0001")
    assert "HOST-SECRET-TOKEN" not in text and "train.py:print('train')" in text
    assert str(secret) in text  # the link's own target text is what is kept


def test_symlink_swapped_in_after_the_listing_is_not_followed(ws_and_run, monkeypatch) -> None:
    run, ws, secret = ws_and_run
    (ws / "config.py").write_text("x = 1\n")
    real_open = os.open

    def swap_then_open(path, flags, mode=0o777, *, dir_fd=None):
        if path == "config.py" and dir_fd is not None:
            os.unlink(ws / "config.py")
            os.symlink(secret, ws / "config.py")
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(_snapshots.os, "open", swap_then_open)
    CodeRecorder(run, ws).snapshot("t0001", 1.0)
    monkeypatch.undo()
    assert "HOST-SECRET-TOKEN" not in _all_text(run, "t0001")


def test_folder_swapped_for_a_link_during_the_walk_stays_inside(ws_and_run, monkeypatch) -> None:
    run, ws, secret = ws_and_run
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("a = 1\n")
    (secret.parent / "src-evil").mkdir()
    (secret.parent / "src-evil" / "a.py").write_text("HOST-SECRET-TOKEN\n")
    real_capture = _snapshots.CodeRecorder._capture
    swapped = []

    def capture(self, dir_fd, name, rel, *rest):
        if name == "train.py" and not swapped:
            os.rename(ws / "src", ws / "src-old")
            os.symlink(secret.parent / "src-evil", ws / "src")
            swapped.append(1)
        return real_capture(self, dir_fd, name, rel, *rest)

    monkeypatch.setattr(_snapshots.CodeRecorder, "_capture", capture)
    CodeRecorder(run, ws).snapshot("t0001", 1.0)
    assert swapped and "HOST-SECRET-TOKEN" not in _all_text(run, "t0001")


def test_growing_file_is_cut_at_the_cap(ws_and_run) -> None:
    run, ws, _ = ws_and_run
    (ws / "log.txt").write_bytes(b"x" * 5000)
    CodeRecorder(run, ws, max_file_bytes=1000).snapshot("t0001", 1.0)
    commit = json.loads((run / "code-history.jsonl").read_text())["commit"]
    files = snapshot_files(run, commit)
    assert "log.txt" not in files and "log.txt" in files["LARGE_FILES.json"]


def test_artifact_index_never_reads_through_links(ws_and_run, tiny_model, model_copy) -> None:
    run, ws, secret = ws_and_run
    model_copy(ws / "output" / "real")
    secret.write_text(json.dumps({"model": "HOST-SECRET-TOKEN"}))
    os.symlink(secret, ws / "output" / "real" / "training_args.json")
    os.symlink(tiny_model, ws / "output" / "linked")
    entries = ArtifactIndexer(run, ws).scan(1.0)
    assert [e.path for e in entries] == []  # the folder with a link is skipped, and so is the link
    index = run / "artifact-index.jsonl"
    assert not index.exists() or "HOST-SECRET-TOKEN" not in index.read_text()
    (ws / "output" / "real" / "training_args.json").unlink()
    (ws / "output" / "real" / "training_args.json").write_text('{"model": "model"}')
    (entry,) = ArtifactIndexer(run, ws).scan(2.0)
    assert entry.path == "output/real" and entry.parent == "model"


def test_artifact_index_does_not_walk_a_symlinked_output(ws_and_run, tiny_model, model_copy,
                                                         tmp_path) -> None:
    run, ws, secret = ws_and_run
    host = tmp_path / "host-models"
    model_copy(host / "m")
    os.rmdir(ws / "output")
    os.symlink(host, ws / "output")
    assert ArtifactIndexer(run, ws).scan(1.0) == []
    CodeRecorder(run, ws).snapshot("t0001", 1.0)
    assert "output/m" not in _all_text(run, "t0001")
