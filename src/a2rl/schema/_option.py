"""How a run option is declared: once, beside its `RunConfig` field.

A field of `RunConfig` is a run option when its `Annotated` metadata holds a `RunOption`: the
field gives the name, type, default, description and the record's constraints (pydantic), the
`RunOption` adds how the command line spells it (flag, short help, how its value is written)
and what a new run requires of it beyond the record's constraints (`Check`: an imported run's
record may hold values a2rl would not start a run with, e.g. no evaluation time limit).
`a2rl run`'s options, the sweep matrix's `run:` keys and the docs' option table are all made
from these declarations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator
from pydantic.fields import FieldInfo

from a2rl._errors import A2RLError
from a2rl._util import parse_duration


def _duration(value: Any) -> Any:
    if isinstance(value, int | float) or value is None:
        return value
    try:
        return parse_duration(str(value))
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a duration (use e.g. 12h, 30m, 90s or seconds)"
                         ) from exc


Duration = Annotated[float, BeforeValidator(_duration)]
"""Seconds, written as 12h, 30m, 90s or a number."""

ValueForm = Literal["plain", "duration", "pairs", "json-pairs", "paths", "own"]
"""How the command line writes an option's value: plain (its type), duration (12h, 30m, 90s or
seconds), pairs (repeated key=value), json-pairs (key=value with JSON values), paths (repeated
folders, made absolute), own (its own parser in `a2rl.cli.run`)."""


@dataclass(frozen=True)
class Check:
    """What a new run requires of an option beyond its record's constraints."""

    ok: Callable[[Any], bool]
    """True when the value may start a run (never called with None)."""
    problem: str
    """What is wrong, after the flag; `{value}` is the value given (e.g. `must be positive
    (got {value:g} s)`)."""
    fix: str
    """How to put it right."""


@dataclass(frozen=True)
class RunOption:
    """The command line's side of one `RunConfig` field (its `Annotated` metadata)."""

    flag: str
    """The `a2rl run` option, e.g. `--eval-timeout`."""
    help: str
    """One line for `a2rl run --help` and the docs' option table."""
    form: ValueForm = "plain"
    """How the command line writes the value."""
    cli_type: Any = None
    """The command-line value's type where it differs from the field's (None: the field's)."""
    check: Check | None = None
    """What a new run requires of the value (None: the record's constraints say it all)."""
    per_cell: bool = False
    """A sweep's cell sets it itself (task, agent, budget, …): no key of the matrix's `run:`."""
    default_text: str | None = None
    """What the default means where the command line leaves the field unset (None: the
    field's default is given as it is)."""


def run_options(model: type[BaseModel]) -> dict[str, tuple[FieldInfo, RunOption]]:
    """Every field of `model` declared as a run option, in declaration order."""
    out: dict[str, tuple[FieldInfo, RunOption]] = {}
    for name, info in model.model_fields.items():
        found = [m for m in info.metadata if isinstance(m, RunOption)]
        if found:
            out[name] = (info, found[0])
    return out


def matrix_key(name: str, option: RunOption) -> str:
    """The key a sweep's `run:` section gives a field: a duration drops its `_s` (`grace`)."""
    return name.removesuffix("_s") if option.form == "duration" else name


def duration_text(seconds: float) -> str:
    """3600 -> `1h`, 90 -> `90s`: the largest unit that divides it."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def default_text(info: FieldInfo, option: RunOption) -> str:
    """The option's default as the help and the docs give it."""
    if option.default_text is not None:
        return option.default_text
    value = info.get_default(call_default_factory=True)
    if value is None or value == [] or value == {}:
        return "none"
    if option.form == "duration":
        return duration_text(float(value))
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


def option_problem(value: Any, option: RunOption, label: str | None = None) -> A2RLError | None:
    """The error a new run gives for `value` of the option, named by `label` (default: its
    flag); None: it may start a run."""
    check = option.check
    if check is None or value is None or check.ok(value):
        return None
    return A2RLError(f"{label or option.flag} " + check.problem.format(value=value), check.fix)
