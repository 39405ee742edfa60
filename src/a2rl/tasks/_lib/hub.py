"""Dataset files from the Hugging Face Hub, shared by the tasks whose real data lives there.

Offline (HF_HUB_OFFLINE) means cache only, without the library's network retries; any failure
becomes an A2RLError that says how to cache the file or which offline source to use instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from a2rl._errors import A2RLError


def hf_offline() -> bool:
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}
    return env or bool(constants.HF_HUB_OFFLINE)


def hf_cache_dir() -> str | None:
    """$HF_HUB_CACHE read now (huggingface_hub reads it once at import)."""
    return os.environ.get("HF_HUB_CACHE") or None


def hub_dataset_file(repo: str, filename: str, what: str, *, cache_only: bool = False) -> Path:
    """`filename` of dataset `repo`, downloaded or from the cache."""
    from huggingface_hub import hf_hub_download

    offline = cache_only or hf_offline()
    try:
        return Path(hf_hub_download(repo, filename, repo_type="dataset", local_files_only=offline,
                                    cache_dir=hf_cache_dir()))
    except Exception as exc:
        why = "offline (HF_HUB_OFFLINE) and not in the local cache" if offline else type(exc).__name__
        raise A2RLError(
            f"cannot load {what} ({repo}/{filename}) from the Hugging Face Hub: {why}",
            f"run once with network access to cache it (huggingface-cli download --repo-type dataset "
            f"{repo} {filename}), or use the offline set: --task-opt source=offline") from exc
