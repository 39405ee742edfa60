"""Inference engines by name (`engines`), and which one a run uses.

An engine is one module with one class (the `Engine` protocol) that carries its `EngineSpec`
(`engine_spec`: its "module:Class", the distributions that provide it, whether it may live in
a venv of its own). The built-in engines are the modules of `a2rl.inference.engines`, each
registered with `@engines.register(name)`; a third-party engine registers under the
`a2rl.engines` entry point group, naming its class (which may carry an `engine_spec`) or an
`EngineSpec`. Nothing here, and no engine module at import, imports torch, transformers or
vLLM: whether vLLM works is asked of the interpreter that would run it, in a subprocess
(`a2rl.inference._probe`), because it may live in a separate venv (`a2rl engines install
vllm`) that a2rl's own environment cannot import.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl._paths import DISTRIBUTION
from a2rl._plugins import Registry, load
from a2rl.schema import EngineInfo, EngineRequest

log = logging.getLogger("a2rl.engines")



@dataclass(frozen=True)
class EngineSpec:
    """What the registry knows of an engine without importing it."""

    target: str
    """"module:Class" of the engine (constructed as Class(model_dir, chat_template_from=...,
    batch_size=...), plus `info=` when `takes_info`)."""
    packages: tuple[str, ...]
    """Distributions that provide it (any one is enough)."""
    separate_env: bool = False
    """It may live in a venv of its own: probed in a subprocess of each candidate interpreter."""
    takes_info: bool = False
    """Its constructor reads the resolved EngineInfo (memory fraction, device)."""


engines: Registry[EngineSpec | type] = Registry("engine", "a2rl.engines",
                                                package="a2rl.inference.engines")
"""The engines by name: the modules of `a2rl.inference.engines`, then `a2rl.engines` entry
points."""
ENGINE_MANIFEST = "a2rl-engine.json"
"""Written into each engine venv a2rl creates: which engine, package and version it holds."""
PROBE_TIMEOUT_S = 300.0
# On GPU vLLM reserves this share of the card (weights, activations, KV cache).
DEFAULT_MEMORY = {"cuda": 0.85}
CPU_MEMORY_BYTES = 4 << 30
"""On CPU the share of RAM is sized for this much (vLLM's own default, 0.9, would take the
machine; a small model needs about 1.5 GiB before any KV cache)."""


def default_memory(device: str) -> float | None:
    if device == "cpu":
        try:
            ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return 0.2
        return round(min(0.5, max(0.05, CPU_MEMORY_BYTES / ram)), 3)
    return DEFAULT_MEMORY.get(device)

_selected: EngineInfo | None = None


def engine_names() -> list[str]:
    return engines.names()


def engine_spec(name: str) -> EngineSpec:
    if name not in engines:
        raise A2RLError(f"unknown engine {name!r}",
                        f"use --engine auto or one of: {', '.join(engines.names())}")
    found = engines.get(name)
    if isinstance(found, EngineSpec):
        return found
    # A plug-in's class: its `engine_spec` if it has one, else it runs in a2rl's environment.
    spec = getattr(found, "engine_spec", None)
    return spec if isinstance(spec, EngineSpec) else \
        EngineSpec(f"{found.__module__}:{found.__qualname__}", ())


def a2rl_source_root() -> Path:
    """The folder holding the `a2rl` package this process runs: put on PYTHONPATH of a child
    running under another interpreter, so the child runs exactly this code."""
    return Path(__file__).resolve().parents[2]


def child_env(engine: EngineInfo | None, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of a process that generates with `engine` (the evaluation child)."""
    env = dict(os.environ if base is None else base)
    if engine is not None and engine.env != "a2rl":
        # A separate venv: its own site-packages, this checkout's a2rl source first.
        env["PYTHONPATH"] = os.pathsep.join(
            [str(a2rl_source_root()), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
        env.pop("PYTHONHOME", None)
        env["VIRTUAL_ENV"] = engine.env
    if engine is not None and engine.eval_gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = engine.eval_gpus
    return env


def child_python(engine: EngineInfo | None) -> str:
    return engine.python if engine is not None else sys.executable


# ---- selection -----------------------------------------------------------------------------

def select(engine: EngineInfo | None) -> None:
    """Make `engine` what `load_engine(backend="auto")` loads in this process (the evaluation
    child and `a2rl rollout` call it with the run's resolved engine)."""
    global _selected
    _selected = engine


def selected() -> EngineInfo | None:
    return _selected


def load_engine(model_dir: Path, *, chat_template_from: Path | None = None,
                backend: str = "auto", batch_size: int | None = None) -> Any:
    """Load a checkpoint for generation with the selected engine (see `select`), or `backend`.

    `chat_template_from`: take the chat template from this folder instead of the checkpoint's
    own (the evaluator uses the base model's, so a submission cannot change the prompt format).
    """
    info = _selected
    if backend != "auto" and (info is None or info.name != backend):
        info = resolve(backend, probe_only_here=True)
    if info is None:
        info = resolve("auto", probe_only_here=True)
    spec = engine_spec(info.name)
    cls = load(spec.target)
    extra = {"info": info} if spec.takes_info else {}
    return cls(model_dir, chat_template_from=chat_template_from, batch_size=batch_size, **extra)


# ---- resolution ----------------------------------------------------------------------------

def engines_dir() -> Path:
    # Not created here: inside a sandbox $A2RL_HOME may be absent or read-only.
    home = Path(os.environ.get("A2RL_HOME") or Path.home() / ".cache" / "a2rl")
    return Path(os.environ.get("A2RL_ENGINES_DIR") or home / "engines")


def venv_python(env: Path) -> Path:
    return env / "bin" / "python"


def installed_envs() -> list[tuple[Path, dict[str, Any]]]:
    """Engine venvs a2rl created: `$A2RL_VLLM_ENV` (one folder), then those under
    `$A2RL_ENGINES_DIR` (default `$A2RL_HOME/engines`), with their manifests."""
    folders: list[Path] = []
    if os.environ.get("A2RL_VLLM_ENV"):
        folders.append(Path(os.environ["A2RL_VLLM_ENV"]))
    root = engines_dir()
    if root.is_dir():
        folders.extend(sorted(p for p in root.iterdir() if p.is_dir()))
    found = []
    for folder in folders:
        manifest = folder / ENGINE_MANIFEST
        try:
            data = json.loads(manifest.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and venv_python(folder).exists():
            found.append((folder.absolute(), data))
    return found


def _cuda_visible(eval_gpus: str | None) -> bool:
    """A CUDA GPU is there for the evaluation child (without importing torch: nvidia-smi)."""
    if eval_gpus is not None and eval_gpus.strip() in ("", "-1"):
        return False
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1") and eval_gpus is None:
        return False
    return any((Path(d) / "nvidia-smi").exists()
               for d in os.environ.get("PATH", "").split(os.pathsep)) or Path("/dev/nvidia0").exists()


def _candidates(name: str, eval_gpus: str | None, *, auto: bool = False,
                skipped: list[str] | None = None) -> list[tuple[str, str]]:
    """(python, env) pairs that may run engine `name`: a2rl's own interpreter first when the
    engine's package is importable there, then separate venvs (GPU builds first on a GPU box)."""
    out: list[tuple[str, str]] = []
    skipped = [] if skipped is None else skipped
    spec = engine_spec(name)
    if not spec.packages or any(_distribution_version(p) for p in spec.packages):
        out.append((sys.executable, "a2rl"))
    envs = [(f, m) for f, m in installed_envs() if m.get("engine") == name]
    if auto:
        # A venv without the task dependencies a2rl's environment has (ALFWorld, the judge's
        # metric, spaCy) would fail those tasks' evaluations: auto passes it by (explicitly
        # requested, it is used).
        wanted = set(present_extras())
        for folder, manifest in list(envs):
            missing = wanted - set(manifest.get("extras") or [])
            if missing:
                envs.remove((folder, manifest))
                skipped.append(f"{name} in {folder}: lacks the extras {', '.join(sorted(missing))} "
                               f"(a2rl engines install {name} --force --extras "
                               f"{','.join(sorted(wanted))})")
    gpu = _cuda_visible(eval_gpus)
    envs.sort(key=lambda fm: (fm[1].get("device") == "cpu") == gpu)
    out.extend((str(venv_python(f)), str(f)) for f, _ in envs)
    return out


def _distribution_version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def probe(name: str, python: str, env: str, eval_gpus: str | None = None) -> dict[str, Any]:
    """Ask `python` whether engine `name` works there: {"ok", "version", "package", "device",
    "reason"}. Cached per interpreter and installed-package state (a vLLM import takes seconds)."""
    info = EngineInfo(name=name, package="?", python=python, env=env, eval_gpus=eval_gpus)
    key = _probe_key(name, python, eval_gpus)
    cache = engines_dir() / "probe-cache.json"
    try:
        cached = json.loads(cache.read_text()).get(key)
    except (OSError, json.JSONDecodeError, AttributeError):
        cached = None
    if isinstance(cached, dict):
        return cached
    cmd = [python, "-m", "a2rl.inference._probe", name]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              env=child_env(info), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"ok": False, "reason": f"probe failed: {type(exc).__name__}: {exc}"}
    result: dict[str, Any] = {"ok": False, "reason": ""}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode == 0 and lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            pass
    if not result.get("ok") and not result.get("reason"):
        tail = [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        result["reason"] = f"exit code {done.returncode}: {tail[0][:300]}"
    if result.get("ok"):  # failures are not cached: fixing the install must take effect
        try:
            data = json.loads(cache.read_text()) if cache.exists() else {}
        except (OSError, json.JSONDecodeError):
            data = {}
        data[key] = result
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(data, indent=1))
        except OSError:
            pass  # a read-only home: probe again next time
    return result


def _probe_key(name: str, python: str, eval_gpus: str | None) -> str:
    # The interpreter, the state of its site-packages (mtime: any install changes it) and the
    # a2rl source: a change to any of them probes again.
    exe = Path(python)
    stamps = [str(exe.resolve())]
    for site in sorted((exe.parent.parent / "lib").glob("python3*/site-packages")):
        stamps.append(str(site.stat().st_mtime_ns))
    stamps.append(str((Path(__file__).parent / "_probe.py").stat().st_mtime_ns))
    stamps += [name, str(eval_gpus), os.environ.get("CUDA_VISIBLE_DEVICES", "")]
    return hashlib.sha256("\0".join(stamps).encode()).hexdigest()[:24]


def resolve(requested: EngineRequest | str = "auto", *, memory_fraction: float | None = None,
            eval_gpus: str | None = None, probe_only_here: bool = False) -> EngineInfo:
    """The engine a run (or one evaluation) uses. `auto`: the first vLLM install whose probe
    passes, else transformers in a2rl's environment. An explicit `vllm` that does not work is an
    error naming what the probe found. `probe_only_here`: consider a2rl's own interpreter only
    (in-process loading, where another venv's packages cannot be imported)."""
    if memory_fraction is not None and not 0.0 < memory_fraction <= 1.0:
        raise A2RLError(f"--vllm-memory {memory_fraction} is not a fraction in (0, 1]",
                        "e.g. --vllm-memory 0.5 (half the GPU's memory for the evaluation)")
    names = ["vllm", "transformers"] if requested == "auto" else [requested]
    notes: list[str] = []
    for name in names:
        spec = engine_spec(name)
        candidates = _candidates(name, eval_gpus, auto=requested == "auto", skipped=notes)
        if probe_only_here:
            candidates = [c for c in candidates if c[1] == "a2rl"]
        if name == "transformers" and not candidates:
            candidates = [(sys.executable, "a2rl")]
        for python, env in candidates:
            found = probe(name, python, env, eval_gpus) if spec.separate_env else \
                probe_here(name, spec, eval_gpus)
            if not found.get("ok"):
                notes.append(f"{name} in {env}: {found.get('reason')}")
                continue
            device = str(found.get("device") or "cpu")
            fraction = memory_fraction if memory_fraction is not None else \
                default_memory(device)
            reason = "requested" if requested != "auto" else f"auto: {name} works in {env}"
            if notes:
                reason += " (" + "; ".join(notes) + ")"
            return EngineInfo(name=name, requested=requested, package=str(found["package"]),
                              version=found.get("version"), python=python, env=env,
                              device=device, memory_fraction=fraction if spec.takes_info
                              else None, eval_gpus=eval_gpus, reason=reason)
        if not candidates:
            notes.append(f"{name}: not installed")
    raise A2RLError(f"engine {requested} is not usable: " + "; ".join(notes),
                    "install it with `a2rl engines install vllm` (GPU) or `a2rl engines "
                    "install vllm --cpu`, or use --engine transformers")


def probe_here(name: str, spec: EngineSpec, eval_gpus: str | None = None) -> dict[str, Any]:
    """An engine of a2rl's own environment: installed is enough (its package is a dependency)."""
    for package in spec.packages:
        found = _distribution_version(package)
        if found:
            return {"ok": True, "package": package, "version": found,
                    "device": "cuda" if _cuda_visible(eval_gpus) else "cpu"}
    if not spec.packages:
        return {"ok": True, "package": name, "version": None, "device": "cpu"}
    return {"ok": False, "reason": f"none of {', '.join(spec.packages)} is installed"}


def engine_cache_key(engine: EngineInfo | None = None) -> str | None:
    """What of the engine can move a score, for cache keys (None: transformers in a2rl's
    environment, as before engines were selectable, so existing caches stay valid)."""
    info = engine or _selected
    if info is None or (info.name == "transformers" and info.env == "a2rl"):
        return None
    return f"{info.name} {info.package} {info.version} {info.device}"


def resolve_for_run(requested: str, *, memory_fraction: float | None,
                    eval_gpus: str | None) -> EngineInfo:
    """Resolve a run's engine once, select it for every evaluation in this process, and say
    which it is (the runner records it in run.json)."""
    info = resolve(requested, memory_fraction=memory_fraction, eval_gpus=eval_gpus)
    select(info)
    log.info("engine: %s %s (%s) in %s — %s", info.name, info.version, info.device, info.env,
             info.reason)
    return info


_REEXEC = "A2RL_ENGINE_SELECTED"
"""Set in a command re-executed under an engine venv's interpreter: the EngineInfo (JSON)."""


def use_engine_in_command(requested: str, *, memory_fraction: float | None = None,
                          eval_gpus: str | None = None) -> EngineInfo:
    """For commands that generate in-process (`a2rl eval --model`, `a2rl rollout`): resolve
    and select the engine; when it lives in a separate venv, re-execute this very command under
    that venv's interpreter (with this a2rl source), where it is selected without resolving."""
    given = os.environ.pop(_REEXEC, None)
    if given:
        info = EngineInfo.model_validate_json(given)
        select(info)
        return info
    info = resolve(requested, memory_fraction=memory_fraction, eval_gpus=eval_gpus)
    if info.env != "a2rl":
        env = child_env(info)
        env[_REEXEC] = info.model_dump_json()
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(info.python, [info.python, "-m", "a2rl.cli", *sys.argv[1:]], env)
    select(info)
    return info


def describe_engines() -> list[str]:
    """One line per (engine, interpreter): works or why not; then what `auto` picks."""
    lines = []
    for name in engine_names():
        spec = engine_spec(name)
        candidates = _candidates(name, None)
        if not candidates:
            lines.append(f"{name:13s} not installed")
        for python, env in candidates:
            found = probe(name, python, env) if spec.separate_env else probe_here(name, spec)
            state = (f"works: {found.get('package')} {found.get('version')} on "
                     f"{found.get('device')}") if found.get("ok") else \
                f"does not work: {found.get('reason')}"
            lines.append(f"{name:13s} {env}: {state}")
    try:
        pick = resolve("auto")
        lines.append(f"--engine auto → {pick.name} ({pick.package} {pick.version}, "
                     f"{pick.device}, {pick.env})")
    except A2RLError as exc:
        lines.append(f"--engine auto → none: {exc.message}")
    return lines


def instructions_line(info: EngineInfo) -> str:
    """The workspace instructions' line on how evaluations run (engine, device, memory)."""
    where = "the CPU" if info.device == "cpu" else "the GPU"
    if info.eval_gpus is not None and info.device != "cpu":
        where = (f"GPU(s) {info.eval_gpus} (the evaluation's own CUDA_VISIBLE_DEVICES: train on "
                 "the others, or leave room on those)")
    memory = (f", reserving {info.memory_fraction:.0%} of its {'RAM' if info.device == 'cpu' else 'memory'}"
              if info.memory_fraction else "")
    return (f"- Evaluations generate with {info.package} {info.version or ''} on {where}"
            f"{memory}; greedy outputs of different engines can differ in rare near-ties.")


_HARNESS_EXTRAS = ("dev", "docs", "gpu", "report", "sweep", "test", "tracking")
"""Extras for the harness itself, not for scoring a task: an engine venv never needs them."""


def present_extras() -> list[str]:
    """The extras whose packages are all installed in a2rl's own environment: the engine venv
    gets the same task dependencies (ALFWorld, the judge's metric, spaCy) so every task that
    evaluates here evaluates there."""
    try:
        reqs = requires(DISTRIBUTION) or []
    except PackageNotFoundError:
        return []
    by_extra: dict[str, list[str]] = {}
    for req in reqs:
        spec, _, marker = req.partition(";")
        m = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if m:
            name = re.split(r"[<>=!~\[ ;]", spec.strip(), maxsplit=1)[0]
            by_extra.setdefault(m.group(1), []).append(name)
    out = []
    for extra, names in sorted(by_extra.items()):
        if extra in _HARNESS_EXTRAS:
            continue
        if all(_installed(n) for n in names):
            out.append(extra)
    return out


def _installed(name: str) -> bool:
    try:
        version(name)
        return True
    except PackageNotFoundError:
        return False
