"""One exception type for every user-facing failure: what went wrong and what to do about it."""

from __future__ import annotations

from typing import Any


class A2RLError(Exception):
    """A problem the user can fix. The CLI prints `message` and `fix` without a traceback."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message}\n  fix: {self.fix}"


def validation_problems(exc: Any) -> str:
    """A pydantic ValidationError as one line a user reads: `name: what is wrong` per bad
    field (no error codes, input dumps or documentation URLs). Anything else: its text."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for err in errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in err.get("loc", ())) or "options"
        msg = "unknown option" if err.get("type") == "extra_forbidden" else err.get("msg", "")
        parts.append(f"{where}: {msg}")
    return "; ".join(parts) or str(exc)
