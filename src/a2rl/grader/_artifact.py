"""Submission path rules and the snapshot that is evaluated.

The agent controls everything under `workspace/output/` (symlinks, fifos, hard links, files that
change while they are read) and may even replace `output/` itself. So nothing here resolves a path
on the host: the workspace folder is opened once (pinned) and every later open walks from that
descriptor one component at a time with O_NOFOLLOW, `..` and absolute paths outside the workspace
are refused before anything is opened, and each file is checked with fstat on the descriptor that
is then read (no check-then-open window). Error messages name only the path the agent sent.

Each file is snapshotted as a copy-on-write clone where the file system can make one (XFS with
reflink, btrfs: no data written) and as a byte copy elsewhere; never as a hard link to the agent's
file, which the agent could rewrite after submitting. The evaluation runs on the snapshot, which
lives outside the workspace and cannot change under it.

Files are stored once per content for the whole runs folder (a sweep's included): the store
`<runs dir>/.blobs/<sha256>` holds one read-only file per content, and a snapshot folder
(`artifacts/<content key>`) is a set of hard links to it, so identical submissions, within a run
or across runs, cost one copy. A blob no snapshot links to any more is deleted when the last
snapshot linking it is pruned (`prune_snapshot`) or its run is removed (`collect_blobs`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import struct
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._util import stable_hash
from a2rl.models import check_model_dir, clone_fd, weights_hash


class SubmissionRejected(A2RLError):
    """The submission breaks a rule; it is recorded as `rejected` and never evaluated."""


MAX_PATH_CHARS = 1024
MAX_FILES = 256
"""More top-level files than this is not a checkpoint (and would make the copy slow)."""
MAX_SAFETENSORS_HEADER = 8 << 20
"""All headers of a checkpoint together: a few hundred kB even for 70B models; more is refused
before any of it is parsed (an 80 MB header took 26 s to parse in the grader's process)."""
MAX_JSON_BYTES = 64 << 20
"""config.json and friends are parsed by the evaluator; tokenizer.json of large vocabularies is
tens of MB, so this only stops the absurd."""
DISK_RESERVE_BYTES = 256 << 20
"""Free space kept on the run's disk after a copy, so the ledger and run.json can still be
written."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def free_bytes(path: Path) -> int:
    """Free bytes for an unprivileged writer on the filesystem of `path` (patched in tests)."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@dataclass(frozen=True)
class Snapshot:
    path: Path
    """Folder under run_dir/artifacts/ holding the copied checkpoint (hard links to blobs)."""
    artifact_hash: str
    """Weights hash (tensor names, dtypes, shapes, bytes)."""
    content_key: str
    """Hash of the weights hash and the bytes of every other file: what the evaluator reads."""
    files_hash: str
    """sha256 over every copied file (names + bytes), for the audit trail."""
    n_bytes: int
    reused: bool
    """An identical snapshot already existed (same content key)."""


def clean_path_text(raw: object) -> str:
    """The submitted path as it can be recorded and shown (no control characters, bounded)."""
    text = raw if isinstance(raw, str) else repr(raw)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)
    return text if len(text) <= 200 else text[:200] + "…"


def _reject(message: str, fix: str) -> SubmissionRejected:
    return SubmissionRejected(message, fix)


def submission_parts(raw: object, workspace: Path) -> list[str]:
    """Apply the path rules lexically; return the components below the workspace
    (`["output", "v1"]`). Nothing is opened and no symlink is looked at."""
    shown = clean_path_text(raw)
    if not isinstance(raw, str) or not raw.strip():
        raise _reject("model_path must be a non-empty string",
                      'send {"model_path": "output/<your-model-dir>"}')
    if "\0" in raw or len(raw) > MAX_PATH_CHARS:
        raise _reject(f"model_path {shown!r} is not a usable path (NUL byte or over "
                      f"{MAX_PATH_CHARS} characters)", 'send {"model_path": "output/<dir>"}')
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise _reject(f"model_path {shown!r} is not valid UTF-8",
                      "name the folder with plain characters") from None
    text = raw
    if text.startswith("/"):
        # Compared as text with the workspace's own path (as given and as resolved by the
        # harness, which the agent cannot change); nothing the agent wrote is resolved.
        roots = {str(workspace).rstrip("/"), str(workspace.resolve()).rstrip("/")}
        root = next((r for r in roots if text == r or text.startswith(r + "/")), None)
        if root is None:
            raise _reject(f"model_path {shown!r} is an absolute path outside the workspace",
                          "submit a path relative to the workspace, e.g. output/v1")
        text = text[len(root):]
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _reject(f"model_path {shown!r} contains '..'",
                      "submit the folder's path under output/ without '..', e.g. output/v1")
    if not parts or parts[0] != "output" or len(parts) < 2:
        raise _reject(f"model_path {shown!r} is not a folder under output/",
                      "save the model under output/ (e.g. output/v1) and submit that folder")
    return parts


