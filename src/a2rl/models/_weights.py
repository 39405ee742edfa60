"""Reading safetensors headers without torch: validation and a content hash of the weights.

The hash covers tensor names, dtypes, shapes and bytes in name order, so it does not change when a
model is re-saved with other shard sizes or file metadata. Two folders with the same hash hold the
same model; that is how the grader detects a resubmitted base model and answers cache hits.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError

_CHUNK = 1 << 22
# A header is a JSON dict; anything larger than this is a corrupt or hostile file.
_MAX_HEADER = 100 * 1024 * 1024


@dataclass(frozen=True)
class TensorEntry:
    file: Path
    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int  # absolute byte offset in the file
    end: int


def read_safetensors_header(path: Path) -> list[TensorEntry]:
    """Parse and check one .safetensors file's header. Raises A2RLError when it is corrupt."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise A2RLError(f"{path.name} is not a safetensors file (truncated header)",
                            "save the model again with `save_pretrained(..., safe_serialization=True)`")
        (n,) = struct.unpack("<Q", raw)
        if n > _MAX_HEADER or 8 + n > size:
            raise A2RLError(f"{path.name} is corrupted (header length {n} for a {size}-byte file)",
                            "save the model again; the file was probably cut short while copying")
        try:
            header = json.loads(fh.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise A2RLError(f"{path.name} is corrupted (header is not JSON: {exc})",
                            "save the model again with `save_pretrained`") from exc
    if not isinstance(header, dict):
        raise A2RLError(f"{path.name} is corrupted (header is not a JSON object)",
                        "save the model again with `save_pretrained`")
    data_start = 8 + n
    entries: list[TensorEntry] = []
    data_end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = (int(x) for x in info["data_offsets"])
            entry = TensorEntry(path, name, str(info["dtype"]),
                                tuple(int(s) for s in info["shape"]),
                                data_start + begin, data_start + end)
        except (KeyError, TypeError, ValueError) as exc:
            raise A2RLError(f"{path.name} is corrupted (bad entry for tensor {name!r})",
                            "save the model again with `save_pretrained`") from exc
        if not (data_start <= entry.start <= entry.end <= size):
            raise A2RLError(f"{path.name} is corrupted (tensor {name!r} lies past the end of file)",
                            "save the model again; the file was probably cut short while copying")
        data_end = max(data_end, end)
        entries.append(entry)
    if data_start + data_end != size:
        raise A2RLError(f"{path.name} is corrupted ({size - data_start - data_end} bytes missing or extra)",
                        "save the model again; the file was probably cut short while copying")
    return entries


def weight_files(model_dir: Path) -> list[Path]:
    return sorted(p for p in model_dir.glob("*.safetensors") if p.is_file())


def weights_hash(model_dir: Path) -> str:
    """Content hash of every tensor in the folder's .safetensors files (see module docstring)."""
    files = weight_files(model_dir)
    if not files:
        raise A2RLError(f"no .safetensors weights in {model_dir}",
                        "save the model with `model.save_pretrained(dir)` (safetensors is the default)")
    entries = sorted((e for f in files for e in read_safetensors_header(f)), key=lambda e: e.name)
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise A2RLError(f"{model_dir} has the same tensor in several weight files",
                        "remove stale shards and save the model again into an empty folder")
    digest = hashlib.sha256()
    handles: dict[Path, object] = {}
    try:
        for e in entries:
            fh = handles.get(e.file)
            if fh is None:
                fh = handles[e.file] = e.file.open("rb")
            digest.update(f"{e.name}\0{e.dtype}\0{','.join(map(str, e.shape))}\0".encode())
            fh.seek(e.start)  # type: ignore[attr-defined]
            remaining = e.end - e.start
            while remaining:
                chunk = fh.read(min(_CHUNK, remaining))  # type: ignore[attr-defined]
                if not chunk:
                    raise A2RLError(f"{e.file.name} changed while it was being read",
                                    "submit a folder that is not being written to")
                digest.update(chunk)
                remaining -= len(chunk)
    finally:
        for fh in handles.values():
            fh.close()  # type: ignore[attr-defined]
    return digest.hexdigest()


def weights_bytes(model_dir: Path) -> int:
    return sum(p.stat().st_size for p in weight_files(model_dir))
