"""The reference agent through the whole loop on the tiny model: the static SFT pipeline and the
L3 rollout recipe (sandboxed `a2rl rollout`, demonstrations). Apart from test_integration.py so
that two test workers (`--dist loadfile`) share these minutes."""

from __future__ import annotations

import json
from pathlib import Path

from test_integration import config, needs_bwrap, run_dir_of

from a2rl.runner import run


@needs_bwrap
def test_reference_agent_pipeline_on_tiny_model(tmp_path: Path, tiny_model: Path) -> None:
    rec = run(config(tmp_path, tiny_model, "reference",
                     agent_options={"steps": "2", "batch_size": "4", "max_train": "16"}))
    rd = run_dir_of(rec, tmp_path)
    assert rec.exit_reason == "agent_exited" and rec.agent_exit_code == 0, \
        (rd / "agent" / "transcript.log").read_text()[-3000:]
    assert [s.model_path for s in rec.submissions] == ["output/v1", "output/v2"]
    assert all(s.status == "scored" for s in rec.submissions)
    assert (rd / "workspace" / "code" / "train_sft.py").exists()
    # the harness's own analysis of the run
    from a2rl.schema import RunAnalysis

    analysis = RunAnalysis.model_validate_json((rd / "analysis.json").read_text())
    assert analysis.route == "SFT-only" and analysis.methods_attempted == ["SFT"]
    assert [it.training_type for it in analysis.iterations] == ["SFT-only"] * 3
    assert analysis.iterations[0].scripts == ["code/train_sft.py"]
    assert analysis.iterations[0].config["steps"] == 2 and analysis.iterations[0].config["lr"] == 1e-4
    assert [(e.path, e.stage, e.data_source) for e in analysis.experiments] == [
        ("output/v1", "from base", "self-generated"),
        ("output/v2", "from checkpoint", "self-generated")]
    assert analysis.strategy_changes == 1 and analysis.change_rate == 1.0
    if rec.exec_traced:  # strace installed (CI installs it)
        assert analysis.exec_traced and analysis.phase_seconds["SFT"] > 0
        assert all(e.exit_code == 0 and "train_sft.py" in (e.command or "")
                   for e in analysis.experiments)
    assert analysis.metrics.submissions == 2 and analysis.metrics.model_versions == 2
    lines = (rd / "summary.jsonl").read_text().splitlines()
    assert len(lines) == 3 and '"submission_id":null' in lines[-1].replace(" ", "")
    assert "## Iteration 1 — s0001" in (rd / "summary.md").read_text()


@needs_bwrap
def test_reference_agent_on_an_interactive_task(tmp_path: Path, looking_model: Path) -> None:
    """L3: the reference agent rolls out on train episodes inside its sandbox with `a2rl rollout`,
    keeps successful trajectories and trains on them (a model that only says `look` has none to
    keep: no search or answer action, so each episode ends after its first turn, as the random
    tiny model's did after 256 tokens)."""
    rec = run(config(tmp_path, looking_model, "reference", task="deepsearchqa",
                     task_params={"source": "offline", "max_heldout": 2},
                     agent_options={"rounds": "1", "samples": "1", "episodes": "2", "steps": "1"}))
    rd = run_dir_of(rec, tmp_path)
    transcript = (rd / "agent" / "transcript.log").read_text()
    assert rec.exit_reason == "agent_exited" and rec.agent_exit_code == 0, transcript[-3000:]
    assert rec.baseline is not None and rec.baseline.n_items == 2
    assert "a2rl rollout --task deepsearchqa" in transcript and "2 episodes" in transcript
    for sample in (0, 1):  # greedy, then sampled (--temperature): the only test of the latter
        rollouts = (rd / "workspace" / "code" / f"rollouts_r1_s{sample}.jsonl").read_text()
        assert len(rollouts.splitlines()) == 2
        assert json.loads(rollouts.splitlines()[0])["messages"][0]["role"] == "user"
    assert "--temperature 0.7 --seed 1" in transcript and "nothing to train on" in transcript
    # the held-out questions never reached the workspace
    rows = [json.loads(line) for line in
            (rd / "evals" / "baseline" / "details.jsonl").read_text().splitlines()]
    held = {r["episode_id"] for r in rows if r.get("episode_id")}
    assert len(held) == 2
    train_ids = {json.loads(line)["id"] for line in
                 (rd / "workspace" / "data" / "episodes.jsonl").read_text().splitlines()}
    assert not held & train_ids
    task_json = json.loads((rd / "workspace" / "data" / "task.json").read_text())
    assert task_json["params"]["source"] == "offline" and "heldout_seed" not in task_json["params"]


@needs_bwrap
def test_reference_agent_trains_on_demonstrations(tmp_path: Path, tiny_model: Path) -> None:
    """WebShop ships demonstrations: the L3 reference agent trains on them and submits."""
    # greedy rollouts only (the sampled pass runs in the deepsearchqa case above)
    rec = run(config(tmp_path, tiny_model, "reference", task="webshop",
                     task_params={"max_heldout": 2},
                     agent_options={"rounds": "1", "samples": "0", "episodes": "2", "steps": "1",
                                    "batch_size": "2"}))
    rd = run_dir_of(rec, tmp_path)
    transcript = (rd / "agent" / "transcript.log").read_text()
    assert rec.exit_reason == "agent_exited" and rec.agent_exit_code == 0, transcript[-3000:]
    assert [s.model_path for s in rec.submissions] == ["output/r1"], transcript[-3000:]
    assert rec.submissions[0].status == "scored"
    rows = [json.loads(line) for line in
            (rd / "workspace" / "code" / "sft_round1.jsonl").read_text().splitlines()]
    assert rows and all(r["prompt_messages"][-1]["role"] == "user" for r in rows)
    assert any("search[" in r["completion"] or "click[" in r["completion"] for r in rows)


@needs_bwrap
def test_reference_agent_submits_on_a_loaded_machine(tmp_path: Path, tiny_model: Path) -> None:
    """Time-sized (no fixed steps) with a short budget and 8 busy processes beside it: the
    agent reads the clock before each pass and submits before its budget ends. The run and the
    busy processes share one core (a heavier load than 8 spread over two), so the rest of the
    suite keeps the other cores."""
    import os
    import subprocess
    import sys

    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})  # inherited by the busy processes and the run
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(8)]
    try:
        # A dev split and a token limit that make the base model's dev pass alone longer than
        # the budget on this loaded machine: the pass must be cut by the clock.
        rec = run(config(tmp_path, tiny_model, "reference", budget_s=150,
                         task_params={"n_train": 1600, "n_heldout": 6, "heldout_seed": 4242},
                         agent_options={"batch_size": "4", "max_train": "1600", "dev": "800",
                                        "max_new_tokens": "256"}))
    finally:
        for p in busy:
            p.kill()
            p.wait()
        os.sched_setaffinity(0, cores)
    rd = run_dir_of(rec, tmp_path)
    transcript = (rd / "agent" / "transcript.log").read_text()
    assert rec.submissions, transcript[-3000:]
    first = rec.submissions[0]
    assert first.elapsed_s is not None and first.elapsed_s < 150, transcript[-3000:]
    assert first.status in ("scored", "baseline_copy"), (first.status, first.error)
    assert "clock: stopped generating after" in transcript, transcript[-3000:]
