"""The `a2rl` Typer app: the root command with its --version option, and `main`, the console
script, which prints an A2RLError as its error and fix and exits with code 2. a2rl.cli registers
the commands and command groups on `app`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

app = typer.Typer(help="a2rl: can LLM coding agents engineer LLM post-training? "
                  "(Agent² RL-Bench harness)", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)


def _version(value: bool) -> None:
    if value:
        from a2rl import __version__

        typer.echo(f"a2rl {__version__}")
        raise typer.Exit()


@app.callback()
def _main_options(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print a2rl's version and exit.")
        ] = False) -> None:
    """a2rl: can LLM coding agents engineer LLM post-training? (Agent² RL-Bench harness)"""


def main() -> None:
    from a2rl._errors import A2RLError

    try:
        app()
    except A2RLError as exc:
        from rich.markup import escape

        from a2rl._console import make_console

        err = make_console(stderr=True)  # messages may hold [brackets] (lists, actions): not markup
        err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        if exc.fix:
            err.print(f"[bold]fix:[/] {escape(exc.fix)}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
