"""`a2rl runs`: list, show, repair and remove recorded runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from a2rl.cli._options import RunsDir, _find_run, _runs_dir

if TYPE_CHECKING:
    from a2rl.runner.prune import RunEntry


runs_app = typer.Typer(help="Inspect recorded runs.", no_args_is_help=True)


@runs_app.command("list")
def runs_list(runs_dir: RunsDir = None,
              as_json: Annotated[bool, typer.Option("--json", help="One JSON object per run "
                                                    "(task, agent, driver, mode, model, study, "
                                                    "status, baseline, best, improvement, "
                                                    "submissions, duration, audit flags…).")] = False,
              as_csv: Annotated[bool, typer.Option("--csv", help="The same rows as CSV.")] = False,
              ) -> None:
    """One line per recorded run."""
    if as_json or as_csv:
        from a2rl.results import load_runs, run_row, to_csv, to_json

        root = _runs_dir(runs_dir)
        runs, bad = load_runs([root]) if root.exists() else ([], [])
        rows = [run_row(r) for r in runs]
        typer.echo(to_json(rows) if as_json else to_csv(rows), nl=False)
        for path, why in bad:  # stderr, so the table on stdout stays machine-readable
            typer.echo(f"unreadable run {path}: {why}", err=True)
        return
    from a2rl._console import make_console
    from a2rl.cli._show import list_runs

    list_runs(_runs_dir(runs_dir), make_console())


EveryOpt = Annotated[float, typer.Option("--every", min=0.1, help="Seconds between two reads "
                                          "of the run's files.")]


@runs_app.command("show")
def runs_show(run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
              runs_dir: RunsDir = None,
              follow: Annotated[bool, typer.Option("--follow", "-f", help="Then print what "
                                                   "happens until the run ends (`runs tail`).")
                                ] = False,
              every: EveryOpt = 1.0) -> None:
    """Everything recorded about one run (a multi run: each of its tasks' runs); a running
    run's submissions and best come from its ledger."""
    from a2rl._console import make_console
    from a2rl.cli._show import show_run
    from a2rl.schema import load_run

    console = make_console()
    paths = _multi_members(run, runs_dir) or [_find_run(run, runs_dir)]
    for path in paths:
        show_run(load_run(path), console, path)
    if follow:
        _tail(paths, every)


@runs_app.command("tail")
def runs_tail(run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
              runs_dir: RunsDir = None, every: EveryOpt = 1.0) -> None:
    """Follow a run: its stage, the agent's turns and tool calls, the programs it starts, its
    phase, and each submission's state and score, as they happen, until the run ends with its
    result (a finished run: everything it recorded, then the result)."""
    _tail(_multi_members(run, runs_dir) or [_find_run(run, runs_dir)], every)


def _tail(paths: list[Path], every: float) -> None:
    """Follow each run in turn (the task runs of a multi run share one agent and end together);
    exit status 1 when a harness died without closing its run."""
    from a2rl._console import make_console
    from a2rl.cli._follow import follow
    from a2rl.runner.prune import entry

    console = make_console()
    failed = False
    for path in paths:
        if len(paths) > 1:
            console.print(f"── {path.parent.name}/{path.name} ──", markup=False)

        def alive(path: Path = path) -> bool:
            e = entry(path)
            return e.record is None or e.record.ended_at is not None or e.live

        failed |= follow(path, console, every_s=every, harness_alive=alive) != 0
    if failed:
        raise typer.Exit(1)


def _multi_members(run: str, runs_dir: Path | None) -> list[Path]:
    """The task runs of multi run `run` (runs/multi/<id>/ or its path), inside the runs dir;
    [] when `run` is no multi run."""
    given = Path(run)
    root = given if (given / "multi.json").is_file() else _runs_dir(runs_dir) / "multi" / run
    if not (root / "multi.json").is_file():
        return []
    runs = root.parent.parent
    return sorted(p.parent for p in runs.glob(f"*/{root.name}/run.json")
                  if p.parent.parent.name != "multi" and not p.parent.is_symlink())


@runs_app.command("repair")
def runs_repair(run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
                runs_dir: RunsDir = None) -> None:
    """Close the record of a run whose harness died (SIGKILL, out of memory, a lost node):
    submissions and best from its ledger, exit reason harness_died, leftover processes killed."""
    from a2rl._console import make_console
    from a2rl.cli._show import show_run
    from a2rl.runner import repair_run

    path = _find_run(run, runs_dir)
    notes: list[str] = []
    record, killed = repair_run(path, notes)
    console = make_console()
    console.print(f"repaired {path}" + (f"; killed {len(killed)} leftover process(es)"
                                         if killed else ""), highlight=False, markup=False)
    for note in notes:  # what a record asked to signal but could not be proven the run's
        console.print(f"  {note}", highlight=False, markup=False)
    show_run(record, console, path)


@runs_app.command("rm")
def runs_rm(runs: Annotated[list[str], typer.Argument(help="Run ids (or unique prefixes) or "
                                                      "run directories.")],
            runs_dir: RunsDir = None,
            dry_run: Annotated[bool, typer.Option(help="Only list what would be removed.")] = False,
            yes: Annotated[bool, typer.Option("--yes", "-y", help="Remove without asking.")
                           ] = False) -> None:
    """Delete recorded runs (run directory, workspace, ledger, artifacts). A live run is never
    removed; a multi run is removed with all its tasks."""
    from a2rl._errors import A2RLError
    from a2rl.runner.prune import entry

    base = _runs_dir(runs_dir)
    entries = [entry(_find_run(r, runs_dir)) for r in runs]
    for e in entries:
        if e.live:
            assert e.record is not None
            raise A2RLError(f"run {e.record.run_id} is still running (harness pid "
                            f"{e.record.harness_pid}); nothing was removed",
                            "wait for it to end, or stop it with SIGTERM (it closes its "
                            "record), then remove it")
    _remove_runs(entries, base, dry_run=dry_run, yes=yes)


@runs_app.command("prune")
def runs_prune(
    runs_dir: RunsDir = None,
    failed: Annotated[bool, typer.Option(help="Runs that failed (or whose harness died "
                                         "without closing them).")] = False,
    older_than: Annotated[str | None, typer.Option(help="Runs started longer ago than this "
                                                   "(7d, 12h, 30m).")] = None,
    task: Annotated[str | None, typer.Option(help="Only runs of this task.")] = None,
    dry_run: Annotated[bool, typer.Option(help="Only list what would be removed.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Remove without asking.")] = False,
) -> None:
    """Delete every run matching all the filters given (at least --failed or --older-than);
    live runs are always kept."""
    from a2rl._errors import A2RLError
    from a2rl.runner.prune import all_runs, parse_age, select_prune

    if not failed and older_than is None:
        raise A2RLError("`a2rl runs prune` needs a filter",
                        "add --failed and/or --older-than 7d (and --dry-run to look first)")
    base = _runs_dir(runs_dir)
    chosen = select_prune(all_runs(base), failed=failed,
                          older_than=parse_age(older_than) if older_than else None, task=task)
    if not chosen:
        typer.echo(f"no run under {base} matches")
        return
    _remove_runs(chosen, base, dry_run=dry_run, yes=yes)


def _remove_runs(entries: list[RunEntry], base: Path, *, dry_run: bool, yes: bool) -> None:
    from a2rl._errors import A2RLError
    from a2rl.runner.prune import plan, remove

    # records name the folders of a multi run: only real folders inside the runs dir go
    paths, refused = plan(entries, base)
    for e in entries:
        typer.echo(f"{'would remove' if dry_run else 'remove'} {e.label()}")
    extra = [p for p in paths if p not in {e.path for e in entries}]
    for p in extra:
        typer.echo(f"  with {p} (same multi run)")
    for why in refused:
        typer.echo(f"  refused: {why}", err=True)
    if dry_run:
        return
    if not yes:
        if not sys.stdin.isatty():
            raise A2RLError(f"removing {len(paths)} folder(s) needs a confirmation",
                            "pass --yes (or look first with --dry-run)")
        if not typer.confirm(f"delete {len(paths)} folder(s) for good?", default=False):
            typer.echo("nothing removed")
            raise typer.Exit(1)
    late = [w for w in remove(paths, base) if w not in refused]
    for why in late:
        typer.echo(f"  refused: {why}", err=True)
    gone = sum(1 for e in entries if not (e.path.exists() or e.path.is_symlink()))
    typer.echo(f"removed {gone} run(s)")
    if refused or late:
        raise typer.Exit(1)  # something asked for was left in place: say so in the status
