"""Sweeps without running cells: the matrix and its errors, cell ids, studies (seeds, grader key,
secrecy), the status table, tracker logging, and the CLI's argument handling. The helpers at the
top build the small matrix the backend tests (test_sweep_local/ray/slurm.py) run end to end."""

from __future__ import annotations

import base64
import copy
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from a2rl._errors import A2RLError
from a2rl.cli import app
from a2rl.sweep import (
    CellState,
    create_study,
    expand,
    find_study,
    join_study,
    parse_matrix,
    show_status,
)
from a2rl.sweep._state import CellResult, save_cell


@pytest.fixture(autouse=True)
def _no_study_key_left_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """join_study points this process at a study's key: undone after each test, so later tests
    in this worker use their own installation key."""
    from a2rl._secrets import KEY_FILE_ENV

    monkeypatch.setenv(KEY_FILE_ENV, "unset")  # records the original, restored at teardown
    monkeypatch.delenv(KEY_FILE_ENV)


# --- the small matrix of the end-to-end tests -----------------------------------------------

# A scripted agent: submits the base model unchanged (scored as the baseline, no evaluation).
BASE_COPY = ("cmd:cp -r \"$MODEL_PATH\" output/v1 && curl -s -X POST \"$A2RL_GRADER_URL/submit\" "
             "-H \"Authorization: Bearer $A2RL_TOKEN\" -H 'Content-Type: application/json' "
             "-d '{\"model_path\": \"output/v1\"}'")

# The same, except that the first time any cell runs it (`mkdir` is atomic across cells) it
# SIGKILLs its cell's harness process: what a crashed harness or a lost machine looks like.
_KILLER = """
import os, signal, sys
marker = sys.argv[1]
try:
    os.mkdir(marker)
except FileExistsError:
    sys.exit(0)
pid = os.getppid()
while pid > 1:
    cmd = open(f"/proc/{pid}/cmdline", "rb").read()
    if b"a2rl.sweep._child" in cmd:
        os.kill(pid, signal.SIGKILL)
        break
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
"""


def killer_agent(marker: Path) -> str:
    blob = base64.b64encode(_KILLER.encode()).decode()
    return (f"cmd:echo {blob} | base64 -d > /tmp/killer.py && python /tmp/killer.py "
            f"'{marker}' && " + BASE_COPY[4:])


ARITH = {"name": "arith", "options": {"n_train": 40, "n_heldout": 6}}
# A second task entry: arith with another generator (other items, its own baseline). The other
# built-in tasks generate hundreds of tokens per item: minutes per evaluation on a loaded CPU.
ARITH_MUL = {"name": "arith", "label": "arith-mul", "options": {
    "n_train": 40, "n_heldout": 6,
    "generator": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1,
                  "operators": ["*"], "allow_parentheses": False, "allow_negation": False}}}
REFERENCE = {"name": "reference", "agent": "reference",
             "options": {"steps": 1, "batch_size": 4, "max_train": 8}}


def small_matrix(model: Path, backend: str, *, agent: str = BASE_COPY,
                 tasks: list[dict[str, Any]] | None = None, reference: bool = True,
                 **extra: Any) -> dict[str, Any]:
    """2 tasks × 2 agents (reference, scripted) × 2 repeats, as cheap as a run gets (the unit
    tests use it whole; the end-to-end tests pass `tasks`/`repeats` for the fewest real runs)."""
    data: dict[str, Any] = {
        "name": f"t-{backend}", "backend": backend, "repeats": 2, "max_attempts": 2,
        "budget": "5m", "tasks": tasks or [ARITH, ARITH_MUL],
        "agents": ([REFERENCE] if reference else []) + [{"name": "scripted", "agent": agent}],
        "models": [str(model)],
        # unsandboxed: the killer agent must reach its harness (bwrap is covered elsewhere)
        "run": {"sandbox": "none", "eval_timeout": "10m", "grace": 2, "exec_trace": False},
        "resources": {"cpus": 1},
    }
    data.update(extra)
    return copy.deepcopy(data)  # callers edit it; the module's entries stay as they are


