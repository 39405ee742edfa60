"""Submission path rules and snapshots (the agent controls output/, symlinks included)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from a2rl.grader import SubmissionRejected, resolve_submission, snapshot_submission
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


def test_accepts_relative_and_absolute(ws: Path) -> None:
    assert resolve_submission("output/v1", ws) == (ws / "output" / "v1").resolve()
    assert resolve_submission(str(ws / "output" / "v1"), ws) == (ws / "output" / "v1").resolve()


@pytest.mark.parametrize("raw", ["../model", "output/../../ledger.jsonl", "model", "/etc",
                                 "output/../model", ""])
def test_rejects_paths_outside_output(ws: Path, raw: str) -> None:
    with pytest.raises(SubmissionRejected) as info:
        resolve_submission(raw, ws)
    assert info.value.fix


def test_rejects_symlink_to_base_model(ws: Path) -> None:
    os.symlink(ws / "model", ws / "output" / "link")
    with pytest.raises(SubmissionRejected, match="outside"):
        resolve_submission("output/link", ws)


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
        snapshot_submission(folder, ws, tmp_path / "artifacts", 1 << 30)
    assert not any(p.name.startswith(".staging") for p in (tmp_path / "artifacts").iterdir())


def test_snapshot_is_immutable_copy(ws: Path, tmp_path: Path) -> None:
    folder = ws / "output" / "v1"
    snap = snapshot_submission(folder, ws, tmp_path / "artifacts", 1 << 30)
    before = weights_hash(snap.path)
    perturb(folder)  # the agent keeps training into the same folder after submitting
    assert weights_hash(snap.path) == before == snap.artifact_hash
    assert not (snap.path / "model.safetensors").stat().st_mode & 0o222
    again = snapshot_submission(folder, ws, tmp_path / "artifacts", 1 << 30)
    assert again.artifact_hash != snap.artifact_hash


def test_identical_submission_reuses_snapshot(ws: Path, tmp_path: Path, model_copy) -> None:
    model_copy(ws / "output" / "v2", ws / "output" / "v1")
    a = snapshot_submission(ws / "output" / "v1", ws, tmp_path / "artifacts", 1 << 30)
    b = snapshot_submission(ws / "output" / "v2", ws, tmp_path / "artifacts", 1 << 30)
    assert a.path == b.path and b.reused


def test_size_limit(ws: Path, tmp_path: Path) -> None:
    with pytest.raises(SubmissionRejected, match="size limit"):
        snapshot_submission(ws / "output" / "v1", ws, tmp_path / "artifacts", 1000)


def test_adapter_only_folder_rejected_with_merge_hint(ws: Path, tmp_path: Path) -> None:
    folder = ws / "output" / "lora"
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(SubmissionRejected) as info:
        snapshot_submission(folder, ws, tmp_path / "artifacts", 1 << 30)
    assert "adapter" in info.value.message and "merge_and_unload" in (info.value.fix or "")
