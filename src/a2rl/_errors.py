"""One exception type for every user-facing failure: what went wrong and what to do about it."""

from __future__ import annotations


class A2RLError(Exception):
    """A problem the user can fix. The CLI prints `message` and `fix` without a traceback."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message}\n  fix: {self.fix}"
