"""The one reader of a run's record (`a2rl.schema.load_run`, also `a2rl.load_run`): a missing,
unreadable or malformed run.json is an error that names the file and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import a2rl
from a2rl._errors import A2RLError
from a2rl.schema import load_run


def test_a_missing_or_damaged_run_json_names_the_file_and_the_fix(tmp_path: Path) -> None:
    assert a2rl.load_run is load_run
    run_dir = tmp_path / "runs" / "arith" / "r1"
    run_dir.mkdir(parents=True)
    with pytest.raises(A2RLError, match="is not a run directory: it has no file run.json") as info:
        load_run(run_dir)
    assert str(run_dir) in info.value.message and "a2rl runs list" in (info.value.fix or "")
    (run_dir / "run.json").mkdir()  # not a file
    with pytest.raises(A2RLError, match="no file run.json"):
        load_run(run_dir)
    (run_dir / "run.json").rmdir()
    for damaged in (b'{"run_id": "r1", "status": ', b'{"run_id": 3}', b"\xff\xfe{}"):
        (run_dir / "run.json").write_bytes(damaged)
        with pytest.raises(A2RLError) as info:
            load_run(run_dir)
        assert str(run_dir / "run.json") in info.value.message
        assert "a2rl schema" in (info.value.fix or "")


def test_a_sweep_cell_whose_run_json_is_damaged_is_a_harness_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep reads each finished cell's record with `load_run`: a damaged one fails that
    cell's attempt, naming the file, instead of stopping the sweep."""
    from test_sweep import _ScriptedBackend, small_matrix

    import a2rl.sweep._backends
    from a2rl.sweep import load_cells, parse_matrix, run_sweep
    from a2rl.sweep._cell import JobResult, run_dir_of

    def script(job: Any) -> JobResult:
        if job.kind == "baseline":
            (Path(job.sweep_dir) / "baselines").mkdir(exist_ok=True)
            (Path(job.sweep_dir) / "baselines" / f"{job.key}.json").write_text('{"key": "k"}')
        else:
            run_dir = run_dir_of(job)
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "run.json").write_text('{"run_id": "r1", "status": ')  # cut mid-write
        return JobResult(outcome="finished", host="h", exit_code=0)

    monkeypatch.setattr(a2rl.sweep._backends, "make_backend",
                        lambda *a: _ScriptedBackend(script))
    data = small_matrix(tmp_path, "local", tasks=[small_matrix(tmp_path, "x")["tasks"][0]],
                        repeats=1, max_attempts=1, reference=False)
    summary = run_sweep(parse_matrix(data), tmp_path / "sw")
    assert summary.finished == 0 and summary.failed == 1
    (cell,) = load_cells(tmp_path / "sw")
    (attempt,) = cell.attempts
    assert attempt.outcome == "harness_failed"
    assert "record is unreadable" in (attempt.reason or "") and "run.json" in (attempt.reason or "")
