"""`a2rl import`: a run made by another harness (PostTrainBench, RD-Agent, Harbor) recorded as an
a2rl run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from a2rl.cli._options import RunsDir, _runs_dir

import_app = typer.Typer(help="Bring in a run made by another harness as an a2rl run (then "
                         "`a2rl analyze` it).", no_args_is_help=True)


def _imported(path: Path, analyze_after: bool) -> None:
    from a2rl._console import make_console
    from a2rl.schema import load_run

    record = load_run(path)
    console = make_console(markup=False)  # imported records quote another harness's text
    info = record.imported
    console.print(f"imported {record.run_id} ({info.harness if info else '?'}): "
                  f"{len(record.submissions)} submission(s), best "
                  f"{record.best.score if record.best else None}, agent events "
                  f"{record.agent_events} ({info.agent_format if info else None})", highlight=False)
    for item in info.unrecovered if info else []:
        console.print(f"  not recovered: {item}", highlight=False)
    for item in info.refused if info else []:  # links, special files, oversized files
        console.print(f"  refused: {item}", highlight=False)
    console.print(f"wrote {path}")
    if analyze_after:
        from a2rl.analysis import analyze_run
        from a2rl.extensions import add_to_analysis

        analysis = analyze_run(path, heldout=None)
        add_to_analysis(path, analysis)
        console.print(f"route {analysis.route}; {len(analysis.experiments)} experiment(s); "
                      f"wrote {path / 'analysis.json'}")


@import_app.command("posttrainbench")
def import_posttrainbench(
    folder: Annotated[Path, typer.Argument(help="A PostTrainBench result folder "
                                           "(<agent>_<config>_<N>h/<task>_<model>_<cluster>).")],
    runs_dir: RunsDir = None,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: from the folder names).")] = None,
    baseline: Annotated[float | None, typer.Option(help="The base model's score (0–100); "
                                                   "PostTrainBench keeps baselines apart.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an earlier import of the same run.")] = False,
    analyze_after: Annotated[bool, typer.Option("--analyze/--no-analyze",
                                                help="Run `a2rl analyze` on it.")] = True,
) -> None:
    """Import a PostTrainBench run (its timestamped agent trace, task/ folder and final score),
    or every run under a results folder."""
    from a2rl._errors import A2RLError
    from a2rl.importers import find_runs, posttrainbench

    folders = find_runs(folder, "solve_out.txt") or [folder]
    if len(folders) > 1 and run_id:
        raise A2RLError(f"{folder} holds {len(folders)} runs; --run-id names one",
                        "drop --run-id (ids come from the folder names) or pass one run's folder")
    for one in folders:
        path = posttrainbench.import_run(one, _runs_dir(runs_dir), run_id=run_id,
                                         baseline=baseline, force=force)
        _imported(path, analyze_after)


@import_app.command("rdagent")
def import_rdagent(
    folder: Annotated[Path, typer.Argument(help="An AutoRL-Bench workspace "
                                           "(workspace/<task>/<run_id>_<agent>).")],
    runs_dir: RunsDir = None,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: from the folder names).")] = None,
    force: Annotated[bool, typer.Option(help="Replace an earlier import of the same run.")] = False,
    analyze_after: Annotated[bool, typer.Option("--analyze/--no-analyze",
                                                help="Run `a2rl analyze` on it.")] = True,
) -> None:
    """Import an RD-Agent AutoRL-Bench run (workspace, scores.json, agent stream), or every run
    under a workspace root."""
    from a2rl._errors import A2RLError
    from a2rl.importers import find_runs, rdagent

    folders = find_runs(folder, "scores.json") or [folder]
    if len(folders) > 1 and run_id:
        raise A2RLError(f"{folder} holds {len(folders)} runs; --run-id names one",
                        "drop --run-id (ids come from the folder names) or pass one run's folder")
    for one in folders:
        path = rdagent.import_run(one, _runs_dir(runs_dir), run_id=run_id, force=force)
        _imported(path, analyze_after)


@import_app.command("harbor")
def import_harbor(
    folder: Annotated[Path, typer.Argument(help="A Harbor job folder (one folder per trial) or "
                                           "one trial folder (<task>__<id>, holding "
                                           "agent/trajectory.json).")],
    runs_dir: RunsDir = None,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: from the folder names).")] = None,
    baseline: Annotated[float | None, typer.Option(help="The base model's score (0–100); "
                                                   "Harbor's verifier has none.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an earlier import of the same trial.")] = False,
    analyze_after: Annotated[bool, typer.Option("--analyze/--no-analyze",
                                                help="Run `a2rl analyze` on it.")] = True,
) -> None:
    """Import Harbor trials (their ATIF trajectory, verifier reward and task) as a2rl runs."""
    from a2rl._errors import A2RLError
    from a2rl.importers import harbor

    trials = harbor.find_trials(folder) or [folder]
    if len(trials) > 1 and run_id:
        raise A2RLError(f"{folder} holds {len(trials)} trials; --run-id names one",
                        "drop --run-id (ids come from the folder names) or pass one trial's folder")
    failed: list[tuple[Path, A2RLError]] = []
    for one in trials:
        try:
            path = harbor.import_run(one, _runs_dir(runs_dir), run_id=run_id, baseline=baseline,
                                     force=force)
        except A2RLError as exc:
            if len(trials) == 1:
                raise
            failed.append((one, exc))  # one damaged trial does not stop the others
            typer.echo(f"not imported: {one}: {exc.message}", err=True)
            continue
        _imported(path, analyze_after)
    if failed:
        raise A2RLError(f"{len(failed)} of {len(trials)} trial(s) not imported (first: "
                        f"{failed[0][0]}: {failed[0][1].message})", failed[0][1].fix)
