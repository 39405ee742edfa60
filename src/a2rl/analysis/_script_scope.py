"""The names of a script and the workspace modules they reach (see `ScriptScope`)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from a2rl.analysis._conditions import Conditions, has_dispatch, prune_branches
from a2rl.analysis._detection import CommandAnalyzer, Detection, ModuleReader
from a2rl.analysis._methods import TRAINING, method_of_class
from a2rl.analysis._objectives import self_taught
from a2rl.analysis._syntax import identifiers, join_module, name_chain

if TYPE_CHECKING:
    from a2rl.analysis._settings import Settings

FRAMEWORKS = ("trl", "transformers", "peft", "unsloth", "unsloth_zoo", "openrlhf", "verl",
              "llamafactory", "axolotl", "torchtune", "mergekit", "lightning", "pytorch_lightning")
TRAINER_ROOTS = {"trl", "transformers", "unsloth", "unsloth_zoo", "openrlhf", "verl",
                 "llamafactory", "axolotl", "torchtune", "lightning", "pytorch_lightning"}
"""Top packages whose classes named like trainers are trainers."""
_GENERIC_TRAINER_ROOTS = {"transformers", "unsloth", "trl", "lightning", "pytorch_lightning"}
"""Where a plain `Trainer` is a supervised trainer (Lightning's fits a LightningModule)."""
ScriptAnalyzer = Callable[..., Detection]
"""The labeller's entry point (`analyze_script`), called for each workspace module imported."""


class ScriptScope:
    """One script as the labeller reads it: the names it imports (resolved through aliases
    to frameworks and to workspace modules, which are analyzed in turn), the trainer classes
    known in it, and what its calls into workspace modules reach. The passes that read its
    classes, PEFT sites and calls build on this scope."""

    def __init__(self, path: str, tree: ast.Module, read_module: ModuleReader | None,
                 analyze_command: CommandAnalyzer | None, depth: int,
                 cache: dict[str, Detection] | None, stack: tuple[str, ...],
                 settings: Settings | None, analyze: ScriptAnalyzer,
                 callers: Conditions | None = None) -> None:
        self.path, self.tree = path, tree
        self.callers = callers
        """The importing module's conditions when this one is read for it (see `Conditions`)."""
        self.analyze = analyze
        """Analyses a workspace module the script imports (the labeller's own entry point)."""
        self.read_module, self.analyze_command, self.depth = read_module, analyze_command, depth
        self.cache = cache if cache is not None else {}
        self.stack = stack + (path,)
        self.result = Detection(path)
        self.origin: dict[str, str] = {}
        """Local name -> dotted origin (`GT` -> `trl.GRPOTrainer`, `T` -> `trl`)."""
        self.classes: dict[str, str] = {}
        """Trainer classes known in this script (imported, inherited, written here) -> method."""
        self.traits: dict[str, set[str]] = {}
        """Classes known in this script -> what their methods do (`launch`: a fit/train method or
        one holding a whole training step; `update`: a parameter update; `calls:<m>`: calling
        method m on an instance reaches the update), inherited by subclasses."""
        self.local_modules: dict[str, Detection] = {}
        self.bound: dict[str, set[str]] = {}
        """Workspace module -> the local names bound from it."""
        self.own_spans: list[tuple[int, int]] = []
        """Lines of the trainer classes written here (their updates run when they are launched)."""
        self.lightning: str | None = None
        """The objective of a LightningModule of the script (what Lightning's Trainer fits)."""
        self.why: dict[str, str] = {}
        """Trainer classes known here -> why they are trainers of their method (for evidence)."""
        self.ids = identifiers(tree)
        self.loop_functions: dict[str, str] = {}
        """Top-level functions each holding a whole hand-written update -> its method (set when
        the module has several, so each function reaches only its own)."""
        self.self_distilled = self_taught(tree)
        """The module samples from the model it trains and has no teacher model of its own: what it
        calls a teacher is the model itself (see `_objectives.self_taught`)."""
        self._flags: Conditions | None = None
        self.settings = settings
        """The run's settings (command line, configs, code defaults) when the analysis is of
        one run: branches on settings they rule out are not read."""
        self.reexports: dict[str, tuple[str, str]] = {}
        """Local names imported from workspace modules -> (module, name there)."""
        self.result.dispatch = has_dispatch(tree)
        if settings is not None and self.result.dispatch:
            prune_branches(tree, settings, callers)

    @property
    def flags(self) -> Conditions:
        """The module's conditions (built when a PEFT site or a class method needs them)."""
        if self._flags is None:
            self._flags = Conditions(self.tree, self.callers)
        return self._flags

    # ---- names -----------------------------------------------------------------------------
    def qualified(self, chain: list[str]) -> str | None:
        if not chain or chain[0] not in self.origin:
            return None
        return ".".join([self.origin[chain[0]]] + chain[1:])

    def root(self, chain: list[str]) -> str | None:
        q = self.qualified(chain)
        return q.split(".")[0] if q else None

    def trainer_method(self, chain: list[str]) -> str | None:
        """Method of the trainer class this name chain denotes (None: not a trainer)."""
        while len(chain) > 1 and chain[-1] in ("remote", "options"):
            chain = chain[:-1]  # Ray actors: `ActorPPOTrainer.options(…).remote(…)`
        if not chain:
            return None
        if len(chain) == 1 and chain[0] in self.classes:
            return self.classes[chain[0]]
        q = self.qualified(chain)
        if q is None:
            return None
        module, _, name = q.rpartition(".")
        if module in self.local_modules and name in self.local_modules[module].classes:
            return self.local_modules[module].classes[name]  # `trainers.MyDPOTrainer(…)`
        if q.split(".")[0] not in TRAINER_ROOTS:
            return None
        if name.endswith("Config") or name.endswith(("Arguments", "Args")):
            return None
        method = method_of_class(name)
        if method == "SFT" and name == "Trainer" and q.split(".")[0] not in _GENERIC_TRAINER_ROOTS:
            return None
        if method == "SFT" and q.split(".")[0] in ("lightning", "pytorch_lightning") and self.lightning:
            return self.lightning  # Lightning's Trainer fits what the LightningModule optimises
        return method

    def class_why(self, chain: list[str]) -> str | None:
        if len(chain) == 1:
            return self.why.get(chain[0])
        q = self.qualified(chain)
        if q is None:
            return self.why.get(chain[-1]) if chain[-1] == "Trainer" else None
        module, _, name = q.rpartition(".")
        sub = self.local_modules.get(module)
        if sub is not None:
            return sub.class_why.get(name)
        return self.why.get("Trainer") if name == "Trainer" else None

    def class_traits(self, chain: list[str]) -> set[str]:
        if len(chain) == 1 and chain[0] in self.traits:
            return self.traits[chain[0]]
        q = self.qualified(chain)
        if q is None:
            return set()
        module, _, name = q.rpartition(".")
        sub = self.local_modules.get(module)
        return set(sub.class_traits.get(name, ())) if sub is not None else set()

    # ---- imports ---------------------------------------------------------------------------
    def imports(self) -> None:
        from a2rl.analysis._settings import code_defaults

        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.origin[local] = alias.name if alias.asname else alias.name.split(".")[0]
                    self._framework_import(alias.name, node.lineno)
                    if self.local_module(alias.name) is not None:
                        self.bound.setdefault(alias.name, set()).add(local)
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                if node.level == 0 and node.module:
                    self._framework_import(node.module, node.lineno)
                package = self.local_module(base)
                for alias in node.names:
                    name = alias.asname or alias.name
                    dotted = join_module(base, alias.name)
                    if alias.name == "*":
                        if package is not None:
                            self.classes.update(package.classes)
                            self.bound.setdefault(base, set())
                        continue
                    known = package is not None and alias.name in package.classes
                    sub = None if known else self.local_module(dotted)
                    if sub is not None:  # `from . import trainer`: a module of the package
                        self.origin[name] = dotted
                        self.bound.setdefault(dotted, set()).add(name)
                        continue
                    self.origin[name] = dotted
                    if package is not None:
                        self.bound.setdefault(base, set()).add(name)
                        self.reexports[name] = (base, alias.name)
                        if known:
                            self.classes[name] = package.classes[alias.name]
                            if alias.name in package.class_why:
                                self.why[name] = package.class_why[alias.name]
                            if alias.name in package.class_traits:
                                self.traits[name] = set(package.class_traits[alias.name])
                    elif node.level == 0 and base.split(".")[0] in FRAMEWORKS and \
                            method_of_class(alias.name):
                        self._framework_source(base, alias.name, name)
        self.result.flag_defaults = code_defaults(self.tree, self.path)
        for sub in self.local_modules.values():
            self.result.merge_settings(sub)

    def _framework_import(self, module: str, line: int) -> None:
        root = module.split(".")[0]
        if root == "mergekit":
            self.result.add("merging", f"line {line}: import {module}")

    def local_module(self, module: str, *, framework: bool = False) -> Detection | None:
        """A workspace module the script imports: its trainer classes, its training and the
        settings it declares. Each file is read once per analysis; an import cycle ends at the
        file already being read."""
        if not module or self.read_module is None or len(self.stack) > 12 or \
                not framework and module.split(".")[0] in FRAMEWORKS:
            return None
        if module in self.local_modules:
            return self.local_modules[module]
        found = self.read_module(module, self.path)
        if found is None:
            return None
        path, source = found
        if path in self.stack:
            return None
        sub = self.cache.get(path)
        if sub is None:
            sub = self.analyze(path, source, read_module=self.read_module,
                               analyze_command=self.analyze_command, depth=self.depth + 1,
                               cache=self.cache, stack=self.stack, settle=False,
                               settings=self.settings,
                               callers=self.flags if self.settings is not None else None)
            self.cache[path] = sub
        if not framework:
            self.local_modules[module] = sub
        return sub

    def _framework_source(self, module: str, name: str, local: str) -> None:
        """A framework's trainer whose source is in the workspace: what its code optimises
        outranks what its name says."""
        sub = self.local_module(module, framework=True)
        if sub is None:
            sub = self.local_module(join_module(module, name.lower()), framework=True)
        if sub is not None and name in sub.classes:
            self.classes[local] = sub.classes[name]
            if name in sub.class_why:
                self.why[local] = sub.class_why[name]

    # ---- workspace modules reached ---------------------------------------------------------
    def reached(self, module: str, sub: Detection) -> Detection | None:
        """What this script's calls into a workspace module train: the module's methods less
        those that only its functions not called here reach (a module with `run_sft` and
        `run_ppo` of which the script calls one). Methods no function holds are kept; None
        when nothing that trains is reached."""
        called = self._called_names(module)
        if called is None:
            return sub
        held = {m for ms in sub.functions.values() for m in ms}
        reached = {m for name in called for m in sub.functions.get(name, set())}
        reached |= {sub.classes[name] for name in called if name in sub.classes}
        dropped = (held - reached) & TRAINING
        if not dropped & sub.methods:
            return sub
        out = Detection(sub.path, framework=sub.framework, parse_error=sub.parse_error)
        out.merge(sub)
        for method in dropped:
            out.drop(method)
        return out if out.methods & TRAINING else None

    def _called_names(self, module: str) -> set[str] | None:
        """Names of a workspace module called here (`run_ppo` of `from m import run_ppo` or of
        `m.run_ppo(…)`); None when the module itself is called."""
        names = self.bound.get(module, set())
        out: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                chain = name_chain(node.func)
                if not chain or chain[0] not in names:
                    continue
                origin = self.origin.get(chain[0], "")
                if origin == module:
                    if len(chain) < 2:
                        return None
                    out.add(chain[1])
                else:
                    out.add(origin.rpartition(".")[2])
        return out

    def function_methods(self) -> dict[str, set[str]]:
        """The training methods a call of each top-level function reaches: trainer classes it
        builds or names, training functions of workspace modules and of this module it calls,
        and a hand-written loop it runs (to a fixpoint over this module's own calls)."""
        tops = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        loop = {m for m, whys in self.result.evidence.items() if m in TRAINING
                and any("hand-written loop" in w for w in whys)}
        found: dict[str, set[str]] = {}
        calls: dict[str, set[str]] = {}
        for name, fn in tops.items():
            methods: set[str] = set()
            own: set[str] = set()
            for node in ast.walk(fn):
                if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
                    chain = name_chain(node)
                    method = self.trainer_method(chain) if chain else None
                    if method and (chain[-1].endswith("Trainer") or chain[-1] in self.classes):
                        methods.add(method)
                if not isinstance(node, ast.Call):
                    continue
                chain = name_chain(node.func)
                if not chain:
                    continue
                if chain[-1] == "backward":
                    methods |= {self.loop_functions[name]} if name in self.loop_functions else loop
                q = self.qualified(chain)
                if q is not None:
                    mod, _, func = q.rpartition(".")
                    if mod in self.local_modules:
                        methods |= self.local_modules[mod].functions.get(func, set())
                elif len(chain) == 1 and chain[0] in tops:
                    own.add(chain[0])
            found[name], calls[name] = methods, own
        changed = True
        while changed:
            changed = False
            for name, own in calls.items():
                more = set().union(*(found[c] for c in own)) - found[name]
                if more:
                    found[name] |= more
                    changed = True
        for local, (module, name) in self.reexports.items():
            sub = self.local_modules.get(module)
            if sub is not None and name in sub.functions:
                found[local] = set(sub.functions[name])
        return {k: v & TRAINING for k, v in found.items()}

    def calls_into(self, module: str) -> bool:
        """The script calls something it imported from that workspace module."""
        names = self.bound.get(module, set())
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                chain = name_chain(node.func)
                if chain and chain[0] in names:
                    return True
        return False
