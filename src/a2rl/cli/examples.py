"""`a2rl examples DIR`: write the shipped example sweeps and plug-ins into a folder, so the docs'
`a2rl sweep examples/sweeps/local.yaml` works from a wheel install as from a checkout."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from a2rl._errors import A2RLError


def examples_root() -> Path:
    """The examples folder: inside the installed package (a wheel), else the checkout's."""
    import a2rl

    package = Path(a2rl.__file__).resolve().parent
    for candidate in (package / "examples", package.parents[1] / "examples"):
        if (candidate / "sweeps").is_dir():
            return candidate
    raise A2RLError("this install of a2rl has no examples folder",
                    "reinstall a2rl from its wheel (the examples ship in it), or use a checkout")


def examples(
    dest: Annotated[Path, typer.Argument(help="Folder to write into; the examples land in "
                                         "DEST/examples/.")] = Path("."),
    force: Annotated[bool, typer.Option(help="Overwrite files that already exist.")] = False,
) -> None:
    """Write the example sweeps (examples/sweeps/*.yaml) and plug-ins (a task, an agent, a run
    extension: examples/tasks, agents, extensions) into DEST/examples/."""
    source = examples_root()
    target = dest.absolute() / "examples"
    files = sorted(p for p in source.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    clashes = [p for p in files if (target / p.relative_to(source)).exists()]
    if clashes and not force:
        raise A2RLError(f"{len(clashes)} example file(s) already exist in {target} "
                        f"(e.g. {target / clashes[0].relative_to(source)})",
                        "pass --force to overwrite them, or choose another folder")
    for path in files:
        out = target / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out)
    typer.echo(f"wrote {len(files)} files to {target}")
    for sweep in sorted((target / "sweeps").glob("*.yaml")):
        typer.echo(f"  a2rl sweep plan {sweep.relative_to(dest.absolute())}")