@contextmanager
def open_submission(raw: object, workspace_fd: int, workspace: Path) -> Iterator[tuple[int, str]]:
    """Open the submitted folder from the pinned workspace descriptor, one component at a time,
    never following a symlink (`output/` itself included). Yields (dir fd, relative path)."""
    parts = submission_parts(raw, workspace)
    shown = clean_path_text(raw)
    fd = os.dup(workspace_fd)
    try:
        for i, name in enumerate(parts):
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                where = "/".join(parts[: i + 1])
                if exc.errno == errno.ENOENT:
                    raise _reject(f"model_path {shown!r} does not exist ({where} is missing)",
                                  "check the path; save the model under output/ first") from None
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _reject(f"{where} in model_path {shown!r} is a symlink or not a folder",
                                  "submit a real folder under output/; symlinks are not "
                                  "followed") from None
                raise _reject(f"{where} cannot be opened ({exc.strerror})",
                              "make the folder readable") from None
            os.close(fd)
            fd = nxt
        yield fd, "/".join(parts)
    finally:
        os.close(fd)


def resolve_submission(raw: object, workspace: Path) -> str:
    """Check a path without snapshotting it; return the workspace-relative folder path."""
    ws_fd = os.open(workspace, _DIR_FLAGS)
    try:
        with open_submission(raw, ws_fd, workspace) as (_, rel):
            return rel
    finally:
        os.close(ws_fd)


@dataclass
class _Opened:
    name: str
    fd: int
    size: int


def _open_files(folder_fd: int, shown: str) -> list[_Opened]:
    """Open every top-level file of the folder; sub-folders (trainer checkpoints, logs) are not
    part of the model and are skipped without being entered."""
    opened: list[_Opened] = []
    try:
        folder_dev = os.fstat(folder_fd).st_dev
        names = sorted(os.listdir(folder_fd))
        if len(names) > MAX_FILES:
            raise _reject(f"{shown} holds {len(names)} entries (more than {MAX_FILES})",
                          "submit only the checkpoint files")
        for name in names:
            st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                continue
            if stat.S_ISLNK(st.st_mode):
                raise _reject(f"{shown}/{clean_path_text(name)} is a symlink",
                              "put real files (not symlinks) in the submitted folder")
            try:
                fd = os.open(name, _FILE_FLAGS, dir_fd=folder_fd)
            except OSError as exc:
                raise _reject(f"{shown}/{clean_path_text(name)} cannot be opened "
                              f"({exc.strerror})",
                              "put real, readable files (not symlinks) in the folder") from None
            fst = os.fstat(fd)
            opened.append(_Opened(name, fd, fst.st_size))
            # Checked on the descriptor that will be read: a swap after the stat above changes
            # nothing, a fifo/device/socket never gets read, and a file on another filesystem
            # (a bind mount) is not the agent's.
            if not stat.S_ISREG(fst.st_mode) or fst.st_dev != folder_dev:
                raise _reject(f"{shown}/{clean_path_text(name)} is not a regular file",
                              "put real files (not symlinks, fifos or devices) in the folder")
        return opened
    except BaseException:
        for o in opened:
            os.close(o.fd)
        raise


_GREW = ("the submitted folder grew past the size limit while it was copied",
         "submit a folder that is not being written to")


