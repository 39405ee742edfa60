"""vLLM on CPU runs an interactive task (DeepSearchQA on its offline world) through the real
evaluation child; greedy actions match the transformers engine's on at least 97 % of the steps
both engines took. One vLLM model load."""

from __future__ import annotations

from pathlib import Path

import pytest
from _vllm_common import evaluate, report, vllm_engine

from a2rl.envs import same_steps

DSQA = {"source": "offline", "max_heldout": 3, "heldout_seed": 77, "judge": "string"}


@pytest.mark.slow
def test_vllm_cpu_interactive_matches_transformers(smollm2_dir: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    engine = vllm_engine(monkeypatch)
    by_vllm = evaluate("deepsearchqa", DSQA, smollm2_dir, tmp_path / "vllm", engine)
    by_hf = evaluate("deepsearchqa", DSQA, smollm2_dir, tmp_path / "hf", None)
    # details.jsonl opens with the task's summary row; the trajectories follow
    by_vllm, by_hf = ([r for r in rows if "steps" in r] for rows in (by_vllm, by_hf))
    assert len(by_vllm) == DSQA["max_heldout"]
    assert [t["episode_id"] for t in by_vllm] == [t["episode_id"] for t in by_hf]
    same, total, diffs = same_steps(by_vllm, by_hf, ("vllm", "transformers"))
    print(report("deepsearchqa step completions", same, total, diffs))
    assert total >= len(by_vllm), "the episodes took no steps"
    assert same >= 0.97 * total, report("deepsearchqa step completions", same, total, diffs)
