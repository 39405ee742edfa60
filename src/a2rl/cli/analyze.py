"""`a2rl analyze`: a run's summary and analysis files, computed from its records. a2rl.cli
registers the command."""

from __future__ import annotations

from typing import Annotated

import typer

from a2rl.cli._options import RunsDir, _find_run


def analyze(run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
            runs_dir: RunsDir = None) -> None:
    """(Re)compute summary.md, summary.jsonl and analysis.json of a run from its records."""
    from a2rl._console import make_console, safe
    from a2rl._errors import A2RLError
    from a2rl.analysis import analyze_run
    from a2rl.extensions import add_to_analysis
    from a2rl.grader import restore_task
    from a2rl.runner import load_run

    path = _find_run(run, runs_dir)
    record = load_run(path)
    heldout = None
    if record.task is not None:
        try:
            heldout = restore_task(record.task.name, record.task.params).heldout_items()
        except A2RLError as exc:  # e.g. a hub task analysed offline
            make_console(stderr=True).print(f"[yellow]held-out items unavailable "
                                       f"({safe(exc.message)}); contamination is not checked[/]")
    analysis = analyze_run(path, heldout=heldout)
    add_to_analysis(path, analysis)
    console = make_console()
    console.print(safe(f"route {analysis.route}; methods "
                       f"{', '.join(analysis.methods_attempted) or 'none'}; "
                       f"{len(analysis.findings)} finding(s)"), highlight=False)

    for f in analysis.findings:  # findings quote agent-controlled text: never markup
        console.print(safe(f"  [{f.severity}] {f.kind}: {f.message}"), highlight=False)
    console.print(safe(f"wrote {path / 'summary.md'}, {path / 'summary.jsonl'}, "
                       f"{path / 'analysis.json'}"), highlight=False)
