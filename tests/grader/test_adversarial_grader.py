"""The grader against a hostile submitter (issue 17, classes 3, 5, 6, 7 and the protocol):
path escapes, crashing inputs, floods, a full disk, cache confusion, caps, confidence intervals
and the hidden final. A fake evaluator stands in for the model (the real child is covered at the
end and by the integration tests); every attack must end in a terminal record and 0 successes."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import httpx
import pytest

from a2rl._util import utcnow
from a2rl.grader import Grader, GraderConfig, GraderServer, Ledger, _artifact, read_final
from a2rl.grader._items import ItemValues
from a2rl.models import resolve_model
from a2rl.schema import TERMINAL_STATUSES, BaselineRecord, EvalJob, RunConfig
from a2rl.tasks import EvalOutcome, get_task
from conftest import TINY_TASK, perturb

N_ITEMS = 20


def item_values(quality: int, n: int = N_ITEMS, offset: int = 0) -> ItemValues:
    """`quality` of `n` items right (keys item<offset+i>)."""
    return ItemValues(keys=[f"item{offset + i}" for i in range(n)],
                      values=[1.0 if i < quality else 0.0 for i in range(n)], field="score")


class QualityEvaluator:
    """Scores a snapshot by the integer in its quality.txt (items right out of 20, default 4),
    writes items.json like the real child, and remembers every job it got."""

    def __init__(self) -> None:
        self.jobs: list[EvalJob] = []
        self.lock = threading.Lock()
        self.fail_with: BaseException | None = None

    def __call__(self, job: EvalJob, *, timeout_s: float, on_progress=None) -> EvalOutcome:
        with self.lock:
            self.jobs.append(job)
        if self.fail_with is not None:
            raise self.fail_with
        q = Path(job.model_dir) / "quality.txt"
        quality = int(q.read_text()) if q.exists() else 4
        offset = N_ITEMS if job.split == "test" else 0
        values = item_values(quality, offset=offset)
        out = Path(job.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "items.json").write_text(values.model_dump_json())
        if on_progress:
            on_progress(N_ITEMS, N_ITEMS)
        return EvalOutcome(score=100.0 * quality / N_ITEMS, n_items=N_ITEMS)

    @property
    def calls(self) -> int:
        return len(self.jobs)


class RaisingEvents:
    """A console that chokes on whatever the agent put in a record (class 5's worker killer)."""

    def submission_received(self, record) -> None:
        raise ValueError(f"markup error in {record.model_path!r}: closing tag '[/x]'")

    def eval_progress(self, record, done, total) -> None:
        raise ValueError("progress bar broke")

    def submission_finished(self, record, best) -> None:
        raise ValueError("closing tag '[/x]' at position 0 doesn't match any open tag")


def baseline_record(task, base, *, hidden: bool = False) -> BaselineRecord:
    from a2rl.grader import public_fingerprint

    extra = {}
    if hidden:
        extra = {"split": "dev", "test_score": 20.0, "test_n_items": N_ITEMS,
                 "test_items": item_values(4, offset=N_ITEMS)}
    return BaselineRecord(score=20.0, n_items=N_ITEMS, metrics={}, model_hash=base.content_hash,
                          task_fingerprint=public_fingerprint(task), evaluator_version="2",
                          eval_seconds=1.0, computed_at=utcnow(), items=item_values(4),
                          ci_low=8.1, ci_high=41.6, ci_method="wilson", **extra)


@pytest.fixture
def env(tmp_path: Path, tiny_model: Path, model_copy):
    run_dir = tmp_path / "run"
    ws = run_dir / "workspace"
    (ws / "output").mkdir(parents=True)
    model_copy(ws / "model")
    task = get_task("arith", TINY_TASK)
    base = resolve_model(str(tiny_model))
    fake = QualityEvaluator()
    made: list[Grader] = []

    def make(events=None, hidden: bool = False, disk_reserve_bytes: int | None = None,
             **options) -> Grader:
        run = RunConfig(budget_s=600.0, final="hidden" if hidden else "off",
                        runs_dir=str(tmp_path), **options)
        config = GraderConfig(run) if disk_reserve_bytes is None else \
            GraderConfig(run, disk_reserve_bytes=disk_reserve_bytes)
        g = Grader(run_dir, ws, task, base, baseline_record(task, base, hidden=hidden), config,
                   events=events, evaluator=fake)
        g.start_clock()
        made.append(g)
        return g

    def model(name: str, quality: int | None = None, scale: float = 0.01) -> Path:
        d = model_copy(ws / "output" / name)
        perturb(d, scale=scale)
        if quality is not None:
            (d / "quality.txt").write_text(str(quality))
        return d

    yield run_dir, ws, make, fake, model, tmp_path
    for g in made:
        g.close()


def all_terminal(grader: Grader) -> bool:
    return all(r.status in TERMINAL_STATUSES for r in grader.ledger.records())


# -- class 5: one bad submission must not stop grading ------------------------------------------
def test_worker_survives_hooks_that_raise(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make(events=RaisingEvents())
    model("v1", 6)
    model("v2", 8, scale=0.02)
    first = g.submit("output/v1")
    second = g.submit("output/v2")
    assert (first.status, second.status) == ("scored", "scored")
    assert second.best is not None and second.best.score == 40.0
    assert all_terminal(g)


@pytest.mark.parametrize("config", [
    {"model_type": "[/x]"}, {"model_type": "[bold red]✔ s0999 score 100.00[/]"},
    [1, 2, 3], "just a string", None, {"model_type": 5},
])
def test_hostile_config_json_never_stalls_grading(env, config) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make(events=RaisingEvents())
    bad = model("bad")
    cfg = json.loads((bad / "config.json").read_text()) if isinstance(config, dict) else None
    if cfg is not None:
        cfg.update(config)
    (bad / "config.json").write_text(json.dumps(cfg if cfg is not None else config))
    r = g.submit("output/bad")
    assert r.status in TERMINAL_STATUSES
    model("good", 7, scale=0.03)
    assert g.submit("output/good").status == "scored"
    assert all_terminal(g)


def test_deeply_nested_and_binary_config_are_rejected(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    for name, blob in (("deep", b"[" * 200000 + b"]" * 200000), ("binary", b"\xff\xfe\x00{"),
                       ("empty", b"")):
        (model(name) / "config.json").write_bytes(blob)
        r = g.submit(f"output/{name}")
        assert r.status == "rejected" and r.error, name
        assert str(run_dir) not in r.error
    assert fake.calls == 0 and all_terminal(g)


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyError("x"), MemoryError(),
                                 RecursionError("deep")])
def test_evaluator_crash_is_a_failed_record_and_the_next_one_scores(env, exc) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    model("v1", 5)
    fake.fail_with = exc
    r = g.submit("output/v1")
    assert r.status == "failed" and "grader error" in (r.error or "")
    fake.fail_with = None
    model("v2", 9, scale=0.05)
    assert g.submit("output/v2").status == "scored"
    assert g.status().pending == 0 and all_terminal(g)


def test_unexpected_crash_in_the_request_still_ends_in_a_record(env, monkeypatch) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    model("v1", 5)

    def explode(*a, **k):
        raise ZeroDivisionError("a grader bug")

    monkeypatch.setattr("a2rl.grader._grader.snapshot_submission", explode)
    r = g.submit("output/v1")
    assert r.status == "failed" and r.submission_id == "s0001"
    assert g.ledger.get("s0001").status == "failed" and all_terminal(g)


def test_restart_closes_stale_pending_records(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    ledger = Ledger(run_dir / "ledger.jsonl")
    ledger.create(received_at=utcnow(), model_path="output/v1", status="pending", baseline=1.0,
                  task_fingerprint="fp")
    g = make()
    (rec,) = g.ledger.records()
    assert rec.status == "interrupted" and "submit the model again" in (rec.error or "")


# -- class 3: path escapes, host paths in replies, another run's model ---------------------------
HOSTILE_PATHS = [
    "../model", "output/../../ledger.jsonl", "/etc/passwd", "/proc/self/root/etc",
    "/proc/self/cwd/output/v1", "/proc/1/root", "output/\ud800", "output/" + "a" * 4000,
    "output/v1\0", "\\..\\model", "output/./../model", "output", "~/output/v1", "",
    "output/%2e%2e/model",
]


def test_hostile_path_strings_end_in_rejected_records(env) -> None:
    run_dir, ws, make, fake, model, tmp_path = env
    g = make()
    for raw in HOSTILE_PATHS:
        r = g.submit(raw)
        assert r.status == "rejected" and r.error, raw
        assert str(tmp_path) not in r.error and "/proc/" not in r.error.replace(raw, ""), raw
    for raw in (5, None, ["output/v1"], {"a": 1}):
        assert g.submit(raw).status == "rejected"
    assert fake.calls == 0 and all_terminal(g)
    assert len(g.ledger.records()) == len(HOSTILE_PATHS) + 4


def test_hostile_paths_over_http_never_give_500(env) -> None:
    run_dir, ws, make, fake, model, tmp_path = env
    g = make()
    server = GraderServer(g).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60,
                          headers={"Authorization": f"Bearer {server.token}"}) as c:
            bodies = [b'{"model_path": "output/\\ud800"}', b'{"model_path": "output/\\u0000x"}',
                      json.dumps({"model_path": "/proc/self/root" + str(ws)}).encode(),
                      b'{"model_path": "' + b"x" * 100000 + b'"}']
            for body in bodies:
                r = c.post("/submit", content=body)
                assert r.status_code in (200, 422), (body[:40], r.status_code)
                # Only the agent's own text comes back, never a host path it did not send.
                assert str(tmp_path) not in r.text.replace("/proc/self/root" + str(ws), "")
                if r.status_code == 200:
                    assert r.json()["status"] == "rejected"
            r = c.get("/submissions/" + "%2e%2e")
            assert r.status_code == 404
    finally:
        server.stop()
    assert all_terminal(g)


def test_output_replaced_by_a_symlink_reveals_nothing(env, model_copy) -> None:
    run_dir, ws, make, fake, model, tmp_path = env
    g = make()
    host = tmp_path / "host"
    model_copy(host / "exists")
    os.rename(ws / "output", ws / "output.real")
    os.symlink(host, ws / "output")
    a = g.submit("output/exists")
    b = g.submit("output/does-not-exist")
    assert a.status == b.status == "rejected" and fake.calls == 0
    # The two replies say the same thing: no oracle for what exists on the host.
    assert a.error == b.error.replace("does-not-exist", "exists")
    assert str(host) not in a.error


def test_another_runs_model_can_never_be_scored(env, model_copy) -> None:
    run_dir, ws, make, fake, model, tmp_path = env
    g = make()
    other = model_copy(tmp_path / "run2" / "workspace" / "output" / "theirs")
    (other / "quality.txt").write_text("20")
    os.symlink(other, ws / "output" / "theirs")
    os.makedirs(ws / "output" / "mine")
    for f in other.iterdir():
        os.symlink(f, ws / "output" / "mine" / f.name)
    for raw in (str(other), "output/theirs", "output/mine",
                str(ws / "output" / ".." / ".." / "run2" / "workspace" / "output" / "theirs"),
                "/proc/self/root" + str(other)):
        r = g.submit(raw)
        assert r.status == "rejected" and r.score is None, raw
        assert str(tmp_path / "run2") not in (r.error or "").replace(raw, "")
    assert fake.calls == 0


def test_files_swapped_during_the_copy_are_read_from_what_was_opened(env, monkeypatch) -> None:
    """The check is on the opened descriptor: a symlink swapped in after the listing is refused,
    and a file swapped after it was opened is copied from the original inode."""
    run_dir, ws, make, fake, model, tmp_path = env
    g = make()
    d = model("v1", 6)
    secret = tmp_path / "host-secret.json"
    secret.write_text('{"token": "hunter2"}')
    real_open = os.open

    def swapping_open(path, flags, mode=0o777, *, dir_fd=None):
        if path == "tokenizer_config.json" and dir_fd is not None:
            os.unlink(d / "tokenizer_config.json")
            os.symlink(secret, d / "tokenizer_config.json")
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(_artifact.os, "open", swapping_open)
    r = g.submit("output/v1")
    assert r.status == "rejected" and "symlink" in (r.error or "")
    blobs = run_dir / "artifacts" / "blobs"
    assert not any(b"hunter2" in p.read_bytes() for p in blobs.iterdir())


# -- class 5: a flood must not slow later requests ------------------------------------------------
def test_flood_does_not_make_requests_reread_the_ledger(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    for _ in range(20):
        g.submit("output/missing")
    parsed_early = g.ledger.lines_parsed
    for _ in range(20):
        g.submit("output/missing")
    early = g.ledger.lines_parsed - parsed_early
    for _ in range(400):
        g.submit("../flood")
    parsed_late = g.ledger.lines_parsed
    for _ in range(20):
        g.submit("output/missing")
    late = g.ledger.lines_parsed - parsed_late
    # Requests parse only lines other processes appended: none here, however long the ledger.
    assert early == late == 0
    assert len(g.ledger.records()) == 460
    # Another process appending is picked up by reading only its new lines.
    other = Ledger(run_dir / "ledger.jsonl")
    other.create(received_at=utcnow(), model_path="output/x", status="rejected", baseline=1.0,
                 task_fingerprint="fp")
    before = g.ledger.lines_parsed
    assert g.ledger.count() == 461 and g.ledger.lines_parsed - before == 1


# -- class 6: disk ---------------------------------------------------------------------------------
def test_low_disk_is_a_clear_rejection_and_the_run_closes(env, monkeypatch) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    model("v1", 6)
    monkeypatch.setattr(_artifact, "free_bytes", lambda p: 1 << 20)
    r = g.submit("output/v1")
    assert r.status == "rejected" and "disk" in (r.error or "") and "free" in (r.error or "")
    monkeypatch.setattr(_artifact, "_copy_fd", lambda *a: (_ for _ in ()).throw(
        OSError(28, "No space left on device")))
    monkeypatch.setattr(_artifact, "free_bytes", lambda p: 1 << 40)
    r = g.submit("output/v1")
    assert r.status == "rejected" and "filled up" in (r.error or "")
    g.close()
    assert all_terminal(g) and fake.calls == 0


def test_real_full_disk_on_a_small_tmpfs(env, tmp_path) -> None:
    """A 4 MiB tmpfs as the run's artifact store (skipped where tmpfs cannot be mounted)."""
    import subprocess

    run_dir, ws, make, fake, model, _ = env
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        g = make(disk_reserve_bytes=0)
        (run_dir / "artifacts").symlink_to(small)  # the harness's own link, not the agent's
        model("v1", 6)
        r = g.submit("output/v1")  # ~12 MB of weights into 4 MiB
        assert r.status == "rejected" and "disk" in (r.error or "")
        assert all_terminal(g)
    finally:
        subprocess.run(["umount", str(small)], capture_output=True)


@pytest.mark.parametrize("policy, kept", [("all", {"s0001", "s0002", "s0003", "s0004"}),
                                          ("scored", {"s0002", "s0003"}),
                                          ("best", {"s0003"})])
def test_keep_artifacts_policy(env, model_copy, policy, kept) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make(keep_artifacts=policy)
    model_copy(ws / "output" / "same", ws / "model")
    assert g.submit("output/same").status == "baseline_copy"  # s0001
    model("a", 5)
    model("b", 9, scale=0.02)
    assert g.submit("output/a").status == "scored"  # s0002
    assert g.submit("output/b").status == "scored"  # s0003 (best)
    fake.fail_with = RuntimeError("x")
    model("c", 2, scale=0.03)
    assert g.submit("output/c").status == "failed"  # s0004
    g.close()
    present = {r.id for r in g.ledger.records() if (run_dir / r.artifact_dir).is_dir()}
    assert present == kept


# -- class 7: the cache keys on everything the evaluator reads -----------------------------------
def test_same_weights_other_tokenizer_is_evaluated_not_cached(env, model_copy) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    a = model("a", 5)
    b = model_copy(ws / "output" / "b", a)
    (b / "quality.txt").write_text("18")  # same weights, other files: an exploit tokenizer
    tok = json.loads((b / "tokenizer.json").read_text())
    tok["decoder"] = {"type": "Replace", "pattern": {"String": ""}, "content": "EXPLOIT"}
    (b / "tokenizer.json").write_text(json.dumps(tok))
    ra, rb = g.submit("output/a"), g.submit("output/b")
    assert not rb.cached and fake.calls == 2 and rb.score == 90.0 and ra.score == 25.0
    model_copy(ws / "output" / "c", b)
    rc = g.submit("output/c")
    assert rc.cached and rc.score == rb.score and fake.calls == 2


@pytest.mark.parametrize("name", ["tokenizer_config.json", "generation_config.json",
                                  "special_tokens_map.json", "chat_template.jinja",
                                  "added_tokens.json"])
def test_base_weights_with_other_files_are_not_a_baseline_copy(env, model_copy, name) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    d = model_copy(ws / "output" / "tweak", ws / "model")
    (d / name).write_text('{"changed": true}')
    r = g.submit("output/tweak")
    assert r.status == "scored" and fake.calls == 1


# -- protocol: caps, rate limits, confidence intervals -------------------------------------------
def test_submission_cap_and_rate_limit_are_recorded_refusals(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make(max_submissions=2)
    model("a", 5)
    model("b", 6, scale=0.02)
    model("c", 7, scale=0.03)
    assert g.submit("output/missing").status == "rejected"  # does not count
    assert g.submit("output/a").status == "scored"
    assert g.status().submissions_left == 1
    assert g.submit("output/b").status == "scored"
    r = g.submit("output/c")
    assert r.status == "rejected" and "allows 2 submissions" in (r.error or "")
    assert fake.calls == 2
    g.close()
    (run_dir / "ledger.jsonl").unlink()
    g2 = make(min_interval_s=3600)
    assert g2.submit("output/a").status == "scored"
    r = g2.submit("output/b")
    assert r.status == "rejected" and "submit again in" in (r.error or "")


def test_every_score_has_a_confidence_interval_and_noise_is_flagged(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    model("noise", 5)  # baseline gets 4/20; one more item right: +5 points, noise
    model("real", 20, scale=0.02)
    noise, real = g.submit("output/noise"), g.submit("output/real")
    assert noise.ci_low is not None and noise.ci_low < 25.0 < noise.ci_high
    assert noise.significant is False and real.significant is True
    rec = g.ledger.get(noise.submission_id)
    assert rec.ci_method == "wilson" and rec.n_items == N_ITEMS


def test_wilson_and_bootstrap_intervals() -> None:
    from a2rl.grader._stats import paired_difference, score_interval, wilson

    lo, hi = wilson(100, 200)
    assert 0.43 < lo < 0.44 and 0.56 < hi < 0.57
    ci = score_interval([0.25, 0.5, 0.75, 1.0] * 25, 62.5)
    assert ci is not None and ci.method == "bootstrap" and ci.low < 62.5 < ci.high
    shifted = score_interval([1.0, 0.0] * 50, 60.0)  # a score that is not the item mean
    assert shifted is not None and shifted.method == "bootstrap-shifted"
    assert shifted.low < 60.0 < shifted.high
    one_flip = {f"k{i}": 0.0 for i in range(200)}
    flipped = dict(one_flip, k0=1.0)
    lo_d, hi_d = paired_difference(flipped, one_flip)
    assert lo_d <= 0.0 <= hi_d  # +0.5 points from one item: not significant


# -- protocol: the hidden final ---------------------------------------------------------------------
def test_hidden_final_scores_the_designated_model_once_on_the_test_split(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make(hidden=True)
    server = GraderServer(g).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60,
                          headers={"Authorization": f"Bearer {server.token}"}) as c:
            model("a", 10)
            model("b", 15, scale=0.02)
            ra = c.post("/submit", json={"model_path": "output/a"}).json()
            rb = c.post("/submit", json={"model_path": "output/b"}).json()
            assert ra["split"] == rb["split"] == "dev" and rb["best"]["submission_id"] == "s0002"
            bad = c.post("/final", json={"submission_id": "s0099"})
            assert bad.status_code == 409 and "not a scored submission" in bad.json()["detail"]
            ok = c.post("/final", json={"model_path": "output/a"}).json()
            assert ok["submission_id"] == "s0001"
            assert c.get("/status").json()["final_designated"] == "s0001"
    finally:
        server.stop()
    assert [j.split for j in fake.jobs] == ["dev", "dev"]
    result = g.run_final()
    assert result.status == "scored" and result.chosen_by == "agent"
    assert result.submission_id == "s0001" and result.score == 50.0
    assert result.dev_score == 50.0 and result.test_baseline == 20.0
    assert result.improvement == 30.0 and result.significant is True
    assert [j.split for j in fake.jobs] == ["dev", "dev", "test"]
    # Scored once: asking again re-evaluates nothing; the agent never sees the test record.
    assert g.run_final() == result and fake.calls == 3
    assert [r.id for r in g.feedback_records()] == ["s0001", "s0002"]
    assert g.ledger.best().submission_id == "s0002"
    assert read_final(run_dir) == result


def test_hidden_final_defaults_to_the_best_dev_model_and_is_flagged_with_submit(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make(hidden=True)
    model("a", 10)
    model("b", 15, scale=0.02)
    g.submit("output/a")
    g.submit("output/b")
    result = g.run_final()
    assert result.chosen_by == "best_dev" and result.submission_id == "s0002"
    g.close()
    for p in ("ledger.jsonl", "final.json"):
        (run_dir / p).unlink()
    g2 = make(hidden=True)
    g2.submit("output/a", final=True)
    g2.submit("output/b")
    assert g2.run_final().submission_id == "s0001"


def test_final_off_and_no_candidate(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    assert g.run_final().status == "off"
    with pytest.raises(Exception, match="no hidden final"):
        g.designate_final(submission_id="s0001")
    g.close()
    (run_dir / "final.json").unlink()
    g2 = make(hidden=True)
    g2.submit("output/missing")
    assert g2.run_final().status == "no_candidate" and fake.calls == 0


def test_evaluation_errors_name_no_host_path(env) -> None:
    from a2rl.grader import EvalFailed

    run_dir, ws, make, fake, model, tmp_path = env
    g = make()
    model("v1", 5)

    def fail(job, *, timeout_s, on_progress=None):
        raise EvalFailed(f"evaluation failed (exit code 1): OSError: {job.model_dir}/config.json "
                         f"and /usr/lib/python3/site-packages/secret_module.py and {run_dir}/x")

    g._evaluator = fail
    r = g.submit("output/v1")
    assert r.status == "failed" and "output/v1/config.json" in (r.error or "")
    assert str(tmp_path) not in r.error and "/usr/lib" not in r.error
    assert "secret_module.py" in r.error  # the last component still tells what broke


def test_designating_a_pruned_snapshot_is_refused_with_the_fix(env) -> None:
    from a2rl.grader import SubmissionRejected

    run_dir, ws, make, fake, model, _ = env
    g = make(hidden=True, keep_artifacts="best")
    model("a", 5)
    model("b", 9, scale=0.02)
    g.submit("output/a")
    g.submit("output/b")  # a is no longer the best: its snapshot goes
    with pytest.raises(SubmissionRejected, match="no longer kept") as info:
        g.designate_final(model_path="output/a")
    assert '"final": true' in (info.value.fix or "")
    r = g.submit("output/a", final=True)
    assert r.status == "scored" and r.cached
    assert g.status().final_designated == r.submission_id
    assert g.run_final().status == "scored"


def test_close_leaves_nothing_pending(env) -> None:
    run_dir, ws, make, fake, model, _ = env
    g = make()
    model("v1", 5)
    gate = threading.Event()
    real = fake.__call__

    def slow(job, *, timeout_s, on_progress=None):
        gate.wait(30)
        return real(job, timeout_s=timeout_s, on_progress=on_progress)

    g._evaluator = slow
    r = g.submit("output/v1", wait=False)
    assert r.status == "pending"
    g.close()  # the harness stops waiting while the evaluation still runs
    assert g.ledger.get(r.submission_id).status == "interrupted"
    gate.set()
    g._worker.join(30)
    assert g.ledger.get(r.submission_id).status == "scored"  # finished after all: last wins