def check_finished_sweep(sweep_dir: Path, n_cells: int = 8, n_tasks: int = 2
                         ) -> list[CellState]:
    """Every cell finished, scored against one shared baseline per task, inside the study."""
    from a2rl.sweep import load_cells

    cells = load_cells(sweep_dir)
    assert len(cells) == n_cells
    assert all(c.status == "finished" for c in cells), [(c.id, c.status, c.error)
                                                        for c in cells]
    study = json.loads((sweep_dir / "study.json").read_text())
    assert (sweep_dir / "study.json").stat().st_mode & 0o777 == 0o600
    baselines: dict[str, float] = {}
    for c in cells:
        assert c.result is not None
        record = json.loads((sweep_dir / c.result.run_dir / "run.json").read_text())
        assert record["status"] == "finished"
        assert record["config"]["study"]["id"] == study["id"]
        # the baseline was scored once per task by the sweep, then read from the cache
        assert record["baseline"]["cached"] is True
        baselines.setdefault(c.spec.task_label, record["baseline"]["score"])
        assert record["baseline"]["score"] == baselines[c.spec.task_label]
        if c.spec.agent_label == "scripted":
            assert c.result.submissions == 1
    # one baseline group per task entry, each scored by one job
    assert len([p for p in (sweep_dir / "baselines").iterdir() if p.is_dir()]) == n_tasks
    return cells


# --- the matrix --------------------------------------------------------------------------


def test_matrix_errors_name_the_key_and_the_fix(tmp_path: Path) -> None:
    base = small_matrix(tmp_path, "local")
    with pytest.raises(A2RLError) as exc:
        parse_matrix({**base, "taks": ["arith"]})
    assert "unknown key taks" in exc.value.message and "tasks" in (exc.value.fix or "")
    bad_agent = {**base, "agents": [{"agent": "reference", "optoins": {}}]}
    with pytest.raises(A2RLError) as exc:
        parse_matrix(bad_agent)
    assert "agents[0].optoins" in exc.value.message and "options" in (exc.value.fix or "")
    with pytest.raises(A2RLError) as exc:
        parse_matrix({**base, "budget": "twelve hours"})
    assert "budget" in exc.value.message and "duration" in exc.value.message
    with pytest.raises(A2RLError) as exc:
        parse_matrix({k: v for k, v in base.items() if k != "tasks"})
    assert "missing key tasks" in exc.value.message
    with pytest.raises(A2RLError, match="multi"):
        parse_matrix({**base, "modes": ["free", "multi"]})
    with pytest.raises(A2RLError, match="backend"):
        parse_matrix({**base, "backend": "kubernetes"})
    with pytest.raises(A2RLError, match="not a mapping"):
        parse_matrix(["arith"])
    # a sandbox backend is any registered one (a plug-in's too), not a fixed list
    with pytest.raises(A2RLError) as exc:
        parse_matrix({**base, "run": {**base["run"], "sandbox": "jail"}})
    assert "unknown sandbox 'jail'" in exc.value.message and "bwrap" in exc.value.message


def test_plan_commands_carry_extensions_as_run_options(tmp_path: Path) -> None:
    """`run: extensions:` reaches each cell's config and its `a2rl run` command line."""
    from a2rl.sweep import plan
    from a2rl.sweep._cell import _config

    data = small_matrix(tmp_path, "local")
    data["run"]["extensions"] = {"testplugin-stamp": {"word": "hi", "n": 2}, "bare": {}}
    cells = plan(parse_matrix(data), None)
    argv = shlex.split(cells[0].command)
    i = argv.index("--extension")
    assert argv[i:i + 4] == ["--extension", "bare", "--extension", "testplugin-stamp:n=2,word=hi"]
    assert _config(cells[0].spec, tmp_path).extensions == data["run"]["extensions"]


def test_cells_have_stable_ids_and_resources_per_cell(tmp_path: Path) -> None:
    data = small_matrix(tmp_path, "local")
    data["tasks"][1]["resources"] = {"gpus": 1}
    data["drivers"] = [None, "model-a"]
    data["agents"][0] = {"name": "oc", "agent": "opencode"}  # a CLI: any provider's model
    data["agents"][1]["drivers"] = [{}]  # the scripted agent has no driver
    cells = expand(parse_matrix(data), "s")
    # 2 task entries × (opencode × 2 drivers + scripted × 1) × 2 repeats
    assert len(cells) == 2 * 3 * 2
    assert {c.driver for c in cells if c.agent == "opencode"} == {None, "model-a"}
    assert all(c.resources.gpus == (1 if c.task_label == "arith-mul" else 0) for c in cells)
    assert all(c.budget_s == 300 for c in cells)
    ids = [c.id for c in cells]
    assert len(set(ids)) == len(ids)
    # resources, labels and the backend are not part of a cell's identity; repeats are
    moved = {**data, "backend": "ray", "resources": {"cpus": 4}}
    assert [c.id for c in expand(parse_matrix(moved), "s")] == ids
    more = {**data, "repeats": 3}
    assert set(ids) < {c.id for c in expand(parse_matrix(more), "s")}
    assert [c.id for c in expand(parse_matrix(data), "other-study")] != ids
    dup = {**data, "modes": ["free", "free"]}
    with pytest.raises(A2RLError, match="twice"):
        expand(parse_matrix(dup), "s")


