"""Plug-ins: one registry per kind (tasks, agents, sandbox backends, engines, run extensions),
built-ins found by module, third-party ones through entry points. A package of its own
(tests/fixtures/plugins/a2rl_testplugin: a sandbox backend, an agent, a task and a run extension) is
pip-installed into a temporary folder on PYTHONPATH (a2rl's environment is left as it is), and a
whole `a2rl run` goes through its backend with its extension; the backend also meets the sandbox
contract (the checks of test_sandbox_contract.py, run on it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_sandbox_contract as contract
from test_sandbox_contract import host_secret_dir, venv_secret  # noqa: F401  (fixtures of the reused checks)

from a2rl._errors import A2RLError
from a2rl.sandbox import Sandbox
from conftest import TINY_TASK

PLUGIN = Path(__file__).resolve().parent / "fixtures" / "plugins" / "a2rl_testplugin"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")


# ---- the registries themselves ----------------------------------------------------------------

def test_built_in_backends_are_the_backend_modules() -> None:
    from a2rl.sandbox import SANDBOX_KINDS, backend_class, get_sandbox, sandboxes

    folder = Path(__file__).resolve().parent.parent / "src" / "a2rl" / "sandbox" / "backends"
    modules = {p.stem for p in folder.glob("*.py") if not p.name.startswith("_")}
    assert {"bwrap", "podman", "none"} <= modules <= set(sandboxes.names())
    for name in modules:
        assert backend_class(name).kind == name and name in SANDBOX_KINDS
    assert list(SANDBOX_KINDS) == sandboxes.names() and "jail" not in SANDBOX_KINDS
    assert not get_sandbox("none").sandboxed and get_sandbox("none").kind == "none"
    with pytest.raises(A2RLError) as err:
        get_sandbox("jail")
    assert err.value.message == "unknown sandbox 'jail'" and "bwrap" in (err.value.fix or "")


def test_every_registered_agent_and_task_names_itself() -> None:
    from a2rl.agents import BUILTIN_AGENTS, agent_class, agents, list_agents
    from a2rl.tasks import BUILTIN_TASKS, list_tasks, task_class

    assert set(BUILTIN_AGENTS) <= set(agents.names()) and list_agents()[-1] == "cmd:<shell command>"
    for name in BUILTIN_AGENTS:
        assert agent_class(name).name == name
    for name in BUILTIN_TASKS:
        assert BUILTIN_TASKS[name] == f"a2rl.tasks.{name}" and task_class(name).name == name
    assert {"arith", "gsm8k", "alfworld"} <= set(list_tasks())


def test_a_module_that_does_not_register_its_name_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.agents import BUILTIN_AGENTS, get_agent

    monkeypatch.setitem(BUILTIN_AGENTS, "silent", "a2rl.agents._events")
    with pytest.raises(A2RLError) as err:
        get_agent("silent")
    assert "a2rl.agents._events does not register the agent 'silent'" in err.value.message
    assert "@agents.register('silent')" in (err.value.fix or "")


def test_importers_find_a_parser_by_the_agents_import_names() -> None:
    from a2rl.agents import agent_class
    from a2rl.importers._common import parser_candidates

    assert agent_class("claude-code").import_names == ("claude",)
    assert agent_class("codex").import_names == ("codex",)
    assert agent_class("reference").import_names == ()
    default = parser_candidates(None)
    assert default == ["claude-code", "codex", "gemini", "opencode", "openhands"]
    assert parser_candidates("claude_claude-opus-4-6_10h")[0] == "claude-code"
    assert parser_candidates("20260301T090000_Gemini")[0] == "gemini"
    assert sorted(parser_candidates("openhands-1.16")) == sorted(default)
    assert parser_candidates("openhands-1.16")[0] == "openhands"
    assert parser_candidates("someone-else") == default


def test_engines_are_specs_in_one_registry() -> None:
    from a2rl.inference._registry import engine_names, engine_spec, engines

    assert engine_names() == engines.names() and {"transformers", "vllm"} <= set(engine_names())
    assert engine_spec("vllm").separate_env and engine_spec("vllm").takes_info
    assert engine_spec("transformers").target == \
        "a2rl.inference.engines.transformers:TransformersEngine"
    with pytest.raises(A2RLError) as err:
        engine_spec("tensorrt")
    assert "unknown engine 'tensorrt'" in err.value.message
    assert "--engine auto or one of: transformers, vllm" in (err.value.fix or "")


def test_extension_options_on_the_command_line(tmp_path: Path) -> None:
    from a2rl.cli.run import _extension_option

    assert _extension_option(None) == {}
    assert _extension_option(["a", "a:x=1,y=two", "b:flag=true, path=/p/q"]) == {
        "extensions": {"a": {"x": 1, "y": "two"}, "b": {"flag": True, "path": "/p/q"}}}
    for bad, said in ((":x=1", "names no extension"), ("a:novalue", "'novalue' is not key=value"),
                      ("a:=1", "'=1' is not key=value")):
        with pytest.raises(A2RLError) as err:
            _extension_option([bad])
        assert said in err.value.message and "NAME:key=value" in (err.value.fix or "")
    # a name nothing registers is refused before any run folder exists
    done = subprocess.run([sys.executable, "-m", "a2rl.cli", "run", "--extension", "nope:x=1",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True,
                          env=_env(None), timeout=120)
    assert done.returncode != 0 and "unknown extension 'nope'" in " ".join(done.stderr.split())
    assert not (tmp_path / "runs").exists()


# ---- the third-party package ------------------------------------------------------------------

@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plug-in package pip-installed (no dependencies, no index: a2rl is already here) into
    a folder of its own; put on PYTHONPATH, its entry points are found. Built from a copy, so
    the build leaves nothing in the source tree."""
    root = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(PLUGIN, root / "src", ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    site = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(site),
                           str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (next(site.glob("a2rl_testplugin-*.dist-info")) / "entry_points.txt").is_file()
    return site


def _env(site: Path | None) -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "200", "A2RL_PROGRESS_EVERY": "0"}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return env


