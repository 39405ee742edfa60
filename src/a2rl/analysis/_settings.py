"""Flag values: what a run's settings say a flag is (its command line, its config files, the
defaults its code declares), for the conditions under which a script applies PEFT or a method."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class _Missing:
    """A flag whose value no source shows."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
FlagDefaults = dict[str, list[tuple[Any, str]]]
"""Flag name (a field, an argparse destination, a parameter; `outer.inner` for a field of a
nested settings class) -> the defaults the code gives it, each with where it is given."""


def truth(value: Any) -> bool | None:
    """A flag value as a condition (None: unknown). Strings from command lines and env vars
    read as YAML would."""
    if value is MISSING:
        return None
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "0", "no", "none", "off", "null", "n")
    try:
        return bool(value)
    except Exception:  # noqa: BLE001 - an object whose truth cannot be taken
        return None


def coerce(text: str) -> Any:
    """A command-line or env value as YAML would read it (`true`, `0`, `1e-4`, `lora`)."""
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null", "~"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip("'\"")


def literal(node: Any) -> Any:
    """The value of a constant expression (literals, -1, tuples/lists of literals); MISSING
    when it is not one."""
    import ast

    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return MISSING


def default_of(node: Any) -> Any:
    """The default a field or parameter declares: a constant, or the default of
    `field(default=…)`, pydantic's `Field(…)`, attrs' `attrib(default=…)`, typer's
    `Option(False, …)` (MISSING: none that can be read)."""
    import ast

    if node is None:
        return MISSING
    if isinstance(node, ast.Call):
        func = node.func.attr if isinstance(node.func, ast.Attribute) else \
            node.func.id if isinstance(node.func, ast.Name) else ""
        if func in ("field", "Field", "attrib", "ib", "Option", "Argument", "option"):
            for kw in node.keywords:
                if kw.arg == "default":
                    return literal(kw.value)
            if func in ("Field", "Option", "Argument") and node.args:
                return literal(node.args[0])
        return MISSING
    return literal(node)


def code_defaults(tree: Any, path: str) -> FlagDefaults:
    """Defaults the code gives its settings: fields of settings classes (dataclasses, pydantic
    models, attrs and plain class attributes; `field(default=…)` / `Field(…)`), argparse
    `add_argument` defaults (`store_true` is False), `set_defaults(…)`, parameter defaults of
    functions (fire / typer style entry points: `typer.Option(False, …)`), module-level
    constants, and the defaults of transformers' TrainingArguments switches (`do_train`) where
    an HfArgumentParser parses that class."""
    import ast

    out: FlagDefaults = {}

    def put(name: str, value: Any, line: int) -> None:
        if value is not MISSING:
            out.setdefault(name, []).append((value, f"{path}:{line}"))

    classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    fields: dict[str, dict[str, tuple[Any, int]]] = {}
    nested: dict[str, dict[str, str]] = {}
    for name, cls in classes.items():
        own: dict[str, tuple[Any, int]] = {}
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ann = stmt.annotation
                kind = ann.id if isinstance(ann, ast.Name) else \
                    ann.value if isinstance(ann, ast.Constant) and isinstance(ann.value, str) else None
                if kind in classes:
                    nested.setdefault(name, {})[stmt.target.id] = kind
                own[stmt.target.id] = (default_of(stmt.value), stmt.lineno)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name):
                own[stmt.targets[0].id] = (default_of(stmt.value), stmt.lineno)
        fields[name] = own
    for name, own in fields.items():
        for key, (value, line) in own.items():
            put(key, value, line)
        for attr, inner in nested.get(name, {}).items():
            for key, (value, line) in fields.get(inner, {}).items():
                put(f"{attr}.{key}", value, line)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("add_argument", "add_option"):
                _argparse_default(node, put)
            elif node.func.attr == "set_defaults":
                for kw in node.keywords:
                    if kw.arg:
                        put(kw.arg, literal(kw.value), node.lineno)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults,
                                    strict=True):
                put(arg.arg, default_of(default), node.lineno)
            for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                put(arg.arg, default_of(kw_default), node.lineno)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            put(stmt.targets[0].id, literal(stmt.value), stmt.lineno)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) == "HfArgumentParser" and node.args:
            parsed = node.args[0]
            names = parsed.elts if isinstance(parsed, ast.Tuple | ast.List) else [parsed]
            if any(_hf_training_args(n, classes) for n in names):
                for key, value in HF_TRAINING_DEFAULTS.items():
                    out.setdefault(key, []).append(
                        (value, f"{LIBRARY}transformers' TrainingArguments, parsed at {path}:{node.lineno}"))
    return out


