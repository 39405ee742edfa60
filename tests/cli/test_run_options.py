"""Run options declared once: `a2rl run`'s options, the sweep matrix's `run:` keys and the docs'
option table all come from RunConfig's declarations, with the same defaults; a bad value is
named by its option, with the fix, before anything is spent."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from a2rl._errors import A2RLError
from a2rl._util import parse_duration
from a2rl.cli import app, main
from a2rl.cli.run import CLI_ONLY, options_table, run_config
from a2rl.schema import RunConfig, RunRecord, matrix_key, run_options
from a2rl.sweep._matrix import RunOptions, parse_matrix

DOCS = Path(__file__).parent.parent.parent / "docs" / "getting-started.md"
DECLARED = run_options(RunConfig)


def _run_command() -> Any:
    root = typer.main.get_command(app)
    return root.commands["run"]  # type: ignore[attr-defined]


def _field_default(name: str) -> Any:
    return RunConfig.model_fields[name].get_default(call_default_factory=True)


def test_every_field_but_the_derived_one_is_a_declared_option() -> None:
    # a new RunConfig field without its RunOption fails here: it would be in none of the three
    assert set(RunConfig.model_fields) - set(DECLARED) == {"tasks"}


def test_run_help_has_each_declared_option_with_its_default_and_nothing_else(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    params = {p.name: p for p in _run_command().params}
    flags = {p.opts[0] for p in params.values()}
    cli_only = {"--" + name.replace("_", "-") for name in CLI_ONLY}
    assert flags == {option.flag for _info, option in DECLARED.values()} | cli_only
    for name, (info, option) in DECLARED.items():
        given = params[name].default
        if option.default_text is not None or info.is_required():
            assert given is None, name  # the run config picks it: the command line leaves it
        elif isinstance(_field_default(name), list | dict) or _field_default(name) is None:
            assert given in (None, []), name
        elif option.form == "duration":
            assert parse_duration(given) == _field_default(name), name
        else:
            assert given == _field_default(name), name
    monkeypatch.setattr(sys, "argv", ["a2rl", "run", "--help"])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main()
    shown = set(re.findall(r"--[a-z][a-z-]+", capsys.readouterr().out))
    assert {option.flag for _info, option in DECLARED.values()} | cli_only <= shown


def test_matrix_run_keys_are_the_declared_options_a_cell_does_not_set() -> None:
    expected = {matrix_key(name, option): name for name, (_info, option) in DECLARED.items()
                if not option.per_cell}
    assert set(RunOptions.model_fields) == set(expected)
    defaults = RunOptions()
    for key, name in expected.items():
        option = DECLARED[name][1]
        value = getattr(defaults, key)
        # an option whose default the run config picks from the others is unset until given
        assert value == (None if option.default_text is not None and _field_default(name)
                         is not None else _field_default(name)), key
    assert {"task", "agent", "budget", "budget_s", "port", "runs_dir"}.isdisjoint(expected)


def test_docs_table_is_the_generated_one() -> None:
    text = DOCS.read_text()
    assert options_table() in text, (
        "docs/getting-started.md's `a2rl run` table differs from the declarations; replace it "
        "with the output of: python -c 'from a2rl.cli.run import options_table; "
        "print(options_table())'")
    rows = [line for line in options_table().splitlines()[2:]]
    listed = {flag for row in rows for flag in re.findall(r"`(--[a-z-]+)`", row.split("|")[1])}
    cli_only = {"--" + name.replace("_", "-") for name in CLI_ONLY}
    declared = {option.flag for _info, option in DECLARED.values()}
    assert listed - {"--no-exec-trace"} == declared | cli_only
    by_flag = {re.findall(r"`(--[a-z-]+)`", row)[0]: row.split("|")[2].strip() for row in rows}
    assert by_flag["--eval-timeout"] == "1h" and by_flag["--grace"] == "30s"
    assert parse_duration(by_flag["--budget"]) == _field_default("budget_s")


def test_each_default_is_written_once_in_the_source() -> None:
    # RunConfig's own (`] = 3600.0` closing its declaration) is the one place: no other
    # module gives the evaluation time limit or the grace a default of its own
    src = Path(__file__).parent.parent.parent / "src" / "a2rl"
    again = re.compile(r"\b(eval_timeout|grace)\w*\b[^\n]*?(?:=\s*|default=)"
                       r"(?:3600|\"1h\"|30(?:\.0)?\b)")
    hits = [f"{path.relative_to(src)}: {m.group(0)}" for path in sorted(src.rglob("*.py"))
            if path != src / "schema" / "_run.py" for m in again.finditer(path.read_text())]
    assert hits == [], hits
    assert RunConfig.model_fields["eval_timeout_s"].default == 3600.0
    assert RunConfig.model_fields["grace_s"].default == 30.0


@pytest.mark.parametrize("values, needles", [
    ({"test_fraction": 1.5}, ["--test-fraction 1.5", "less than 1"]),
    ({"final": "maybe"}, ["--final 'maybe'", "'off' or 'hidden'"]),
    ({"keep_artifacts": "some"}, ["--keep-artifacts 'some'"]),
    ({"max_submissions": 0}, ["--max-submissions 0", "greater than or equal to 1"]),
    ({"budget_s": "soon"}, ["--budget 'soon'", "not a duration"]),
    ({"min_interval_s": "later"}, ["--min-interval 'later'", "not a duration"]),
    ({"network": "open"}, ["--network 'open'"]),
    ({"vllm_memory": 1.5}, ["--vllm-memory 1.5"]),
    ({"cost_limit_usd": -1.0}, ["--cost-limit -1.0"]),
    ({"agent_procs": 8}, ["--agent-procs 8", "greater than or equal to 16"]),
    ({"sandbox": "jail"}, ["unknown --sandbox 'jail'"]),
    ({"tracking": "tensorboard"}, ["unknown --log-to 'tensorboard'"]),
])
def test_a_bad_value_is_named_by_its_option_with_the_fix(tmp_path: Path,
                                                        values: dict[str, Any],
                                                        needles: list[str]) -> None:
    with pytest.raises(A2RLError) as info:
        run_config({"runs_dir": tmp_path / "runs", **values})
    for needle in needles:
        assert needle in info.value.message, info.value.message
    assert info.value.fix and "type=" not in info.value.message
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("field, value, needle", [
    ("budget_s", 0, "--budget must be positive (got 0 s)"),
    ("eval_timeout_s", 0, "--eval-timeout must be positive (got 0 s)"),
    ("grace_s", -1, "--grace must be 0 or more seconds (got -1)"),
    ("port", 70000, "--port 70000 is not a TCP port"),
    ("snapshot_every_s", 0, "--snapshot-every must be positive"),
])
def test_a_new_run_checks_what_a_record_may_hold(field: str, value: float, needle: str) -> None:
    # an imported run's record holds values a2rl would not start a run with (no eval limit)
    config = RunConfig(runs_dir="r", **{field: value})
    assert RunConfig.model_validate_json(config.model_dump_json()) == config
    with pytest.raises(A2RLError, match=re.escape(needle)) as info:
        config.check_new_run()
    assert info.value.fix
    key = matrix_key(field, DECLARED[field][1])
    if not DECLARED[field][1].per_cell:  # the matrix refuses it with the same words
        with pytest.raises(A2RLError, match=re.escape(needle.replace(DECLARED[field][1].flag,
                                                                     key))):
            parse_matrix({"tasks": ["arith"], "agents": ["reference"], "run": {key: value}})


def test_command_line_values_become_the_run_config(tmp_path: Path) -> None:
    config, study = run_config({
        "task": "arith,gsm8k", "mode": "multi", "budget_s": "30m", "eval_timeout_s": "15m",
        "grace_s": "5", "task_params": ["n_heldout=8", "gsm8k.source=\"offline\""],
        "agent_options": ["steps=4"], "agent_dirs": [tmp_path], "allow_hosts": ["*.hf.co"],
        "min_interval_s": "90s", "no_sandbox": True, "exec_trace": False,
        "study": "s1", "runs_dir": tmp_path / "runs"})
    assert (config.task, config.tasks) == ("arith,gsm8k", ["arith", "gsm8k"])
    assert (config.budget_s, config.eval_timeout_s, config.grace_s) == (1800.0, 900.0, 5.0)
    assert config.agent_time_limit_s == 1800.0 and config.min_interval_s == 90.0
    assert config.task_params == {"n_heldout": 8, "gsm8k.source": "offline"}
    assert config.agent_options == {"steps": "4"} and config.agent_dirs == [str(tmp_path)]
    assert config.sandbox == "none" and config.network == "full"  # no namespace to police
    assert config.exec_trace is False and study == "s1"
    assert config.runs_dir == str(tmp_path / "runs")


def test_run_json_written_before_keeps_reading() -> None:
    # every field a run.json of an earlier a2rl holds, in its spelling
    old = {"task": "arith", "tasks": [], "task_params": {"n_heldout": 8}, "agent": "cmd:true",
           "agent_options": {}, "model": "smollm2-135m", "mode": "free", "budget_s": 60.0,
           "sandbox": "bwrap", "eval_timeout_s": 3600.0, "grace_s": 30.0, "port": 0,
           "runs_dir": "/tmp/runs", "snapshot_every_s": 300.0, "exec_trace": True,
           "driver": None, "driver_base_url": None, "network": "allowlist", "allow_hosts": [],
           "agent_procs": None, "agent_memory": None, "agent_file_size": None, "final": "off",
           "test_fraction": 0.5, "keep_artifacts": "scored", "max_submissions": None,
           "min_interval_s": None, "scaffold": None, "agent_dirs": [], "study": None,
           "engine": "auto", "eval_gpus": None, "vllm_memory": None, "cost_limit_usd": None,
           "tracking": None, "extensions": {}}
    config = RunConfig.model_validate(old)
    assert config.model_dump(mode="json") == old
    imported = RunRecord.model_validate({
        "run_id": "r", "status": "finished", "created_at": "2026-01-01T00:00:00Z",
        "versions": {}, "sandboxed": False,
        "config": {**old, "sandbox": "none", "eval_timeout_s": 0.0, "grace_s": 0.0}})
    assert imported.config.eval_timeout_s == 0.0 and imported.config.network == "allowlist"