def _clone_fd(src_fd: int, dst: Path, budget: int) -> tuple[int, str] | None:
    """Snapshot an open file as a copy-on-write clone, hashed from the clone (which the agent
    cannot reach); None where the file system cannot clone it (nothing is left at `dst`)."""
    with open(dst, "xb") as writer:
        cloned = clone_fd(src_fd, writer.fileno())
        size = os.fstat(writer.fileno()).st_size
    if not cloned:
        dst.unlink()
        return None
    if size > budget:
        raise _reject(*_GREW)
    digest = hashlib.sha256()
    with open(dst, "rb") as reader:
        while chunk := reader.read(1 << 22):
            digest.update(chunk)
    return size, digest.hexdigest()


def _copy_fd(src_fd: int, dst: Path, budget: int) -> tuple[int, str]:
    """Copy from an open descriptor; stop past `budget` bytes (a file still growing)."""
    digest = hashlib.sha256()
    copied = 0
    with open(dst, "xb") as writer:
        while True:
            chunk = os.read(src_fd, 1 << 22)
            if not chunk:
                break
            copied += len(chunk)
            if copied > budget:
                raise _reject(*_GREW)
            writer.write(chunk)
            digest.update(chunk)
    return copied, digest.hexdigest()


def _check_headers(folder: Path, shown: str) -> None:
    """Refuse absurd safetensors headers and JSON files before anything parses them."""
    header_total = 0
    for p in folder.iterdir():
        size = p.stat().st_size
        if p.name.endswith(".safetensors"):
            with p.open("rb") as fh:
                raw = fh.read(8)
            n = struct.unpack("<Q", raw)[0] if len(raw) == 8 else 0
            header_total += n
            if n > MAX_SAFETENSORS_HEADER or header_total > MAX_SAFETENSORS_HEADER:
                raise _reject(f"{shown}'s safetensors headers are over "
                              f"{MAX_SAFETENSORS_HEADER >> 20} MiB ({p.name})",
                              "save the model with save_pretrained (real headers are small)")
        elif p.name.endswith(".json") and size > MAX_JSON_BYTES:
            raise _reject(f"{shown}/{p.name} is over {MAX_JSON_BYTES >> 20} MiB",
                          "submit the files save_pretrained writes")
    cfg = folder / "config.json"
    if cfg.exists():
        try:
            json.loads(cfg.read_bytes())
        except RecursionError:
            raise _reject(f"{shown}/config.json is nested too deeply to parse",
                          "save the model again with save_pretrained") from None
        except (ValueError, UnicodeDecodeError):
            pass  # check_model_dir names this one


INDEX_SUFFIX = ".safetensors.index.json"
_PATH_FIELDS = ("tokenizer_file", "vocab_file", "merges_file", "spm_file", "sp_model_file")
"""tokenizer_config.json fields that name a file to load: transformers opens the value as a
path, so only the bare name of a file in the snapshot is allowed."""


def _load_json(path: Path) -> object:
    try:
        return json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None  # malformed files are check_model_dir's to name


def _bare_name(value: object) -> bool:
    """A plain file name: no folder part, not `.`/`..`, nothing a loader would join as a path."""
    return (isinstance(value, str) and value not in ("", ".", "..") and "/" not in value
            and "\\" not in value and "\0" not in value and value.isprintable())


