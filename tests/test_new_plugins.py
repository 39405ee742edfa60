"""A plug-in is one file or one folder: the docs' examples of a task, an agent and a run
extension (docs/plugins.md includes these very files) each become a built-in plug-in by being
copied, as one new file or folder, into a copy of a2rl's package tree, with no other edit; one
`a2rl run` then uses all three (the task scored, the agent run, the extension's hook called).
`a2rl new` writes the same examples under a new name, in the tree or as a package of its own,
and what it writes passes the project's ruff and mypy; the import-linter contracts cover a new
plug-in without an edit."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a2rl._plugins import Registry

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "src" / "a2rl"
EXAMPLES = REPO / "examples"
KIND_FOLDERS = ("tasks", "agents", "extensions")
"""The packages that plug-ins are added to: copied as folders of links, so a file added there
lands in the copy only."""

EXAMPLE_PLUGINS = {  # example -> where it goes in the package tree
    "tasks/reverse": "tasks/reverse",
    "agents/idle.py": "agents/idle.py",
    "extensions/digest": "extensions/digest",
}


def package_tree(root: Path) -> Path:
    """`root/src/a2rl`: a2rl's package as links to the real one, except the plug-in kinds'
    folders (real folders of links) and the package's own modules (copies, so the package's
    location is `root/src/a2rl`); beside it, links to pyproject.toml and the examples, as in a
    checkout. Returns `root/src`."""
    tree = root / "src" / "a2rl"
    tree.mkdir(parents=True)
    for entry in PACKAGE.iterdir():
        if entry.name == "__pycache__":
            continue
        if entry.is_file():
            shutil.copyfile(entry, tree / entry.name)
        elif entry.name in KIND_FOLDERS:
            (tree / entry.name).mkdir()
            for inner in entry.iterdir():
                if inner.name != "__pycache__":
                    (tree / entry.name / inner.name).symlink_to(inner)
        else:
            (tree / entry.name).symlink_to(entry)
    (root / "pyproject.toml").symlink_to(REPO / "pyproject.toml")
    (root / "examples").symlink_to(EXAMPLES)
    return root / "src"


def env_for(src: Path) -> dict[str, str]:
    """The environment of a2rl run from the copy (ahead of the installed checkout)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(src), os.environ.get("PYTHONPATH")])), "COLUMNS": "200", "A2RL_PROGRESS_EVERY": "0"}


def add_examples(src: Path) -> None:
    """The one new file or folder per plug-in, and nothing else."""
    for example, where in EXAMPLE_PLUGINS.items():
        source, target = EXAMPLES / example, src / "a2rl" / where
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target)


def a2rl(src: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "a2rl.cli", *args], capture_output=True,
                          text=True, env=env_for(src), cwd=cwd, timeout=600)


PROBE = """
import json
from a2rl import A2RLError
from a2rl.agents import get_agent, list_agents
from a2rl.extensions import builtin_extensions, extension_class, extensions
from a2rl.schema import RunConfig
from a2rl.tasks import get_task, list_tasks, predictions_from_rows, tasks

task = get_task("reverse", {"n_train": 5, "n_heldout": 3})
items = task.heldout_items()
rows = [{"id": items[0]["id"], "completion": items[0]["answer"]},
        {"id": items[1]["id"], "completion": items[1]["word"]},
        {"id": items[2]["id"], "completion": " `" + items[2]["answer"] + "`."}]
scored = task.score_offline(predictions_from_rows(rows, "probe"))
agent = get_agent("idle")
agent.check(RunConfig(agent="idle", task="reverse", runs_dir="runs"))
refused = []
for file in ("../../escape.json", ""):  # a file name that would leave the run folder, none
    try:
        extension_class("digest").check(RunConfig(runs_dir="runs",
                                                  extensions={"digest": {"file": file}}))
    except A2RLError as exc:
        refused.append(exc.message)
print(json.dumps({
    "tasks": list_tasks(), "builtin_tasks": sorted(tasks.builtin), "score": scored.score,
    "agents": list_agents(), "agent": [type(agent).__module__, agent.name],
    "extensions": extensions.names(), "order": [c.name for c in builtin_extensions()],
    "extension": extension_class("digest").__module__, "refused": refused,
}))
"""


