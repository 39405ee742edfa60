"""The conditions a statement runs under, and their value under a run's settings.

`Conditions` collects, for one module, the `if`s and conditional expressions around a
statement, the early exits before it and the call sites of the function holding it, and
evaluates them against a run's settings (command line, configs, code defaults). A branch the
settings pick (a setting compared with names, `if stage == "sft": … elif stage == "ppo": …`, or
a run switch such as `do_train`) is pruned from the tree when the settings decide it."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from a2rl.analysis._syntax import identifiers, name_chain, setting_path

if TYPE_CHECKING:
    from a2rl.analysis._settings import Settings

_FLAG_LIKE = re.compile(r"lora|peft|adapter|dora|ia3|qlora|full_?(ft|finetun|param|train)|finetun|"
                        r"tuning_type|freeze", re.I)
"""Names of settings that switch PEFT on or off (a condition on anything else that cannot be
read, like `if model is None: raise`, does not make PEFT undecided)."""
_EXITS = (ast.Return, ast.Raise, ast.Continue)


Cond = tuple[Any, ...]
"""("test", expr, wanted truth, scope) | ("and", [Cond]) | ("or", [Cond])."""
Value = tuple[Any, list[str]]


def is_main(test: ast.expr) -> bool:
    """`__name__ == "__main__"`: true whenever the file is run."""
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and \
        test.left.id == "__name__" and len(test.comparators) == 1 and \
        isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__"


def trivial(cond: Cond) -> bool:
    return cond[0] == "and" and all(trivial(c) for c in cond[1]) or \
        cond[0] == "or" and any(trivial(c) for c in cond[1])


def describe(cond: Cond) -> str:
    if cond[0] == "test":
        test = cond[1]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return ast.unparse(test.operand) if not cond[2] else ast.unparse(test)
        text = ast.unparse(test)
        return text if cond[2] else f"not ({text})"
    parts = [describe(c) for c in cond[1] if not trivial(c)]
    joiner = " and " if cond[0] == "and" else " or "
    return joiner.join(p if len(parts) == 1 or " " not in p else f"({p})" for p in parts)


class Conditions:
    """The conditions a statement of a module runs under (the `if`s and conditional expressions
    around it, early exits before it, the call sites of the function holding it) and whether
    a run's settings meet them."""

    def __init__(self, tree: ast.Module, callers: Conditions | None = None) -> None:
        self.tree = tree
        self.callers = callers
        """The conditions of the module that imports this one, when it is read for that
        importer: its calls of this module's functions and classes give their parameters."""
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        self.calls: dict[str, list[ast.Call]] = {}
        self.assigns: dict[tuple[str, ast.AST | None], list[ast.expr]] = {}
        self.self_assigns: dict[tuple[str, str], list[tuple[ast.expr, ast.AST | None]]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if name:
                    self.calls.setdefault(name, []).append(node)
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                scope = self.scope(node)
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        self.assigns.setdefault((target.id, scope), []).append(node.value)
                    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self" and (cls := self.owner(scope)) is not None:
                        self.self_assigns.setdefault((cls.name, target.attr), []).append((node.value, scope))

    # ---- structure -------------------------------------------------------------------------
    def scope(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        p = self.parents.get(node)
        while p is not None and not isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef):
            p = self.parents.get(p)
        return p

    def owner(self, fn: ast.AST | None) -> ast.ClassDef | None:
        p = self.parents.get(fn) if fn is not None else None
        return p if isinstance(p, ast.ClassDef) else None

    def inside(self, node: ast.AST, outer: ast.AST) -> bool:
        p = self.parents.get(node)
        while p is not None:
            if p is outer:
                return True
            p = self.parents.get(p)
        return False

    def call_sites(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
        """Calls of a function (`f(…)`), of a method (`self.m(…)`, `obj.m(…)`) or, for
        `__init__`, of its class (`Cls(…)`), in this module."""
        cls = self.owner(fn)
        name = cls.name if cls is not None and fn.name == "__init__" else fn.name
        out = []
        for call in self.calls.get(name, []):
            if self.inside(call, fn):
                continue
            if cls is not None and fn.name != "__init__" and not isinstance(call.func, ast.Attribute):
                continue
            if cls is None and not isinstance(call.func, ast.Name):
                continue
            out.append(call)
        return out

    def caller_sites(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
        """Calls in the importing module of a top-level function of this one (`run_epoch(…)`,
        `epochs.run_epoch(…)`), of a method of a top-level class (`obj.m(…)`) or, for
        `__init__`, of its class (`Loop(…)`): a library function's flag is what its caller
        passes, not its own default."""
        if self.callers is None:
            return []
        cls = self.owner(fn)
        if self.parents.get(cls if cls is not None else fn) is not self.tree:
            return []
        name = cls.name if cls is not None and fn.name == "__init__" else fn.name
        return [call for call in self.callers.calls.get(name, [])
                if cls is None or fn.name == "__init__" or isinstance(call.func, ast.Attribute)]

    def condition(self, node: ast.AST, depth: int = 0) -> Cond:
        parts: list[Cond] = []
        child, parent = node, self.parents.get(node)
        while parent is not None:
            if isinstance(parent, ast.If) and child is not parent.test and not is_main(parent.test):
                parts.append(("test", parent.test, any(child is s for s in parent.body), self.scope(parent)))
            elif isinstance(parent, ast.IfExp) and child is not parent.test:
                parts.append(("test", parent.test, child is parent.body, self.scope(parent)))
            if isinstance(child, ast.stmt):
                for block in (getattr(parent, name, None) for name in ("body", "orelse", "finalbody")):
                    if not isinstance(block, list):
                        continue
                    at = next((i for i, s in enumerate(block) if s is child), None)
                    for prev in block[:at] if at is not None else []:
                        if isinstance(prev, ast.If) and not prev.orelse and prev.body and \
                                isinstance(prev.body[-1], _EXITS):
                            parts.append(("test", prev.test, False, self.scope(prev)))
            if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
                sites = self.call_sites(parent) if depth < 2 else []
                if sites:
                    parts.append(("or", [self.condition(c, depth + 1) for c in sites]))
                break
            if isinstance(parent, ast.Lambda | ast.ClassDef):
                break
            child, parent = parent, self.parents.get(parent)
        return ("and", parts)

    def uses(self, name: str, scope: ast.AST | None, besides: ast.AST) -> list[ast.Name]:
        """Where a variable is read in its scope (the function, or the module's top level)."""
        where = scope if scope is not None else self.tree
        return [n for n in ast.walk(where) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Load) and not self.inside(n, besides)
                and (scope is not None or self.scope(n) is None)]

    # ---- truth -----------------------------------------------------------------------------
    def holds(self, cond: Cond, settings: Settings) -> tuple[bool | None, list[str]]:
        from a2rl.analysis._settings import truth

        if cond[0] == "test":
            _, test, wanted, scope = cond
            value, sources = self.value(test, scope, settings)
            verdict = truth(value)
            if verdict is None:
                flag_like = any(_FLAG_LIKE.search(i) for i in identifiers(test))
                return (None, sources) if flag_like else (True, [])
            return verdict == wanted, sources
        results = [self.holds(c, settings) for c in cond[1]]
        if cond[0] == "and":
            for want in (False, None):
                hit = [s for v, ss in results if v is want for s in ss]
                if any(v is want for v, _ in results):
                    return want, hit
            return True, [s for _, ss in results for s in ss]
        for want in (True, None):
            if any(v is want for v, _ in results):
                return want, [s for v, ss in results if v is want for s in ss]
        return False, [s for _, ss in results for s in ss]

    def value(self, expr: ast.AST, scope: ast.AST | None, settings: Settings, depth: int = 0) -> Value:
        """The value an expression has under the run's settings (MISSING: unknown)."""
        from a2rl.analysis._settings import MISSING, literal, truth

        if depth > 10:
            return MISSING, []
        if isinstance(expr, ast.Constant):
            return expr.value, []
        if isinstance(expr, ast.List | ast.Tuple | ast.Set):
            return literal(expr), []  # `stage in ["pt", "sft"]`
        if isinstance(expr, ast.UnaryOp):
            v, src = self.value(expr.operand, scope, settings, depth + 1)
            if v is MISSING:
                return MISSING, src
            if isinstance(expr.op, ast.Not):
                t = truth(v)
                return (MISSING if t is None else not t), src
            if isinstance(expr.op, ast.USub) and isinstance(v, int | float):
                return -v, src
            return MISSING, src
        if isinstance(expr, ast.BoolOp):
            vals = [self.value(v, scope, settings, depth + 1) for v in expr.values]
            truths = [truth(v) for v, _ in vals]
            src = [s for _, ss in vals for s in ss]
            decisive = isinstance(expr.op, ast.Or)
            if decisive in truths:
                return decisive, src
            return (MISSING if None in truths else not decisive), src
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            left, ls = self.value(expr.left, scope, settings, depth + 1)
            right, rs = self.value(expr.comparators[0], scope, settings, depth + 1)
            if left is MISSING or right is MISSING:
                return MISSING, ls + rs
            try:
                return _COMPARE[type(expr.ops[0])](left, right), ls + rs
            except Exception:  # noqa: BLE001 - values that do not compare
                return MISSING, ls + rs
        if isinstance(expr, ast.Call):
            return self.call_value(expr, scope, settings, depth)
        if isinstance(expr, ast.Name | ast.Attribute | ast.Subscript):
            return self.ref_value(expr, scope, settings, depth)
        return MISSING, []

    def call_value(self, expr: ast.Call, scope: ast.AST | None, settings: Settings, depth: int) -> Value:
        from a2rl.analysis._settings import MISSING, coerce

        chain = name_chain(expr.func)
        last = chain[-1] if chain else ""
        args = expr.args
        if re.fullmatch(r"is_\w+_available", last):
            return True, []  # an installed-package check
        if len(chain) == 1 and last in ("bool", "int", "float", "str") and len(args) == 1:
            v, src = self.value(args[0], scope, settings, depth + 1)
            try:
                return (MISSING if v is MISSING else _CASTS[last](v)), src
            except (TypeError, ValueError):
                return MISSING, src
        if last in ("lower", "upper", "strip") and isinstance(expr.func, ast.Attribute) and not args:
            v, src = self.value(expr.func.value, scope, settings, depth + 1)
            return (getattr(v, last)() if isinstance(v, str) else MISSING), src
        key_at = 1 if last == "getattr" else 0
        key_node = args[key_at] if len(args) > key_at else None
        key = key_node.value if isinstance(key_node, ast.Constant) and isinstance(key_node.value, str) \
            else None
        default = args[key_at + 1] if len(args) > key_at + 1 else next(
            (kw.value for kw in expr.keywords if kw.arg == "default"), None)
        if key is None:
            return MISSING, []
        if last == "getenv" or chain[-2:] == ["environ", "get"]:
            if key in settings.env:
                return coerce(settings.env[key]), [f"env {key}={settings.env[key]}"]
            if default is None:
                return MISSING, []
            v, src = self.value(default, scope, settings, depth + 1)
            return v, src + [f"env {key} unset: the code's default"]
        if last == "getattr" and args:
            base: ast.AST = args[0]
        elif last in ("get", "pop") and isinstance(expr.func, ast.Attribute):
            base = expr.func.value
        else:
            return MISSING, []
        v, src = self.ref_value(base, scope, settings, depth + 1, extra=[key])
        if v is MISSING and default is not None:
            return self.value(default, scope, settings, depth + 1)
        return v, src

    def ref_value(self, expr: ast.AST, scope: ast.AST | None, settings: Settings, depth: int,
                  extra: list[str] | None = None) -> Value:
        from a2rl.analysis._settings import MISSING

        path = setting_path(expr)
        if path is None:
            return MISSING, []
        path += extra or []
        root, rest = path[0], path[1:]
        if root == "__name__" and not rest:
            return "__main__", []
        if root == "self":
            cls = self.owner(scope)
            if cls is not None and rest:
                if rest[0] == "hparams" and len(rest) >= 2:  # Lightning's save_hyperparameters()
                    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef)
                                 and f.name == "__init__"), None)
                    if init is not None:
                        return self.param_value(init, rest[1], rest[2:], settings, depth + 1)
                bound = self.self_assigns.get((cls.name, rest[0]), [])
                if bound:
                    return self.agree([self.bound_value(v, s, rest[1:], settings, depth + 1)
                                       for v, s in bound])
            return self.setting(rest, settings)
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and \
                root in {a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs}:
            return self.param_value(scope, root, rest, settings, depth + 1)
        bound_here = self.assigns.get((root, scope), []) or self.assigns.get((root, None), [])
        if bound_here:
            where = scope if (root, scope) in self.assigns else None
            return self.agree([self.bound_value(v, where, rest, settings, depth + 1) for v in bound_here])
        return self.setting(rest or [root], settings)

    def bound_value(self, value: ast.expr, scope: ast.AST | None, rest: list[str], settings: Settings,
                    depth: int) -> Value:
        """The value of `<name>.<rest>` where `<name> = value`."""
        from a2rl.analysis._settings import MISSING, literal

        if not rest:
            return self.value(value, scope, settings, depth + 1)
        if isinstance(value, ast.Dict):
            data = literal(value)
            for part in rest:
                if not isinstance(data, dict) or part not in data:
                    return MISSING, []
                data = data[part]
            return data, ["a dict in the code"]
        if isinstance(value, ast.Call):
            for kw in value.keywords:
                if kw.arg == rest[0]:
                    return self.bound_value(kw.value, scope, rest[1:], settings, depth + 1)
            return self.setting(rest, settings)  # a settings object, a parsed namespace, a config
        if isinstance(value, ast.Name | ast.Attribute | ast.Subscript):
            return self.ref_value(value, scope, settings, depth + 1, extra=rest)
        return MISSING, []

    def param_value(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, rest: list[str],
                    settings: Settings, depth: int) -> Value:
        """A parameter: what its callers in this module pass, else what the run's settings say
        (an entry point called by fire / typer / a framework), else its default."""
        from a2rl.analysis._settings import MISSING, default_of

        params = fn.args.posonlyargs + fn.args.args
        index = next((i for i, a in enumerate(params) if a.arg == name), None)
        if index is not None and self.owner(fn) is not None:
            index -= 1  # `self`
        defaults = dict(zip([a.arg for a in params[len(params) - len(fn.args.defaults):]],
                            fn.args.defaults, strict=True))
        defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)
                         if d is not None})

        def default() -> Value:
            if name not in defaults:
                # given by whatever calls the function (Hydra's decorator, a framework's hook)
                return self.setting(rest or [name], settings)
            if rest:
                return self.setting(rest, settings)
            value = default_of(defaults[name])
            return value, [f"default {name}={value!r} (line {fn.lineno})"] if value is not MISSING \
                else []

        values: list[Value] = []
        sites = [(call, self) for call in self.call_sites(fn)] if depth < 8 else []
        if not sites and depth < 8 and self.callers is not None:
            sites = [(call, self.callers) for call in self.caller_sites(fn)]
        for call, where in sites:
            arg = next((kw.value for kw in call.keywords if kw.arg == name), None)
            if arg is None and index is not None and 0 <= index < len(call.args) and \
                    not any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
                arg = call.args[index]
            values.append(default() if arg is None else
                          where.bound_value(arg, where.scope(call), rest, settings, depth + 1))
        if values:
            return self.agree(values)
        said = self.setting(rest or [name], settings, code=False)
        return said if said[0] is not MISSING else default()

    def setting(self, path: list[str], settings: Settings, *, code: bool = True) -> Value:
        value, where = settings.value(path, code=code)
        return value, [where] if where else []

    @staticmethod
    def agree(values: list[Value]) -> Value:
        from a2rl.analysis._settings import MISSING

        first = values[0][0]
        sources = [s for _, ss in values for s in ss]
        if any(v is MISSING for v, _ in values) or any(v != first for v, _ in values[1:]):
            return MISSING, sources
        return first, sources


