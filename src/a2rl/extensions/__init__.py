"""Run extensions: capabilities that plug into `a2rl run` through the hooks of `RunExtension`.

Each module or folder under `a2rl/extensions/` (a name without a leading underscore) is the
built-in extension of that name (`_` read as `-`), whose class carries
`@extensions.register(name)`; its `hook_order` places its hooks among the others'. Built in, in
the order their hooks run:

- `exec-trace`: every program the agent runs, traced by strace outside the sandbox
  (`RunConfig.exec_trace`).
- `scaffold`: the experience-driven scaffold (`RunConfig.scaffold`, `--scaffold`).
- `snapshots`: the agent's code and models at each submission and every few minutes (always).
- `summary`: summary.jsonl/summary.md while the run goes, the run-level analysis at its end
  (always).
- `tracking`: W&B or MLflow while the run goes (`RunConfig.tracking`, `--log-to`).
- `network`: the relay into the sandbox's network namespace and, under `--network allowlist`,
  the egress proxy and its allow-list (`RunConfig.network` other than `full`).

The ones above have run options of their own (`enabled_by_name = False`); any other is turned
on by naming it in `RunConfig.extensions` (`--extension NAME[:key=value,...]`, its options): a
built-in one (its hooks after these, unless its `hook_order` says otherwise) or a third-party
one, registered through an entry point of the `a2rl.extensions` group (`name =
"pkg.module:Class"`, a `RunExtension` subclass whose `name` is `name`), whose hooks run after
the built-ins', in the order of `RunConfig.extensions`. Each is active when its
`enabled(config)` agrees (by default: whenever named).

An extension may also add commands to the `a2rl` command line (`COMMANDS`; third-party ones
through the `a2rl.commands` group): each is a function whose parameters Typer reads as the
command's arguments and options.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from a2rl._errors import A2RLError
from a2rl._plugins import Registry
from a2rl.extensions._protocol import AgentLaunch, ReportSection, RunExtension, TaskPart

if TYPE_CHECKING:
    from a2rl.schema import RunAnalysis, RunConfig, RunRecord

extensions: Registry[type[RunExtension]] = Registry("extension", "a2rl.extensions",
                                                    package="a2rl.extensions")
"""The extensions by name: the built-in folders, then `a2rl.extensions` entry points."""
BUILTIN: dict[str, str] = extensions.builtin
"""Name -> the module or folder of each built-in extension (the registry's own table)."""

COMMANDS = {
    "review": "a2rl.extensions.scaffold._review_cli:review",
}
"""Command name -> the function behind it ("module:function"), for `a2rl <name>`."""

commands: Registry[Callable[..., object]] = Registry("command", "a2rl.commands", builtin=COMMANDS)


def extension_class(name: str) -> type[RunExtension]:
    """The registered extension `name`, checked to be a `RunExtension` that names itself so."""
    cls = extensions.get(name)
    if not (isinstance(cls, type) and issubclass(cls, RunExtension)):
        raise A2RLError(f"the extension {name!r} ({cls!r}) is not a RunExtension subclass",
                        "register a subclass of a2rl.extensions.RunExtension")
    if cls.name != name:
        raise A2RLError(f"the extension registered as {name!r} ({cls.__qualname__}) names "
                        f"itself {cls.name!r}", f"set {cls.__qualname__}.name = {name!r}")
    return cls


def builtin_extensions() -> list[type[RunExtension]]:
    """The built-in extensions' classes in hook order (`hook_order`, then name)."""
    return sorted(map(extension_class, BUILTIN), key=lambda cls: (cls.hook_order, cls.name))


def select(config: RunConfig) -> list[type[RunExtension]]:
    """The extensions a run with `config` uses, in hook order: each built-in and each one
    `config.extensions` names whose `enabled(config)` is true. An unknown name is refused, and
    so is naming one that a run option of its own turns on."""
    for name in config.extensions:
        if not extension_class(name).enabled_by_name:
            raise A2RLError(f"the built-in extension {name!r} is not configured through "
                            "RunConfig.extensions", f"drop {name!r} from extensions and use "
                            "its own run option (see `a2rl schema run`)")
    named = [extension_class(name) for name in config.extensions if name not in BUILTIN]
    classes = [*builtin_extensions(), *named]
    return [cls for cls in classes if cls.enabled(config)]


def submit_refusals(active: list[type[RunExtension]]) -> dict[str, str]:
    """The /submit flags of the built-in extensions that are off, with the grader's reply."""
    out: dict[str, str] = {}
    for cls in builtin_extensions():
        if cls not in active:
            out.update(cls.submit_flags)
    return out


def recorded(record: RunRecord) -> list[type[RunExtension]]:
    """The extensions a recorded run used, in hook order. One the record names that is not
    installed here is left out (the run may come from another machine)."""
    others = [extension_class(name) for name in record.config.extensions
              if name not in BUILTIN and name in extensions]
    return [cls for cls in [*builtin_extensions(), *others] if cls.enabled(record.config)]


def report_sections(record: RunRecord, run_dir: Path) -> list[ReportSection]:
    """What the extensions of a recorded run add to its report."""
    return [section for cls in recorded(record) for section in cls.report_sections(run_dir, record)]


def add_to_analysis(run_dir: Path, analysis: RunAnalysis) -> None:
    """What the extensions of a recorded run add to its rewritten analysis (`a2rl analyze`,
    imports); the run's record is read from `run_dir`."""
    from a2rl.schema import load_run

    record = load_run(run_dir)
    for cls in recorded(record):
        cls.add_to_analysis(run_dir, record, analysis)


__all__ = ["BUILTIN", "COMMANDS", "AgentLaunch", "ReportSection", "RunExtension", "TaskPart",
           "add_to_analysis", "builtin_extensions", "commands", "extension_class", "extensions",
           "recorded", "report_sections", "select", "submit_refusals"]
