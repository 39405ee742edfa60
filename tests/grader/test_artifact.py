"""Submission path rules and snapshots (the agent controls output/, symlinks included)."""

from __future__ import annotations

import json
import os
import struct
from contextlib import contextmanager
from pathlib import Path

import pytest

from a2rl.grader import (
    SubmissionRejected,
    _artifact,
    open_submission,
    resolve_submission,
    snapshot_submission,
)
from a2rl.grader._artifact import prune_snapshot
from a2rl.models import weights_hash
from conftest import perturb


@pytest.fixture
def ws(tmp_path: Path, tiny_model: Path, model_copy) -> Path:
    root = tmp_path / "run" / "workspace"
    (root / "output").mkdir(parents=True)
    model_copy(root / "model")
    model_copy(root / "output" / "v1")
    (tmp_path / "run" / "ledger.jsonl").write_text("secret\n")
    return root


@contextmanager
def opened(ws: Path, raw: object):
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with open_submission(raw, fd, ws) as (folder_fd, rel):
            yield folder_fd, rel
    finally:
        os.close(fd)


def snap(ws: Path, raw: str, artifacts: Path, max_bytes: int = 1 << 30, **kw):
    with opened(ws, raw) as (fd, rel):
        return snapshot_submission(fd, rel, artifacts, max_bytes, **kw)


def test_accepts_relative_and_absolute(ws: Path) -> None:
    assert resolve_submission("output/v1", ws) == "output/v1"
    assert resolve_submission("./output//v1/", ws) == "output/v1"
    assert resolve_submission(str(ws / "output" / "v1"), ws) == "output/v1"


@pytest.mark.parametrize("raw", ["../model", "output/../../ledger.jsonl", "model", "/etc",
                                 "output/../model", "", "output", "/proc/self/root/etc",
                                 "output/v1/../../model", "x" * 5000, "output/\0v1"])
def test_rejects_paths_outside_output(ws: Path, raw: str) -> None:
    with pytest.raises(SubmissionRejected) as info:
        resolve_submission(raw, ws)
    assert info.value.fix


def test_rejects_symlink_to_base_model(ws: Path) -> None:
    os.symlink(ws / "model", ws / "output" / "link")
    with pytest.raises(SubmissionRejected, match="symlink"):
        resolve_submission("output/link", ws)


def test_rejects_output_replaced_by_a_symlink(ws: Path, tmp_path: Path, model_copy) -> None:
    host = tmp_path / "host-secret-folder"
    model_copy(host / "v1")
    os.rename(ws / "output", ws / "output.real")
    os.symlink(host, ws / "output")
    with pytest.raises(SubmissionRejected) as info:
        resolve_submission("output/v1", ws)
    # The reply names only what the agent sent, never where a link would have led.
    assert str(host) not in str(info.value) and str(tmp_path) not in str(info.value)


def test_rejects_non_string_and_missing(ws: Path) -> None:
    with pytest.raises(SubmissionRejected):
        resolve_submission(["output/v1"], ws)
    with pytest.raises(SubmissionRejected, match="does not exist"):
        resolve_submission("output/nope", ws)


def test_rejects_symlinked_file_pointing_outside(ws: Path, tmp_path: Path) -> None:
    folder = ws / "output" / "v1"
    (folder / "config.json").unlink()
    os.symlink(ws.parent / "ledger.jsonl", folder / "config.json")
    with pytest.raises(SubmissionRejected, match="symlink"):
        snap(ws, "output/v1", tmp_path / "artifacts")
    assert not any(p.name.startswith(".staging") for p in (tmp_path / "artifacts").iterdir())


def test_rejects_fifo_without_blocking(ws: Path, tmp_path: Path) -> None:
    (ws / "output" / "v1" / "generation_config.json").unlink()
    os.mkfifo(ws / "output" / "v1" / "generation_config.json")
    with pytest.raises(SubmissionRejected, match="regular file"):
        snap(ws, "output/v1", tmp_path / "artifacts")