HF_TRAINING_DEFAULTS: dict[str, Any] = {"do_train": False, "do_eval": False, "do_predict": False}
"""Defaults of transformers' (Seq2Seq)TrainingArguments switches, which the workspace does not
hold: they apply to settings an HfArgumentParser of those classes parses."""
LIBRARY = "library default: "
"""How a default from a library's own settings class is marked: the code's own defaults and
every other source outrank it."""
_HF_ARGS = {"TrainingArguments", "Seq2SeqTrainingArguments"}


def _call_name(node: Any) -> str:
    import ast

    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _hf_training_args(node: Any, classes: dict[str, Any], depth: int = 0) -> bool:
    """transformers' TrainingArguments / Seq2SeqTrainingArguments, or a class of the module that
    inherits from one."""
    import ast

    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    if name in _HF_ARGS:
        return True
    cls = classes.get(name)
    return cls is not None and depth < 5 and any(_hf_training_args(b, classes, depth + 1)
                                                 for b in cls.bases)


def _argparse_default(node: Any, put: Callable[[str, Any, int], None]) -> None:
    """`add_argument("--use-lora", action="store_true")`: the destination and its default."""
    import ast

    names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
    dest_node = kws.get("dest")
    dest = dest_node.value if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str) \
        else next((n.lstrip("-") for n in names if n.startswith("--")),
                  names[0].lstrip("-") if names else None)
    if not dest:
        return
    dest = dest.replace("-", "_")
    action = kws.get("action")
    action_name = action.value if isinstance(action, ast.Constant) else \
        action.attr if isinstance(action, ast.Attribute) else None
    if "default" in kws:
        put(dest, literal(kws["default"]), node.lineno)
    elif action_name == "store_true":
        put(dest, False, node.lineno)
    elif action_name == "store_false":
        put(dest, True, node.lineno)
    else:
        put(dest, None, node.lineno)  # argparse's default for an option not given


def _lookup(data: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    """(whether the mapping has the dotted key, its value)."""
    cur: Any = data
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False, None
        cur = cur[part]
    return True, cur


def _nested_values(data: Any, key: str) -> list[Any]:
    out: list[Any] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key:
                out.append(v)
            out += _nested_values(v, key)
    elif isinstance(data, list):
        for v in data:
            out += _nested_values(v, key)
    return out


def _agreed(values: list[Any]) -> Any:
    """One value when every source agrees; MISSING when none or they disagree."""
    if not values:
        return MISSING
    first = values[0]
    return first if all(v == first for v in values[1:]) else MISSING


@dataclass
class Settings:
    """What a run's flags are, by precedence: the command line (`--use_lora`, `--no-lora`,
    Hydra `model.lora_rank=8`), config files (those on the command line first, then those the
    script names, then the YAML/JSON next to it), then the defaults in the code."""

    flags: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)
    configs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    defaults: FlagDefaults = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def value(self, path: list[str], *, code: bool = True) -> tuple[Any, str]:
        """The value of the setting at `path` (`["model", "lora_rank"]`; the object holding the
        settings left out) and where it comes from; (MISSING, "") when nothing says.
        `code=False` leaves the code's own defaults out."""
        if not path:
            return MISSING, ""
        suffixes = [".".join(path[k:]) for k in range(len(path))]
        for key in suffixes:
            for spelling in (key, key.replace("_", "-")):
                if spelling in self.flags:
                    return coerce(self.flags[spelling]), f"argument --{spelling}"
                for neg in (f"no_{spelling}", f"no-{spelling}"):
                    if neg in self.flags and truth(coerce(self.flags[neg])):
                        return False, f"argument --{neg}"
            if key in self.overrides:
                return coerce(self.overrides[key]), f"override {key}={self.overrides[key]}"
        for name, data in self.configs:
            for key in suffixes:
                present, found = _lookup(data, key)
                if present:
                    return found, f"{name}: {key}"
            values = _nested_values(data, path[-1])
            value = _agreed(values)
            if value is not MISSING:
                return value, f"{name}: {path[-1]}"
        for key in suffixes if code else []:
            if key in self.defaults:
                entries = self.defaults[key]
                own = [e for e in entries if not e[1].startswith(LIBRARY)]
                entries = own or entries
                value = _agreed([v for v, _ in entries])
                if value is MISSING:
                    return MISSING, ""  # defaults that disagree (two settings classes): unknown
                return value, f"default {key}={value!r} ({entries[0][1]})"
        return MISSING, ""
