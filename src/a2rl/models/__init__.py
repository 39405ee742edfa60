"""Base models: resolving `--model`, validating checkpoints, hashing their weights, copying
their files (clones where the file system can)."""

from a2rl.models._clone import FICLONE, CopyMethod, clone_fd, clone_or_copy
from a2rl.models._embedded import EMBEDDED_MODELS, materialize_embedded
from a2rl.models._resolve import DEFAULT_MODEL, ResolvedModel, resolve_model
from a2rl.models._validate import check_model_dir
from a2rl.models._weights import weights_bytes, weights_hash

__all__ = [
    "DEFAULT_MODEL",
    "FICLONE",
    "CopyMethod",
    "EMBEDDED_MODELS",
    "ResolvedModel",
    "check_model_dir",
    "clone_fd",
    "clone_or_copy",
    "materialize_embedded",
    "resolve_model",
    "weights_bytes",
    "weights_hash",
]
