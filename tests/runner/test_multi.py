"""Mode multi: one agent, several tasks at once — one workspace folder, grader and run record
per task, one budget, one transcript."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from a2rl.runner import run_multi
from a2rl.runner._run import task_params_for
from a2rl.schema import RunConfig, RunRecord

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")

AGENT = r"""
set -u
ls > listing.txt
./timer.sh
for t in arith gsm8k; do
  ( cd $t && . ./grader.env && cp -r model output/v1 && chmod -R u+w output/v1 &&
    curl -s -X POST "$A2RL_GRADER_URL/submit" -H "Authorization: Bearer $A2RL_TOKEN" \
         -H "Content-Type: application/json" -d '{"model_path": "output/v1"}' && echo )
done
# a task's model sent to another task's grader is refused (outside that task's output/)
curl -s -X POST "$A2RL_GRADER_URL_ARITH/submit" -H "Authorization: Bearer $A2RL_TOKEN_ARITH" \
     -H "Content-Type: application/json" -d "{\"model_path\": \"$PWD/gsm8k/output/v1\"}"
echo
touch arith/model/forged 2>/dev/null && echo FORGED || echo model-read-only
"""


def test_task_params_for_each_task() -> None:
    params = {"n_train": 40, "gsm8k.source": "offline", "arith.n_heldout": 6}
    assert task_params_for("gsm8k", params) == {"n_train": 40, "source": "offline"}
    assert task_params_for("arith", params) == {"n_train": 40, "n_heldout": 6}


def test_multi_runs_one_agent_on_two_tasks(tmp_path: Path, looking_model: Path) -> None:
    # A model that ends its turn after one word: the random tiny model's GSM8K baseline decodes
    # 512 tokens an item, and nothing here reads what the model says.
    config = RunConfig(task="arith,gsm8k", tasks=["arith", "gsm8k"],
                       task_params={"n_train": 40, "n_heldout": 6, "heldout_seed": 4242,
                                    "gsm8k.source": "offline"},
                       agent=f"cmd:{AGENT}", model=str(looking_model), mode="multi", budget_s=300,
                       sandbox="bwrap", eval_timeout_s=1800, grace_s=2, port=0,
                       runs_dir=str(tmp_path / "runs"))
    records = run_multi(config)
    assert [r.config.task for r in records] == ["arith", "gsm8k"]
    rid = records[0].run_id
    root = tmp_path / "runs" / "multi" / rid
    transcript = (root / "agent" / "transcript.log").read_text()
    assert "Remaining:" in transcript and "model-read-only" in transcript, transcript
    assert set((root / "workspace" / "listing.txt").read_text().split()) >= {
        "arith", "gsm8k", "instructions.md", "description.md", "timer.sh"}
    for rec in records:
        run_dir = tmp_path / "runs" / rec.config.task / rid
        on_disk = RunRecord.model_validate_json((run_dir / "run.json").read_text())
        assert on_disk.status == "finished" and on_disk.config.mode == "multi"
        assert on_disk.exit_reason == "agent_exited" and on_disk.baseline is not None
        ok = [s for s in on_disk.submissions if s.status == "baseline_copy"]
        assert len(ok) == 1 and ok[0].model_path == "output/v1", on_disk.submissions
        # each task's run links the shared workspace folder and transcript
        assert (run_dir / "workspace" / "grader.env").exists()
        assert (run_dir / "agent" / "transcript.log").exists()
    arith = records[0]
    assert [s.status for s in arith.submissions] == ["baseline_copy", "rejected"]
    assert records[1].task is not None and records[1].task.params["source"] == "offline"
    summary = json.loads((root / "multi.json").read_text())
    assert summary["tasks"] == ["arith", "gsm8k"] and set(summary["best"]) == {"arith", "gsm8k"}