def test_the_example_matrices_are_valid() -> None:
    from a2rl.sweep import load_matrix

    folder = Path(__file__).parent.parent.parent / "examples" / "sweeps"
    counts = {}
    for path in sorted(folder.glob("*.yaml")):
        matrix = load_matrix(path)
        counts[path.stem] = len(expand(matrix, matrix.study or "s"))
    # local: 2 tasks × 2 agents × 2 repeats; ray: 3 tasks × (2 agents × 2 drivers + 1) ×
    # 3 modes × 3 repeats; slurm: 2 tasks × 2 agents × 3 repeats; the scaffold ablation:
    # 3 tasks × 7 arms × 3 repeats; smoke: one cell
    assert counts == {"local": 8, "ray": 135, "scaffold_ablation": 63, "slurm": 12, "smoke": 1}


def test_scaffold_arms_are_cells_with_their_own_ids(tmp_path: Path) -> None:
    data = small_matrix(tmp_path, "local")
    plain = expand(parse_matrix(data), "s")
    arms = {**data, "scaffolds": [None, "skills,journal", "all"],
            "scaffold_options": {"revision_every": "2"}}
    cells = expand(parse_matrix(arms), "s")
    assert len(cells) == 3 * len(plain)
    # autonomous cells keep the ids they had before the axis existed
    assert {c.id for c in cells if c.scaffold is None} == {c.id for c in plain}
    assert {c.scaffold for c in cells} == {None, "journal,skills",
                                           "journal,skills,evaluator,plan-review,revision"}
    assert all(c.scaffold_options == ({} if c.scaffold is None else {"revision_every": "2"})
               for c in cells)
    from a2rl.sweep._cell import _config

    config = _config(next(c for c in cells if c.scaffold == "journal,skills"), tmp_path)
    assert config.scaffold is not None and config.scaffold.components == ["journal", "skills"]
    assert config.scaffold.revision_every == 2
    with pytest.raises(A2RLError, match="scaffold"):
        parse_matrix({**data, "scaffolds": ["journal", "jornal"]})


def test_every_run_option_is_a_sweep_option(tmp_path: Path) -> None:
    """The matrix's `run:` takes every `a2rl run` option from the run config's own definition
    (engine, eval GPUs, vLLM memory, agent limits, ...), and each cell's run config carries them."""
    from a2rl.schema import RunConfig
    from a2rl.sweep._cell import _config
    from a2rl.sweep._matrix import RunOptions

    per_cell = {"task", "tasks", "task_params", "agent", "agent_options", "model", "mode",
                "budget_s", "port", "runs_dir", "driver", "driver_base_url", "study", "scaffold"}
    spelled = {"eval_timeout_s": "eval_timeout", "grace_s": "grace",
               "min_interval_s": "min_interval", "snapshot_every_s": "snapshot_every"}
    assert {spelled.get(f, f) for f in RunConfig.model_fields} - per_cell == set(RunOptions.model_fields)
    data = small_matrix(tmp_path, "local")
    plain = {c.id for c in expand(parse_matrix(data), "s")}
    data["run"].update(engine="vllm", eval_gpus="1", vllm_memory=0.5, agent_procs=512,
                       snapshot_every="2m")
    data["scaffolds"] = ["journal"]
    cells = expand(parse_matrix(data), "s")
    config = _config(cells[0], tmp_path)
    assert (config.engine, config.eval_gpus, config.vllm_memory) == ("vllm", "1", 0.5)
    assert config.agent_procs == 512 and config.snapshot_every_s == 120
    assert config.scaffold is not None and config.scaffold.components == ["journal"]
    assert (config.eval_timeout_s, config.grace_s, config.exec_trace) == (600, 2, False)
    # options that change what a cell measures are part of its id; the defaults keep old ids
    assert not plain & {c.id for c in cells}
    with pytest.raises(A2RLError, match="vllm_memory"):
        parse_matrix({**data, "run": {**data["run"], "vllm_memory": 3}})


