"""The grader and its HTTP API, with a fake evaluator (the real one is covered by the
integration tests): token, rules, baseline copies, cache, serialization, budget."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest

from a2rl._util import utcnow
from a2rl.grader import Grader, GraderConfig, GraderServer
from a2rl.models import resolve_model
from a2rl.schema import BaselineRecord, RunConfig
from a2rl.tasks import EvalOutcome, get_task
from conftest import TINY_TASK, perturb


class FakeEvaluator:
    """Scores by weights hash; records concurrency to prove evaluations are serialized."""

    def __init__(self, delay: float = 0.2) -> None:
        self.calls = 0
        self.active = 0
        self.max_active = 0
        self.delay = delay
        self.lock = threading.Lock()

    def __call__(self, job, *, timeout_s, on_progress=None) -> EvalOutcome:
        with self.lock:
            self.calls += 1
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        return EvalOutcome(score=50.0 + self.calls, n_items=6)


@pytest.fixture
def setup(tmp_path: Path, tiny_model: Path, model_copy):
    run_dir = tmp_path / "run"
    ws = run_dir / "workspace"
    (ws / "output").mkdir(parents=True)
    model_copy(ws / "model")
    task = get_task("arith", TINY_TASK)
    base = resolve_model(str(tiny_model))
    baseline = BaselineRecord(score=10.0, n_items=6, metrics={}, model_hash=base.content_hash,
                              task_fingerprint=task.fingerprint(), evaluator_version="1",
                              eval_seconds=1.0, computed_at=utcnow())
    fake = FakeEvaluator()

    def make(budget: float = 600.0) -> Grader:
        g = Grader(run_dir, ws, task, base, baseline,
                   GraderConfig(RunConfig(budget_s=budget, runs_dir=str(tmp_path))),
                   evaluator=fake)
        g.start_clock()
        return g

    return run_dir, ws, make, fake


@pytest.fixture
def client(setup):
    run_dir, ws, make, fake = setup
    grader = make()
    server = GraderServer(grader, log_file=run_dir / "grader.log").start()
    with httpx.Client(base_url=server.url, timeout=60,
                      headers={"Authorization": f"Bearer {server.token}"}) as c:
        yield c, grader, ws, fake, server
    server.stop()
    grader.close()


def test_binds_loopback_only(client) -> None:
    _, _, _, _, server = client
    assert server.host == "127.0.0.1"


def test_token_required(client) -> None:
    c, grader, _, _, server = client
    assert httpx.get(f"{server.url}/health").status_code == 200
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": server.token}):
        r = httpx.post(f"{server.url}/submit", json={"model_path": "output/v1"}, headers=headers)
        assert r.status_code == 401 and "A2RL_TOKEN" in r.json()["detail"]
        assert httpx.get(f"{server.url}/status", headers=headers).status_code == 401
    assert grader.ledger.records() == []


def test_submit_scores_and_reports_best(client, model_copy) -> None:
    c, grader, ws, fake, _ = client
    perturb(model_copy(ws / "output" / "v1"))
    r = c.post("/submit", json={"model_path": "output/v1"}).json()
    assert r["status"] == "scored" and r["score"] == 51.0 and r["baseline"] == 10.0
    assert r["improvement"] == 41.0 and r["best"] == {"submission_id": "s0001", "score": 51.0}
    status = c.get("/status").json()
    assert status["best"]["score"] == 51.0 and status["n_submissions"] == 1
    assert 0 < status["remaining_seconds"] <= 600


def test_baseline_copy_scores_baseline_without_evaluating(client, model_copy) -> None:
    c, grader, ws, fake, _ = client
    model_copy(ws / "output" / "same", ws / "model")
    r = c.post("/submit", json={"model_path": "output/same"}).json()
    assert r["status"] == "baseline_copy" and r["score"] == 10.0 and r["improvement"] == 0.0
    assert fake.calls == 0


def test_copy_of_the_workspace_model_is_a_baseline_copy_when_the_cache_has_hidden_files(
        tmp_path: Path, tiny_model: Path) -> None:
    """The embedded model's cache folder holds a `.complete` marker the workspace's model/
    leaves out: `cp -r model output/v1` inside the sandbox must still be recognised as the base
    model."""
    from a2rl.grader._artifact import folder_content_key, open_submission, snapshot_submission
    from a2rl.workspace import build_workspace

    cache = tmp_path / "cache"
    shutil.copytree(tiny_model, cache)
    (cache / ".complete").write_text("embedded\n")
    base = resolve_model(str(cache))
    ws = build_workspace(tmp_path / "ws", task=get_task("arith", TINY_TASK), base=base,
                         mode="free", budget_s=600, description="test")
    assert not (ws.model_files_dir / ".complete").exists()  # what the sandbox mounts at model/
    shutil.copytree(ws.model_files_dir, ws.root / "output" / "v1")
    fd = os.open(ws.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with open_submission("output/v1", fd, ws.root) as (sub_fd, rel):
            snap = snapshot_submission(sub_fd, rel, tmp_path / "artifacts", 1 << 32)
    finally:
        os.close(fd)
    assert snap.artifact_hash == base.content_hash
    assert snap.content_key == folder_content_key(base.path, base.content_hash)


def test_identical_weights_hit_the_cache_and_are_recorded(client, model_copy) -> None:
    c, grader, ws, fake, _ = client
    perturb(model_copy(ws / "output" / "a"))
    model_copy(ws / "output" / "b", ws / "output" / "a")
    first = c.post("/submit", json={"model_path": "output/a"}).json()
    second = c.post("/submit", json={"model_path": "output/b"}).json()
    assert fake.calls == 1
    assert second["cached"] and second["score"] == first["score"]
    assert [r.status for r in grader.ledger.records()] == ["scored", "scored"]
    assert grader.ledger.records()[1].cached_from == "s0001"


def test_evaluations_are_serialized(client, model_copy) -> None:
    c, grader, ws, fake, _ = client
    for i in range(3):
        perturb(model_copy(ws / "output" / f"m{i}"), scale=0.01 * (i + 1))
    results: list[dict] = []
    threads = [threading.Thread(target=lambda i=i: results.append(
        c.post("/submit", json={"model_path": f"output/m{i}"}).json())) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake.calls == 3 and fake.max_active == 1
    assert sorted(r["submission_id"] for r in results) == ["s0001", "s0002", "s0003"]


def test_no_wait_then_poll(client, model_copy) -> None:
    c, grader, ws, fake, _ = client
    perturb(model_copy(ws / "output" / "v1"))
    r = c.post("/submit", json={"model_path": "output/v1", "wait": False}).json()
    assert r["status"] == "pending"
    grader.wait_idle(10)
    polled = c.get(f"/submissions/{r['submission_id']}").json()
    assert polled["status"] == "scored"
    assert "resolved_path" not in polled and "artifact_dir" not in polled
    assert c.get("/submissions/s9999").status_code == 404


@pytest.mark.parametrize("body, needle", [
    (b"{not json", "malformed"),
    (b'{"path": "output/v1"}', "model_path"),
    (b"", "malformed"),
    (b'{"model_path": 5}', "model_path"),
])
def test_malformed_requests_are_explained_and_not_recorded(client, body, needle) -> None:
    c, grader, _, _, _ = client
    r = c.post("/submit", content=body)
    assert r.status_code == 422 and needle in r.json()["detail"]
    assert "Authorization: Bearer" in r.json()["detail"]
    assert grader.ledger.records() == []


def test_json_without_content_type_is_accepted(client, model_copy) -> None:
    c, grader, ws, _, _ = client
    perturb(model_copy(ws / "output" / "v1"))
    r = c.post("/submit", content=b'{"model_path": "output/v1"}',
               headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 200 and r.json()["status"] == "scored"


def test_rejections_are_recorded_without_scores(client, model_copy) -> None:
    c, grader, ws, _, _ = client
    (ws / "output" / "notamodel").mkdir()
    (ws / "output" / "notamodel" / "readme.txt").write_text("hi")
    for path in ("../model", "output/notamodel", "output/missing"):
        r = c.post("/submit", json={"model_path": path}).json()
        assert r["status"] == "rejected" and r["score"] is None and r["error"]
    assert all(rec.score is None for rec in grader.ledger.records())
    assert c.get("/status").json()["best"] is None


def test_budget_spent_rejects_new_submissions(setup, model_copy) -> None:
    run_dir, ws, make, fake = setup
    grader = make(budget=0.5)
    perturb(model_copy(ws / "output" / "v1"))
    time.sleep(0.6)
    r = grader.submit("output/v1")
    assert r.status == "rejected" and "budget" in (r.error or "")
    assert fake.calls == 0
    grader.close()


def test_failed_evaluation_is_recorded_and_grader_survives(setup, model_copy) -> None:
    from a2rl.grader import EvalFailed

    run_dir, ws, make, fake = setup
    grader = make()

    def boom(job, *, timeout_s, on_progress=None):
        raise EvalFailed("evaluation failed (exit code -9): killed (out of memory?)")

    grader._evaluator = boom
    perturb(model_copy(ws / "output" / "v1"))
    r = grader.submit("output/v1")
    assert r.status == "failed" and "out of memory" in (r.error or "")
    grader._evaluator = fake
    perturb(model_copy(ws / "output" / "v2"), scale=0.5)
    assert grader.submit("output/v2").status == "scored"
    grader.close()


def test_port_in_use_is_a_clear_error(setup) -> None:
    import socket

    from a2rl import A2RLError

    run_dir, ws, make, _ = setup
    grader = make()
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    with pytest.raises(A2RLError, match="already in use"):
        GraderServer(grader, port=blocker.getsockname()[1])
    blocker.close()
    grader.close()


def test_evaluation_child_does_not_load_the_http_server() -> None:
    """The child imports what it evaluates with, not the grading server (fastapi and pydantic's
    OpenAPI models cost every evaluation 0.3 s of start-up)."""
    import subprocess
    import sys

    code = ("import sys, a2rl.grader._eval_child; "
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'a2rl.grader._server') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_processes_an_evaluation_leaves_behind_are_killed(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An evaluation child that exits while something it started still runs (an engine's
    worker) does not leave it behind: the grader kills the child's process group."""
    import os
    import signal
    import time

    from a2rl.grader import _evaluation
    from a2rl.grader._evaluation import run_evaluation
    from a2rl.schema import EvalJob

    out = tmp_path / "out"
    pid_file = tmp_path / "worker.pid"
    fake = tmp_path / "fake-python"
    fake.write_text(
        "#!/bin/sh\n"
        "cat > /dev/null\n"
        f"sleep 300 & echo $! > {pid_file}\n"
        f"echo '{{\"score\": 1.0, \"n_items\": 1}}' > {out}/outcome.json\n"
        "exit 0\n")
    fake.chmod(0o755)
    monkeypatch.setattr(_evaluation, "child_python", lambda engine: str(fake))
    job = EvalJob(task={"name": "arith"}, model_dir="m", chat_template_from=None,
                  out_dir=str(out))
    outcome = run_evaluation(job, timeout_s=60)
    assert outcome.score == 1.0
    worker = int(pid_file.read_text())
    for _ in range(100):  # the kill is sent; the worker may take a moment to be reaped
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        if open(f"/proc/{worker}/stat").read().split()[2] == "Z":
            break  # killed, waiting for its parent (init) to reap it
        time.sleep(0.05)
    else:
        os.kill(worker, signal.SIGKILL)
        raise AssertionError("the evaluation's leftover worker is still running")
