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
- a training command the script starts (`subprocess.run(["llamafactory-cli", "train", …])`).
PEFT wrapping (LoRA config, `get_peft_model`, unsloth's `FastLanguageModel.get_peft_model`) is a
modifier; TRL's `get_peft_config(model_args)` is PEFT only when the command or config asks for it.
A comment or a string that mentions GRPO does not make a GRPO run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from a2rl.analysis._methods import (
    TRAINING,
    Kind,
    Route,
    method_of_class,
    primary_method,
    route_of,
    training_kind,
)

FRAMEWORKS = ("trl", "transformers", "peft", "unsloth", "unsloth_zoo", "openrlhf", "verl",
              "llamafactory", "axolotl", "torchtune", "mergekit", "lightning", "pytorch_lightning")
_TRAINER_ROOTS = {"trl", "transformers", "unsloth", "unsloth_zoo", "openrlhf", "verl",
                  "llamafactory", "axolotl", "torchtune", "lightning", "pytorch_lightning"}
_GENERIC_TRAINER_ROOTS = {"transformers", "unsloth", "trl", "lightning", "pytorch_lightning"}
"""Where a plain `Trainer` is a supervised trainer (Lightning's fits a LightningModule)."""
_PEFT_CALLS = {"get_peft_model", "prepare_model_for_kbit_training", "prepare_model_for_int8_training",
               "LoraConfig", "AdaLoraConfig",
               "IA3Config", "LoKrConfig", "LoHaConfig", "PromptTuningConfig", "PrefixTuningConfig",
               "VeraConfig", "BOFTConfig", "OFTConfig", "inject_adapter_in_model", "add_adapter"}
_MERGE_CALLS = {"merge_and_unload", "add_weighted_adapter", "merge_adapter"}
_LAUNCH_ATTRS = {"train", "fit", "step", "train_step", "learn"}
_RFT_NAME = re.compile(r"(rejection|(^|_)rft(_|$)|best_of_n|filter_correct)", re.I)
_GROUP_NAME = re.compile(r"(group|grpo|num_generations|n_samples_per_prompt|rollout_n)", re.I)
_TEACHER_NAME = re.compile(r"teacher", re.I)
_PAIR_NAME = re.compile(r"(chosen|rejected)", re.I)
_REWARD_NAME = re.compile(r"reward", re.I)
# Entry-point modules of the frameworks' own training CLIs and what they train.
_ENTRY_MODULE = re.compile(r"(?:^|\.)(?:cli\.)?(train_[a-z_]+|main_ppo|main_dapo|tuner|sft_trainer|"
                           r"fsdp_sft_trainer)$")


@dataclass
class Detection:
    """What one script, config or command trains."""

    path: str
    """The script, config or command analysed."""
    methods: set[str] = field(default_factory=set)
    """Methods found (see a2rl.analysis._methods.METHODS)."""
    evidence: dict[str, list[str]] = field(default_factory=dict)
    """method -> the lines, arguments or keys that showed it."""
    trains: bool = False
    """The script performs a parameter update when it runs."""
    framework: str | None = None
    """The framework that trains (trl, openrlhf, verl, …; `manual` for a hand-written loop)."""
    parse_error: str | None = None
    """Why the script could not be read (then nothing is known about it)."""
    conditional_peft: list[str] = field(default_factory=list)
    """PEFT that only applies when the command or config asks for it (TRL's get_peft_config)."""
    rl_config: list[str] = field(default_factory=list)
    """Trainers whose algorithm comes from the run's config (verl's RayPPOTrainer)."""
    hydra_config: str | None = None
    """The YAML a `@hydra.main(config_path=…, config_name=…)` entry point loads (script-relative
    path resolved against the script's folder)."""
    classes: dict[str, str] = field(default_factory=dict)
    """Trainer classes the script defines or imports -> their method (for scripts importing it)."""

    def add(self, method: str, why: str) -> None:
        self.methods.add(method)
        self.evidence.setdefault(method, []).append(why)

    def merge(self, other: Detection) -> None:
        for key, whys in other.evidence.items():
            mine = self.evidence.setdefault(key, [])
            mine += [w for w in whys if w not in mine]
        self.methods |= other.methods
        self.trains |= other.trains
        self.framework = self.framework or other.framework
        self.conditional_peft += other.conditional_peft
        self.rl_config += other.rl_config

    @property
    def route(self) -> Route:
        return route_of(self.methods, trained=self.trains, copy=False)

    @property
    def kind(self) -> Kind:
        return training_kind(self.methods)

    @property
    def method(self) -> str | None:
        return primary_method(self.methods)


ScriptMethods = Detection  # the earlier name


def _chain(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return _chain(node.value) + [node.attr]
    if isinstance(node, ast.Call):
        return _chain(node.func)
    if isinstance(node, ast.Subscript):
        return _chain(node.value)
    return []


def _loss_method(cls: ast.ClassDef) -> str | None:
    """A supervised trainer subclass whose own loss says otherwise: `compute_loss` on chosen /
    rejected log-probabilities through a log-sigmoid is DPO-style preference optimisation; a
    KL to a teacher's distribution is distillation; a pairwise margin of scalar scores is a
    reward model."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name in ("compute_loss", "training_step"):
            ids = _identifiers(node)
            lowered = {i.lower() for i in ids}
            pairs = sum(1 for i in lowered if "chosen" in i or "rejected" in i)
            if pairs >= 2 and ("logsigmoid" in lowered or "log_sigmoid" in lowered):
                scalar = any("reward" in i or "score" in i for i in lowered) and \
                    not any("logp" in i or "logprob" in i or "ref" in i for i in lowered)
                return "reward model" if scalar else "DPO"
            if any("teacher" in i for i in lowered) and {"kl_div", "log_softmax"} & lowered:
                return "distillation"
    return None


def _identifiers(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.add(node.name)
    return out


def _strings(node: ast.AST) -> list[str] | None:
    """A command given as a list/tuple of string constants, or one string constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.List | ast.Tuple):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return items if items else None
    if isinstance(node, ast.JoinedStr):
        parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        return ["".join(parts)] if parts else None
    return None


CommandAnalyser = Callable[[str], "Detection | None"]
ModuleReader = Callable[[str, str], "tuple[str, str] | None"]
"""(dotted module, importing file) -> (path, source) of a workspace module; leading dots mark
a relative import."""


class _ScriptReader:
    def __init__(self, path: str, tree: ast.Module, read_module: ModuleReader | None,
                 analyse_command: CommandAnalyser | None, depth: int) -> None:
        self.path, self.tree = path, tree
        self.read_module, self.analyse_command, self.depth = read_module, analyse_command, depth
        self.result = Detection(path)
        self.origin: dict[str, str] = {}
        """Local name -> dotted origin (`GT` -> `trl.GRPOTrainer`, `T` -> `trl`)."""
        self.classes: dict[str, str] = {}
        """Trainer classes known in this script (imported, inherited) -> method."""
        self.local_modules: dict[str, Detection] = {}

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
        if q is None or q.split(".")[0] not in _TRAINER_ROOTS:
            return None
        name = q.split(".")[-1]
        if name.endswith("Config") or name.endswith(("Arguments", "Args")):
            return None
        method = method_of_class(name)
        if method == "SFT" and name == "Trainer" and q.split(".")[0] not in _GENERIC_TRAINER_ROOTS:
            return None
        return method

    # ---- passes ----------------------------------------------------------------------------
    def imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.origin[local] = alias.name if alias.asname else alias.name.split(".")[0]
                    self._framework_import(alias.name, node.lineno)
                    self._local_module(alias.name)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                self._framework_import(node.module, node.lineno)
                local_mod = self._local_module(node.module)
                for alias in node.names:
                    self.origin[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    if local_mod is not None and alias.name in local_mod.classes:
                        self.classes[alias.asname or alias.name] = local_mod.classes[alias.name]
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                dotted = "." * node.level + (node.module or "")
                local_mod = self._local_module(dotted)
                for alias in node.names:
                    # `from .sft import run_sft`: a name of a workspace module
                    self.origin[alias.asname or alias.name] = f"{dotted}.{alias.name}"
                    if local_mod is not None and alias.name in local_mod.classes:
                        self.classes[alias.asname or alias.name] = local_mod.classes[alias.name]

    def _framework_import(self, module: str, line: int) -> None:
        root = module.split(".")[0]
        if root == "mergekit":
            self.result.add("merging", f"line {line}: import {module}")

    def _local_module(self, module: str) -> Detection | None:
        """A workspace module the script imports: its trainer subclasses and its training."""
        if self.read_module is None or self.depth > 3 or module.split(".")[0] in FRAMEWORKS:
            return None
        if module in self.local_modules:
            return self.local_modules[module]
        found = self.read_module(module, self.path)
        if found is None:
            return None
        path, source = found
        sub = analyse_script(path, source, read_module=self.read_module,
                             analyse_command=self.analyse_command, depth=self.depth + 1)
        self.local_modules[module] = sub
        return sub

    def class_defs(self) -> None:
        """Classes of the script that inherit from a trainer are that trainer (to a fixpoint:
        a subclass of a subclass counts)."""
        defs = [n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)]
        changed = True
        while changed:
            changed = False
            for cls in defs:
                if cls.name in self.classes:
                    continue
                for base in cls.bases:
                    method = self.trainer_method(_chain(base))
                    if method:
                        own = method_of_class(cls.name)
                        # `class MyDPOTrainer(Trainer)`: the stem of a generic base says little;
                        # the subclass's own name says what it optimises.
                        if method == "SFT" and own and own != "SFT":
                            method = own
                        elif method == "SFT":
                            method = _loss_method(cls) or method
                        self.classes[cls.name] = method
                        self.result.add(method, f"line {cls.lineno}: class {cls.name}"
                                        f"({'.'.join(_chain(base))})")
                        changed = True
                        break

    def calls(self) -> None:
        instances: dict[str, str] = {}
        manual_backward: list[int] = []
        manual_step: list[int] = []
        launches: list[tuple[int, str, bool]] = []
        scalar_head: list[int] = []
        generate = False
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
                method = self.trainer_method(_chain(node.value.func))
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if method:
                    for target in targets:
                        if isinstance(target, ast.Name | ast.Attribute):
                            instances[".".join(_chain(target))] = method
            if isinstance(node, ast.ClassDef) and _RFT_NAME.search(node.name) or \
                    isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _RFT_NAME.search(node.name):
                self.result.add("RFT", f"line {node.lineno}: {node.name}")
            if isinstance(node, ast.IfExp | ast.Dict | ast.Assign) and not isinstance(
                    getattr(node, "value", None), ast.Call):
                # A trainer class chosen at run time (`cls = DPOTrainer if dpo else SFTTrainer`,
                # `{"sft": SFTTrainer, …}[mode]`): each class named is a method it may train.
                for ref in ast.walk(node):
                    if isinstance(ref, ast.Name | ast.Attribute) and isinstance(ref.ctx, ast.Load):
                        ref_method = self.trainer_method(_chain(ref))
                        if ref_method and _chain(ref)[-1].endswith("Trainer"):
                            self.result.add(ref_method, f"line {ref.lineno}: {'.'.join(_chain(ref))}")
            if not isinstance(node, ast.Call):
                continue
            chain = _chain(node.func)
            if not chain:
                continue
            last = chain[-1]
            line = node.lineno
            method = self.trainer_method(chain)
            if method:
                self.result.add(method, f"line {line}: {'.'.join(chain)}(…)")
                if method in ("PPO",) and self.root(chain) == "verl":
                    self.result.rl_config.append(f"line {line}: {'.'.join(chain)}")
            if last in _PEFT_CALLS and (self.root(chain) in ("peft", "unsloth", "transformers", None)
                                        or chain[0] in self.origin):
                self.result.add("PEFT", f"line {line}: {'.'.join(chain)}(…)")
            if last == "from_pretrained" and len(chain) >= 2 and chain[-2].startswith(
                    ("PeftModel", "AutoPeftModel")) and any(
                    kw.arg == "is_trainable" and isinstance(kw.value, ast.Constant) and kw.value.value
                    for kw in node.keywords):
                # an adapter loaded to train on (not merely to merge or evaluate)
                self.result.add("PEFT", f"line {line}: {'.'.join(chain)}(…, is_trainable=True)")
            if last == "get_peft_config":
                self.result.conditional_peft.append(f"line {line}: {'.'.join(chain)}(…)")
            if last in _MERGE_CALLS:
                self.result.add("merging", f"line {line}: {'.'.join(chain)}(…)")
            if last == "generate" or last in ("sample", "rollout"):
                generate = True
            if last == "backward":
                manual_backward.append(line)
            if last == "step" and len(chain) >= 2 and not re.search(r"sched", chain[-2], re.I):
                manual_step.append(line)
            # Keyword `peft_config=` given a LoRA config built inline or a variable.
            for kw in node.keywords:
                if kw.arg == "peft_config" and not (isinstance(kw.value, ast.Constant)
                                                    and kw.value.value is None):
                    value_chain = _chain(kw.value)
                    if value_chain and value_chain[-1] == "get_peft_config":
                        continue
                    if method:
                        self.result.add("PEFT", f"line {line}: {last}(peft_config=…)")
            # Launches: trainer.train(), SFTTrainer(...).train(), trainer.fit(), ppo.step(...)
            if last in _LAUNCH_ATTRS and len(chain) >= 1 and isinstance(node.func, ast.Attribute):
                receiver = node.func.value
                rchain = _chain(receiver)
                rname = ".".join(rchain)
                trainer = instances.get(rname) or (
                    self.trainer_method(rchain) if isinstance(receiver, ast.Call) else None)
                if trainer is not None:
                    launches.append((line, f"{rname}.{last}()", True))
                elif rchain and re.search(r"trainer", rchain[-1], re.I) and last in ("train", "fit"):
                    # A trainer built elsewhere (a helper returns it): counts when the script
                    # shows which trainer it is.
                    launches.append((line, f"{rname}.{last}()", False))
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
        if q is None or q.split(".")[0] not in _TRAINER_ROOTS:
            return
        module, _, func = q.rpartition(".")
        if func not in ("train", "run_exp", "run_ppo", "run_sft", "main", "run", "fit"):
            return
        if not _ENTRY_MODULE.search(module) and not (module.endswith("axolotl.train")):
            return
        from a2rl.analysis._configs import entry_module_method

        method = entry_module_method(module)
        if method:
            self.result.add(method, f"line {line}: {q}(…)")
        launches.append((line, f"{q}(…)", True))
        self.result.framework = self.result.framework or module.split(".")[0]

    def _subprocess(self, node: ast.Call, chain: list[str], line: int) -> None:
        """A training command started from the script (subprocess, os.system)."""
        if self.analyse_command is None or self.depth > 2:
            return
        q = self.qualified(chain) or ".".join(chain)
        if not re.search(r"(subprocess\.(run|Popen|call|check_call|check_output)|os\.system|"
                         r"os\.popen)$", q):
            return
        if not node.args:
            return
        parts = _strings(node.args[0])
        if not parts:
            return
        command = parts[0] if len(parts) == 1 else " ".join(parts)
        sub = self.analyse_command(command)
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
            if sub.trains and (self._calls_into(module) or self.path.endswith("__init__.py")):
                r.merge(sub)
        if backward and step and not r.trains:
            self._manual_loop(backward[0], generate)
        if r.trains and not r.framework:
            r.framework = self._framework()

    def _calls_into(self, module: str) -> bool:
        """The script calls something it imported from that workspace module."""
        names = {n for n, o in self.origin.items() if o == module or o.startswith(module + ".")}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                chain = _chain(node.func)
                if chain and chain[0] in names:
                    return True
        return False

    def _manual_loop(self, line: int, generate: bool) -> None:
        """A hand-written update: what the loss is built from names the method."""
        ids = _identifiers(self.tree)
        r = self.result
        r.trains = True
        r.framework = "manual"
        why = f"line {line}: hand-written loop (.backward() + optimizer.step())"
        rewards = any(_REWARD_NAME.search(i) for i in ids)
        if generate and rewards:
            if any(_GROUP_NAME.search(i) for i in ids):
                r.add("GRPO", why + " on groups of sampled generations scored by a reward")
            else:
                r.add("REINFORCE", why + " on sampled generations scored by a reward")
        elif any(_TEACHER_NAME.search(i) for i in ids) and ({"kl_div", "log_softmax"} & ids):
            r.add("distillation", why + " matching a teacher's distribution")
        elif sum(1 for i in ids if _PAIR_NAME.search(i)) >= 2 and "logsigmoid" in ids:
            r.add("DPO", why + " on chosen/rejected log-probabilities")
        elif "RFT" in r.methods:
            r.add("SFT", why + " on filtered self-generated samples")
        else:
            r.add("SFT", why + " with a supervised loss")

    def _framework(self) -> str | None:
        roots = [o.split(".")[0] for o in self.origin.values()]
        for name in ("unsloth", "openrlhf", "verl", "llamafactory", "axolotl", "torchtune", "trl",
                     "transformers", "peft"):
            if name in roots:
                return name
        return None


def analyse_script(path: str, source: str, *, read_module: ModuleReader | None = None,
                   analyse_command: CommandAnalyser | None = None, depth: int = 0) -> Detection:
    """What a Python script trains (see the module docstring for the evidence used).

    `read_module(dotted)` returns (path, source) of a workspace module the script imports, so
    trainer subclasses and training functions defined there count; `analyse_command(cmd)`
    analyses a command line the script starts."""
    salvaged: str | None = None
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        error = f"{exc.msg} (line {exc.lineno})"
        partial = _salvage(source)
        if partial is None:
            return Detection(path, parse_error=error)
        tree, salvaged = partial, error
    reader = _ScriptReader(path, tree, read_module, analyse_command, depth)
    reader.imports()
    reader.class_defs()
    reader.calls()
    result = reader.result
    result.classes = dict(reader.classes)
    if salvaged:
        # Read from the top-level statements this Python can parse (a script written for a
        # newer Python, or with one broken block); say so rather than see nothing.
        result.evidence.setdefault("parse", []).append(
            f"partly parsed ({salvaged}): the statements that parse were read")
    if result.rl_config:
        _verl_estimator(tree, result)
        result.hydra_config = _hydra_config(tree, path)
    return result


def _salvage(source: str) -> ast.Module | None:
    """The top-level statements of a script that parse on their own (a block starts at a line
    in column 0 and runs to the next such line); None when none do."""
    lines = source.splitlines()
    starts = [i for i, ln in enumerate(lines)
              if ln and not ln[0].isspace() and not ln.startswith(("#", ")", "]", "}"))]
    body: list[ast.stmt] = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        chunk = "\n".join(lines[start:end])
        try:
            part = ast.parse(chunk)
        except SyntaxError:
            continue
        ast.increment_lineno(part, start)
        body += part.body
    return ast.Module(body=body, type_ignores=[]) if body else None


def _hydra_config(tree: ast.Module, path: str) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _chain(node.func)[-1:] == ["main"]:
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
    from a2rl.analysis._configs import verl_estimator_method

    for node in ast.walk(tree):
        value: str | None = None
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, str):
            if any(_chain(t)[-1:] == ["adv_estimator"] for t in node.targets):
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