def test_sweep_plan_lists_cells_and_refuses_a_cli_with_a_foreign_driver(tmp_path: Path) -> None:
    folder = Path(__file__).parent.parent.parent / "examples" / "sweeps"
    for path in sorted(folder.glob("*.yaml")):
        out = CliRunner().invoke(app, ["sweep", "plan", str(path)])
        assert out.exit_code == 0, (path, out.output)
        assert "cells to run" in out.output
    slurm = CliRunner().invoke(app, ["sweep", "plan", str(folder / "slurm.yaml")])
    assert "a2rl run --task gsm8k --agent codex" in slurm.output
    assert "--driver gpt-6.2-sol --final=hidden" in slurm.output
    assert not (Path.cwd() / "sweeps" / "paper-slurm").exists()  # nothing started or written
    # Codex speaks the OpenAI API: a Claude model is refused, with the fix
    data = small_matrix(tmp_path, "local", reference=False)
    data["agents"] = [{"agent": "codex"}]
    data["drivers"] = [{"driver": "claude-sonnet-4-5"}]
    matrix = tmp_path / "bad.yaml"
    matrix.write_text(json.dumps(data))
    bad = CliRunner().invoke(app, ["sweep", "plan", str(matrix)])
    assert bad.exit_code != 0
    assert isinstance(bad.exception, A2RLError)
    assert "claude-sonnet-4-5" in bad.exception.message and "drivers" in (bad.exception.fix or "")
    # through a compatible endpoint the endpoint decides
    data["drivers"] = [{"driver": "claude-sonnet-4-5", "base_url": "http://127.0.0.1:9/v1"}]
    assert len(expand(parse_matrix(data), "s")) == 4


# --- studies --------------------------------------------------------------------------------


def test_a_study_draws_the_same_heldout_set_and_split_on_every_machine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl._secrets import KEY_FILE_ENV
    from a2rl.grader._items import restrict_to_split
    from a2rl.grader._secret import public_fingerprint, split_test_keys
    from a2rl.schema import RunConfig
    from a2rl.tasks import get_task

    study, path = create_study("s1", {"arith": {"n_heldout": 12}})
    assert path.stat().st_mode & 0o777 == 0o600
    config = RunConfig(task="arith", task_params={"n_train": 10}, agent="reference",
                       model="m", mode="free", budget_s=1, sandbox="none", eval_timeout_s=1,
                       grace_s=1, port=0, runs_dir=str(tmp_path))

    def machine(home: str) -> tuple[str, list[Any], list[Any], set[str]]:
        monkeypatch.setenv("A2RL_HOME", str(tmp_path / home))
        monkeypatch.delenv(KEY_FILE_ENV, raising=False)
        joined = join_study(config, find_study(str(path))[0])
        task = get_task("arith", joined.task_params)
        items = task.heldout_items()
        test = restrict_to_split(get_task("arith", joined.task_params), "test", 0.5)
        from a2rl.grader._secret import item_key

        return (public_fingerprint(task), items, test,
                split_test_keys([item_key(i) for i in items], 0.5))

    a, b = machine("home-a"), machine("home-b")
    assert a == b  # same items, same hidden test split, same public fingerprint
    assert len(a[1]) == 12
    joined = join_study(config, study)
    assert joined.study is not None and joined.study.name == "s1"
    assert joined.study.seeded == ["arith.heldout_seed"]
    assert joined.study.fixed_options == {"arith.n_heldout": 12}
    seed = joined.task_params["heldout_seed"]
    assert seed == study.seed("arith", "heldout_seed")
    # the record holds the study's public id, never its secret or the seed
    shown = joined.study.model_dump_json()
    assert str(seed) not in shown and study.secret not in shown
    # without the study, another installation draws other items
    monkeypatch.delenv(KEY_FILE_ENV)
    monkeypatch.setenv("A2RL_HOME", str(tmp_path / "home-c"))
    assert get_task("arith", {"n_heldout": 12}).heldout_items() != a[1]


def test_study_conflicts_and_tasks_without_a_seed(tmp_path: Path) -> None:
    from a2rl.schema import RunConfig
    from a2rl.sweep._study import study_params

    study, _ = create_study("s2", {"arith": {"n_heldout": 5}})
    with pytest.raises(A2RLError, match="contradicts study s2"):
        study_params(study, "arith", {"n_heldout": 7})
    with pytest.raises(A2RLError, match="fixes the held-out seed"):
        study_params(study, "arith", {"heldout_seed": 3})
    # gsm8k's hub test split is fixed: the study leaves its seed out; offline gets one
    assert study_params(study, "gsm8k", {"source": "hub"}) == ({"source": "hub"}, [])
    params, seeded = study_params(study, "gsm8k", {"source": "offline"})
    assert seeded == ["gsm8k.heldout_seed"] and params["heldout_seed"] > 0
    with pytest.raises(A2RLError, match="already exists"):
        create_study("s2")
    with pytest.raises(A2RLError, match="no study named"):
        find_study("nope")
    with pytest.raises(A2RLError, match="plain name"):
        find_study("bad name!")
    # mode multi: per-task options are spelt task.key
    multi = RunConfig(task="arith", tasks=["arith", "gsm8k"], task_params={"gsm8k.source":
                      "offline"}, agent="reference", model="m", mode="multi", budget_s=1,
                      sandbox="none", eval_timeout_s=1, grace_s=1, port=0,
                      runs_dir=str(tmp_path))
    joined = join_study(multi, study)
    assert joined.task_params["arith.heldout_seed"] == study.seed("arith", "heldout_seed")
    assert joined.task_params["gsm8k.heldout_seed"] == study.seed("gsm8k", "heldout_seed")
    assert joined.task_params["arith.n_heldout"] == 5


