"""Weights hashing and checkpoint validation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from a2rl import A2RLError
from a2rl.models import check_model_dir, weights_hash
from conftest import perturb


def test_hash_ignores_sharding_and_metadata(tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    model.save_pretrained(tmp_path / "sharded", max_shard_size="1MB")
    assert len(list((tmp_path / "sharded").glob("*.safetensors"))) > 1
    assert weights_hash(tmp_path / "sharded") == weights_hash(tiny_model)


def test_hash_changes_with_weights(tiny_model: Path, model_copy, tmp_path: Path) -> None:
    changed = model_copy(tmp_path / "changed")
    perturb(changed)
    assert weights_hash(changed) != weights_hash(tiny_model)


def test_valid_model_passes(tiny_model: Path) -> None:
    assert check_model_dir(tiny_model)["model_type"] == "llama"


@pytest.mark.parametrize("damage, expected", [
    ("truncate", "corrupted"),
    ("garbage_header", "corrupted"),
    ("no_config", "no config.json"),
    ("bad_config", "not valid JSON"),
    ("adapter_only", "LoRA/PEFT adapter"),
    ("bin_only", "pickle weights"),
    ("no_tokenizer", "no tokenizer"),
    ("not_a_dir", "not a model folder"),
    ("missing", "does not exist"),
])
def test_broken_checkpoints_are_named(damage: str, expected: str, model_copy,
                                      tmp_path: Path) -> None:
    d = model_copy(tmp_path / "m")
    weights = d / "model.safetensors"
    if damage == "truncate":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    elif damage == "garbage_header":
        weights.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!" + b"\0" * 64)
    elif damage == "no_config":
        (d / "config.json").unlink()
    elif damage == "bad_config":
        (d / "config.json").write_text("{not json")
    elif damage == "adapter_only":
        weights.unlink()
        (d / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
        (d / "adapter_model.safetensors").write_bytes(b"")
        (d / "adapter_model.safetensors").unlink()
    elif damage == "bin_only":
        weights.rename(d / "pytorch_model.bin")
    elif damage == "no_tokenizer":
        (d / "tokenizer.json").unlink()
    elif damage == "not_a_dir":
        d = weights
    elif damage == "missing":
        shutil.rmtree(d)
    with pytest.raises(A2RLError) as info:
        check_model_dir(d)
        weights_hash(d)
    assert expected in info.value.message
    assert info.value.fix
