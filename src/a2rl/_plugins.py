"""Registries of pluggable parts (tasks, agents): built-in names plus entry points, imported lazily
so that listing or resolving one never imports the others' heavy dependencies."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any


def registered(builtin: dict[str, str], group: str) -> dict[str, str]:
    """name -> "module:attr": the built-ins, then third-party entry points of `group`."""
    found = dict(builtin)
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep.value)
    return found


def load(target: str) -> Any:
    """Import "module:attr" and return the attribute."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