def test_run_study_joins_a_study_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import a2rl.runner

    study, _ = create_study("by-hand", {"arith": {"n_heldout": 9}})
    seen: list[Any] = []

    class Stop(Exception):
        pass

    def fake_run(config: Any, **kw: Any) -> None:
        seen.append(config)
        raise Stop

    monkeypatch.setattr(a2rl.runner, "run", fake_run)
    result = CliRunner().invoke(app, ["run", "--task", "arith", "--study", "by-hand",
                                      "--no-sandbox", "--budget", "60"])
    assert isinstance(result.exception, Stop), result.output
    config = seen[0]
    assert config.study.name == "by-hand" and config.study.id == study.id
    assert config.task_params == {"n_heldout": 9,
                                  "heldout_seed": study.seed("arith", "heldout_seed")}
    result = CliRunner().invoke(app, ["run", "--study", "missing", "--budget", "60"])
    assert isinstance(result.exception, A2RLError) and "no study named" in str(result.exception)
    result = CliRunner().invoke(app, ["run", "--log-to", "tensorboard", "--budget", "60"])
    assert isinstance(result.exception, A2RLError) and "wandb or mlflow" in (
        result.exception.fix or "")


def test_a_sweep_dir_inside_a_mounted_root_is_refused(tmp_path: Path) -> None:
    import sys

    from a2rl.sweep._sweep import _check_location

    with pytest.raises(A2RLError, match="sandbox mounts"):
        _check_location(Path(sys.prefix) / "sweeps" / "x")
    _check_location(tmp_path / "sweeps" / "x")


def test_a_bad_cell_fails_before_anything_runs(tmp_path: Path) -> None:
    from a2rl.sweep import run_sweep

    data = small_matrix(tmp_path, "local")
    data["agents"].append({"agent": "no-such-agent"})
    with pytest.raises(A2RLError, match="no-such-agent"):
        run_sweep(parse_matrix(data), tmp_path / "sw")
    data = small_matrix(tmp_path, "local")
    data["tasks"][0]["options"]["n_heldot"] = 3
    with pytest.raises(A2RLError, match="arith"):
        run_sweep(parse_matrix(data), tmp_path / "sw2")
    assert not list((tmp_path / "sw2").glob("cells/*"))


class _Handle:
    def __init__(self, job: Any) -> None:
        self.job = job


class _ScriptedBackend:
    """A backend whose jobs end at once as `script(job)` says (no process is started)."""

    name = "scripted"

    def __init__(self, script: Any) -> None:
        self.script = script
        self.submitted: list[Any] = []

    def can_start(self, job: Any) -> bool:
        return True

    def submit(self, job: Any) -> Any:
        self.submitted.append(job)
        return _Handle(job)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        return handles[:1]

    def result(self, handle: Any) -> Any:
        return self.script(handle.job)

    def job_id(self, handle: Any) -> str:
        return f"job-{len(self.submitted)}"

    def close(self) -> None:
        pass


