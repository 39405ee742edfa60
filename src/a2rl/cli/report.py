"""`a2rl report` and `a2rl results`: many runs as a static HTML site and as tidy tables.
a2rl.cli registers the command and the group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

results_app = typer.Typer(help="Many runs as tidy tables (one row per run, submission, evaluated "
                          "item, message, agent event).",
                          no_args_is_help=True)


AuditPolicyOpt = Annotated[str, typer.Option(
    "--audit-policy", help="Runs with an audit flag (contamination, privileged API, other "
    "models or LLM APIs): exclude (shown and marked, not in means), include, or drop.")]
UnsandboxedPolicyOpt = Annotated[str, typer.Option(
    "--unsandboxed-policy", help="Runs without a sandbox: exclude, include or drop.")]


@results_app.command("export")
def results_export(
    runs_dirs: Annotated[list[Path], typer.Argument(help="Runs folders, run directories or "
                                                    "sweep output folders.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="results.csv, .parquet or .json "
                                         "(runs; submissions go to results.submissions.csv).")],
    cells: Annotated[bool, typer.Option(help="Also write the per-cell statistics "
                                        "(results.cells.csv).")] = True,
    audit_policy: AuditPolicyOpt = "exclude",
    unsandboxed_policy: UnsandboxedPolicyOpt = "exclude",
    tables: Annotated[str, typer.Option(help="Long tables to write beside the runs table, "
                                        "comma-separated: samples (one row per evaluated item: "
                                        "prompt, completion, verdict), messages, events; or "
                                        "none.")] = "samples,messages,events",
) -> None:
    """Tidy tables of many runs that pandas reads directly."""
    from a2rl.results import export_results

    names = [] if tables.strip() == "none" else [t.strip() for t in tables.split(",") if t.strip()]
    for path, rows in export_results(runs_dirs, output, cells=cells, audit=audit_policy,
                                     unsandboxed=unsandboxed_policy, tables=names):
        typer.echo(f"wrote {path} ({rows} rows)")


def report_cmd(
    results: Annotated[list[Path], typer.Argument(help="Runs folders, run directories or sweep "
                                                  "output folders (a2rl and imported runs).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Folder of the site.")] = Path("report"),
    audit_policy: AuditPolicyOpt = "exclude",
    unsandboxed_policy: UnsandboxedPolicyOpt = "exclude",
) -> None:
    """A static HTML site (works offline from file://) plus CSV and Markdown tables."""
    from a2rl.report import build_report
    from a2rl.results import Policy

    pages = build_report(results, output, Policy(audit=audit_policy,  # type: ignore[arg-type]
                                                 unsandboxed=unsandboxed_policy))  # type: ignore[arg-type]
    typer.echo(f"wrote {len(pages)} pages to {output.absolute()} (open {output.absolute() / 'index.html'})")
