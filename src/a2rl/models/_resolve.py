"""Turn a `--model` argument (alias, local folder or hub id) into a checked local folder + hash."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl.models._embedded import EMBEDDED_MODELS, materialize_embedded
from a2rl.models._validate import check_model_dir
from a2rl.models._weights import weights_hash

DEFAULT_MODEL = "smollm2-135m"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
_HUB_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "*.txt", "*.model", "tokenizer*"]


@dataclass(frozen=True)
class ResolvedModel:
    spec: str
    """What the user passed to --model."""
    source: Literal["embedded", "local", "hub"]
    path: Path
    """A complete local checkpoint folder (never written to by a2rl after resolution)."""
    content_hash: str
    """Hash of the tensors (see a2rl.models.weights_hash)."""
    model_type: str


def resolve_model(spec: str) -> ResolvedModel:
    if spec in EMBEDDED_MODELS:
        path, source = materialize_embedded(spec), "embedded"
    elif Path(spec).expanduser().exists():
        path, source = Path(spec).expanduser().resolve(), "local"
    elif spec.startswith((".", "/", "~")) or not _HUB_ID.match(spec):
        known = ", ".join(sorted(EMBEDDED_MODELS))
        raise A2RLError(f"unknown model {spec!r}: not an embedded alias, a folder or a hub id",
                        f"use one of [{known}], a local Hugging Face folder, or an id like "
                        "Qwen/Qwen2.5-7B-Instruct")
    else:
        path, source = _download_from_hub(spec), "hub"
    config = check_model_dir(path)
    return ResolvedModel(spec=spec, source=source, path=path,  # type: ignore[arg-type]
                         content_hash=weights_hash(path), model_type=str(config["model_type"]))


def _download_from_hub(repo_id: str) -> Path:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, allow_patterns=_HUB_PATTERNS,
                                      cache_dir=str(cache_dir("hub"))))
    except Exception as exc:  # the hub raises many types: offline, gated, missing repo
        raise A2RLError(f"could not download {repo_id!r} from the Hugging Face Hub: {exc}",
                        "check the id and the network (and HF_TOKEN for gated models), or "
                        "download it elsewhere and pass the local folder with --model") from exc