def test_lost_jobs_are_retried_then_recorded_as_harness_failures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import a2rl.sweep._backends
    from a2rl.sweep import load_cells, run_sweep
    from a2rl.sweep._cell import JobResult, run_dir_of

    def script(job: Any) -> Any:
        if job.kind == "baseline":
            (Path(job.sweep_dir) / "baselines").mkdir(exist_ok=True)
            (Path(job.sweep_dir) / "baselines" / f"{job.key}.json").write_text('{"key": "k"}')
            return JobResult(outcome="finished", host="h")
        if job.spec.agent_label == "reference":  # its machine keeps dying
            raise RuntimeError("node died")
        if job.attempt == 1:
            return JobResult(outcome="harness_failed", host="h", exit_code=-9,
                             reason="the cell's process was killed (SIGKILL)")
        _fake_run(run_dir_of(job))
        return JobResult(outcome="finished", host="h", exit_code=0)

    backend = _ScriptedBackend(script)
    monkeypatch.setattr(a2rl.sweep._backends, "make_backend", lambda *a: backend)
    data = small_matrix(tmp_path, "local", tasks=[small_matrix(tmp_path, "x")["tasks"][0]],
                        repeats=1, max_attempts=3)
    summary = run_sweep(parse_matrix(data), tmp_path / "sw")
    assert (summary.finished, summary.failed, summary.retried, summary.baselines) == (1, 1, 3, 1)
    cells = {c.spec.agent_label: c for c in load_cells(tmp_path / "sw")}
    ref, scripted = cells["reference"], cells["scripted"]
    assert ref.status == "failed" and len(ref.attempts) == 3
    assert ref.error and ref.error.startswith("harness failure after 3 attempt(s)")
    assert "node died" in ref.error and all(a.outcome == "harness_failed" for a in ref.attempts)
    assert scripted.status == "finished" and [a.outcome for a in scripted.attempts] == [
        "harness_failed", "finished"]
    assert scripted.result is not None and scripted.result.best == 40.0
    # one cell at a time (local default): reference, scripted, reference, scripted, reference
    assert [a.backend_job for a in scripted.attempts] == ["job-3", "job-5"]
    # a rerun leaves the failed cell alone; --retry-failed gives it new attempts
    backend.submitted.clear()
    assert run_sweep(parse_matrix(data), tmp_path / "sw").skipped == 2
    assert backend.submitted == []
    again = run_sweep(parse_matrix(data), tmp_path / "sw", retry_failed=True)
    assert again.failed == 1 and len(backend.submitted) == 3
    cells = {c.spec.agent_label: c for c in load_cells(tmp_path / "sw")}
    assert len(cells["reference"].attempts) == 6 and cells["reference"].status == "failed"


def test_a_cell_left_running_by_a_dead_driver_is_retried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import a2rl.sweep._backends
    from a2rl._util import utcnow
    from a2rl.sweep import load_cells, run_sweep
    from a2rl.sweep._cell import JobResult, run_dir_of
    from a2rl.sweep._state import Attempt

    def script(job: Any) -> Any:
        if job.kind == "cell":
            _fake_run(run_dir_of(job))
        else:
            (Path(job.sweep_dir) / "baselines").mkdir(exist_ok=True)
            (Path(job.sweep_dir) / "baselines" / f"{job.key}.json").write_text("{}")
        return JobResult(outcome="finished", host="h")

    monkeypatch.setattr(a2rl.sweep._backends, "make_backend",
                        lambda *a: _ScriptedBackend(script))
    data = small_matrix(tmp_path, "local", tasks=[small_matrix(tmp_path, "x")["tasks"][0]],
                        repeats=1, reference=False)
    matrix = parse_matrix(data)
    sweep_dir = tmp_path / "sw"
    (spec,) = expand(matrix, "t-local")
    save_cell(sweep_dir, CellState(id=spec.id, spec=spec, status="running", attempts=[
        Attempt(number=1, run_id="scripted-x-a1", started_at=utcnow())]))
    assert run_sweep(matrix, sweep_dir).finished == 1
    (cell,) = load_cells(sweep_dir)
    assert cell.status == "finished"
    assert [(a.outcome, a.reason) for a in cell.attempts] == [
        ("harness_failed", "the sweep stopped while it ran"), ("finished", None)]