def check_references(folder: Path, shown: str) -> None:
    """Refuse a checkpoint whose files name other files to load, unless each is a plain name of a
    regular file in the same folder: the loaders join such names onto the folder, so an absolute
    path or `..` would make the evaluator read weights the snapshot does not hold (a workspace
    file the agent rewrites after submitting, the run's own artifacts, a fifo or a device).

    Checked here: the weight index's `weight_map` (transformers and vLLM open every shard it
    names), and that the weight files are exactly what it names (or model.safetensors alone
    without an index), so the weights hash covers what is loaded; a single-file checkpoint
    next to an index (the two engines would load different weights); PEFT adapter files next
    to full weights (transformers would load the base named by `base_model_name_or_path` from
    anywhere); tokenizer_config.json's file fields. Safe as they are: config.json's
    `_name_or_path` (replaced by the folder on load) and `auto_map` (remote code is never
    trusted, so it is not imported)."""
    names = {p.name for p in folder.iterdir()}
    indexes = sorted(n for n in names if n.endswith(INDEX_SUFFIX))
    if len(indexes) > 1:
        raise _reject(f"{shown} holds several weight indexes ({', '.join(indexes)})",
                      "save the model into an empty folder (one model.safetensors.index.json)")
    if indexes and "model.safetensors" in names:
        raise _reject(f"{shown} holds both model.safetensors and {indexes[0]}: the engines "
                      "would not load the same weights",
                      "save the model into an empty folder (stale files of an earlier save)")
    if not indexes:
        stray = sorted(n for n in names if n.endswith(".safetensors") and n != "model.safetensors")
        if stray:
            raise _reject(f"{shown} holds weight files without an index "
                          f"({clean_path_text(', '.join(stray))}): transformers loads only "
                          "model.safetensors, vLLM every file, so they would not score the "
                          "same weights",
                          "save the model into an empty folder with save_pretrained")
    for index in indexes:
        data = _load_json(folder / index)
        wmap = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(wmap, dict) or not wmap:
            raise _reject(f"{shown}/{index} has no weight_map naming the shards",
                          "save the model again with save_pretrained")
        for shard in sorted({str(v) if isinstance(v, str) else repr(v) for v in wmap.values()}):
            if not _bare_name(shard):
                raise _reject(f"{shown}/{index} names the shard {clean_path_text(shard)!r}, "
                              "which is not a file in the submitted folder (only plain file "
                              "names are loaded, no paths)",
                              "put every shard in the submitted folder and name it by its file "
                              "name in the index, as save_pretrained does")
            if not shard.endswith(".safetensors") or shard not in names:
                raise _reject(f"{shown}/{index} names the shard {clean_path_text(shard)!r}, "
                              "which is not a .safetensors file of the submitted folder",
                              "save every shard the index names into the submitted folder")
        unnamed = sorted(n for n in names if n.endswith(".safetensors")
                         and n not in set(wmap.values()))
        if unnamed:
            raise _reject(f"{shown} holds weights its index does not name "
                          f"({clean_path_text(', '.join(unnamed))}); no engine loads them",
                          "remove stale shards and save the model again into an empty folder")
    adapter = sorted(n for n in names if n == "adapter_config.json" or
                     n.startswith("adapter_model"))
    if adapter:
        raise _reject(f"{shown} holds full weights and PEFT adapter files "
                      f"({', '.join(adapter)}); the loader would apply the adapter to the base "
                      "model its adapter_config.json names",
                      "merge the adapter (merge_and_unload) and save only the full model")
    tok = _load_json(folder / "tokenizer_config.json") if "tokenizer_config.json" in names \
        else None
    if isinstance(tok, dict):
        for field in _PATH_FIELDS:
            value = tok.get(field)
            if value is not None and not (_bare_name(value) and value in names):
                raise _reject(f"{shown}/tokenizer_config.json field {field!r} names "
                              f"{clean_path_text(value)!r}, which is not a file of the "
                              "submitted folder",
                              f"remove {field!r} from tokenizer_config.json or name a file "
                              "of the folder (tokenizer.save_pretrained writes it so)")


def verify_snapshot(folder: Path) -> None:
    """What the evaluation child checks before it loads a snapshot: every entry a regular file
    (no symlink, fifo or device, so nothing the loaders open blocks or leaves the folder) and
    every file reference inside it (see check_references). Raises SubmissionRejected."""
    for entry in os.scandir(folder):
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise _reject(f"snapshot entry {clean_path_text(entry.name)} is not a regular file",
                          "submit a folder of real files")
    check_references(folder, folder.name)


def _scrub(text: str, staging: Path, shown: str) -> str:
    return text.replace(str(staging), shown)


_READ_SUFFIXES = (".json", ".jinja", ".txt", ".model", ".tiktoken")


def evaluator_reads(name: str) -> bool:
    """Whether the evaluator's loaders may open this top-level file of a checkpoint: the weights,
    config and generation config, the weight index, tokenizer files and chat templates (the
    kinds a2rl takes of a hub model). README.md, training_args.bin, optimizer states or scripts
    are never opened, so they do not move the content key."""
    return name.endswith(".safetensors") or name.endswith(_READ_SUFFIXES) \
        or name.startswith("tokenizer")