_CASTS: dict[str, Callable[[Any], Any]] = {"bool": bool, "int": int, "float": float, "str": str}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: bool(a == b), ast.NotEq: lambda a, b: bool(a != b),
    ast.Gt: lambda a, b: bool(a > b), ast.GtE: lambda a, b: bool(a >= b),
    ast.Lt: lambda a, b: bool(a < b), ast.LtE: lambda a, b: bool(a <= b),
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
}


_DISPATCH_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def _names_constant(node: ast.expr) -> bool:
    """A string constant, or a list/tuple/set of them (`"dpo"`, `{"dpo", "ipo"}`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.List | ast.Tuple | ast.Set) and bool(node.elts) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)


def _dispatch_test(test: ast.expr) -> bool:
    """A condition comparing a value with names (`stage == "sft"`, `mode in ("dpo", "ipo")`),
    alone or in a boolean combination: the shape of a branch picked by a setting."""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], _DISPATCH_OPS) and not is_main(node):
            sides = (node.left, node.comparators[0])
            if any(_names_constant(x) for x in sides) and not all(_names_constant(x) for x in sides):
                return True
    return False


_RUN_SWITCHES = {"do_train", "do_eval", "do_predict"}
"""transformers' TrainingArguments switches: HF-style scripts train only under `if
training_args.do_train:` (its default is False)."""


def _switch_test(test: ast.expr) -> bool:
    """A condition on a run switch (`training_args.do_train`, `not args.do_predict`), alone or
    in a boolean combination."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _switch_test(test.operand)
    if isinstance(test, ast.BoolOp):
        return any(_switch_test(v) for v in test.values)
    path = setting_path(test)
    return path is not None and len(path) >= 2 and path[-1] in _RUN_SWITCHES


def _decided_test(test: ast.expr) -> bool:
    """A branch the run's settings pick: a setting compared with names, or a run switch."""
    return _dispatch_test(test) or _switch_test(test)


def has_dispatch(tree: ast.Module) -> bool:
    """The module holds a branch the run's settings pick (see `prune_branches`)."""
    return any(isinstance(n, ast.If) and _decided_test(n.test) for n in ast.walk(tree))


def prune_branches(tree: ast.Module, settings: Settings, callers: Conditions | None = None) -> None:
    """Drop the branches that the run's settings rule out: an `if` on a setting compared with
    names, or on a run switch (`do_train`), keeps its body when the settings make the test
    true, its `else` when false; a test whose value nothing shows keeps both. `callers`: the
    importing module's conditions, whose calls give the parameters of this module's functions."""
    from a2rl.analysis._settings import truth

    flags = Conditions(tree, callers)
    decided = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _decided_test(node.test):
            value, _ = flags.value(node.test, flags.scope(node), settings)
            verdict = truth(value)
            if verdict is not None:
                decided.append((node, verdict))
    for node, verdict in decided:
        if verdict:
            node.orelse = []
        else:
            node.body = [ast.copy_location(ast.Pass(), node.body[0])]
