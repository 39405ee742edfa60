"""Data source d of a training experiment (the trajectory study: curated, self-generated, mixed), from the
data its script reads and the scripts of the run that wrote that data.

Data the task gave (its data folder, a hub dataset id) and data another script derived from it
by reformatting are curated; data written by a script that samples from a model
(`model.generate`, vLLM's `LLM(…).generate`) is self-generated; both kinds together are mixed.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

_READERS = {"load_dataset", "load_from_disk", "read_json", "read_csv", "read_parquet",
            "from_json", "from_csv", "from_parquet", "read_table", "open", "load_jsonl",
            "read_jsonl"}
_WRITERS = {"save_to_disk", "to_json", "to_csv", "to_parquet", "write_text", "dump",
            "to_jsonl", "write_jsonl"}
_SAMPLERS = {"generate", "chat", "SamplingParams", "LLM", "sample"}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _chain(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return _chain(node.value) + [node.attr]
    if isinstance(node, ast.Call):
        return _chain(node.func)
    return []


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and n.value.strip()]


def data_refs(source: str) -> tuple[set[str], set[str], bool]:
    """(paths or dataset ids the script reads, paths it writes, whether it samples a model)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set(), False
    reads: set[str] = set()
    writes: set[str] = set()
    samples = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        chain = _chain(node.func)
        last = chain[-1] if chain else ""
        if last in _SAMPLERS:
            samples = True
        args = [a for a in node.args[:2]] + [kw.value for kw in node.keywords
                                            if kw.arg in ("data_files", "path", "dataset_path",
                                                          "file", "fp", "filename")]
        values = [s for a in args for s in _strings(a)]
        if last == "open":
            mode = next((s for s in _strings(node.args[1]) if s), "r") if len(node.args) > 1 else \
                next((s for kw in node.keywords if kw.arg == "mode" for s in _strings(kw.value)), "r")
            (writes if any(c in mode for c in "wa") else reads).update(values[:1])
        elif last in _READERS:
            reads.update(v for v in values if v not in ("json", "csv", "parquet", "text", "r"))
        elif last in _WRITERS:
            writes.update(values[:1])
    return reads, writes, samples


def _key(ref: str) -> str:
    return PurePosixPath(ref.strip().rstrip("/")).name


def data_source(script: str, files: dict[str, str], ran: list[str]) -> str:
    """d of the experiment that ran `script`, given the other scripts the run launched."""
    if script not in files:
        return "unknown"
    reads, _, _ = data_refs(files[script])
    if not reads:
        return "unknown"
    writers: dict[str, bool] = {}
    for other in ran:
        if other == script or other not in files or not other.endswith(".py"):
            continue
        _, writes, samples = data_refs(files[other])
        for w in writes:
            writers[_key(w)] = writers.get(_key(w), False) or samples
    kinds = set()
    for ref in reads:
        if _key(ref) in writers:
            kinds.add("self-generated" if writers[_key(ref)] else "curated")
        elif _HUB_ID.match(ref) or ref.startswith(("data", "./data", "/")) or \
                ref.endswith((".jsonl", ".json", ".parquet", ".csv", ".arrow")):
            kinds.add("curated")
    if kinds == {"curated", "self-generated"}:
        return "mixed"
    return next(iter(kinds)) if kinds else "unknown"