def content_key_of(weights: str, file_hashes: dict[str, str]) -> str:
    """Content key: the weights hash plus the bytes (by name) of every other file the evaluator
    may open (evaluator_reads); two folders with one key load the same model."""
    return stable_hash({"weights": weights,
                        "files": {n: h for n, h in file_hashes.items()
                                  if evaluator_reads(n) and not n.endswith(".safetensors")}})


def folder_content_key(folder: Path, weights: str) -> str:
    """The content key of a trusted folder (the base model), read the ordinary way."""
    hashes = {}
    for p in sorted(folder.iterdir()):
        # Hidden files (the model cache's `.complete` marker) are not in the workspace's model/
        # (workspace/_model.py), so a verbatim copy of `model/` has none of them.
        if p.is_file() and not p.name.endswith(".safetensors") and not p.name.startswith("."):
            h = hashlib.sha256()
            with p.open("rb") as fh:
                while chunk := fh.read(1 << 22):
                    h.update(chunk)
            hashes[p.name] = h.hexdigest()
    return content_key_of(weights, hashes)


STORE_DIR = ".blobs"
"""The runs folder's store of snapshot files, one per content (`<runs dir>/.blobs/<sha256>`)."""


def blob_store(artifacts_root: Path) -> Path:
    """Where the snapshots of the run owning `artifacts_root` store their files: the runs
    folder's shared store when the run has a2rl's layout (`<runs dir>/<task>/<run id>/artifacts`
    beside the run's run.json), else `artifacts/blobs` (a grader outside a runs folder, or a
    shared store that is a symbolic link: snapshots are never written through one)."""
    run_dir = artifacts_root.parent
    if artifacts_root.name == "artifacts" and (run_dir / "run.json").is_file():
        shared = run_dir.parent.parent / STORE_DIR
        if not shared.is_symlink():
            return shared
    return artifacts_root / "blobs"


def _place(staged: Path, dest: Path, store: Path, sha: str) -> None:
    """Put a snapshotted file at `dest`, stored once per content: a hard link to the store's
    blob when it holds one (of the same size), else the file itself, then linked into the
    store. A blob therefore never has a single link while a snapshot uses it (what
    `collect_blobs` relies on)."""
    try:
        if os.stat(store / sha).st_size == staged.stat().st_size:
            os.link(store / sha, dest)
            return
    except OSError:  # not stored yet (or collected just now); too many links; another disk
        pass
    staged.chmod(0o444)
    os.rename(staged, dest)
    with contextlib.suppress(OSError):  # stored meanwhile by another run: this copy stays own
        os.link(dest, store / sha)


def collect_blobs(store: Path) -> int:
    """Delete the store's blobs no snapshot links to any more; returns how many."""
    removed = 0
    if not store.is_dir() or store.is_symlink():
        return 0
    for entry in os.scandir(store):
        try:
            if entry.is_file(follow_symlinks=False) and \
                    entry.stat(follow_symlinks=False).st_nlink <= 1:
                os.unlink(entry.path)
                removed += 1
        except FileNotFoundError:
            pass
    return removed