PROBE = """
import json
from a2rl.agents import agents, get_agent, list_agents
from a2rl.sandbox import SANDBOX_KINDS, backend_class, sandboxes
from a2rl.extensions import extension_class, extensions
from a2rl.tasks import list_tasks, task_class
out = {"sandboxes": list(SANDBOX_KINDS), "agents": list_agents(), "tasks": list_tasks(),
       "extensions": extensions.names()}
if "testjail" in sandboxes:
    out["jail"] = [backend_class("testjail").kind, backend_class("testjail").__module__]
    out["extension"] = extension_class("testplugin-stamp").__module__
    out["agent"] = get_agent("testplugin-agent").name
    out["task"] = task_class("testplugin-upper").name
print(json.dumps(out))
"""


def _probe(site: Path | None) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=_env(site), timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_installed_plugins_join_each_registry_and_only_there(plugin_path: Path) -> None:
    found = _probe(plugin_path)
    assert "testjail" in found["sandboxes"] and {"bwrap", "none"} <= set(found["sandboxes"])
    assert "testplugin-agent" in found["agents"] and "testplugin-upper" in found["tasks"]
    assert found["jail"] == ["testjail", "a2rl_testplugin.sandbox"]
    assert (found["agent"], found["task"]) == ("testplugin-agent", "testplugin-upper")
    assert "testplugin-stamp" in found["extensions"]
    assert found["extension"] == "a2rl_testplugin.extension"
    # a2rl's own environment did not change: without the folder on the path, no plug-in
    plain = _probe(None)
    assert "testjail" not in plain["sandboxes"] and "testplugin-agent" not in plain["agents"]
    assert "testplugin-stamp" not in plain["extensions"]
    assert "jail" not in plain


def test_an_unknown_backend_is_refused_naming_the_installed_ones(plugin_path: Path,
                                                                 tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "a2rl.cli", "run", "--sandbox", "jail",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True,
                          env=_env(plugin_path), timeout=120)
    text = " ".join(done.stderr.split())
    assert done.returncode == 2 and "unknown --sandbox 'jail'" in text, done.stderr
    assert "testjail" in text and "bwrap" in text
    assert not (tmp_path / "runs").exists()


