"""The reference agent's recipe logic (the fixed-recipe row), without a model: time sizing,
rejection-sampled targets, dev-split candidate selection, RFT rows from rollouts, the GRPO
reward. One slow end-to-end run covers the GRPO route inside the sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from a2rl.agents.reference_agent.recipe import (
    Candidate,
    TimeKeeper,
    arith_reward,
    checkpoint_times,
    corrected,
    extract_answer,
    is_correct,
    lr_factor,
    plan_time,
    rft_rows,
    select_candidates,
    self_generated_targets,
    split_dev,
)


def test_extraction_is_the_arith_evaluators() -> None:
    """The agent reads answers the way the task's description says the grader does; the task's
    own function is the reference, so a change to one shows here."""
    from a2rl.tasks.arith.task import extract_answer_flexible

    cases = ["38 - 60 = -22", "19", " 7.\n", "The answer is 5.", "<answer>12</answer> 3",
             "To calculate 97 + 40, we need to add 9", "no number", "", "12 + 7 = 19\n\n20",
             "3.5", "-0", "either 19 or 20", "Not 19; it was 20", "589 + 85 is 674"]
    for text in cases:
        assert extract_answer(text) == extract_answer_flexible(text), text
    assert is_correct("3 + 16 = 19", "19") and not is_correct("3 + 16 = 91", "19")


def test_correction_swaps_only_a_final_result() -> None:
    assert corrected("38 - 60 = 10", "-22") == "38 - 60 = -22"
    assert corrected("43 - 4 = 4.\nmore", "39") == "43 - 4 = 39"
    # no "= N" at the end: changing a number there would teach nonsense
    assert corrected("To calculate 97 + 40, we need to add 9", "137") is None
    assert corrected("29 + 83 = 29 + 83 = ", "112") is None


def test_self_generated_targets_keep_own_words_and_skip_the_uncorrectable() -> None:
    rows = [{"prompt": f"q{i}", "answer": a} for i, a in enumerate(["19", "-22", "137", "8"])]
    samples = [
        ["3 + 16 = 19\n\nThe sum is 19, as asked", "3 + 16 = 19"],  # right twice: shortest line
        ["38 - 60 = 10", "38 - 60 = 22"],                            # wrong: corrected
        ["To calculate 97 + 40, we need to add 9", "97 + 40 is a sum"],  # nothing usable
        ["4 + 4 = 9", "4 + 4 = 8"],                                  # a sampled pass is right
    ]
    targets = self_generated_targets(rows, samples)
    assert targets == [
        {"prompt": "q0", "answer": "3 + 16 = 19", "source": "self"},
        {"prompt": "q1", "answer": "38 - 60 = -22", "source": "corrected"},
        {"prompt": "q3", "answer": "4 + 4 = 8", "source": "self"},
    ]
    kept = [rows[0], rows[1], rows[3]]
    assert all(is_correct(t["answer"], r["answer"]) for t, r in zip(targets, kept, strict=True))
    with pytest.raises(ValueError):  # one list of samples per row
        self_generated_targets(rows, samples[:2])


def test_dev_split_is_fixed_disjoint_and_never_the_whole_data() -> None:
    rows = [{"id": i} for i in range(50)]
    train, dev = split_dev(rows, 10)
    again = split_dev(rows, 10)
    assert (train, dev) == again and len(dev) == 10 and len(train) == 40
    assert {r["id"] for r in train}.isdisjoint({r["id"] for r in dev})
    assert len(split_dev(rows[:6], 100)[1]) == 3  # at most half goes to dev
    assert split_dev(rows, 0) == (rows, [])


def test_plan_is_sized_from_the_measured_rate_and_time_left() -> None:
    fast = plan_time(360, gen_s_per_item=0.15, n_dev=100, n_train_rows=3800)
    slow = plan_time(360, gen_s_per_item=0.6, n_dev=100, n_train_rows=3800)
    for plan, rate in ((fast, 0.15), (slow, 0.6)):
        assert plan.feasible
        used = (plan.train_seconds + plan.generate_items * rate
                + plan.n_candidates * 1.3 * 100 * rate)
        assert used <= 360 - 20 + 1e-6  # the margin stays free
    assert fast.generate_items > slow.generate_items
    assert fast.train_seconds > slow.train_seconds
    assert fast.n_candidates == 3 and slow.n_candidates < 3
    longer = plan_time(3600, gen_s_per_item=0.15, n_dev=100, n_train_rows=500)
    assert longer.generate_items == 500  # never more than there are questions
    # a few seconds left: no training at all rather than a checkpoint past the deadline
    assert not plan_time(40, gen_s_per_item=0.15, n_dev=100, n_train_rows=3800).feasible


def test_learning_rate_follows_the_clock_not_the_step_count() -> None:
    assert lr_factor(0, 0.0, 100, warmup_steps=5) == pytest.approx(0.2)
    assert lr_factor(4, 0.0, 100, warmup_steps=5) == pytest.approx(1.0)
    # the same moment of the run gives the same rate on a fast and on a slow machine
    assert lr_factor(200, 50.0, 100) == pytest.approx(lr_factor(20, 50.0, 100)) == \
        pytest.approx(0.5)
    assert lr_factor(30, 100.0, 100) == pytest.approx(0.0)
    assert lr_factor(30, 250.0, 100) == pytest.approx(0.0)  # past the end: stays at 0
    values = [lr_factor(10, t, 100) for t in range(0, 101, 10)]
    assert values == sorted(values, reverse=True)


def test_time_keeper_saves_evenly_in_time_and_stops_at_the_end() -> None:
    assert checkpoint_times(90, 3) == [30, 60, 90]
    keeper = TimeKeeper(90, 3)
    events = [keeper.after_step(t) for t in (10, 29.9, 31, 95)]
    # a step that ends past two save times saves both; the last save coincides with the stop
    assert events == [(0, False), (0, False), (1, False), (2, True)]
    assert keeper.finish() == 0
    early = TimeKeeper(90, 3)
    assert early.after_step(40) == (1, False)
    assert early.finish() == 2  # the data ran out: the rest are the final model


def test_candidates_beating_the_base_on_dev_are_submitted_best_first() -> None:
    cands = [Candidate("c1", 41.0), Candidate("c2", 47.0), Candidate("c3", 39.0)]
    assert [c.path for c in select_candidates(cands, 40.0)] == ["c2", "c1"]
    assert [c.path for c in select_candidates(cands, 40.0, max_submit=1)] == ["c2"]
    # none is better: the best one alone, so the run still reports the recipe's result
    assert [c.path for c in select_candidates(cands, 50.0)] == ["c2"]
    assert select_candidates([], 10.0) == []


def _traj(success: bool, reward: float, steps: list[str]) -> dict:
    msgs = [{"role": "system", "content": "act"}, {"role": "user", "content": "obs0"}]
    for i, action in enumerate(steps):
        msgs += [{"role": "assistant", "content": action}, {"role": "user", "content": f"obs{i + 1}"}]
    return {"success": success, "reward": reward, "messages": msgs}


def test_rft_rows_are_every_step_of_kept_trajectories() -> None:
    trajs = [_traj(True, 1.0, ["go north", "take key"]),
             _traj(False, 0.2, ["go south"]),            # failed: dropped
             _traj(False, 0.8, ["open door"]),           # partial reward over the threshold
             _traj(True, 1.0, ["go north", "take key"])]  # the same solution again: once
    rows = rft_rows(trajs, min_reward=0.5)
    assert [r["completion"] for r in rows] == ["go north", "take key", "open door"]
    second = rows[1]["prompt_messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "go north" and second[-1]["content"] == "obs1"
    assert rft_rows(trajs, min_reward=1.0) == rows[:2]


def test_grpo_reward_is_the_evaluators_rule() -> None:
    completions = ["8", "5 + 3 = 8", "5 + 3 = 9", "To calculate 5 + 3 we add them: 8\nok",
                   [{"role": "assistant", "content": "8"}]]
    rewards = arith_reward(completions, ["8"] * 5)
    assert rewards == pytest.approx([1.1, 1.1, 0.1, 1.0, 1.1])
    assert arith_reward(["", "\n"], ["8", "8"]) == [0.0, 0.0]  # no bonus for saying nothing
    assert max(arith_reward(["9"], ["8"])) < min(arith_reward(["8"], ["8"]))


def test_reference_agent_command_and_environment(tmp_path: Path) -> None:
    import a2rl
    from a2rl._errors import A2RLError
    from a2rl.agents._agent import AgentContext
    from a2rl.agents.reference import ReferenceAgent
    from a2rl.schema import RunConfig
    from a2rl.workspace import Workspace

    ws = Workspace.__new__(Workspace)
    ctx = AgentContext(workspace=ws, grader_url="http://x", token="t",
                       config=RunConfig(budget_s=60, runs_dir=str(tmp_path),
                                        agent_options={"recipe": "grpo", "grpo_lr": "1e-5"}),
                       task="arith", python="/venv/bin/python")
    agent = ReferenceAgent()
    assert agent.command(ctx) == ["/venv/bin/python", "-m", "a2rl.agents.reference_agent",
                                  "--grpo-lr", "1e-5", "--recipe", "grpo"]
    # the pipeline imports the a2rl that runs the harness
    assert agent.extra_env(ctx)["PYTHONPATH"] == str(Path(a2rl.__file__).resolve().parent.parent)
    # an unknown recipe is refused with the run's other options, before anything runs
    from a2rl.schema import RunConfig

    config = RunConfig(task="arith", agent="reference", model="smollm2-135m", mode="free",
                       budget_s=60, sandbox="bwrap", eval_timeout_s=60, grace_s=1, port=0,
                       runs_dir=str(tmp_path), agent_options={"recipe": "dpo"})
    with pytest.raises(A2RLError, match="recipe"):
        agent.check(config)


needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")


@pytest.mark.slow
@needs_bwrap
def test_grpo_route_end_to_end(tmp_path: Path, tiny_model: Path) -> None:
    """The RL route inside the sandbox: TRL GRPO with the rule reward, one step per stage, two
    submissions scored by the grader."""
    from a2rl.runner import run
    from a2rl.schema import RunConfig

    cfg = RunConfig(task="arith", task_params={"n_train": 40, "n_heldout": 6,
                                               "heldout_seed": 4242},
                    agent="reference", agent_options={"recipe": "grpo", "steps": "1"},
                    model=str(tiny_model), mode="free", budget_s=3600, sandbox="bwrap",
                    eval_timeout_s=1800, grace_s=2, port=0, runs_dir=str(tmp_path / "runs"))
    rec = run(cfg)
    rd = tmp_path / "runs" / "arith" / rec.run_id
    transcript = (rd / "agent" / "transcript.log").read_text()
    assert rec.exit_reason == "agent_exited" and rec.agent_exit_code == 0, transcript[-3000:]
    assert [(s.model_path, s.status) for s in rec.submissions] == [
        ("output/v1", "scored"), ("output/v2", "scored")], transcript[-3000:]
    args = json.loads((rd / "workspace" / "output" / "v2" / "a2rl_train_args.json").read_text())
    assert args["method"] == "grpo" and args["step"] == 1
    assert "GRPO: 1 steps" in transcript
    assert (rd / "workspace" / "code" / "train_grpo.py").exists()
    assert not (rd / "workspace" / "code" / "train_sft.py").exists()


def test_sft_rows_teach_each_static_tasks_reply() -> None:
    from a2rl.agents.reference_agent.recipe import sft_rows

    arith = [{"id": "t0", "question": "Calculate 1 + 2.", "answer": "3", "prompt": "Calculate 1 + 2.\nX"}]
    assert sft_rows("arith", arith)[0]["answer"] == "3"
    alpaca = [{"instruction": "Say hi", "input": "", "output": "Hi!", "prompt": "Say hi"}]
    assert sft_rows("alpacaeval", alpaca)[0] == {**alpaca[0], "answer": "Hi!"}
    problem = {"task_id": "HumanEval/0", "prompt": "def f(x):\n    \"\"\"Double.\"\"\"\n",
               "canonical_solution": "    return 2 * x\n", "test": "", "entry_point": "f"}
    (row,) = sft_rows("humaneval", [problem])
    from a2rl.tasks.humaneval.task import response_prefix, user_message

    # the reply continues exactly where the evaluator's pre-filled turn stops
    assert row["prompt"] == user_message(problem)
    assert row["answer"] == response_prefix(problem) + "    return 2 * x\n```"
    with pytest.raises(ValueError, match="keys"):
        sft_rows("mystery", [{"question": "q"}])


def test_worked_targets_fill_the_questions_sampling_left_without_one() -> None:
    from a2rl.agents.reference_agent.recipe import with_worked_targets, worked_target

    assert worked_target("Calculate 61 - 24.", "37") == "61 - 24 = 37"
    assert worked_target("What is love?", "x") is None
    rows = [{"question": "Calculate 1 + 2.", "answer": "3", "prompt": "p0"},
            {"question": "Calculate 9 - 12.", "answer": "-3", "prompt": "p1"}]
    sampled = [{"prompt": "p0", "answer": "1 + 2 = 3", "source": "self"}]
    out = with_worked_targets(rows, sampled)
    assert out == sampled + [{"prompt": "p1", "answer": "9 - 12 = -3", "source": "worked"}]
    assert all(is_correct(t["answer"], r["answer"]) for t, r in zip(out, rows, strict=True))
