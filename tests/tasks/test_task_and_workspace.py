"""The embedded task's splits and answer format, and the workspace the agent gets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from a2rl import A2RLError
from a2rl.models import resolve_model
from a2rl.sandbox import BIND_RECORD
from a2rl.tasks import get_task, list_tasks
from a2rl.tasks.arith.task import extract_answer, extract_answer_flexible
from a2rl.workspace import build_workspace, model_copy_changes, mount_source, render_instructions
from conftest import TINY_TASK


def test_default_split_sizes_and_independence(a2rl_home: Path) -> None:
    task = get_task("arith")
    held = task.heldout_items()
    train = task.train_items()
    assert len(held) >= 100
    held_q = [e["question"] for e in held]
    train_q = [e["question"] for e in train]
    assert len(set(held_q)) == len(held_q) and len(set(train_q)) == len(train_q)
    # drawn independently (tests/tasks/test_split_independence.py): a chance overlap, measured
    assert task.heldout_in_train() == len(set(held_q) & set(train_q)) < len(held_q)


def test_heldout_seed_is_an_installation_secret(a2rl_home: Path) -> None:
    task = get_task("arith")
    secret = a2rl_home / "secrets" / "arith-heldout-seed"
    assert int(secret.read_text()) == task.params.heldout_seed
    assert secret.stat().st_mode & 0o077 == 0
    assert get_task("arith").fingerprint() == task.fingerprint()  # stable per installation
    fixed = get_task("arith", {"heldout_seed": 7})
    assert fixed.heldout_items() == get_task("arith", {"heldout_seed": 7}).heldout_items()
    assert fixed.fingerprint() != task.fingerprint()


def test_bad_task_options() -> None:
    with pytest.raises(A2RLError, match="bad options"):
        get_task("arith", {"n_heldout": 0})
    with pytest.raises(A2RLError, match="bad options"):
        get_task("arith", {"no_such_option": 1})
    with pytest.raises(A2RLError, match="unknown task"):
        get_task("gsm9k")
    assert "arith" in list_tasks()


@pytest.mark.parametrize("completion, expected", [
    ("42", "42"), (" 42.\n", "42"), ("42\nbecause", "42"), ("<answer>17</answer>", "17"),
    ("The answer is <answer> -3 </answer>.", "-3"), ("", ""), ("<answer>5", "<answer>5"),
])
def test_extract_answer(completion: str, expected: str) -> None:
    assert extract_answer(completion) == expected


@pytest.mark.parametrize("completion, expected", [
    ("19", "19"), ("12 + 7 = 19", "19"), ("The answer is -5.", "-5"), ("none", "none"),
    ("3.5 apples", "3.5"), ("<answer>4</answer> not 5", "4"),
    # a hedge or a rejection between numbers gives no answer (certify's hedges-negations)
    ("either 19 or 20", "either 19 or 20"), ("Not 19; it was 20", "Not 19; it was 20"),
    ("20 rather than 19", "20 rather than 19"), ("Probably 19, possibly 20", "Probably 19, possibly 20"),
    ("589 + 85 is 674", "674"),
])
def test_extract_answer_flexible(completion: str, expected: str) -> None:
    assert extract_answer_flexible(completion) == expected


def test_scoring_is_exact_after_extraction(a2rl_home: Path) -> None:
    task = get_task("arith", TINY_TASK)
    item = task.heldout_items()[0]
    ans = item["answer"]
    exact = task.score_completion(item, ans)
    assert exact.score == 1.0 and exact.metrics == {"strict": 1.0, "flexible": 1.0}
    sentence = task.score_completion(item, f"The answer is {ans}.")
    assert sentence.score == 1.0 and sentence.metrics["strict"] == 0.0
    assert task.score_completion(item, f"{ans}0").score == 0.0
    assert task.score_completion(item, f"{ans} or maybe 1000").score == 0.0


def test_workspace_layout_and_isolation(tmp_path: Path, tiny_model: Path) -> None:
    task = get_task("arith", TINY_TASK)
    base = resolve_model(str(tiny_model))
    ws = build_workspace(tmp_path / "run" / "workspace", task=task, base=base, mode="free",
                         budget_s=3600, description=task.description(chat_preview=None))
    names = sorted(p.name for p in ws.root.iterdir())
    assert names == ["code", "data", "description.md", "instructions.md", "model", "output",
                     "timer.sh"]
    # a bind point: nothing copied; the sandbox mounts the model folder itself there read-only
    assert [p.name for p in ws.model_dir.iterdir()] == [BIND_RECORD]
    assert ws.model_files_dir == tiny_model.resolve()
    assert not ws.model_dir.stat().st_mode & 0o222
    # nothing held out anywhere in the workspace
    blob = "".join(p.read_text(errors="ignore") for p in ws.root.rglob("*")
                   if p.is_file() and ws.model_dir not in p.parents)
    # (a held-out question may occur in train by chance: the splits are drawn independently)
    train_q = {json.loads(line)["question"] for line in (ws.data_dir / "train.jsonl").open()}
    for item in task.heldout_items():
        assert item["question"] in train_q or item["question"] not in blob
    assert str(task.params.heldout_seed) not in blob
    rows = [json.loads(line) for line in (ws.data_dir / "train.jsonl").open()]
    assert len(rows) == TINY_TASK["n_train"]
    assert set(rows[0]) == {"id", "question", "answer", "prompt"}


def test_unsandboxed_workspace_copies_the_model_and_notices_changes(tmp_path: Path,
                                                                    tiny_model: Path) -> None:
    """--sandbox none cannot mount: model/ is a read-only copy (never a link into the cache),
    compared with the base model at the close."""
    task = get_task("arith", TINY_TASK)
    base = resolve_model(str(tiny_model))
    ws = build_workspace(tmp_path / "ws", task=task, base=base, mode="free", budget_s=60,
                         description="d", mount_model=False)
    assert ws.model_files_dir == ws.model_dir
    for f in ws.model_dir.iterdir():
        assert not f.is_symlink()
        assert f.stat().st_ino != (tiny_model / f.name).stat().st_ino
        assert not os.access(f, os.W_OK) or os.geteuid() == 0
        assert not f.stat().st_mode & 0o222
    assert not ws.model_dir.stat().st_mode & 0o222
    assert model_copy_changes(ws.model_dir, base) == []
    # an unsandboxed agent may still write to it (file modes only): each change is named
    (ws.model_dir).chmod(0o755)
    cfg = ws.model_dir / "config.json"
    cfg.chmod(0o644)
    cfg.write_text(cfg.read_text().replace("}", ', "x": 1}', 1))
    weights = ws.model_dir / "model.safetensors"
    weights.chmod(0o644)
    with weights.open("r+b") as fh:
        fh.seek(-4, os.SEEK_END)
        fh.write(b"\x01\x02\x03\x04")
    (ws.model_dir / "extra.txt").write_text("x")
    assert model_copy_changes(ws.model_dir, base) == ["extra.txt", "config.json"]
    cfg.write_text((tiny_model / "config.json").read_text())
    (ws.model_dir / "extra.txt").unlink()
    assert model_copy_changes(ws.model_dir, base) == ["weights"]
    (ws.model_dir / "model.safetensors").unlink()
    (ws.model_dir / "model.safetensors").symlink_to(tiny_model / "model.safetensors")
    assert model_copy_changes(ws.model_dir, base) == ["model.safetensors"]


def test_hub_snapshot_and_hidden_files_are_gathered_once_into_plain_files(tmp_path: Path, tiny_model: Path,
                                                       a2rl_home: Path) -> None:
    """A hub snapshot is a folder of links into a blob store (dangling inside a sandbox): its
    files are gathered once per model into a folder of hard links (no bytes copied); so are a
    folder's with hidden files, which the agent is not shown."""
    blobs, snap = tmp_path / "blobs", tmp_path / "snapshots" / "rev"
    blobs.mkdir()
    snap.mkdir(parents=True)
    for f in tiny_model.iterdir():
        (blobs / f.name).write_bytes(f.read_bytes())
        (snap / f.name).symlink_to(Path("../../blobs") / f.name)
    (snap / "sub").mkdir()  # sub-folders are not part of the model the agent sees
    base = resolve_model(str(snap))
    view = mount_source(base)
    assert view.is_relative_to(a2rl_home) and view != snap
    assert sorted(p.name for p in view.iterdir()) == sorted(p.name for p in tiny_model.iterdir())
    for p in view.iterdir():
        assert not p.is_symlink() and p.stat().st_ino == (blobs / p.name).stat().st_ino
    assert mount_source(base) == view  # once per model
    assert mount_source(resolve_model(str(tiny_model))) == tiny_model.resolve()
    # hidden files (an embedded cache's marker) are not shown either: gathered without them
    cache = tmp_path / "cache"
    cache.mkdir()
    for f in tiny_model.iterdir():
        os.link(f, cache / f.name)
    (cache / ".complete").write_text("x")
    shown = mount_source(resolve_model(str(cache)))
    assert shown != cache and sorted(p.name for p in shown.iterdir()) == sorted(
        p.name for p in tiny_model.iterdir())


