"""A training's configuration (learning rate, epochs, steps, batch, LoRA rank, data size) as
its script's constants and argparse defaults say, overridden by the training arguments saved
next to the model it wrote."""

from __future__ import annotations

import ast
import json
from typing import Any

from a2rl.analysis._experiments import data_kind

_CONFIG_KEYS = {"learning_rate": "lr", "lr": "lr", "num_train_epochs": "epochs", "epochs": "epochs",
                "max_steps": "steps", "steps": "steps", "per_device_train_batch_size": "batch",
                "batch_size": "batch", "r": "lora_rank", "lora_r": "lora_rank",
                "lora_alpha": "lora_alpha", "num_generations": "num_generations", "beta": "beta",
                "max_train": "data_size", "max_length": "max_length"}
# Fields of an args file that record what was done (not what was asked for).
_DONE_KEYS = {"step": "steps", "global_step": "steps", "examples": "data_size",
              "n_examples": "data_size", "train_samples": "data_size"}
_ARGS_FILES = ("a2rl_train_args.json", "training_args.json", "train_args.json", "args.json")


def script_config(source: str) -> dict[str, Any]:
    """Constant keyword arguments and argparse defaults that name training knobs."""
    out: dict[str, Any] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg in _CONFIG_KEYS and isinstance(kw.value, ast.Constant) \
                    and isinstance(kw.value.value, int | float) and not isinstance(kw.value.value, bool):
                out.setdefault(_CONFIG_KEYS[kw.arg], kw.value.value)
        # argparse: add_argument("--lr", type=float, default=1e-4)
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            name = node.args[0].value.lstrip("-").replace("-", "_")
            default = next((kw.value for kw in node.keywords if kw.arg == "default"), None)
            if name in _CONFIG_KEYS and isinstance(default, ast.Constant) \
                    and isinstance(default.value, int | float) and not isinstance(default.value, bool):
                out.setdefault(_CONFIG_KEYS[name], default.value)
    return out


def _saved_train_args(files: dict[str, str], model_path: str) -> dict[str, Any] | None:
    """Training arguments saved next to a model folder (the first args file that parses)."""
    for name in _ARGS_FILES:
        text = files.get(f"{model_path.rstrip('/')}/{name}")
        if text:
            try:
                data = json.loads(text)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return None


def args_config(files: dict[str, str], model_path: str) -> dict[str, Any]:
    """Training arguments saved next to the submitted model (they override script defaults)."""
    data = _saved_train_args(files, model_path) or {}
    config = {_CONFIG_KEYS[k]: v for k, v in data.items()
              if k in _CONFIG_KEYS and isinstance(v, int | float) and not isinstance(v, bool)}
    if config.get("data_size") == 0:  # "0 = all rows" in the reference script: not a size
        del config["data_size"]
    # What the training did, where it says so, outranks what it was asked for: the steps it
    # reached (a time-limited run stops early) and the examples it trained on.
    for key, name in _DONE_KEYS.items():
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            config[name] = value
    return config


def saved_data_source(files: dict[str, str], model_path: str) -> str:
    """Data source of the run that wrote `model_path`, from the training arguments saved there."""
    data = _saved_train_args(files, model_path)
    if data is None:
        return "unknown"
    return data_kind([str(v) for k, v in data.items() if "data" in k.lower() and isinstance(v, str)])
