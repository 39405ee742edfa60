"""Is this folder a complete Hugging Face causal-LM checkpoint the evaluator can load?"""

from __future__ import annotations

import json
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.models._weights import read_safetensors_header, weight_files

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")
_MERGE_FIX = (
    "merge the adapter into the base model and save a full model: "
    "`model = PeftModel.from_pretrained(base, adapter_dir).merge_and_unload(); "
    "model.save_pretrained(out); tokenizer.save_pretrained(out)`"
)


def check_model_dir(path: Path) -> dict:
    """Validate `path`; return its parsed config.json. Raises A2RLError naming the problem."""
    if not path.exists():
        raise A2RLError(f"model folder {path} does not exist", "check the path")
    if not path.is_dir():
        raise A2RLError(f"{path} is a file, not a model folder",
                        "pass the folder written by `save_pretrained`, not a single file")
    names = {p.name for p in path.iterdir()}
    has_weights = bool(weight_files(path))
    if "adapter_config.json" in names and not has_weights or (
        not has_weights and any(n.startswith("adapter_model") for n in names)
    ):
        raise A2RLError(f"{path} holds a LoRA/PEFT adapter, not a full model", _MERGE_FIX)
    if "config.json" not in names:
        raise A2RLError(f"{path} has no config.json, so it is not a model folder",
                        "save the model with `model.save_pretrained(dir)`")
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise A2RLError(f"{path}/config.json is not valid JSON ({exc})",
                        "save the model again with `model.save_pretrained(dir)`") from exc
    if not isinstance(config, dict) or "model_type" not in config:
        raise A2RLError(f"{path}/config.json has no model_type",
                        "save the model again with `model.save_pretrained(dir)`")
    if not has_weights:
        if any(n.endswith((".bin", ".pt", ".pth", ".ckpt")) for n in names):
            raise A2RLError(f"{path} has only pickle weights (.bin/.pt); a2rl loads safetensors only",
                            "save with `model.save_pretrained(dir, safe_serialization=True)`")
        raise A2RLError(f"{path} has config.json but no *.safetensors weights",
                        "save the model with `model.save_pretrained(dir)`")
    for f in weight_files(path):
        read_safetensors_header(f)
    if not any(n in names for n in _TOKENIZER_FILES):
        raise A2RLError(f"{path} has no tokenizer files (tokenizer.json)",
                        "also save the tokenizer: `tokenizer.save_pretrained(dir)`")
    return config