def test_a_baseline_that_cannot_be_scored_fails_its_cells(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import a2rl.sweep._backends
    from a2rl.sweep import load_cells, run_sweep
    from a2rl.sweep._cell import JobResult

    backend = _ScriptedBackend(lambda job: JobResult(
        outcome="harness_failed", host="h", reason="the base model could not be evaluated"))
    monkeypatch.setattr(a2rl.sweep._backends, "make_backend", lambda *a: backend)
    data = small_matrix(tmp_path, "local", repeats=1)
    summary = run_sweep(parse_matrix(data), tmp_path / "sw")
    assert summary.failed == 4 and {j.kind for j in backend.submitted} == {"baseline"}
    assert len(backend.submitted) == 2 * data["max_attempts"]  # two groups, every attempt
    for cell in load_cells(tmp_path / "sw"):
        assert cell.status == "failed" and cell.attempts == []
        assert cell.error == ("its baseline could not be scored: the base model could not be "
                              "evaluated")


def test_a_terminated_driver_stops_its_cells_and_leaves_them_to_retry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM (`kill`, the driver's job cancelled; SIGHUP: a closed terminal) stops a local
    sweep like Ctrl-C: the cell's process is told to stop (it would otherwise run on,
    unsupervised, and the driver wait for it), on purpose (its stop file exists before the
    signal: its run closes as `stopped`), its attempt is closed as stopped and the cell left
    pending for a rerun. Found by a real sweep, whose killed driver left its cell running while
    the cell's state said pending."""
    import signal
    import sys
    import threading
    import time

    import a2rl.sweep._cell
    from a2rl.sweep import load_cells, run_sweep
    from a2rl.sweep._sweep import SweepTerminated

    started, stopped = tmp_path / "started", tmp_path / "stopped"
    # The cell's process: a stand-in for `a2rl run` that runs until it is told to stop.
    stand_in = ("import glob, pathlib, signal, sys, time\n"
                f"def stop(*a): pathlib.Path({str(stopped)!r}).write_text("
                f"str(glob.glob({str(tmp_path / 'sw' / 'cells' / '*' / '*.stop')!r}))); "
                "sys.exit(3)\n"
                "signal.signal(signal.SIGTERM, stop)\n"
                f"pathlib.Path({str(started)!r}).touch()\n"
                "time.sleep(120)\n")
    monkeypatch.setattr(a2rl.sweep._cell, "child_command",
                        lambda job_file: [sys.executable, "-c", stand_in])
    matrix = parse_matrix(small_matrix(tmp_path, "local", tasks=[ARITH], repeats=1,
                                       reference=False))
    (spec,) = expand(matrix, "t-local")
    sweep_dir = tmp_path / "sw"
    (sweep_dir / "baselines").mkdir(parents=True)  # the group's baseline is already scored
    (sweep_dir / "baselines" / f"{spec.baseline_group()}.json").write_text("{}")

    def terminate_once_the_cell_runs() -> None:
        while not started.exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    threading.Thread(target=terminate_once_the_cell_runs, daemon=True).start()
    with pytest.raises(SweepTerminated, match="SIGTERM"):
        run_sweep(matrix, sweep_dir)
    assert stopped.exists()  # the cell's process got SIGTERM (an `a2rl run` closes its record)
    assert "attempt-1.stop" in stopped.read_text()  # after its stop file: a stop on purpose
    assert signal.getsignal(signal.SIGTERM) is before  # the driver's handler is gone
    (cell,) = load_cells(sweep_dir)
    assert cell.status == "pending"
    assert [(a.outcome, a.reason) for a in cell.attempts] == [
        ("stopped", "the sweep was stopped")]


# --- status, CLI ----------------------------------------------------------------------------


def test_status_shows_each_cell_and_escapes_what_runs_wrote(tmp_path: Path) -> None:
    from rich.console import Console

    cells = expand(parse_matrix(small_matrix(tmp_path, "local")), "s")
    sweep_dir = tmp_path / "sw"
    done = CellState(id=cells[0].id, spec=cells[0], status="finished",
                     result=CellResult(run_dir="runs/x", exit_reason="agent_exited",
                                       agent_exit_code=3, baseline=10.0, baseline_cached=True,
                                       best=12.5, improvement=2.5, submissions=2))
    failed = CellState(id=cells[1].id, spec=cells[1], status="failed",
                       error="harness failure: [bold red]forged[/] markup")
    save_cell(sweep_dir, done)
    save_cell(sweep_dir, failed)
    save_cell(sweep_dir, CellState(id=cells[2].id, spec=cells[2]))
    console = Console(record=True, width=250)
    show_status(sweep_dir, console)
    text = console.export_text()
    assert "[bold red]forged[/] markup" in text  # shown literally, not as markup
    assert "12.50" in text and "+2.50" in text and "agent_exited (exit 3)" in text
    assert "1 finished, 1 pending, 1 failed of 3" in text
    result = CliRunner().invoke(app, ["sweep", "status", str(sweep_dir)],
                               env={"COLUMNS": "250"})
    assert result.exit_code == 0 and cells[0].id in result.output
    with pytest.raises(A2RLError, match="not a sweep directory"):
        show_status(tmp_path / "empty", console)


def test_sweep_cli_reports_a_bad_matrix(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "m.yaml"
    path.write_text("tasks: [arith]\nagents: [reference]\nbackend: slurm\nslurm: {partiton: x}\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent.parent / "src"))
    done = subprocess.run([sys.executable, "-m", "a2rl.cli", "sweep", str(path)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert "unknown key slurm.partiton" in done.stderr and "partition" in done.stderr


def _fake_run(run_dir: Path) -> None:
    from a2rl._util import utcnow
    from a2rl.schema import RunRecord
    from a2rl.schema._grader import BaselineRecord, SubmissionRecord

    now = utcnow()
    sub = dict(id="s1", seq=1, received_at=now, elapsed_s=1800.0, model_path="output/v1",
               status="scored", score=40.0, baseline=30.0, improvement=10.0,
               task_fingerprint="f")
    record = RunRecord.model_validate(dict(
        run_id="r1", status="finished", created_at=now, versions={}, sandboxed=False,
        config=dict(task="arith", task_params={"heldout_seed": "hmac:abc"}, agent="reference",
                    model="m", mode="free", budget_s=60, sandbox="none", eval_timeout_s=1,
                    grace_s=1, port=0, runs_dir="/x"),
        baseline=BaselineRecord.model_validate(dict(
            score=30.0, n_items=6, metrics={}, model_hash="h", task_fingerprint="f",
            evaluator_version="1", eval_seconds=1.0, computed_at=now)).model_dump(),
        submissions=[SubmissionRecord.model_validate(sub).model_dump()],
        best=dict(submission_id="s1", score=40.0), improvement=10.0))
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(record.model_dump_json())


def test_agent_and_evaluation_gpus_are_given_as_such(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """resources: {gpus: 1, eval_gpus: 1}: the cell asks its backend for 2 devices, its agent
    sees the first, the run evaluates on the second (never the agent's)."""
    import sys

    import a2rl.sweep._cell
    from a2rl.sweep._backends import LocalBackend, SlurmBackend
    from a2rl.sweep._cell import Job, execute_job

    data = small_matrix(tmp_path, "local", tasks=[ARITH], repeats=1, reference=False,
                        resources={"gpus": 1, "eval_gpus": 1, "cpus": 1})
    (spec,) = expand(parse_matrix(data), "s")
    assert spec.resources.devices == 2
    # the child records what it was given: its GPUs and the run config's eval_gpus
    seen = tmp_path / "seen.json"
    probe = ("import json, os, sys; job = json.load(open(sys.argv[1])); "
             f"json.dump({{'cuda': os.environ.get('CUDA_VISIBLE_DEVICES'), "
             f"'eval': job['spec']['run']['eval_gpus']}}, open({str(seen)!r}, 'w'))")
    monkeypatch.setattr(a2rl.sweep._cell, "child_command",
                        lambda job_file: [sys.executable, "-c", probe, str(job_file)])
    job = Job(kind="baseline", sweep_dir=str(tmp_path / "sw"), key="g", attempt=1, run_id="b",
              spec=spec, cuda_visible_devices="3,5,6")
    execute_job(job)
    assert json.loads(seen.read_text()) == {"cuda": "3", "eval": "5"}
    # fewer devices than asked for: the attempt fails with the reason, nothing runs
    seen.unlink()
    result = execute_job(job.model_copy(update={"cuda_visible_devices": "3"}))
    assert result.outcome == "harness_failed" and "1 are visible here" in (result.reason or "")
    assert not seen.exists()
    # the local backend hands out both; Slurm asks for both on the node
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert LocalBackend(1).can_start(job)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert not LocalBackend(1).can_start(job)
    pytest.importorskip("submitit")
    slurm = SlurmBackend(parse_matrix({**data, "backend": "slurm",
                                       "slurm": {"cluster": "local"}}), tmp_path / "sl")
    assert slurm._executor(job).parameters["gpus_per_node"] == 2
    # device ids in run.eval_gpus and a count in resources.eval_gpus: refused, with the fix
    with pytest.raises(A2RLError, match="evaluation GPUs twice"):
        expand(parse_matrix({**data, "run": {**data["run"], "eval_gpus": "1"}}), "s")


def test_stacks_are_run_as_listed_and_a_foreign_pair_is_refused(tmp_path: Path) -> None:
    """`stacks:` lists agent + driver pairs (no cross product); a pair from a stack is the same
    cell as that pair from `agents` × `drivers`; a CLI with a driver its API cannot serve is
    refused at expansion, with the fix."""
    data = small_matrix(tmp_path, "local", tasks=[ARITH], repeats=1, reference=False)
    del data["agents"]
    data["stacks"] = [{"agent": "codex", "driver": "gpt-5-codex"},
                      {"agent": "claude-code", "driver": "claude-sonnet-4-5"}]
    cells = expand(parse_matrix(data), "s")
    assert [(c.agent, c.driver) for c in cells] == [("codex", "gpt-5-codex"),
                                                    ("claude-code", "claude-sonnet-4-5")]
    crossed = {**data, "agents": [{"agent": "codex"}], "drivers": ["gpt-5-codex"]}
    del crossed["stacks"]
    assert expand(parse_matrix(crossed), "s")[0].id == cells[0].id
    bad = {**data, "stacks": [{"agent": "codex", "driver": "claude-sonnet-4-5"}]}
    with pytest.raises(A2RLError, match="codex") as err:
        expand(parse_matrix(bad), "s")
    assert "drivers:" in (err.value.fix or "")
    with pytest.raises(A2RLError, match="no agent"):
        parse_matrix({k: v for k, v in data.items() if k != "stacks"})
