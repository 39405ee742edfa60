"""`a2rl new task|agent|extension NAME`: a working plug-in to edit, copied from the shipped
example of its kind (examples/tasks/reverse, examples/agents/idle.py,
examples/extensions/digest) with the example's name and class names replaced.

Where it goes: in a source checkout of a2rl (an editable install), into the kind's package
(`src/a2rl/tasks/<name>/`, `src/a2rl/agents/<name>.py`, `src/a2rl/extensions/<name>/`, `-` in
the name written `_`), where it is a built-in plug-in with nothing else to edit; with `--dir DIR`
(and always when a2rl is installed from a wheel), as a package of its own,
`DIR/a2rl-<name>/`, that registers the plug-in through an entry point once pip-installed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from a2rl._errors import A2RLError
from a2rl.cli.examples import examples_root

NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


@dataclass(frozen=True)
class Kind:
    """One kind of plug-in `a2rl new` writes."""

    example: str
    """The example it copies, under the examples folder (a file or a folder)."""
    example_name: str
    """The example's registered name (replaced by the new one wherever it is a word)."""
    class_suffix: str
    """The example's class is `<ExampleName><suffix>` (ReverseTask)."""
    class_module: str
    """The module of the copied files that defines the class ("" for the folder's own)."""
    group: str
    """The kind's entry-point group and its package in a2rl (`a2rl.tasks`)."""

    @property
    def folder(self) -> str:
        """The kind's folder in a2rl's package, also the name of its registry (`tasks`)."""
        return self.group.rpartition(".")[2]


KINDS = {
    "task": Kind("tasks/reverse", "reverse", "Task", "task", "a2rl.tasks"),
    "agent": Kind("agents/idle.py", "idle", "Agent", "", "a2rl.agents"),
    "extension": Kind("extensions/digest", "digest", "Extension", "", "a2rl.extensions"),
}

PACKAGE_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "a2rl-{name}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["{distribution}"]

[project.entry-points."{group}"]
{name} = "{target}"

[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools.package-data]
"*" = ["*.md"]
"""


def camel(name: str) -> str:
    """`my-task` -> `MyTask`."""
    return "".join(part.capitalize() for part in name.split("-"))


def rename(text: str, kind: Kind, name: str) -> str:
    """The example's text with its name and class names made the new plug-in's."""
    text = re.sub(rf"\b{re.escape(kind.example_name)}\b", name, text)
    return re.sub(rf"\b{re.escape(camel(kind.example_name))}(?=[A-Z])", camel(name), text)


def source_tree() -> Path | None:
    """The `src/a2rl` folder of the checkout a2rl runs from (None: an installed wheel)."""
    import a2rl

    package = Path(a2rl.__file__).resolve().parent
    checkout = package.parents[1]
    if package.parent.name == "src" and (checkout / "pyproject.toml").is_file():
        return package
    return None


def check_name(kind_name: str, name: str) -> Kind:
    """The kind, once `name` is a valid, unused name for a plug-in of it."""
    kind = KINDS.get(kind_name)
    if kind is None:
        raise A2RLError(f"a2rl new cannot write a {kind_name!r}",
                        f"choose one of: {', '.join(KINDS)}")
    if not NAME_PATTERN.fullmatch(name):
        raise A2RLError(f"{name!r} is not a plug-in name",
                        "use lower-case letters and digits, words joined by '-' (e.g. my-task)")
    from a2rl._plugins import load

    if name in load(f"{kind.group}:{kind.folder}"):  # the kind's registry (a2rl.tasks:tasks)
        raise A2RLError(f"there is already a {kind_name} named {name!r}", "choose another name")
    return kind


def copy_example(kind: Kind, name: str, dest: Path) -> list[Path]:
    """Write the renamed example to `dest` (a file or a folder, as the example is)."""
    source = examples_root() / kind.example
    files = [source] if source.is_file() else sorted(
        p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    written = []
    for path in files:
        out = dest if source.is_file() else dest / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(rename(path.read_text(), kind, name))
        written.append(out)
    return written


def new(
    kind: Annotated[str, typer.Argument(help="What to write: task, agent or extension.")],
    name: Annotated[str, typer.Argument(help="Its registered name (e.g. my-task).")],
    dir: Annotated[Path | None, typer.Option(
        "--dir", help="Write a package of its own, DIR/a2rl-NAME, registered through an entry "
                      "point once pip-installed (default: into a2rl's source tree when a2rl "
                      "runs from a checkout).")] = None,
) -> None:
    """Write a working plug-in (a copy of the shipped example of its kind) to edit."""
    spec = check_name(kind, name)
    module = name.replace("-", "_")
    suffix = ".py" if spec.example.endswith(".py") else ""
    tree = source_tree()
    if dir is not None:
        root = dir.absolute() / f"a2rl-{name}"
        target = root / "src" / f"a2rl_{module}" / ("__init__.py" if suffix else "")
        taken = [root]
    elif tree is not None:
        root = target = tree / spec.folder / f"{module}{suffix}"
        # a file or folder of that module name (even one that is not a plug-in) would shadow the
        # new one or be shadowed by it
        taken = [root.parent / module, root.parent / f"{module}.py"]
    else:
        raise A2RLError("a2rl is installed from a wheel: there is no source tree to add to",
                        f"pass --dir DIR to write a package of its own (a2rl new {kind} {name} "
                        "--dir .)")
    for path in taken:
        if path.exists():
            raise A2RLError(f"{path} already exists", "choose another name or remove it")
    written = copy_example(spec, name, target)
    if dir is not None:
        package = f"a2rl_{module}"
        inner = f"{package}.{spec.class_module}" if spec.class_module else package
        from a2rl._paths import DISTRIBUTION

        (root / "pyproject.toml").write_text(PACKAGE_PYPROJECT.format(
            name=name, distribution=DISTRIBUTION, group=spec.group,
            target=f"{inner}:{camel(name)}{spec.class_suffix}"))
        written.append(root / "pyproject.toml")
    for path in written:
        typer.echo(f"wrote {path}")
    if dir is not None:
        typer.echo(f"install it with: pip install -e {root}")
    shown = {"task": f"a2rl tasks show {name}", "agent": f"a2rl run --agent {name}",
             "extension": f"a2rl run --extension {name}"}[kind]
    typer.echo(f"then: {shown}")

