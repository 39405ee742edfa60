"""What a2rl has registered: `a2rl schema` (the persisted records), `a2rl tasks` and `a2rl
agents` (with installing the agents' CLIs). a2rl.cli registers the command and the groups."""

from __future__ import annotations

from typing import Annotated

import typer


def schema(name: Annotated[str | None, typer.Argument(
        help="Record name (run, submission, baseline, evaluation-job, analysis, iteration, "
             "agent-event, exec-event, submit-response, status-response); none: list them.")] = None
           ) -> None:
    """Print the JSON schema of a persisted record (or list the records)."""
    import json

    from a2rl._errors import A2RLError
    from a2rl.schema import SCHEMAS

    if name is None:
        for key, (model, where) in SCHEMAS.items():
            version = model.model_fields.get("version")
            v = f" v{version.default}" if version is not None else ""
            typer.echo(f"{key:16s} {model.__name__}{v}: {where}")
        return
    if name not in SCHEMAS:
        raise A2RLError(f"unknown record {name!r}", f"choose one of: {', '.join(SCHEMAS)}")
    typer.echo(json.dumps(SCHEMAS[name][0].model_json_schema(), indent=2))


tasks_app = typer.Typer(help="Registered tasks: list them, show one's options.")


@tasks_app.callback(invoke_without_command=True)
def tasks_default(ctx: typer.Context) -> None:
    """With no subcommand: the same as `a2rl tasks list`."""
    if ctx.invoked_subcommand is None:
        tasks_list()


@tasks_app.command("list")
def tasks_list() -> None:
    """One line per registered task (`a2rl tasks show TASK` for its options)."""
    from a2rl.tasks import list_tasks, task_class

    for name in list_tasks():
        cls = task_class(name)
        typer.echo(f"{name:12s} {cls.level}  reward={cls.reward_kind}  version={cls.version}")


@tasks_app.command("show")
def tasks_show(task: Annotated[str, typer.Argument(help="Task name (a2rl tasks list).")]) -> None:
    """A task's options (--task-opt key=value): type, default and what each one does."""
    from a2rl._console import make_console
    from a2rl.cli._show import show_task_options
    from a2rl.tasks import task_class

    show_task_options(task_class(task), make_console())


agents_app = typer.Typer(help="Agents under test: list them, install their CLIs.")


@agents_app.callback(invoke_without_command=True)
def agents_default(ctx: typer.Context) -> None:
    """With no subcommand: the same as `a2rl agents list`."""
    if ctx.invoked_subcommand is None:
        agents_list()


@agents_app.command("list")
def agents_list() -> None:
    """Registered agents; for CLI agents: the pinned version, whether it is installed, and the
    credentials it reads (which of them are set)."""
    import os

    from rich.table import Table

    from a2rl._console import make_console
    from a2rl.agents import CLIAgent, get_agent, is_installed, list_agents

    table = Table("agent", "CLI (pinned)", "installed", "credentials (✔ set)", "description")
    for name in list_agents():
        if name.startswith("cmd:"):
            table.add_row(name, "", "", "", "any shell command")
            continue
        agent = get_agent(name)
        if isinstance(agent, CLIAgent):
            creds = ", ".join(f"{c}{' ✔' if os.environ.get(c) else ''}"
                              for c in agent.credentials)
            table.add_row(name, agent.package.spec,
                          "yes" if is_installed(name, agent.package) else
                          f"no (a2rl agents install {name})", creds, agent.description)
        else:
            table.add_row(name, "(built in)", "yes", "none", agent.description)
    make_console().print(table)


@agents_app.command("install")
def agents_install(
    names: Annotated[list[str], typer.Argument(help="CLI agents to install (or 'all').")],
    force: Annotated[bool, typer.Option(help="Reinstall even when present.")] = False,
) -> None:
    """Install pinned agent CLIs (npm/pip) into the a2rl cache ($A2RL_AGENTS_DIR or
    $A2RL_HOME/agents); only that folder is mounted, read-only, into the sandbox."""
    from a2rl._errors import A2RLError
    from a2rl.agents import CLIAgent, get_agent, install, list_agents

    if names == ["all"]:
        names = [n for n in list_agents() if isinstance(get_agent(n) if not n.startswith("cmd:")
                                                        else None, CLIAgent)]
    for name in names:
        agent = get_agent(name)
        if not isinstance(agent, CLIAgent):
            raise A2RLError(f"{name} has nothing to install",
                            "only CLI agents (a2rl agents list) are installed")
        typer.echo(f"installing {agent.package.spec} …")
        exe = install(name, agent.package, force=force)
        typer.echo(f"{name}: {exe}")