@needs_bwrap
def test_run_goes_through_the_plugin_backend(plugin_path: Path, tiny_model: Path,
                                             tmp_path: Path) -> None:
    """`a2rl run --sandbox testjail --task testplugin-upper --extension testplugin-stamp:...`:
    the run records the backend, the agent (a cmd: command) ran inside it (it saw the marker only
    that backend sets), the plug-in task was scored (in the evaluation child, which finds it by
    its entry point too), and the plug-in extension's hooks ran (its file in the workspace, its
    variable in the agent's environment, its record at the close)."""
    runs = tmp_path / "runs"
    opts = [a for k, v in TINY_TASK.items() for a in ("--task-opt", f"{k}={v}")]
    agent = ('cmd:echo "jail=${A2RL_TESTJAIL:-none} uid=$(id -u)" | tee code/jail.txt; '
             'echo "$A2RL_STAMP $(cat stamp.txt)" > code/stamp.txt')
    done = subprocess.run(
        [sys.executable, "-m", "a2rl.cli", "run", "--model", str(tiny_model), *opts,
         "--budget", "120", "--runs-dir", str(runs), "--sandbox", "testjail", "--agent", agent,
         "--task", "testplugin-upper", "--extension", "testplugin-stamp:word=hello"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=_env(plugin_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "A2RL_TESTJAIL" not in os.environ
    (run_dir,) = (runs / "testplugin-upper").iterdir()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["config"]["sandbox"] == "testjail" and record["sandboxed"] is True
    assert record["status"] == "finished" and record["agent_exit_code"] == 0
    assert record["task"]["name"] == "testplugin-upper"
    assert record["baseline"]["n_items"] == TINY_TASK["n_heldout"]
    assert (run_dir / "workspace" / "code" / "jail.txt").read_text() == "jail=1 uid=1000\n"
    assert "jail=1 uid=1000" in (run_dir / "agent" / "transcript.log").read_text()
    assert "sandbox=testjail" in " ".join(done.stdout.split())
    assert record["config"]["extensions"] == {"testplugin-stamp": {"word": "hello"}}
    assert (run_dir / "workspace" / "code" / "stamp.txt").read_text() == "hello stamped hello\n"
    assert json.loads((run_dir / "stamp-closed.json").read_text()) == {"status": "finished",
                                                                       "word": "hello"}


def test_an_extension_adds_a_cli_command(plugin_path: Path, tmp_path: Path) -> None:
    """The plug-in's `a2rl.commands` entry point becomes `a2rl testplugin-stamp-show`, listed in
    --help and run with its argument; without the plug-in the command does not exist. The
    built-in `review` comes the same way, from the scaffold extension."""
    listed = subprocess.run([sys.executable, "-m", "a2rl.cli", "--help"], capture_output=True,
                            text=True, env=_env(plugin_path), timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "testplugin-stamp-show" in listed.stdout and "review" in listed.stdout
    (tmp_path / "stamp-closed.json").write_text('{"word": "hi"}')
    done = subprocess.run([sys.executable, "-m", "a2rl.cli", "testplugin-stamp-show",
                           str(tmp_path)], capture_output=True, text=True, env=_env(plugin_path),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == 'stamp: {"word": "hi"}'
    plain = subprocess.run([sys.executable, "-m", "a2rl.cli", "testplugin-stamp-show",
                            str(tmp_path)], capture_output=True, text=True, env=_env(None),
                           timeout=120)
    assert plain.returncode == 2 and "No such command" in plain.stderr


# ---- the plug-in backend meets the sandbox contract -------------------------------------------

@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """The plug-in's backend, from its source folder (importing it registers nothing here: only
    its entry point would)."""
    monkeypatch.syspath_prepend(str(PLUGIN / "src"))
    from a2rl_testplugin.sandbox import MarkedJail

    try:
        box = MarkedJail.create()
        box.probe()
    except A2RLError as exc:
        pytest.skip(f"testjail cannot start here: {exc.message}")
    yield box
    box.cleanup()


def test_the_plugin_backend_marks_what_it_runs(sandbox: Sandbox, tmp_path: Path) -> None:
    argv = sandbox.wrap(["bash", "-c", "echo marker=$A2RL_TESTJAIL"], workspace=tmp_path,
                        env={"PATH": "/usr/bin:/bin"})
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"},
                          stdin=subprocess.DEVNULL)
    assert done.stdout.strip() == "marker=1", done.stderr
    assert sandbox.kind == "testjail" and sandbox.sandboxed


test_contract_held_out_data_unreadable = \
    contract.test_held_out_data_in_the_mounted_environment_is_unreadable
test_contract_writes_descriptors_identity_processes = \
    contract.test_writes_descriptors_identity_and_processes
test_contract_private_network = contract.test_private_network_reaches_only_relayed_ports
test_contract_budget_stop = contract.test_budget_stop_reaches_the_agent_and_leaves_nothing_running
