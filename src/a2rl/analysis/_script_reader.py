"""What a Python script trains, read from its syntax tree, never from substrings.

Evidence, in order of strength:
- a trainer class of a known framework (resolved through imports and aliases), or a class of
  the script (or of a workspace module it imports) that inherits from one, which is constructed
  and launched (`.train()`, `.fit()`, `.step()`, `unsloth_train(trainer)`);
- a framework entry point called from the script (`openrlhf.cli.train_dpo.train(args)`,
  `llamafactory.train.tuner.run_exp()`, verl's `run_ppo(config)`, `axolotl.train.train`);
- a hand-written loop: a `.backward()` and an optimizer `.step()`; what it optimises (sampled
  generations with a reward, chosen/rejected log-probabilities, a teacher's logits) names the
  method;
- a training command the script starts (`subprocess.run(["llamafactory-cli", "train", …])`);
- a trainer class written in the analyzed code itself (a framework's own `SFTTrainer` with a
  `fit()` that updates parameters or builds a loss named after its method: `sft_loss`,
  `DPOLoss`, `PolicyLoss`), constructed and launched.
What the code computes outranks what it is called: a trainer's loss (and whether a teacher model
or a reward is there at all) decides its method before a class or file name does.
PEFT wrapping (LoRA config, `get_peft_model`, unsloth's `FastLanguageModel.get_peft_model`) is a
modifier; PEFT reached only under a condition (`if cfg.use_lora:`, an early `return` when the flag
is off, `… if args.lora else None`) counts when the run's settings turn it on (the command line,
its config files, the defaults of the code's dataclasses / argparse options / parameters), and is
reported as undecided when nothing shows the flag's value. TRL's `get_peft_config(model_args)` is
PEFT only when the command or config asks for it.
Modules of the workspace are followed through absolute and relative imports (`from .trainer
import X`, `from . import trainer`, `trainer.X`), resolved against the importing file's package;
a call into a module reaches the methods of the functions it calls, not those of the module's
other functions. A branch on a setting compared with names (`if args.stage == "sft": run_sft()
elif args.stage == "ppo": run_ppo()`, a helper returning the trainer class of a mode) is read
under the run's settings: the branches they rule out do not count; when nothing shows the
setting's value, every branch does. So are `if training_args.do_train:` (transformers'
default: False) and `getattr(trainers, cfg.trainer)` on a workspace module (the class the
settings name; unnamed, any trainer class of that module).
A comment or a string that mentions GRPO does not make a GRPO run.

The reading is split by concern: names and workspace modules (`_script_scope`), trainer classes
(`_trainer_classes`), PEFT sites (`_peft_sites`), conditions on settings (`_conditions`), what
code optimises (`_objectives`); this module reads the calls and launches and runs the passes.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from a2rl.analysis._detection import CommandAnalyzer, Detection, ModuleReader, decide_peft
from a2rl.analysis._methods import TRAINING, primary_method
from a2rl.analysis._objectives import loop_objective
from a2rl.analysis._peft_sites import PEFT_CALLS, PeftSites
from a2rl.analysis._script_scope import TRAINER_ROOTS
from a2rl.analysis._script_source import disk_reader, salvage
from a2rl.analysis._syntax import name_chain, string_command
from a2rl.analysis._trainer_classes import TrainerClasses

if TYPE_CHECKING:
    from a2rl.analysis._conditions import Conditions
    from a2rl.analysis._settings import Settings

_MERGE_CALLS = {"merge_and_unload", "add_weighted_adapter", "merge_adapter"}
_LAUNCH_ATTRS = {"train", "fit", "step", "train_step", "learn"}
_RFT_NAME = re.compile(r"(rejection|(^|_)rft(_|$)|best_of_n|filter_correct)", re.I)
# Entry-point modules of the frameworks' own training CLIs and what they train.
_ENTRY_MODULE = re.compile(r"(?:^|\.)(?:cli\.)?(train_[a-z_]+|main_ppo|main_dapo|tuner|sft_trainer|"
                           r"fsdp_sft_trainer)$")
UPDATE_WRAPPERS = {"backward", "step", "optimizer_step", "zero_grad", "train_batch"}
"""Methods that wrap one update primitive (a strategy's `backward` calling the engine's): they
run an update when a training loop calls them, and are no loop themselves."""
_CONFIG_LOADERS = {"safe_load", "full_load", "load_yaml", "parse_yaml_file", "parse_json_file",
                   "from_yaml", "from_json_file", "read_yaml", "load_config"}


class ScriptReader(TrainerClasses, PeftSites):
    """The passes over one script: imports, class definitions, then its calls (launches,
    PEFT sites, hand-written updates, entry points, commands it starts)."""

    def calls(self) -> None:
        instances: dict[str, str] = {}
        instance_of: dict[str, list[str]] = {}
        manual_backward: list[int] = []
        manual_step: list[int] = []
        launches: list[tuple[int, str, bool]] = []
        scalar_head: list[int] = []
        generate = False
        picked = self._picked_classes()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
                func = name_chain(node.value.func)
                method = self.trainer_method(func)
                if method is None and len(func) == 1 and func[0] in picked:
                    method = primary_method(picked[func[0]])  # `job = cls(…)` of a picked class
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if method:
                    for target in targets:
                        if isinstance(target, ast.Name | ast.Attribute):
                            instances[".".join(name_chain(target))] = method
                            instance_of[".".join(name_chain(target))] = name_chain(node.value.func)
            if isinstance(node, ast.ClassDef) and _RFT_NAME.search(node.name) or \
                    isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _RFT_NAME.search(node.name):
                self.result.add("RFT", f"line {node.lineno}: {node.name}")
            if isinstance(node, ast.IfExp | ast.Dict | ast.Assign | ast.Return) and not isinstance(
                    getattr(node, "value", None), ast.Call):
                # A trainer class chosen at run time (`cls = DPOTrainer if dpo else SFTTrainer`,
                # `{"sft": SFTTrainer, …}[mode]`, a function returning the class of a stage):
                # each class named is a method it may train.
                for ref in ast.walk(node):
                    if isinstance(ref, ast.Name | ast.Attribute) and isinstance(ref.ctx, ast.Load):
                        ref_method = self.trainer_method(name_chain(ref))
                        if ref_method and name_chain(ref)[-1].endswith("Trainer"):
                            self.result.add(ref_method, f"line {ref.lineno}: {'.'.join(name_chain(ref))}")
            if not isinstance(node, ast.Call):
                continue
            chain = name_chain(node.func)
            if not chain:
                continue
            last = chain[-1]
            line = node.lineno
            method = self.trainer_method(chain)
            if method:
                why = self.class_why(chain)
                self.result.add(method, f"line {line}: {'.'.join(chain)}(…)" + (f" ({why})" if why else ""))
                if method in ("PPO",) and self.root(chain) == "verl":
                    self.result.rl_config.append(f"line {line}: {'.'.join(chain)}")
            if last in PEFT_CALLS and (self.root(chain) in ("peft", "unsloth", "transformers", None)
                                        or chain[0] in self.origin):
                self.peft_site(node, f"line {line}: {'.'.join(chain)}(…)")
            if last == "from_pretrained" and len(chain) >= 2 and chain[-2].startswith(
                    ("PeftModel", "AutoPeftModel")) and any(
                    kw.arg == "is_trainable" and isinstance(kw.value, ast.Constant) and kw.value.value
                    for kw in node.keywords):
                # an adapter loaded to train on (not merely to merge or evaluate)
                self.peft_site(node, f"line {line}: {'.'.join(chain)}(…, is_trainable=True)")
            self.peft_helper(node, chain, line)
            if last == "get_peft_config":
                self.result.conditional_peft.append(f"line {line}: {'.'.join(chain)}(…)")
            if last in _MERGE_CALLS:
                self.result.add("merging", f"line {line}: {'.'.join(chain)}(…)")
            if last == "generate" or last in ("sample", "rollout"):
                generate = True
            if last == "backward":
                manual_backward.append(line)
            if last in ("step", "optimizer_step") and len(chain) >= 2 and \
                    not re.search(r"sched", chain[-2], re.I):
                manual_step.append(line)
            # Keyword `peft_config=` given a LoRA config built elsewhere (a variable, a
            # parameter): PEFT under the trainer call's conditions. A config built in this code
            # is its own PEFT site, counted under the conditions where it is used.
            for kw in node.keywords:
                if kw.arg == "peft_config" and method:
                    for value in self.peft_values(kw.value):
                        self.peft_site(value, f"line {line}: {last}(peft_config=…)")
            # Launches: trainer.train(), SFTTrainer(...).train(), trainer.fit(), ppo.step(...)
            if last in _LAUNCH_ATTRS and len(chain) >= 1 and isinstance(node.func, ast.Attribute):
                receiver = node.func.value
                rchain = name_chain(receiver)
                rname = ".".join(rchain)
                trainer = instances.get(rname) or (
                    self.trainer_method(rchain) if isinstance(receiver, ast.Call) else None)
                if trainer is not None:
                    launches.append((line, f"{rname}.{last}()", True))
                elif rchain and re.search(r"trainer", rchain[-1], re.I) and last in ("train", "fit"):
                    # A trainer built elsewhere (a helper returns it): counts when the script
                    # shows which trainer it is.
                    launches.append((line, f"{rname}.{last}()", False))
            elif isinstance(node.func, ast.Attribute):
                # A trainer class written in the code, driven by a method of its own that
                # reaches its update (`runner.train_epoch()`, `Learner(…).run()`).
                receiver = node.func.value
                cls_chain = name_chain(receiver.func) if isinstance(receiver, ast.Call) else \
                    instance_of.get(".".join(name_chain(receiver)))
                if cls_chain and self.trainer_method(cls_chain) and \
                        f"calls:{last}" in self.class_traits(cls_chain):
                    launches.append((line, f"{'.'.join(name_chain(receiver))}.{last}()", True))
            if last in ("unsloth_train", "ppo_train"):
                launches.append((line, f"{'.'.join(chain)}(…)", True))
            if last == "remote" and len(chain) >= 3 and chain[-2] in ("fit", "train") and \
                    re.search(r"trainer", chain[-3], re.I):
                launches.append((line, f"{'.'.join(chain)}(…)", False))  # Ray actors
            if last == "from_pretrained" and len(chain) >= 2 and \
                    chain[-2] == "AutoModelForSequenceClassification" and any(
                        kw.arg == "num_labels" and isinstance(kw.value, ast.Constant)
                        and kw.value.value == 1 for kw in node.keywords):
                scalar_head.append(line)
            self._entry_point(chain, line, launches)
            self._subprocess(node, chain, line)
        self._finish(manual_backward, manual_step, launches, generate)
        r = self.result
        if scalar_head and r.trains and r.methods & TRAINING == {"SFT"} and \
                r.framework in ("transformers", None):
            # A plain Trainer fitting a one-output sequence-classification head: a reward model.
            r.methods.discard("SFT")
            r.evidence.pop("SFT", None)
            r.add("reward model", f"line {scalar_head[0]}: AutoModelForSequenceClassification"
                  "(num_labels=1) trained with a supervised Trainer")

    def _entry_point(self, chain: list[str], line: int, launches: list[tuple[int, str, bool]]) -> None:
        """A framework's training entry point called as a function."""
        q = self.qualified(chain)
        if q is None or q.split(".")[0] not in TRAINER_ROOTS:
            return
        module, _, func = q.rpartition(".")
        if func not in ("train", "run_exp", "run_ppo", "run_sft", "main", "run", "fit"):
            return
        if not _ENTRY_MODULE.search(module) and not (module.endswith("axolotl.train")):
            return
        from a2rl.analysis._methods import entry_module_method

        method = entry_module_method(module)
        if method:
            self.result.add(method, f"line {line}: {q}(…)")
        launches.append((line, f"{q}(…)", True))
        self.result.framework = self.result.framework or module.split(".")[0]

    def _subprocess(self, node: ast.Call, chain: list[str], line: int) -> None:
        """A training command started from the script (subprocess, os.system)."""
        if self.analyze_command is None or self.depth > 2:
            return
        q = self.qualified(chain) or ".".join(chain)
        if not re.search(r"(subprocess\.(run|Popen|call|check_call|check_output)|os\.system|"
                         r"os\.popen)$", q):
            return
        if not node.args:
            return
        parts = string_command(node.args[0])
        if not parts:
            return
        command = parts[0] if len(parts) == 1 else " ".join(parts)
        sub = self.analyze_command(command)
        if sub is not None and sub.trains:
            for method, whys in sub.evidence.items():
                for why in whys:
                    self.result.add(method, f"line {line}: runs `{command[:80]}`: {why}")
            self.result.trains = True
            self.result.framework = self.result.framework or sub.framework

    def _finish(self, backward: list[int], step: list[int], launches: list[tuple[int, str, bool]],
                generate: bool) -> None:
        r = self.result
        trainer_methods = r.methods & TRAINING
        real = [(n, w) for n, w, resolved in launches if resolved or trainer_methods]
        if real:
            r.trains = True
            r.evidence.setdefault("launch", []).extend(f"line {n}: {w}" for n, w in real)
        for module, sub in self.local_modules.items():
            # A function of a workspace module that trains, called from this script.
            # A package's __init__ re-exports its submodules' functions: it trains if they do.
            if sub.trains and self.path.endswith("__init__.py"):
                r.merge(sub)
            elif sub.trains and self.calls_into(module):
                reached = self.reached(module, sub)
                if reached is not None:
                    r.merge(reached)
            elif self.path.endswith("__init__.py") and sub.peft_functions:
                for name, guards in sub.peft_functions.items():
                    r.peft_functions.setdefault(name, []).extend(guards)
        # Updates inside a trainer class written here run when that class is launched; those in
        # a method wrapping an update primitive run when a loop calls it.
        spans = self.own_spans + self._wrapper_spans()
        backward = [n for n in backward if not any(a <= n <= b for a, b in spans)]
        step = [n for n in step if not any(a <= n <= b for a, b in spans)]
        if backward and step and not r.trains:
            self._manual_loop(backward, step, generate)
        if r.trains and not r.framework:
            r.framework = self._framework()

    def _wrapper_spans(self) -> list[tuple[int, int]]:
        """Methods named after one update primitive that hold only that primitive (a
        strategy's `backward` calling the engine's): a method doing both a backward pass and
        an optimizer step is a training step, and stays a hand-written loop."""
        out = []
        methods = {id(f) for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef) for f in c.body}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name in UPDATE_WRAPPERS \
                    and id(n) in methods:
                lasts = {(name_chain(c.func) or [""])[-1] for c in ast.walk(n) if isinstance(c, ast.Call)}
                if not ("backward" in lasts and lasts & {"step", "optimizer_step"}):
                    out.append((n.lineno, n.end_lineno or n.lineno))
        return out

    def _picked_classes(self) -> dict[str, set[str]]:
        """Names bound to a trainer class picked at run time -> the methods it may be: the
        result of a function of this module that returns trainer classes (`cls =
        trainer_for(args)`), or a conditional or a mapping of trainer classes."""
        def named(node: ast.AST) -> set[str]:
            out = set()
            for ref in ast.walk(node):
                if isinstance(ref, ast.Name | ast.Attribute) and isinstance(ref.ctx, ast.Load):
                    chain = name_chain(ref)
                    method = self.trainer_method(chain) if chain else None
                    if method and chain[-1].endswith("Trainer"):
                        out.add(method)
            return out

        returns: dict[str, set[str]] = {}
        for fn in self.tree.body:
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                found = set().union(*(named(r.value) for r in ast.walk(fn)
                                      if isinstance(r, ast.Return) and r.value is not None
                                      and not isinstance(r.value, ast.Call)))
                if found:
                    returns[fn.name] = found
        picked: dict[str, set[str]] = {}
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)):
                continue
            value = node.value
            if isinstance(value, ast.Call) and len(func := name_chain(value.func)) == 1 and \
                    func[0] in returns:
                picked[node.targets[0].id] = returns[func[0]]
            elif isinstance(value, ast.IfExp | ast.Subscript) and (methods := named(value)):
                picked[node.targets[0].id] = methods
            elif isinstance(value, ast.Call) and (got := self._getattr_pick(value)):
                picked[node.targets[0].id] = got
        return picked

    def _getattr_pick(self, call: ast.Call) -> set[str]:
        """`getattr(trainers, cfg.trainer)` on a workspace module: the trainer class a setting
        names. The run's settings pick one class when they name one of the module's trainers;
        otherwise every trainer class of the module may be the one."""
        if name_chain(call.func) != ["getattr"] or len(call.args) < 2 or \
                not isinstance(call.args[0], ast.Name):
            return set()
        sub = self.local_modules.get(self.origin.get(call.args[0].id, ""))
        if sub is None or not sub.classes:
            return set()
        key = call.args[1]
        if isinstance(key, ast.Constant):
            return set()  # a fixed class: its name resolves like any attribute
        self.result.dispatch = True  # the settings pick the class
        where = f"line {call.lineno}: {ast.unparse(call)}"
        name: Any = None
        said: list[str] = []
        if self.settings is not None:
            name, said = self.flags.value(key, self.flags.scope(call), self.settings)
        if isinstance(name, str) and name in sub.classes:
            method = sub.classes[name]
            why = sub.class_why.get(name)
            self.result.add(method, f"{where} picks {name} ({'; '.join(said)})"
                            + (f": {why}" if why else ""))
            return {method}
        for cls, method in sorted(sub.classes.items()):
            why = sub.class_why.get(cls)
            self.result.add(method, f"{where} may pick {cls}" + (f": {why}" if why else ""))
        return set(sub.classes.values())

    def _manual_loop(self, backward: list[int], step: list[int], generate: bool) -> None:
        """A hand-written update: what the loss is built from names the method. Top-level
        functions that each hold a whole update (a library's `sft_epoch` and `dpo_epoch`) are
        named one by one, so a caller reaches only the method of the function it calls."""
        r = self.result
        r.trains = True
        r.framework = "manual"
        filtered = "RFT" in r.methods
        own = [fn for fn in self.tree.body if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
               and any(fn.lineno <= n <= (fn.end_lineno or fn.lineno) for n in backward)
               and any(fn.lineno <= n <= (fn.end_lineno or fn.lineno) for n in step)]
        if len(own) < 2:
            scope = self._reachable(own[0]) if own else self.tree
            method, what = loop_objective(scope, generate=generate, filtered=filtered)
            r.add(method, f"line {backward[0]}: hand-written loop (.backward() + optimizer.step()) {what}")
            return
        for fn in own:
            method, what = loop_objective(fn, generate=generate, filtered=filtered)
            self.loop_functions[fn.name] = method
            r.add(method, f"line {fn.lineno}: hand-written loop in {fn.name}() (.backward() + "
                  f"optimizer.step()) {what}")

    def _reachable(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Module:
        """The code a loop in one top-level function is built from: that function, the module's
        own statements, and the top-level functions and classes they name (to a fixpoint);
        another function of a library module (an evaluation pass, a loss the loop never uses)
        says nothing about it."""
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        defs = {d.name: d for d in self.tree.body if isinstance(d, kinds)}
        keep: list[ast.stmt] = [st for st in self.tree.body if not isinstance(st, kinds)] + [fn]
        named = {fn.name}
        frontier = list(keep)
        while frontier:
            refs = {n.id for st in frontier for n in ast.walk(st) if isinstance(n, ast.Name)}
            found = [defs[r] for r in sorted(refs - named) if r in defs]
            named |= {d.name for d in found}
            frontier = list(found)
            keep += found
        return ast.Module(body=keep, type_ignores=[])

    def _framework(self) -> str | None:
        roots = [o.split(".")[0] for o in self.origin.values()]
        for name in ("unsloth", "openrlhf", "verl", "llamafactory", "axolotl", "torchtune", "trl",
                     "transformers", "peft"):
            if name in roots:
                return name
        return None


def analyze_script(path: str, source: str, *, read_module: ModuleReader | None = None,
                   analyze_command: CommandAnalyzer | None = None, depth: int = 0,
                   cache: dict[str, Detection] | None = None, stack: tuple[str, ...] = (),
                   settle: bool = True, settings: Settings | None = None,
                   callers: Conditions | None = None) -> Detection:
    """What a Python script trains (see the module docstring for the evidence used).

    `read_module(dotted, importer)` returns (path, source) of a workspace module the script
    imports, so trainer classes, training functions and settings defined there count;
    `analyze_command(cmd)` analyses a command line the script starts. `cache` holds the
    analyses of modules already read (by path); `settle=False` leaves a parameter update of
    unnamed objective as it is, for a caller that still adds what the command or its config
    trains. `settings` are one run's (its command line, configs and code defaults): branches
    on a setting that they rule out are not read, in the script and the modules it imports
    (give a `cache` of that run's own). `callers`: the conditions of the module importing this
    one, whose calls give the parameters of its functions."""
    from a2rl.analysis._settings import Settings

    if read_module is None and not stack:
        read_module = disk_reader(path, source)
    salvaged: str | None = None
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        error = f"{exc.msg} (line {exc.lineno})"
        partial_tree = salvage(source)
        if partial_tree is None:
            return Detection(path, parse_error=error)
        tree, salvaged = partial_tree, error
    reader = ScriptReader(path, tree, read_module, analyze_command, depth, cache, stack, settings,
                          analyze=analyze_script, callers=callers)
    reader.imports()
    reader.class_defs()
    reader.calls()
    result = reader.result
    result.classes = dict(reader.classes)
    result.functions = reader.function_methods()
    refs, loads = _config_refs(tree)
    result.config_refs = refs + [c for c in result.config_refs if c not in refs]
    result.loads_config |= loads
    result.instantiates |= any(isinstance(n, ast.Call) and name_chain(n.func)[-1:] == ["instantiate"]
                               for n in ast.walk(tree))
    if salvaged:
        # Read from the top-level statements this Python can parse (a script written for a
        # newer Python, or with one broken block); say so rather than see nothing.
        result.evidence.setdefault("parse", []).append(
            f"partly parsed ({salvaged}): the statements that parse were read")
    result.hydra_config = _hydra_config(tree, path)
    if result.rl_config:
        _verl_estimator(tree, result)
    if result.peft_guards:
        decide_peft(result, Settings(defaults=result.flag_defaults))
    return result.settle() if settle else result


def _config_refs(tree: ast.Module) -> tuple[list[str], bool]:
    """YAML/JSON file names written in the code, and whether it reads such a config."""
    refs: list[str] = []
    loads = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(r"[\w./-]+\.(ya?ml|json)", node.value.strip()) and node.value not in refs:
            refs.append(node.value.strip())
        elif isinstance(node, ast.Call):
            chain = name_chain(node.func)
            if chain and (chain[-1] in _CONFIG_LOADERS or chain[-1] == "load" and len(chain) >= 2
                          and chain[-2] in ("yaml", "json", "OmegaConf", "toml")):
                loads = True
            if chain[-2:] == ["hydra", "main"] or chain == ["main"] and any(
                    kw.arg == "config_name" for kw in node.keywords):
                loads = True
    return refs, loads


def _hydra_config(tree: ast.Module, path: str) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and name_chain(node.func)[-1:] == ["main"]:
            kws = {kw.arg: kw.value.value for kw in node.keywords
                   if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)}
            if "config_name" in kws:
                folder = PurePosixPath(path).parent / kws.get("config_path", "")
                name = kws["config_name"]
                return str(folder / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"))
    return None


def _verl_estimator(tree: ast.Module, result: Detection) -> None:
    """verl's RayPPOTrainer: the advantage estimator set in the script (an assignment to
    `…adv_estimator` or an `algorithm.adv_estimator=…` override string) names the algorithm."""
    from a2rl.analysis._methods import verl_estimator_method

    for node in ast.walk(tree):
        value: str | None = None
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, str):
            if any(name_chain(t)[-1:] == ["adv_estimator"] for t in node.targets):
                value = node.value.value
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = re.search(r"adv_estimator\s*=\s*([\w-]+)", node.value)
            value = m.group(1) if m else None
        elif isinstance(node, ast.keyword) and node.arg == "adv_estimator" and \
                isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            value = node.value.value
        if value:
            method = verl_estimator_method(value)
            if method != "PPO":
                result.methods.discard("PPO")
                result.evidence.pop("PPO", None)
            result.add(method, f"line {getattr(node, 'lineno', '?')}: adv_estimator={value}")
            result.rl_config = []  # settled in the script itself
            return
    result.evidence.setdefault("PPO", []).append(
        "verl's RayPPOTrainer trains PPO (GAE) unless the config sets algorithm.adv_estimator")