def test_instructions_per_mode() -> None:
    free = render_instructions("free", budget_s=5400, workspace=Path("/w"))
    sft = render_instructions("sft-only", budget_s=5400, workspace=Path("/w"))
    rl = render_instructions("rl-oriented", budget_s=5400, workspace=Path("/w"))
    assert "1 h 30 min" in free and "$A2RL_GRADER_URL/submit" in free
    assert "not allowed" in sft and "GRPO" in rl and free != sft != rl
    with pytest.raises(A2RLError, match="unknown mode"):
        render_instructions("yolo", budget_s=1, workspace=Path("/w"))


def test_instructions_state_the_machine_and_non_blocking_submit(monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    from a2rl.workspace import _machine

    monkeypatch.setattr(_machine, "_gpus", lambda: ["NVIDIA H200, 143771 MiB"])
    text = render_instructions("free", budget_s=600, workspace=Path("/w"))
    assert "- GPUs: 1 (NVIDIA H200, 143771 MiB)" in text and "- CPU cores: " in text
    assert '"wait": false' in text and "$A2RL_GRADER_URL/submissions/<id>" in text
    monkeypatch.setattr(_machine, "_gpus", lambda: [])
    assert "GPUs: none" in render_instructions("free", budget_s=600, workspace=Path("/w"))


def test_description_shows_the_rendered_prompt(tiny_model: Path) -> None:
    from a2rl.inference._chat import load_tokenizer, render_chat

    tok = load_tokenizer(tiny_model)
    task = get_task("arith", TINY_TASK)
    text = task.description(chat_preview=lambda m: render_chat(tok, m))
    first = task.train_items()[0]
    assert "<|im_start|>user" in text and first["question"] in text
    assert "greedy" in text and "generation_config.json" in text


def test_missing_optional_dependency_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.tasks._core import registry as _registry

    monkeypatch.setitem(_registry.BUILTIN_TASKS, "needs-extra", "a2rl_no_such_extra_pkg:Task")
    with pytest.raises(A2RLError) as info:
        get_task("needs-extra")
    assert "not installed" in info.value.message and "a2rl_no_such_extra_pkg" in info.value.message
    assert "pip install" in (info.value.fix or "")
