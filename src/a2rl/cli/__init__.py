"""The `a2rl` command line: the Typer app (a2rl.cli._app), one module per command or command
group, and the option types they share (a2rl.cli._options), assembled here. Heavy modules are
imported inside commands so `--help` stays fast.

`a2rl --help` lists the commands in the order registered below (then those that run extensions
add, `a2rl.extensions.commands`), then the command groups in theirs."""

from __future__ import annotations

from a2rl.cli import (
    analyze,
    catalog,
    certify,
    eval,
    examples,
    export,
    imports,
    models,
    new,
    report,
    rollout,
    run,
    runs,
    sweep,
    view,
)
from a2rl.cli._app import app, main
from a2rl.extensions import commands

app.command()(run.run)
app.command()(sweep.sweep)
app.command()(run.demo)
app.command()(analyze.analyze)
app.command("report")(report.report_cmd)
app.command()(view.view)
app.command()(catalog.schema)
app.command()(rollout.rollout)
app.command("eval")(eval.eval_cmd)
app.command()(eval.rescore)
app.command("certify")(certify.certify_cmd)
app.command("prepare-model")(models.prepare_model)
app.command()(examples.examples)
app.command()(new.new)
for _name in commands.names():
    app.command(_name)(commands.get(_name))

app.add_typer(runs.runs_app, name="runs")
app.add_typer(catalog.agents_app, name="agents")
app.add_typer(imports.import_app, name="import")
app.add_typer(export.export_app, name="export")
app.add_typer(report.results_app, name="results")
app.add_typer(catalog.tasks_app, name="tasks")
app.add_typer(models.engines_app, name="engines")

__all__ = ["app", "main"]