def test_a_task_an_agent_and_an_extension_are_one_new_file_or_folder_each(
        tmp_path: Path, tiny_model: Path) -> None:
    from a2rl.agents import agents
    from a2rl.extensions import extensions
    from a2rl.tasks import tasks

    # not plug-ins of the real tree
    assert "reverse" not in tasks.builtin and "idle" not in agents.builtin
    assert "digest" not in extensions.builtin
    src = package_tree(tmp_path / "tree")
    add_examples(src)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env_for(src), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert "reverse" in found["tasks"] and "reverse" in found["builtin_tasks"]
    assert found["score"] == pytest.approx(200 / 3)  # right, the word itself, right in backticks
    assert "idle" in found["agents"] and found["agent"] == ["a2rl.agents.idle", "idle"]
    assert found["extension"] == "a2rl.extensions.digest"
    # the built-ins' hooks keep their order; the new one's come after them
    assert found["order"] == ["exec-trace", "scaffold", "snapshots", "summary", "tracking",
                              "network", "digest"]

    # one run uses the three of them: the agent runs, the task scores, the hook writes its file
    runs = tmp_path / "runs"
    opts = [a for kv in ("n_train=20", "n_heldout=1") for a in ("--task-opt", kv)]
    run = a2rl(src, "run", "--task", "reverse", *opts, "--agent", "idle", "--extension",
               "digest:file=digest-out.json", "--model", str(tiny_model), "--sandbox", "none",
               "--budget", "120", "--runs-dir", str(runs), cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (run_dir,) = (runs / "reverse").iterdir()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["agent_exit_code"] == 0
    assert record["config"]["agent"] == "idle" and record["task"]["name"] == "reverse"
    assert "# Task: reverse" in (run_dir / "agent" / "transcript.log").read_text()
    digest = json.loads((run_dir / "digest-out.json").read_text())
    assert digest == {"task": "reverse", "status": "finished",
                      "baseline": record["baseline"]["score"], "best": record["best"],
                      "submissions": len(record["submissions"])}
    assert record["baseline"]["n_items"] == 1
    assert found["refused"] == ["--extension digest:file=../../escape.json is not a file name",
                                "--extension digest:file= is not a file name"]


# ---- a2rl new ----------------------------------------------------------------------------------

NEW_PROBE = """
import json, sys
from a2rl._plugins import load
from a2rl.agents import get_agent
from a2rl.extensions import builtin_extensions
from a2rl.inference._registry import engine_spec
from a2rl.tasks import get_task

task = get_task("my-task", {"n_train": 5, "n_heldout": 2})
engines = [engine_spec(name).target for name in ("transformers", "vllm")]
item = task.heldout_items()[0]
points = [load(t).name for t in sys.argv[1:]]
print(json.dumps({"task": [task.name, task.score_completion(item, item["answer"]).score],
                  "agent": get_agent("my-agent").name,
                  "extensions": [c.name for c in builtin_extensions()][-1:], "points": points,
                  "engines": engines, "heavy": [m for m in ("torch", "transformers", "vllm")
                                                if m in sys.modules]}))
"""


def test_a2rl_new_writes_plugins_that_lint_and_register(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl._errors import A2RLError
    from a2rl.cli import new as new_cli

    src = package_tree(tmp_path / "tree")
    monkeypatch.setattr(new_cli, "source_tree", lambda: src / "a2rl")
    packages = tmp_path / "packages"
    for kind, name in (("task", "my-task"), ("agent", "my-agent"), ("extension", "my-ext")):
        new_cli.new(kind, name)
        new_cli.new(kind, name.replace("my-", "pkg-"), dir=packages)
    tree = src / "a2rl"
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")
                     if p.is_file() and not p.is_symlink() and "tree/src/a2rl/" in
                     f"{p.parent.relative_to(tmp_path)}/" and p.parent != tree)
    assert [str(p) for p in written] == [
        "tree/src/a2rl/agents/my_agent.py", "tree/src/a2rl/extensions/my_ext/__init__.py",
        "tree/src/a2rl/tasks/my_task/__init__.py", "tree/src/a2rl/tasks/my_task/description.md",
        "tree/src/a2rl/tasks/my_task/task.py"]
    # in the tree and in a package of its own, the same text but for the name
    pkg = {kind: packages / f"a2rl-{name}" / "src" / f"a2rl_{name.replace('-', '_')}"
           for kind, name in (("task", "pkg-task"), ("agent", "pkg-agent"), ("extension", "pkg-ext"))}
    for mine, theirs in ((tree / "agents" / "my_agent.py", pkg["agent"] / "__init__.py"),
                         (tree / "tasks" / "my_task" / "task.py", pkg["task"] / "task.py")):
        assert mine.read_text() == theirs.read_text().replace("pkg-", "my-").replace("Pkg", "My")
    text = (tree / "tasks" / "my_task" / "task.py").read_text()
    assert '@tasks.register("my-task")' in text and "class MyTaskTask(" in text
    assert "reverse" not in text.lower().replace("reverse a made-up word", "")
    points = [line.split(" = ")[1].strip('"') for kind in pkg for line in
              (pkg[kind].parents[1] / "pyproject.toml").read_text().splitlines()
              if line.startswith("pkg-")]
    assert points == ["a2rl_pkg_task.task:PkgTaskTask", "a2rl_pkg_agent:PkgAgentAgent",
                      "a2rl_pkg_ext:PkgExtExtension"]

    # `make lint` on what it wrote: ruff with the project's settings, mypy
    lint = subprocess.run([str(Path(sys.executable).parent / "ruff"), "check", "--config",
                           str(REPO / "pyproject.toml"), "--no-cache", str(tree / "agents" /
                           "my_agent.py"), str(tree / "extensions" / "my_ext"),
                           str(tree / "tasks" / "my_task"), str(packages)],
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    typed = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
                            "--cache-dir", str(tmp_path / "mypy-cache"),
                            *(str(p.parent) for p in pkg.values())],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert typed.returncode == 0, typed.stdout + typed.stderr

    # registered: in the tree by their files, the packages by their entry points' targets
    env = env_for(src)
    env["PYTHONPATH"] += os.pathsep + os.pathsep.join(str(p.parent) for p in pkg.values())
    done = subprocess.run([sys.executable, "-c", NEW_PROBE, *points], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "task": ["my-task", 1.0], "agent": "my-agent", "extensions": ["my-ext"],
        "points": ["pkg-task", "pkg-agent", "pkg-ext"],
        # engines are modules too, and reading their specs imports none of their libraries
        "engines": ["a2rl.inference.engines.transformers:TransformersEngine",
                    "a2rl.inference.engines.vllm:VLLMEngine"], "heavy": []}

    # refused before anything is written
    for kind, name, said in (("task", "../evil", "is not a plug-in name"),
                             ("task", "MyTask", "is not a plug-in name"),
                             ("agent", "idle; rm -rf /", "is not a plug-in name"),
                             ("task", "arith", "already a task named 'arith'"),
                             ("task", "pkg-task", "already exists"),
                             ("scorer", "x", "cannot write a 'scorer'")):
        with pytest.raises(A2RLError, match=said.replace("(", r"\(")):
            new_cli.new(kind, name, dir=packages)
    # in the tree, a module of that name that is no plug-in (the reference agent's own code)
    with pytest.raises(A2RLError, match="reference_agent already exists"):
        new_cli.new("agent", "reference-agent")
    monkeypatch.setattr(new_cli, "source_tree", lambda: None)
    with pytest.raises(A2RLError, match="installed from a wheel") as err:
        new_cli.new("agent", "other-agent")
    assert "--dir" in (err.value.fix or "")
    assert not (tmp_path / "evil").exists() and not (packages / "a2rl-arith").exists()


# ---- the independence contracts ----------------------------------------------------------------

def test_the_plugin_contracts_cover_a_new_plugin_without_an_edit(tmp_path: Path) -> None:
    """On a copy of the package's modules with the examples added: the contracts hold; a new
    task that imports another is caught by the tasks' contract."""
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "a2rl", ignore=lambda folder, names: [
        n for n in names if n == "__pycache__" or (Path(folder, n).is_file()
                                                   and not n.endswith(".py"))])
    add_examples(src)
    lint = [str(Path(sys.executable).parent / "lint-imports"), str(REPO / "pyproject.toml")]
    env = {**env_for(src), "PYTHONPATH": str(src)}
    kept = subprocess.run(lint, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert kept.returncode == 0, kept.stdout[-3000:]
    text = kept.stdout
    assert "Tasks are independent of each other KEPT" in text
    assert "Agent launchers are independent of each other KEPT" in text
    (src / "a2rl" / "tasks" / "reverse" / "borrow.py").write_text(
        "from a2rl.tasks.arith.task import ArithTask\n\n__all__ = ['ArithTask']\n")
    broken = subprocess.run(lint, capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=300)
    assert broken.returncode != 0
    assert "Tasks are independent of each other BROKEN" in broken.stdout
    assert "a2rl.tasks.reverse is not allowed to import a2rl.tasks.arith" in broken.stdout


# ---- the registry's reading of a kind's package -------------------------------------------------

def test_a_registry_finds_its_package_plugins_and_names_what_is_wrong(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package of plug-ins of a made-up kind: a folder whose decorated class sits in a module
    its `__init__` does not import, a module named with `_` registering the `-` name, one that
    registers another name, a folder without `__init__.py` (not a plug-in), a module that does
    not parse; listing imports none of them."""
    pkg = tmp_path / "thingpkg"
    (pkg / "deep_one").mkdir(parents=True)
    (pkg / "not_a_package").mkdir()
    (pkg / "broken").mkdir()
    (pkg / "__init__.py").write_text(
        "from a2rl._plugins import Registry\n\n"
        "things = Registry('thing', 'a2rl.test-things', package=__name__)\n")
    (pkg / "deep_one" / "__init__.py").write_text('"""nothing imported here"""\n')
    (pkg / "deep_one" / "_impl.py").write_text(
        "from thingpkg import things\n\n\n@things.register('deep-one')\nclass Deep:\n    pass\n")
    (pkg / "flat_one.py").write_text(
        "from thingpkg import things\n\n\n@things.register('flat-one')\nclass Flat:\n    pass\n")
    (pkg / "misnamed.py").write_text(
        "from thingpkg import things\n\n\n@things.register('other')\nclass Other:\n    pass\n")
    (pkg / "not_a_package" / "x.py").write_text("raise SystemExit('imported')\n")
    (pkg / "broken" / "__init__.py").write_text("")
    (pkg / "broken" / "_impl.py").write_text("@things.register('broken')\ndef (:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        check_thing_registry(importlib.import_module("thingpkg").things)
    finally:  # the made-up package leaves nothing behind
        for name in [m for m in sys.modules if m.split(".")[0] == "thingpkg"]:
            del sys.modules[name]


def check_thing_registry(things: Registry[object]) -> None:
    from a2rl._errors import A2RLError

    assert things.names() == ["broken", "deep-one", "flat-one", "misnamed"]
    assert not [m for m in sys.modules if m.startswith("thingpkg.")]  # listed, not imported
    assert things.get("deep-one").__module__ == "thingpkg.deep_one._impl"
    assert things.get("flat-one").__name__ == "Flat"
    assert "thingpkg.flat_one" in sys.modules and "thingpkg.misnamed" not in sys.modules
    with pytest.raises(A2RLError) as err:
        things.get("misnamed")
    assert err.value.message == "thingpkg.misnamed does not register the thing 'misnamed'"
    assert "@things.register('misnamed')" in (err.value.fix or "")
    assert "'_' read as '-'" in (err.value.fix or "")
    with pytest.raises(SyntaxError):
        things.get("broken")
    with pytest.raises(A2RLError, match="unknown thing 'nope'") as err:
        things.get("nope")
    assert "deep-one, flat-one" in (err.value.fix or "")
