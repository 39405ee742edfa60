"""Weight lineage: is a scored submission a descendant of the base model? Measured on the
weights themselves (the grader's snapshot of the submission and the base checkpoint): the
architecture (config.json's model_type, hidden size, layers), the tokenizer (vocabulary and a
hash of its files) and a per-tensor distance (relative L2 distance and cosine of each tensor
against the base's). Fine-tuning moves weights a little (LoRA merges a low-rank delta into a
few matrices, full fine-tuning nudges all of them): their cosine to the base stays near 1. A
re-initialised model of the same architecture, or another model's weights, has matrices
unrelated to the base's: cosine near 0."""

from __future__ import annotations

import contextlib
import hashlib
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ARCH_KEYS = ("model_type", "hidden_size", "num_hidden_layers", "vocab_size")
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer.model",
                   "sentencepiece.bpe.model", "vocab.txt")
UNCHANGED_REL = 1e-3
"""A tensor whose relative L2 distance to the base's is under this is counted as unchanged."""
SUBSTITUTED_COSINE = 0.5
"""Median cosine (over the matrices) under which a checkpoint is not a descendant of the base:
fine-tuning keeps each matrix's cosine to its initial value near 1 (0.99+ for real runs; noise
of half a weight's own size still gives ~0.9), while independent random matrices have ~0."""


