"""The ledger: unique ids under concurrency, append-only history, nothing lost on restart."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

from a2rl._util import utcnow
from a2rl.grader import Ledger


def _new(ledger: Ledger, path: str = "output/v1"):
    return ledger.create(received_at=utcnow(), model_path=path, status="pending", baseline=10.0,
                         task_fingerprint="fp")


def test_concurrent_threads_get_unique_ids(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ids: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(10):
            rec = _new(ledger)
            with lock:
                ids.append(rec.id)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 80 and len(set(ids)) == 80
    assert [r.seq for r in ledger.records()] == list(range(1, 81))


def _proc_worker(path: str, n: int) -> None:
    ledger = Ledger(Path(path))
    for _ in range(n):
        _new(ledger)


def test_concurrent_processes_get_unique_ids(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_proc_worker, args=(str(path), 15)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    records = Ledger(path).records()
    assert len(records) == 45 and len({r.id for r in records}) == 45


def test_updates_append_and_last_state_wins(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    rec = _new(ledger)
    ledger.update(rec, status="scored", score=42.0, improvement=32.0, finished_at=utcnow())
    assert len(ledger.history()) == 2  # nothing rewritten
    (current,) = ledger.records()
    assert current.status == "scored" and current.score == 42.0


def test_restart_keeps_everything_and_closes_pending(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    done = _new(ledger, "output/v1")
    ledger.update(done, status="scored", score=50.0, improvement=40.0)
    _new(ledger, "output/v2")  # the grader "dies" while this one is pending
    with path.open("a") as fh:
        fh.write('{"id": "s0003", "seq": 3, "recei')  # torn write from the crash
    reopened = Ledger(path)
    closed = reopened.mark_interrupted()
    assert [r.id for r in closed] == ["s0002"]
    records = {r.id: r for r in reopened.records()}
    assert records["s0001"].score == 50.0
    assert records["s0002"].status == "interrupted"
    assert _new(reopened, "output/v3").id == "s0003"  # ids continue after restart


def test_best_is_highest_valid_earliest_on_ties(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    a = _new(ledger)
    ledger.update(a, status="scored", score=30.0)
    b = _new(ledger)
    ledger.update(b, status="failed", error="x")
    c = _new(ledger)
    ledger.update(c, status="scored", score=30.0)
    best = ledger.best()
    assert best is not None and best.submission_id == a.id and best.score == 30.0


def test_ledger_is_private(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    _new(ledger)
    assert (tmp_path / "ledger.jsonl").stat().st_mode & 0o077 == 0