def snapshot_submission(folder_fd: int, shown: str, artifacts_root: Path, max_bytes: int, *,
                        free: Callable[[Path], int] | None = None,
                        reserve: int = DISK_RESERVE_BYTES) -> Snapshot:
    """Copy the checkpoint's top-level files out of the workspace (clones where the file
    system can), validate and hash the copy.

    `folder_fd` comes from `open_submission`; `shown` is the workspace-relative path used in every
    message. Raises SubmissionRejected for every rule broken, a full disk included."""
    artifacts_root.mkdir(parents=True, exist_ok=True)
    store = blob_store(artifacts_root)
    if not store.is_dir():
        store.mkdir(mode=0o700, exist_ok=True)
    staging = artifacts_root / f".staging-{uuid.uuid4().hex}"
    staging.mkdir()
    opened: list[_Opened] = []
    try:
        opened = _open_files(folder_fd, shown)
        total = sum(o.size for o in opened)
        if total > max_bytes:
            raise _reject(f"{shown} is larger than the size limit ({total >> 20} MiB > "
                          f"{max_bytes >> 20} MiB)",
                          "submit only the checkpoint files (no optimizer states)")
        files_digest = hashlib.sha256()
        hashes: dict[str, str] = {}
        copied_total = 0
        space_checked = False
        try:
            for o in opened:
                budget = max_bytes - copied_total
                done = _clone_fd(o.fd, staging / o.name, budget)
                if done is None:
                    if not space_checked:  # clones take no space; copies take it all
                        _check_space(artifacts_root, total - copied_total, shown, free, reserve)
                        space_checked = True
                    done = _copy_fd(o.fd, staging / o.name, budget)
                n, sha = done
                copied_total += n
                hashes[o.name] = sha
                files_digest.update(o.name.encode() + b"\0" + sha.encode())
        except OSError as exc:
            if exc.errno in _NO_SPACE:
                raise _reject(f"the run's disk filled up while {shown} was copied",
                              "free disk space on the host, then submit again") from None
            raise _reject(f"{shown} could not be copied ({exc.strerror})",
                          "submit a folder that is not being written to") from None
        _check_headers(staging, shown)
        check_references(staging, shown)
        try:
            check_model_dir(staging)
            artifact_hash = weights_hash(staging)
        except A2RLError as exc:
            message = _scrub(exc.message, staging, shown)
            if not message.startswith(shown):  # e.g. "model.safetensors is not …": whose?
                message = f"{shown}: {message}"
            raise _reject(message,
                          _scrub(exc.fix or "", staging, shown) or "save the model again") \
                from None
        except (OSError, ValueError, RecursionError, MemoryError) as exc:
            raise _reject(f"{shown} is not a loadable checkpoint ({type(exc).__name__})",
                          "save the model again with save_pretrained") from None
        key = content_key_of(artifact_hash, hashes)
        final = artifacts_root / key[:24]
        reused = final.exists()
        if not reused:
            tmp_final = artifacts_root / f".final-{uuid.uuid4().hex}"
            tmp_final.mkdir()
            for name, sha in hashes.items():
                _place(staging / name, tmp_final / name, store, sha)
            tmp_final.chmod(0o555)
            final.with_name(final.name + ".files.json").write_text(json.dumps(hashes, indent=1))
            try:
                os.rename(tmp_final, final)
            except OSError:  # the same content arrived concurrently: keep the first
                shutil.rmtree(tmp_final, ignore_errors=True)
                reused = True
        return Snapshot(final, artifact_hash, key, files_digest.hexdigest(), copied_total, reused)
    finally:
        for o in opened:
            os.close(o.fd)
        shutil.rmtree(staging, ignore_errors=True)


def _check_space(artifacts_root: Path, n_bytes: int, shown: str,
                 free: Callable[[Path], int] | None, reserve: int) -> None:
    available = (free or free_bytes)(artifacts_root)
    if n_bytes + reserve > available:
        raise _reject(f"the run's disk has {available >> 20} MiB free; copying {shown} "
                      f"({n_bytes >> 20} MiB) would leave less than {reserve >> 20} MiB",
                      "free disk space on the host (or use --keep-artifacts best), then "
                      "submit again")


def prune_snapshot(artifacts_root: Path, snapshot: Path) -> bool:
    """Delete a snapshot folder and the blobs no other snapshot links to. True if deleted."""
    manifest = snapshot.with_name(snapshot.name + ".files.json")
    if not snapshot.is_dir() or snapshot.parent != artifacts_root or not manifest.is_file():
        return False
    hashes: dict[str, str] = json.loads(manifest.read_text())
    blobs = blob_store(artifacts_root)
    snapshot.chmod(0o755)
    for name, sha in hashes.items():
        (snapshot / name).unlink(missing_ok=True)
        blob = blobs / sha
        try:
            if blob.stat().st_nlink <= 1:
                blob.unlink()
        except FileNotFoundError:
            pass
    snapshot.rmdir()
    manifest.unlink()
    return True