def tensor_index(folder: Path) -> dict[str, tuple[Path, str]]:
    """Every tensor name of a checkpoint folder's safetensors files, with the file holding it."""
    from safetensors import safe_open

    found: dict[str, tuple[Path, str]] = {}
    for f in sorted(folder.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as fh:
            found.update({k: (f, k) for k in fh.keys()})  # noqa: SIM118
    return found


def load_pair(a: tuple[Path, str], b: tuple[Path, str]) -> tuple[Any, Any]:
    """One tensor of each of two checkpoints (`tensor_index` entries), loaded one pair at a
    time so that two large models are never held in memory at once."""
    with _Files() as files:
        return files.tensor(a), files.tensor(b)


class _Files(contextlib.ExitStack):
    """safetensors files opened once each, for reading many tensors from them."""

    def __init__(self) -> None:
        super().__init__()
        self._open: dict[Path, Any] = {}

    def tensor(self, entry: tuple[Path, str]) -> Any:
        from safetensors import safe_open

        path, name = entry
        if path not in self._open:
            self._open[path] = self.enter_context(safe_open(str(path), framework="pt"))
        return self._open[path].get_tensor(name)


def _config(folder: Path) -> dict[str, Any]:
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(cfg, dict):
        return {}
    text = cfg.get("text_config")
    text = text if isinstance(text, dict) else {}
    return {k: cfg.get(k, text.get(k)) for k in ARCH_KEYS}


def _vocabulary(folder: Path) -> int | None:
    """Size of the tokenizer's vocabulary (tokenizer.json's model vocab plus added tokens)."""
    try:
        data = json.loads((folder / "tokenizer.json").read_text())
        vocab = data["model"]["vocab"]
        return len(vocab) + len(data.get("added_tokens") or [])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def tokenizer_hash(folder: Path) -> str | None:
    """sha256 over the tokenizer's vocabulary files present (not its config, whose chat
    template a fine-tune may legitimately change)."""
    h = hashlib.sha256()
    seen = False
    for name in TOKENIZER_FILES:
        p = folder / name
        if p.is_file() and not p.is_symlink():
            h.update(name.encode() + b"\0" + p.read_bytes())
            seen = True
    return h.hexdigest()[:16] if seen else None


@dataclass
class Lineage:
    """How a checkpoint relates to the base model."""

    architecture: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Config keys that differ: key → (submission's, base's)."""
    tokenizer_same: bool | None = None
    """The tokenizer's vocabulary files hash the same (None: no vocabulary file on one side)."""
    vocab: tuple[int | None, int | None] = (None, None)
    tensors_compared: int = 0
    missing: int = 0
    """Base tensors the submission lacks or holds with another shape."""
    extra: int = 0
    """Submission tensors the base does not have."""
    median_rel_l2: float | None = None
    max_rel_l2: float | None = None
    median_cosine: float | None = None
    """Over the matrices (tensors of two or more dimensions)."""
    min_cosine: float | None = None
    unchanged_share: float | None = None
    """Share of compared tensors within UNCHANGED_REL of the base's."""

    @property
    def substituted(self) -> bool:
        if self.architecture or self.tensors_compared == 0:
            return True
        if self.missing > self.tensors_compared:
            return True
        return self.median_cosine is not None and self.median_cosine < SUBSTITUTED_COSINE

    def describe(self) -> str:
        parts = []
        if self.architecture:
            parts.append("architecture differs: " + ", ".join(
                f"{k} {a!r} vs base {b!r}" for k, a, b in
                ((k, *v) for k, v in sorted(self.architecture.items()))))
        if self.tokenizer_same is not None:
            parts.append("tokenizer " + ("same as the base's" if self.tokenizer_same else
                                         f"differs (vocabulary {self.vocab[0]} vs base "
                                         f"{self.vocab[1]})"))
        parts.append(f"{self.tensors_compared} tensors compared, {self.missing} of the base's "
                     f"missing or reshaped, {self.extra} extra")
        if self.median_rel_l2 is not None:
            parts.append(f"relative L2 distance median {self.median_rel_l2:.3g}, max "
                         f"{self.max_rel_l2:.3g}; cosine of matrices median "
                         f"{self.median_cosine:.3g}, min {self.min_cosine:.3g}; "
                         f"{self.unchanged_share:.0%} of tensors nearly unchanged (rel. < {UNCHANGED_REL:g})")
        return "; ".join(parts)


def lineage(folder: Path, base: Path) -> Lineage:
    """Compare a checkpoint folder with the base model's, tensor by tensor."""
    out = Lineage()
    ours_cfg, base_cfg = _config(folder), _config(base)
    out.architecture = {k: (ours_cfg.get(k), base_cfg.get(k)) for k in ARCH_KEYS
                        if ours_cfg.get(k) != base_cfg.get(k)}
    ours_tok, base_tok = tokenizer_hash(folder), tokenizer_hash(base)
    if ours_tok and base_tok:
        out.tokenizer_same = ours_tok == base_tok
    out.vocab = (_vocabulary(folder), _vocabulary(base))
    ours, theirs = tensor_index(folder), tensor_index(base)
    out.extra = len(ours.keys() - theirs.keys())
    rels: list[float] = []
    cosines: list[float] = []
    with _Files() as files:
        for name in sorted(theirs):
            if name not in ours:
                out.missing += 1
                continue
            _compare(files.tensor(ours[name]), files.tensor(theirs[name]), out, rels, cosines)
    out.tensors_compared = len(rels)
    if rels:
        out.median_rel_l2 = statistics.median(rels)
        out.max_rel_l2 = max(rels)
        out.unchanged_share = sum(r < UNCHANGED_REL for r in rels) / len(rels)
    if cosines:
        out.median_cosine = statistics.median(cosines)
        out.min_cosine = min(cosines)
    return out


def _compare(a: Any, b: Any, out: Lineage, rels: list[float], cosines: list[float]) -> None:
    """One tensor against the base's: its relative L2 distance, and its cosine for a matrix."""
    import torch

    if a.shape != b.shape:
        out.missing += 1
        return
    if not (a.is_floating_point() and b.is_floating_point()) or not a.numel():
        return
    matrix = a.dim() >= 2
    a, b = a.to(torch.float32).flatten(), b.to(torch.float32).flatten()
    base_norm = float(b.norm())
    diff = float((a - b).norm())
    rels.append(diff / base_norm if base_norm else (0.0 if diff == 0 else float("inf")))
    if matrix:
        denom = float(a.norm()) * base_norm
        cosines.append(float(a @ b) / denom if denom else (1.0 if diff == 0 else 0.0))
