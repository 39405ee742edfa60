"""One registry mechanism for every plug-in kind (tasks, agents, sandbox backends, inference
engines, run extensions).

A plug-in is registered with the kind's decorator where it is defined::

    @sandboxes.register("bwrap")
    class BwrapSandbox: ...

Built-in plug-ins are the public modules and folders of the kind's package (`a2rl.tasks`,
`a2rl.agents`, `a2rl.extensions`, `a2rl.sandbox.backends`, `a2rl.inference.engines`), each
named after its module with `-` for `_` (`agents/claude_code.py` is the agent `claude-code`):
adding one is adding its file or folder, with no list to edit. They are listed without being
imported, and resolving one imports only its module (never the others' heavy dependencies); in
a folder, the module whose class carries the decorator is found by reading the folder's files.
Third-party packages
register through entry points of the kind's group (`a2rl.tasks`, `a2rl.agents`,
`a2rl.sandboxes`, `a2rl.engines`, `a2rl.extensions`): an entry point `name = "pkg.mod:obj"` makes
`obj` the plug-in `name`; the module may also register further names with the decorator.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

from a2rl._errors import A2RLError

T = TypeVar("T")


def plugin_name(module_name: str) -> str:
    """The name of the built-in plug-in that module (or folder) `module_name` holds."""
    return module_name.replace("_", "-")


def package_plugins(package: str) -> dict[str, str]:
    """name -> module of each public module and folder of `package` (listed, not imported; a
    folder without `__init__.py` is not a module and is not listed)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise A2RLError(f"{package} is not a package", "name the package that holds the plug-ins")
    return {plugin_name(m.name): f"{package}.{m.name}"
            for m in pkgutil.iter_modules(list(spec.submodule_search_locations))
            if not m.name.startswith("_")}


def registers(source: str, decorator: str, name: str) -> bool:
    """Whether Python `source` decorates something with `@<decorator>.register(name)`."""
    if name not in source or ".register(" not in source:
        return False  # the cheap test first: most files of a plug-in folder register nothing
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True  # imported, so that its error is the one reported
    for node in ast.walk(tree):
        for deco in getattr(node, "decorator_list", ()):
            if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)
                    and deco.func.attr == "register" and isinstance(deco.func.value, ast.Name)
                    and deco.func.value.id == decorator and len(deco.args) == 1
                    and isinstance(deco.args[0], ast.Constant) and deco.args[0].value == name):
                return True
    return False


class Registry(Generic[T]):
    """The plug-ins of one kind, by name."""

    def __init__(self, kind: str, group: str, *, package: str | None = None,
                 builtin: dict[str, str] | None = None, decorator: str | None = None) -> None:
        self.kind = kind
        """What the plug-ins are, for messages ("sandbox backend")."""
        self.group = group
        """The entry-point group third-party packages register under."""
        self.decorator = decorator or f"{kind}s"
        """The name of this registry where plug-ins use it (`@<decorator>.register(name)`)."""
        self.builtin: dict[str, str] = {**(package_plugins(package) if package else {}),
                                        **(builtin or {})}
        """name -> the module that registers it when imported (or "module:attr", the object
        itself): the public modules and folders of `package`, then the `builtin` entries."""
        self._found: dict[str, T] = {}
        self._entry_points: dict[str, str] | None = None

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object as plug-in `name`."""
        def deco(obj: T) -> T:
            known = self._found.get(name)
            if known is not None and known is not obj and not _same_definition(known, obj):
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
        return sorted({*self.builtin, *self._found, *self._third_party()})

    def get(self, name: str) -> T:
        """The plug-in `name`, importing only the module that defines it."""
        if name in self._found:
            return self._found[name]
        if name in self.builtin:
            return self._builtin_plugin(name)
        target = self._third_party().get(name)
        if target is None:
            raise A2RLError(f"unknown {self.kind} {name!r}",
                            f"choose one of: {', '.join(self.names()) or '(none)'}")
        obj = load(target, f"the {self.group} entry point {name!r}")
        return self._found.setdefault(name, obj)

    def _builtin_plugin(self, name: str) -> T:
        target = self.builtin[name]
        module_name, _, attr = target.partition(":")
        if attr:  # a "module:attr" entry names the object itself
            return self._found.setdefault(name, load(target))
        module = importlib.import_module(module_name)
        if name not in self._found:
            for inner in self._registering_modules(module, name):
                importlib.import_module(inner)
        if name not in self._found:
            raise A2RLError(f"{module_name} does not register the {self.kind} {name!r}",
                            f"decorate its class with @{self.decorator}.register({name!r}) (a "
                            f"built-in {self.kind} is named after its module, '_' read as '-')")
        return self._found[name]

    def _registering_modules(self, package: ModuleType, name: str) -> list[str]:
        """The modules of folder plug-in `package` (its own files, not subfolders) whose source
        registers `name`."""
        found = []
        for folder in getattr(package, "__path__", ()):
            for file in sorted(Path(folder).glob("*.py")):
                if file.stem != "__init__" and registers(file.read_text(errors="replace"),
                                                         self.decorator, name):
                    found.append(f"{package.__name__}.{file.stem}")
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()


def _same_definition(known: object, new: object) -> bool:
    """`new` is `known`'s definition imported again (the same class of the same file, under
    another module name, as `a2rl certify FOLDER` imports a task folder)."""
    try:
        return (getattr(known, "__qualname__", None) == getattr(new, "__qualname__", ())
                and inspect.getsourcefile(known) == inspect.getsourcefile(new))  # type: ignore[arg-type]
    except TypeError:  # not a class or function: no source file
        return False


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