def test_snapshot_is_immutable_copy(ws: Path, tmp_path: Path) -> None:
    s = snap(ws, "output/v1", tmp_path / "artifacts")
    before = weights_hash(s.path)
    perturb(ws / "output" / "v1")  # the agent keeps training into the same folder
    assert weights_hash(s.path) == before == s.artifact_hash
    assert not (s.path / "model.safetensors").stat().st_mode & 0o222
    again = snap(ws, "output/v1", tmp_path / "artifacts")
    assert again.artifact_hash != s.artifact_hash


def test_identical_submission_is_stored_once(ws: Path, tmp_path: Path, model_copy) -> None:
    model_copy(ws / "output" / "v2", ws / "output" / "v1")
    a = snap(ws, "output/v1", tmp_path / "artifacts")
    b = snap(ws, "output/v2", tmp_path / "artifacts")
    assert a.path == b.path and b.reused


def test_same_weights_other_tokenizer_share_weight_blobs(ws: Path, tmp_path: Path,
                                                         model_copy) -> None:
    model_copy(ws / "output" / "v2", ws / "output" / "v1")
    tok = ws / "output" / "v2" / "tokenizer_config.json"
    data = json.loads(tok.read_text())
    data["chat_template"] = "{{ 'EXPLOIT' }}"
    tok.write_text(json.dumps(data))
    a = snap(ws, "output/v1", tmp_path / "artifacts")
    b = snap(ws, "output/v2", tmp_path / "artifacts")
    assert a.artifact_hash == b.artifact_hash and a.content_key != b.content_key
    # Stored once per content: the weights blob is shared by both snapshots.
    assert (a.path / "model.safetensors").stat().st_ino == (b.path / "model.safetensors").stat().st_ino
    weights = (tmp_path / "artifacts" / "blobs")
    n_blobs = len(list(weights.iterdir()))
    assert prune_snapshot(tmp_path / "artifacts", a.path)
    assert (b.path / "model.safetensors").exists()
    assert len(list(weights.iterdir())) == n_blobs - 1  # only a's tokenizer_config blob went
    assert prune_snapshot(tmp_path / "artifacts", b.path)
    assert list(weights.iterdir()) == []


def test_runs_folder_stores_each_content_once_across_runs(ws: Path, tmp_path: Path) -> None:
    """Runs in one runs folder (a sweep's) share one store: the same checkpoint submitted in two
    runs is one file on disk; pruning a snapshot or removing a run frees a blob only when no
    snapshot links to it any more."""
    from a2rl.grader import STORE_DIR, collect_blobs
    from a2rl.runner.prune import all_runs, remove

    runs = tmp_path / "runs"
    dirs = [runs / "arith" / name for name in ("r1", "r2")]
    for d in dirs:
        d.mkdir(parents=True)
        (d / "run.json").write_text("{}")  # a2rl's layout: <runs>/<task>/<run id>/run.json
    a = snap(ws, "output/v1", dirs[0] / "artifacts")
    b = snap(ws, "output/v1", dirs[1] / "artifacts")
    store = runs / STORE_DIR
    weights = a.path / "model.safetensors"
    assert weights.stat().st_ino == (b.path / "model.safetensors").stat().st_ino
    assert weights.stat().st_nlink == 3  # two snapshots and the store
    assert not (dirs[0] / "artifacts" / "blobs").exists()
    n_blobs = len(list(store.iterdir()))
    assert n_blobs == len(list(a.path.iterdir())) and collect_blobs(store) == 0
    assert prune_snapshot(dirs[0] / "artifacts", a.path)
    assert len(list(store.iterdir())) == n_blobs  # b still links every one
    assert [e.path for e in all_runs(runs)] == dirs
    assert remove([dirs[1]], runs) == []
    assert not dirs[1].exists() and list(store.iterdir()) == []


