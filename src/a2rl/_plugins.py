"""One registry mechanism for every plug-in kind (tasks, agents, sandbox backends, inference
engines, run extensions).

A plug-in is registered with the kind's decorator where it is defined::

    @sandboxes.register("bwrap")
    class BwrapSandbox: ...

Built-in plug-ins are named with the module that defines them, so listing names or resolving
one imports only that module (never the others' heavy dependencies). Third-party packages
register through entry points of the kind's group (`a2rl.tasks`, `a2rl.agents`,
`a2rl.sandboxes`, `a2rl.engines`, `a2rl.extensions`): an entry point `name = "pkg.mod:obj"` makes
`obj` the plug-in `name`; the module may also register further names with the decorator.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from a2rl._errors import A2RLError

T = TypeVar("T")


class Registry(Generic[T]):
    """The plug-ins of one kind, by name."""

    def __init__(self, kind: str, group: str, builtin: dict[str, str] | None = None) -> None:
        self.kind = kind
        """What the plug-ins are, for messages ("sandbox backend")."""
        self.group = group
        """The entry-point group third-party packages register under."""
        self._builtin = dict(builtin or {})  # name -> module that registers it when imported
        self._found: dict[str, T] = {}
        self._entry_points: dict[str, str] | None = None

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object as plug-in `name`."""
        def deco(obj: T) -> T:
            known = self._found.get(name)
            if known is not None and known is not obj:
                raise A2RLError(f"two {self.kind}s are registered as {name!r}: {known!r} and "
                                f"{obj!r}", f"rename one of them (the {self.group} names)")
            self._found[name] = obj
            return obj
        return deco

    def _third_party(self) -> dict[str, str]:
        if self._entry_points is None:
            self._entry_points = {ep.name: ep.value for ep in entry_points(group=self.group)}
        return self._entry_points

    def names(self) -> list[str]:
        """Every registered name (built-in, decorated, entry points), sorted."""
        return sorted({*self._builtin, *self._found, *self._third_party()})

    def get(self, name: str) -> T:
        """The plug-in `name`, importing only the module that defines it."""
        if name in self._found:
            return self._found[name]
        if name in self._builtin:
            module, _, attr = self._builtin[name].partition(":")
            if attr:  # a "module:attr" entry names the object itself
                return self._found.setdefault(name, load(self._builtin[name]))
            importlib.import_module(module)
            if name not in self._found:
                raise A2RLError(f"{self._builtin[name]} does not register the {self.kind} "
                                f"{name!r}", f"decorate it with @{self.kind}s.register({name!r})")
            return self._found[name]
        target = self._third_party().get(name)
        if target is None:
            raise A2RLError(f"unknown {self.kind} {name!r}",
                            f"choose one of: {', '.join(self.names()) or '(none)'}")
        obj = load(target, f"the {self.group} entry point {name!r}")
        return self._found.setdefault(name, obj)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()


def load(target: str, what: str | None = None) -> Any:
    """Import "module:attr" and return the attribute."""
    module, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split(".") if attr else []:
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise A2RLError(f"cannot load {what or target} ({target}): {exc}",
                        "install the package that provides it, or fix the entry point") from exc
    return obj


def registered(builtin: dict[str, str], group: str) -> dict[str, str]:
    """name -> "module:attr": the built-ins, then third-party entry points of `group` (for
    tables of "module:attr" targets that predate `Registry`)."""
    found = dict(builtin)
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep.value)
    return found
