"""`a2rl export`: a2rl runs in other tools' formats (ATIF trajectories, Harbor job folders).
a2rl.cli registers the group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from a2rl.cli._options import RunsDir, _find_run

export_app = typer.Typer(help="Write runs in formats other tools read (Harbor's ATIF "
                         "trajectories and job folders).", no_args_is_help=True)


@export_app.command("atif")
def export_atif(
    run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="The trajectory file "
                                                "(default: standard output).")] = None,
    runs_dir: RunsDir = None,
) -> None:
    """A run as one ATIF trajectory (Harbor's Agent Trajectory Interchange Format): its prompts,
    turns, tool calls with their outputs, token use per step, and its submissions' scores."""
    from a2rl.importers.atif import trajectory_of_run

    text = trajectory_of_run(_find_run(run, runs_dir)).to_json()
    if output is None:
        typer.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    typer.echo(f"wrote {output}", err=True)


@export_app.command("harbor")
def export_harbor(
    runs: Annotated[list[str], typer.Argument(help="Run ids or run directories.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The job folder to write (one "
                                         "trial folder per run).")],
    runs_dir: RunsDir = None,
) -> None:
    """Runs as a Harbor job folder: per run a trial folder with config.json, result.json (the
    best score as the verifier's reward), agent/trajectory.json and verifier/reward.json."""
    from a2rl.importers.harbor import write_trial

    paths = [_find_run(r, runs_dir) for r in runs]  # every run found before anything is written
    for path in paths:
        trial = write_trial(path, output)
        typer.echo(f"wrote {trial}")