def test_a_linked_store_is_never_written_or_collected_through(ws: Path, tmp_path: Path) -> None:
    """A runs folder whose `.blobs` is a symbolic link (to files a2rl does not own): snapshots
    keep their files in the run's own artifacts/blobs, and collecting deletes nothing there."""
    from a2rl.grader import STORE_DIR, collect_blobs

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("x")
    runs = tmp_path / "runs"
    run_dir = runs / "arith" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text("{}")
    (runs / STORE_DIR).symlink_to(elsewhere)
    s = snap(ws, "output/v1", run_dir / "artifacts")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious"]
    assert (s.path / "model.safetensors").stat().st_ino in {
        p.stat().st_ino for p in (run_dir / "artifacts" / "blobs").iterdir()}
    assert collect_blobs(runs / STORE_DIR) == 0 and (elsewhere / "precious").exists()


def test_size_limit(ws: Path, tmp_path: Path) -> None:
    with pytest.raises(SubmissionRejected, match="size limit"):
        snap(ws, "output/v1", tmp_path / "artifacts", 1000)


def test_free_space_is_checked_before_copying(ws: Path, tmp_path: Path) -> None:
    with pytest.raises(SubmissionRejected, match="disk") as info:
        snap(ws, "output/v1", tmp_path / "artifacts", free=lambda p: 10 << 20)
    assert "free disk space" in (info.value.fix or "")
    assert list((tmp_path / "artifacts" / "blobs").iterdir()) == []


def test_disk_filling_up_during_the_copy_is_a_rejection(ws: Path, tmp_path: Path,
                                                        monkeypatch) -> None:
    real = _artifact._copy_fd

    def full(src_fd: int, dst: Path, budget: int):
        if dst.name == "model.safetensors":
            raise OSError(28, "No space left on device")
        return real(src_fd, dst, budget)

    monkeypatch.setattr(_artifact, "_copy_fd", full)
    with pytest.raises(SubmissionRejected, match="disk filled up"):
        snap(ws, "output/v1", tmp_path / "artifacts")
    leftovers = [p.name for p in (tmp_path / "artifacts").iterdir() if p.name != "blobs"]
    assert leftovers == []


def test_huge_safetensors_header_is_refused_unparsed(ws: Path, tmp_path: Path) -> None:
    f = ws / "output" / "v1" / "model.safetensors"
    n = 80 << 20
    with f.open("wb") as fh:
        fh.write(struct.pack("<Q", n))
        fh.write(b"{" + b" " * (n - 2) + b"}")
    with pytest.raises(SubmissionRejected, match="headers are over"):
        snap(ws, "output/v1", tmp_path / "artifacts", 1 << 30)


def test_error_messages_never_name_host_paths(ws: Path, tmp_path: Path) -> None:
    (ws / "output" / "v1" / "config.json").write_text("{not json")
    with pytest.raises(SubmissionRejected) as info:
        snap(ws, "output/v1", tmp_path / "artifacts")
    text = str(info.value)
    assert "output/v1" in text and str(tmp_path) not in text and ".staging" not in text


def test_adapter_only_folder_rejected_with_merge_hint(ws: Path, tmp_path: Path) -> None:
    folder = ws / "output" / "lora"
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(SubmissionRejected) as info:
        snap(ws, "output/lora", tmp_path / "artifacts")
    assert "adapter" in info.value.message and "merge_and_unload" in (info.value.fix or "")


def test_many_shards_with_large_headers_are_refused_in_total(ws: Path, tmp_path: Path) -> None:
    folder = ws / "output" / "v1"
    n = 3 << 20  # each under the cap, together over it
    for i in range(4):
        with (folder / f"extra-{i}.safetensors").open("wb") as fh:
            fh.write(struct.pack("<Q", n) + b"{" + b" " * (n - 2) + b"}")
    with pytest.raises(SubmissionRejected, match="headers are over"):
        snap(ws, "output/v1", tmp_path / "artifacts")
