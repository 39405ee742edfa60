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
- a trainer class written in the analysed code itself (a framework's own `SFTTrainer` with a
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
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from a2rl.analysis._methods import (
    DISTILLATION,
    PREFERENCE,
    RL,
    TRAINING,
    Kind,
    Route,
    labels,
    method_of_class,
    method_of_loss,
    primary_method,
)

if TYPE_CHECKING:
    from a2rl.analysis._settings import FlagDefaults, Settings

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
_PAIR_NAME = re.compile(r"(chosen|reject|accept)", re.I)
"""The two sides of a preference pair (`chosen_logps`, `r_rejected`, `r_accept`)."""
_REWARD_NAME = re.compile(r"reward", re.I)
_ADVANTAGE_NAME = re.compile(r"advantage", re.I)
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
    class_why: dict[str, str] = field(default_factory=dict)
    """Trainer classes written in the module -> why they are trainers of their method."""
    class_traits: dict[str, list[str]] = field(default_factory=dict)
    """Classes of the module -> what their methods do (`launch`: a fit/train method; `update`:
    a parameter update), for subclasses written in other modules."""
    peft_guards: list[PeftGuard] = field(default_factory=list)
    """PEFT reached only under conditions on the run's settings (decided by `decide_peft`)."""
    peft_functions: dict[str, list[PeftGuard | None]] = field(default_factory=dict)
    """Functions of the module that apply PEFT when called -> the conditions inside them
    (None: unconditional), for scripts that import and call them."""
    flag_defaults: FlagDefaults = field(default_factory=dict)
    """Defaults of the settings the code declares (its own and its workspace modules')."""
    config_refs: list[str] = field(default_factory=list)
    """YAML/JSON file names written in the code (a config it loads, an argparse default)."""
    loads_config: bool = False
    """The code reads a YAML/JSON config (yaml.safe_load, json.load, OmegaConf.load, Hydra)."""
    instantiates: bool = False
    """The code builds objects from a config's component paths (torchtune's
    `config.instantiate(cfg.loss)`, Hydra's `instantiate`): the config names its model and loss."""
    functions: dict[str, set[str]] = field(default_factory=dict)
    """Top-level functions of the module (and those it re-exports) -> the training methods a
    call of each reaches (the trainers it builds or picks, the training functions it calls)."""
    dispatch: bool = False
    """The code (or a workspace module it imports) branches on a setting compared with names
    (`if stage == "sft": … elif stage == "dpo": …`): the run's settings pick the branch."""

    def add(self, method: str, why: str) -> None:
        self.methods.add(method)
        self.evidence.setdefault(method, []).append(why)

    def drop(self, method: str) -> None:
        self.methods.discard(method)
        self.evidence.pop(method, None)

    def merge(self, other: Detection) -> None:
        for key, whys in other.evidence.items():
            mine = self.evidence.setdefault(key, [])
            mine += [w for w in whys if w not in mine]
        self.methods |= other.methods
        self.trains |= other.trains
        self.framework = self.framework or other.framework
        self.conditional_peft += other.conditional_peft
        self.rl_config += other.rl_config
        self.peft_guards += [g for g in other.peft_guards if g not in self.peft_guards]
        self.merge_settings(other)

    def merge_settings(self, other: Detection) -> None:
        """Take in the settings another module declares (its defaults, the configs it names)."""
        for key, values in other.flag_defaults.items():
            mine = self.flag_defaults.setdefault(key, [])
            mine += [v for v in values if v not in mine]
        self.config_refs += [c for c in other.config_refs if c not in self.config_refs]
        self.loads_config |= other.loads_config
        self.instantiates |= other.instantiates
        self.dispatch |= other.dispatch

    def settle(self) -> Detection:
        """A parameter update whose objective nothing names is supervised training, said in
        the evidence, so the route and the strategy come from the same objective."""
        if self.trains and not self.methods & TRAINING:
            self.add("SFT", "a parameter update whose objective the code does not name: "
                     "supervised training assumed")
        return self

    @property
    def route(self) -> Route:
        return labels(self.methods, trained=self.trains)[0]

    @property
    def kind(self) -> Kind | None:
        """Strategy k (None when nothing trains)."""
        return labels(self.methods, trained=self.trains)[1]

    @property
    def method(self) -> str | None:
        return primary_method(self.methods)


@dataclass(eq=False)
class PeftGuard:
    """PEFT at one place of the code that applies only when its conditions hold."""

    site: str
    """Where (`train.py line 12: get_peft_model(…)`)."""
    condition: str
    """The conditions as written (`cfg.use_lora`, `not args.full_ft`)."""
    holds: Callable[[Settings], tuple[bool | None, list[str]]]
    """Whether the run's settings meet the conditions (None: undecided) and what says so."""


_UNDECIDED = "undecided"
_PEFT_OFF = "PEFT off"


def decide_peft(d: Detection, settings: Settings) -> None:
    """PEFT of conditional sites decided under the run's settings: on when any site's
    conditions hold, and reported as undecided (not counted) when none holds and a flag's value
    is unknown. Earlier decisions (made from the code's defaults alone) are replaced."""
    earlier = tuple(f"{g.site} when `" for g in d.peft_guards)
    whys = [w for w in d.evidence.get("PEFT", []) if not w.startswith(earlier)]
    undecided: list[str] = []
    on: list[str] = []
    off: list[str] = []
    for guard in d.peft_guards:
        verdict, sources = guard.holds(settings)
        said = "; ".join(dict.fromkeys(sources))
        if verdict:
            on.append(f"{guard.site} when `{guard.condition}`" + (f" ({said})" if said else ""))
        elif verdict is None:
            undecided.append(f"PEFT: {guard.site} only when `{guard.condition}`; the flag's value "
                             "could not be read (not counted)")
        else:
            off.append(f"{guard.site} only when `{guard.condition}`, which is false"
                       + (f" ({said})" if said else ""))
    d.evidence.pop(_UNDECIDED, None)
    d.evidence.pop(_PEFT_OFF, None)
    if off and not on:
        d.evidence[_PEFT_OFF] = off
    if whys or on:
        d.evidence["PEFT"] = whys + on
        d.methods.add("PEFT")
    else:
        d.drop("PEFT")
    if undecided and not on and not whys:
        d.evidence[_UNDECIDED] = undecided


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
            pairs = sum(1 for i in lowered if _PAIR_NAME.search(i))
            if pairs >= 2 and _log_sigmoid(lowered):
                # DPO compares the policy's sequence log-probabilities with a reference's; a
                # margin of scalar scores (a one-output head) is a reward model.
                logps = any("logp" in i or "logprob" in i or "ref" in i for i in lowered)
                return "DPO" if logps else "reward model"
            if any("teacher" in i for i in lowered) and {"kl_div", "log_softmax"} & lowered:
                return "distillation"
    return None


def _log_sigmoid(lowered: set[str]) -> bool:
    """A log-sigmoid of a margin: `F.logsigmoid(…)`, or `torch.log(torch.sigmoid(…))`."""
    return bool({"logsigmoid", "log_sigmoid"} & lowered) or {"log", "sigmoid"} <= lowered


def _family(method: str) -> str:
    for name, members in (("RL", RL), ("preference", PREFERENCE), ("distillation", DISTILLATION)):
        if method in members:
            return name
    return method


_MISSING_PART = {"distillation": "teacher model", "RL": "reward"}


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


_ENGINE_UPDATES = {"optimizer_step", "train_batch", "update_policy", "update_actor", "update_critic",
                   "train_on_batch", "apply_gradients", "ppo_update", "training_step_update"}
"""Calls that update parameters inside a framework's own trainer (OpenRLHF's
`strategy.optimizer_step`, verl's `training_client.train_batch` / `actor.update_policy`)."""
_OWN_LAUNCH = {"fit", "train", "learn", "run", "train_model", "train_loop", "training_loop",
               "run_training"}
"""Methods by which a trainer class written in the code is launched."""
_UPDATE_WRAPPERS = {"backward", "step", "optimizer_step", "zero_grad", "train_batch"}
"""Methods that wrap one update primitive (a strategy's `backward` calling the engine's): they
run an update when a training loop calls them, and are no loop themselves."""
_CONFIG_LOADERS = {"safe_load", "full_load", "load_yaml", "parse_yaml_file", "parse_json_file",
                   "from_yaml", "from_json_file", "read_yaml", "load_config"}
_FLAG_LIKE = re.compile(r"lora|peft|adapter|dora|ia3|qlora|full_?(ft|finetun|param|train)|finetun|"
                        r"tuning_type|freeze", re.I)
"""Names of settings that switch PEFT on or off (a condition on anything else that cannot be
read, like `if model is None: raise`, does not make PEFT undecided)."""
_EXITS = (ast.Return, ast.Raise, ast.Continue)


def _join(base: str, name: str) -> str:
    """`from <base> import <name>` as a dotted module (`.` + `trainer` -> `.trainer`)."""
    return base + name if base.endswith(".") or not base else f"{base}.{name}"


def _code_objective(node: ast.AST) -> tuple[str, str] | None:
    """What a trainer class's (or a LightningModule's) own code optimises, and why: the shape of
    its loss (chosen/rejected log-sigmoid, a KL to a teacher), the losses it names (`DPOLoss`,
    `sft_loss`, `compute_policy_loss`; a non-supervised one outranks a supervised auxiliary
    term), or sampled generations scored by a reward."""
    if isinstance(node, ast.ClassDef):
        shaped = _loss_method(node)
        if shaped:
            return shaped, "loss computed in its training step"
    ids = _identifiers(node)
    named: dict[str, str] = {}
    for ident in sorted(ids):
        method = method_of_loss(ident)
        if method:
            named.setdefault(method, ident)
    if named:
        best = primary_method(set(named) - {"SFT"}) or "SFT"
        return best, f"loss {named[best]}"
    if ({"generate", "sample", "rollout"} & ids or any(_ADVANTAGE_NAME.search(i) for i in ids)) and \
            any(_REWARD_NAME.search(i) for i in ids):
        if any(_GROUP_NAME.search(i) for i in ids):
            return "GRPO", "groups of sampled generations scored by a reward"
        return "REINFORCE", "sampled generations scored by a reward"
    return None


def _name_holds(method: str, ids: set[str]) -> bool:
    """A method a class's name claims, checked against the code around it: distillation needs a
    teacher, RL a reward or an advantage; the others are taken as named."""
    if method in DISTILLATION:
        return any(_TEACHER_NAME.search(i) for i in ids)
    if method in RL:
        return any(_REWARD_NAME.search(i) or _ADVANTAGE_NAME.search(i) for i in ids)
    return True


def _path(node: ast.AST) -> list[str] | None:
    """`cfg.model["lora"].rank` as ["cfg", "model", "lora", "rank"] (None: not a plain path)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        inner = _path(node.value)
        return inner + [node.attr] if inner is not None else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            isinstance(node.slice.value, str):
        inner = _path(node.value)
        return inner + [node.slice.value] if inner is not None else None
    return None


Cond = tuple[Any, ...]
"""("test", expr, wanted truth, scope) | ("and", [Cond]) | ("or", [Cond])."""
_Value = tuple[Any, list[str]]


def _is_main(test: ast.expr) -> bool:
    """`__name__ == "__main__"`: true whenever the file is run."""
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and \
        test.left.id == "__name__" and len(test.comparators) == 1 and \
        isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__"


def _trivial(cond: Cond) -> bool:
    return cond[0] == "and" and all(_trivial(c) for c in cond[1]) or \
        cond[0] == "or" and any(_trivial(c) for c in cond[1])


def _describe(cond: Cond) -> str:
    if cond[0] == "test":
        test = cond[1]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return ast.unparse(test.operand) if not cond[2] else ast.unparse(test)
        text = ast.unparse(test)
        return text if cond[2] else f"not ({text})"
    parts = [_describe(c) for c in cond[1] if not _trivial(c)]
    joiner = " and " if cond[0] == "and" else " or "
    return joiner.join(p if len(parts) == 1 or " " not in p else f"({p})" for p in parts)


class _Flags:
    """The conditions a statement of a module runs under (the `if`s and conditional expressions
    around it, early exits before it, the call sites of the function holding it) and whether
    a run's settings meet them."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
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

    def condition(self, node: ast.AST, depth: int = 0) -> Cond:
        parts: list[Cond] = []
        child, parent = node, self.parents.get(node)
        while parent is not None:
            if isinstance(parent, ast.If) and child is not parent.test and not _is_main(parent.test):
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
                flag_like = any(_FLAG_LIKE.search(i) for i in _identifiers(test))
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

    def value(self, expr: ast.AST, scope: ast.AST | None, settings: Settings, depth: int = 0) -> _Value:
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

    def call_value(self, expr: ast.Call, scope: ast.AST | None, settings: Settings, depth: int) -> _Value:
        from a2rl.analysis._settings import MISSING, coerce

        chain = _chain(expr.func)
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
                  extra: list[str] | None = None) -> _Value:
        from a2rl.analysis._settings import MISSING

        path = _path(expr)
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
                    depth: int) -> _Value:
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
                    settings: Settings, depth: int) -> _Value:
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

        def default() -> _Value:
            if name not in defaults:
                # given by whatever calls the function (Hydra's decorator, a framework's hook)
                return self.setting(rest or [name], settings)
            if rest:
                return self.setting(rest, settings)
            value = default_of(defaults[name])
            return value, [f"default {name}={value!r} (line {fn.lineno})"] if value is not MISSING \
                else []

        values: list[_Value] = []
        for call in self.call_sites(fn) if depth < 8 else []:
            arg = next((kw.value for kw in call.keywords if kw.arg == name), None)
            if arg is None and index is not None and 0 <= index < len(call.args) and \
                    not any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
                arg = call.args[index]
            values.append(default() if arg is None else
                          self.bound_value(arg, self.scope(call), rest, settings, depth + 1))
        if values:
            return self.agree(values)
        said = self.setting(rest or [name], settings, code=False)
        return said if said[0] is not MISSING else default()

    def setting(self, path: list[str], settings: Settings, *, code: bool = True) -> _Value:
        value, where = settings.value(path, code=code)
        return value, [where] if where else []

    @staticmethod
    def agree(values: list[_Value]) -> _Value:
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
                isinstance(node.ops[0], _DISPATCH_OPS) and not _is_main(node):
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
    path = _path(test)
    return path is not None and len(path) >= 2 and path[-1] in _RUN_SWITCHES


def _decided_test(test: ast.expr) -> bool:
    """A branch the run's settings pick: a setting compared with names, or a run switch."""
    return _dispatch_test(test) or _switch_test(test)


def _has_dispatch(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.If) and _decided_test(n.test) for n in ast.walk(tree))


def _prune(tree: ast.Module, settings: Settings) -> None:
    """Drop the branches that the run's settings rule out: an `if` on a setting compared with
    names, or on a run switch (`do_train`), keeps its body when the settings make the test
    true, its `else` when false; a test whose value nothing shows keeps both."""
    from a2rl.analysis._settings import truth

    flags = _Flags(tree)
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


class _ScriptReader:
    def __init__(self, path: str, tree: ast.Module, read_module: ModuleReader | None,
                 analyse_command: CommandAnalyser | None, depth: int,
                 cache: dict[str, Detection] | None, stack: tuple[str, ...],
                 settings: Settings | None = None) -> None:
        self.path, self.tree = path, tree
        self.read_module, self.analyse_command, self.depth = read_module, analyse_command, depth
        self.cache = cache if cache is not None else {}
        self.stack = stack + (path,)
        self.result = Detection(path)
        self.origin: dict[str, str] = {}
        """Local name -> dotted origin (`GT` -> `trl.GRPOTrainer`, `T` -> `trl`)."""
        self.classes: dict[str, str] = {}
        """Trainer classes known in this script (imported, inherited, written here) -> method."""
        self.traits: dict[str, set[str]] = {}
        """Classes known in this script -> what their methods do (`launch`: a fit/train method;
        `update`: a parameter update), inherited by subclasses."""
        self.local_modules: dict[str, Detection] = {}
        self.bound: dict[str, set[str]] = {}
        """Workspace module -> the local names bound from it."""
        self.own_spans: list[tuple[int, int]] = []
        """Lines of the trainer classes written here (their updates run when they are launched)."""
        self.lightning: str | None = None
        """The objective of a LightningModule of the script (what Lightning's Trainer fits)."""
        self.why: dict[str, str] = {}
        """Trainer classes known here -> why they are trainers of their method (for evidence)."""
        self.ids = _identifiers(tree)
        self._flags: _Flags | None = None
        self.settings = settings
        """The run's settings (command line, configs, code defaults) when the analysis is of
        one run: branches on settings they rule out are not read."""
        self.reexports: dict[str, tuple[str, str]] = {}
        """Local names imported from workspace modules -> (module, name there)."""
        self.result.dispatch = _has_dispatch(tree)
        if settings is not None and self.result.dispatch:
            _prune(tree, settings)

    @property
    def flags(self) -> _Flags:
        """The module's conditions (built when a PEFT site or a class method needs them)."""
        if self._flags is None:
            self._flags = _Flags(self.tree)
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
        if q.split(".")[0] not in _TRAINER_ROOTS:
            return None
        if name.endswith("Config") or name.endswith(("Arguments", "Args")):
            return None
        method = method_of_class(name)
        if method == "SFT" and name == "Trainer" and q.split(".")[0] not in _GENERIC_TRAINER_ROOTS:
            return None
        if method == "SFT" and q.split(".")[0] in ("lightning", "pytorch_lightning") and self.lightning:
            return self.lightning  # Lightning's Trainer fits what the LightningModule optimises
        return method

    def _class_why(self, chain: list[str]) -> str | None:
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

    # ---- passes ----------------------------------------------------------------------------
    def imports(self) -> None:
        from a2rl.analysis._settings import code_defaults

        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.origin[local] = alias.name if alias.asname else alias.name.split(".")[0]
                    self._framework_import(alias.name, node.lineno)
                    if self._local_module(alias.name) is not None:
                        self.bound.setdefault(alias.name, set()).add(local)
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                if node.level == 0 and node.module:
                    self._framework_import(node.module, node.lineno)
                package = self._local_module(base)
                for alias in node.names:
                    name = alias.asname or alias.name
                    dotted = _join(base, alias.name)
                    if alias.name == "*":
                        if package is not None:
                            self.classes.update(package.classes)
                            self.bound.setdefault(base, set())
                        continue
                    known = package is not None and alias.name in package.classes
                    sub = None if known else self._local_module(dotted)
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

    def _local_module(self, module: str, *, framework: bool = False) -> Detection | None:
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
            sub = analyse_script(path, source, read_module=self.read_module,
                                 analyse_command=self.analyse_command, depth=self.depth + 1,
                                 cache=self.cache, stack=self.stack, settle=False,
                                 settings=self.settings)
            self.cache[path] = sub
        if not framework:
            self.local_modules[module] = sub
        return sub

    def _framework_source(self, module: str, name: str, local: str) -> None:
        """A framework's trainer whose source is in the workspace: what its code optimises
        outranks what its name says."""
        sub = self._local_module(module, framework=True)
        if sub is None:
            sub = self._local_module(_join(module, name.lower()), framework=True)
        if sub is not None and name in sub.classes:
            self.classes[local] = sub.classes[name]
            if name in sub.class_why:
                self.why[local] = sub.class_why[name]

    def class_defs(self) -> None:
        """Classes of the script that inherit from a trainer are that trainer (to a fixpoint:
        a subclass of a subclass counts); what their own code optimises refines the method.
        A class that inherits from no known trainer is one when it is written as one: a
        `fit`/`train` method and a parameter update or a loss named after its method."""
        defs = [n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)]
        for cls in defs:
            self._lightning(cls)
        changed = True
        while changed:
            changed = False
            for cls in defs:
                if cls.name in self.classes:
                    continue
                for base in cls.bases:
                    inherited = self.trainer_method(_chain(base))
                    if inherited:
                        method, why = self._refine(cls, inherited)
                        self.classes[cls.name] = method
                        self.traits[cls.name] = self._traits(cls, defs)
                        if why:
                            self.why[cls.name] = f"{self.path} line {cls.lineno}: class " \
                                f"{cls.name}{why}"
                        self.result.add(method, f"line {cls.lineno}: class {cls.name}"
                                        f"({'.'.join(_chain(base))}){why}")
                        changed = True
                        break
            for cls in defs:
                if cls.name in self.classes:
                    continue
                own = self._own_trainer(cls, defs)
                if own is not None:
                    method, why = own
                    self.classes[cls.name] = method
                    self.own_spans.append((cls.lineno, cls.end_lineno or cls.lineno))
                    self.why[cls.name] = f"{self.path} line {cls.lineno}: class {cls.name}, a " \
                        f"trainer written in the code ({why})"
                    self.result.add(method, f"line {cls.lineno}: class {cls.name}, a trainer "
                                    f"written in the code ({why})")
                    changed = True
        for cls in defs:
            self.traits.setdefault(cls.name, self._traits(cls, defs))
        self.result.class_traits = {k: sorted(v) for k, v in self.traits.items()}
        self.result.class_why = dict(self.why)

    def _refine(self, cls: ast.ClassDef, inherited: str) -> tuple[str, str]:
        """The method of a subclass of a trainer: a generic (supervised) base says little, so
        the subclass's own loss decides, then its name when the code bears it out (a
        distillation trainer needs a teacher, an RL trainer a reward); a specific base
        (DPOTrainer) keeps its method unless the subclass's loss is of another family."""
        code = _code_objective(cls)
        if inherited != "SFT":
            if code and code[0] != "SFT" and _family(code[0]) != _family(inherited):
                return code[0], f" whose {code[1]} trains {code[0]}"
            return inherited, ""
        if code and code[0] != "SFT":
            return code[0], f" whose {code[1]} trains {code[0]}"
        named = method_of_class(cls.name)
        if named and named != "SFT":
            if _name_holds(named, self.ids):
                return named, ""
            return "SFT", f" (named {named}, but the code has no {_MISSING_PART[_family(named)]})"
        return "SFT", ""

    def _traits(self, cls: ast.ClassDef, defs: list[ast.ClassDef], seen: frozenset[str] = frozenset()
                ) -> set[str]:
        out: set[str] = set()
        backward = step = False
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        # `def train(self, mode=True)` overrides torch's train-mode switch: no launch
        if any(name in _OWN_LAUNCH and not (name == "train" and "mode" in [a.arg for a in fn.args.args])
               for name, fn in methods.items()):
            out.add("launch")
        updating: set[str] = set()
        for name, fn in methods.items():
            calls = [_chain(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)]
            has_backward = any(c[-1:] == ["backward"] for c in calls)
            has_step = any(c[-1:] == ["step"] and len(c) >= 2 and not re.search(r"sched", c[-2], re.I)
                           for c in calls)
            backward |= has_backward
            step |= has_step
            if any(c and c[-1] in _ENGINE_UPDATES for c in calls) or has_backward and has_step:
                updating.add(name)
        if updating or backward and step:
            out.add("update")
        # Methods that reach an update through other methods of the class (`train` calling
        # `self._epoch()`), to a fixpoint: calling any of them on an instance trains.
        changed = True
        while changed:
            changed = False
            for name, fn in methods.items():
                if name not in updating and any(
                        isinstance(n, ast.Call) and _chain(n.func)[:1] == ["self"]
                        and _chain(n.func)[-1] in updating for n in ast.walk(fn)):
                    updating.add(name)
                    changed = True
        if "update" in out:
            out |= {f"calls:{m}" for m in updating | (_OWN_LAUNCH & set(methods))}
        by_name = {d.name: d for d in defs}
        for base in cls.bases:
            chain = _chain(base)
            if len(chain) == 1 and chain[0] in by_name and chain[0] not in seen | {cls.name}:
                out |= self._traits(by_name[chain[0]], defs, seen | {cls.name})
            else:
                out |= self.class_traits(chain)
        return out

    def _own_trainer(self, cls: ast.ClassDef, defs: list[ast.ClassDef]) -> tuple[str, str] | None:
        traits = self._traits(cls, defs)
        if "launch" not in traits:
            return None
        bodies: list[ast.AST] = [cls]
        by_name = {d.name: d for d in defs}
        bodies += [by_name[c[0]] for b in cls.bases if len(c := _chain(b)) == 1 and c[0] in by_name]
        code = next((found for body in bodies if (found := _code_objective(body))), None)
        if code is None or code[0] in RL and code[1].endswith("scored by a reward"):
            # Chosen/rejected "rewards" of a preference loss are no RL reward: the shape of the
            # loss decides first.
            code = self._pair_objective(bodies) or code
        if code is None and "update" not in traits:
            return None
        named = method_of_class(cls.name)
        if code is not None and (code[0] != "SFT" or named in (None, "SFT")
                                 or not _name_holds(named, self.ids)):
            return code[0], f"fit()/train() with {code[1]}"
        if named and _name_holds(named, self.ids):
            return named, "fit()/train() with a parameter update" if "update" in traits else \
                "fit()/train() with its loss"
        return "SFT", "fit()/train() with a parameter update and a supervised loss"

    def _pair_objective(self, bodies: list[ast.AST]) -> tuple[str, str] | None:
        """DPO-style preference optimisation written across a class and the module's functions
        it calls (`preference_loss(policy_chosen_logps, …)`): chosen/rejected log-probabilities
        through a log-sigmoid."""
        tops = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        helpers = {c.func.id for b in bodies for c in ast.walk(b)
                   if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in tops}
        ids = {i.lower() for b in bodies + [tops[h] for h in sorted(helpers)] for i in _identifiers(b)}
        if sum(1 for i in ids if _PAIR_NAME.search(i)) >= 2 and _log_sigmoid(ids) and \
                any("logp" in i or "logprob" in i for i in ids):
            via = f" ({', '.join(sorted(helpers))})" if helpers else ""
            return "DPO", f"chosen/rejected log-probabilities through a log-sigmoid{via}"
        return None

    def _lightning(self, cls: ast.ClassDef) -> None:
        for base in cls.bases:
            q = self.qualified(_chain(base)) or ""
            if q.split(".")[0] in ("lightning", "pytorch_lightning") and q.endswith("LightningModule"):
                code = _code_objective(cls)
                if code and code[0] != "SFT":
                    self.lightning = primary_method({code[0]} | ({self.lightning} if self.lightning
                                                                   else set()))
                    self.why["Trainer"] = f"it fits {cls.name} (line {cls.lineno}), whose " \
                        f"{code[1]} trains {code[0]}"

    # ---- PEFT ------------------------------------------------------------------------------
    def _peft(self, node: ast.AST, why: str) -> None:
        """PEFT at one place: counted outright when nothing guards it, else kept with its
        conditions for the run's settings to decide. A LoRA config assigned to a variable
        applies where that variable is used."""
        cond = self.flags.condition(node)
        uses = self._config_uses(node)
        if uses:
            cond = ("and", [cond, ("or", [self.flags.condition(u) for u in uses])])
        guard: PeftGuard | None = None
        if _trivial(cond):
            self.result.add("PEFT", why)
        else:
            guard = PeftGuard(site=f"{self.path} {why}", condition=_describe(cond),
                              holds=partial(self.flags.holds, cond))
            self.result.peft_guards.append(guard)
        self._peft_function(node, guard)

    def _peft_function(self, node: ast.AST, guard: PeftGuard | None) -> None:
        fn = self.flags.scope(node)
        if fn is not None and self.flags.parents.get(fn) is self.tree:
            self.result.peft_functions.setdefault(fn.name, []).append(guard)

    def _config_uses(self, node: ast.AST) -> list[ast.Name]:
        if not isinstance(node, ast.Call) or not (_chain(node.func) or [""])[-1].endswith("Config"):
            return []
        holder: ast.AST = node
        parent = self.flags.parents.get(holder)
        while isinstance(parent, ast.IfExp):
            holder, parent = parent, self.flags.parents.get(parent)
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name)):
            return []
        return self.flags.uses(parent.targets[0].id, self.flags.scope(parent), parent)

    def _peft_values(self, value: ast.expr) -> list[ast.AST]:
        """What a trainer's `peft_config=` is given that is not counted elsewhere: None and the
        configs built by a call in this code (their own PEFT sites) are left out."""
        if isinstance(value, ast.IfExp):
            return self._peft_values(value.body) + self._peft_values(value.orelse)
        if self._built_here(value):
            return []
        if isinstance(value, ast.Name):
            scope = self.flags.scope(value)
            bound = self.flags.assigns.get((value.id, scope)) or self.flags.assigns.get((value.id, None))
            if bound and all(self._built_here(v) for v in bound):
                return []
            if self._unpacked_from_peft_helper(value.id, scope):
                return []
        return [value]

    def _unpacked_from_peft_helper(self, name: str, scope: ast.AST | None) -> bool:
        """`model, peft_config, tok = make_model(args)`: a config returned by a function that
        applies PEFT, whose own sites (and their conditions) count where it is called."""
        for node in ast.walk(scope if scope is not None else self.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                    isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name
                                                     for e in t.elts) for t in node.targets):
                if self._peft_helper_call(node.value):
                    return True
        return False

    def _peft_helper_call(self, call: ast.Call) -> bool:
        """A call of a function that applies PEFT: one of a workspace module (its PEFT sites
        are known) or one of this module that holds a PEFT call."""
        chain = _chain(call.func)
        q = self.qualified(chain)
        if q is not None:
            module, _, name = q.rpartition(".")
            sub = self.local_modules.get(module)
            return sub is not None and name in sub.peft_functions
        if len(chain) == 1:
            for fn in self.tree.body:
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name == chain[0]:
                    return any(isinstance(c, ast.Call) and (_chain(c.func) or [""])[-1] in _PEFT_CALLS
                               for c in ast.walk(fn))
        return False

    def _built_here(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Constant) and value.value is None:
            return True
        if isinstance(value, ast.IfExp):
            return self._built_here(value.body) and self._built_here(value.orelse)
        if isinstance(value, ast.Call):
            chain = _chain(value.func)
            return bool(chain) and (chain[-1] in _PEFT_CALLS or chain[-1] == "get_peft_config"
                                    or self._peft_helper_call(value))
        return False

    def _peft_helper(self, node: ast.Call, chain: list[str], line: int) -> None:
        """A function of a workspace module that applies PEFT, called here: PEFT under this
        call's conditions and those inside the function."""
        q = self.qualified(chain)
        if q is None:
            return
        module, _, name = q.rpartition(".")
        sub = self.local_modules.get(module)
        inner = sub.peft_functions.get(name) if sub is not None else None
        if not inner or sub is None:
            return
        cond = self.flags.condition(node)
        why = f"line {line}: {'.'.join(chain)}(…), which applies PEFT ({sub.path})"
        if _trivial(cond) and None in inner:
            self.result.add("PEFT", why)
            self._peft_function(node, None)
            return
        flags = self.flags

        def holds(settings: Settings) -> tuple[bool | None, list[str]]:
            here, said = flags.holds(cond, settings)
            there = [(True, []) if g is None else g.holds(settings) for g in inner]
            verdict = True if any(v is True for v, _ in there) else \
                None if any(v is None for v, _ in there) else False
            said += [s for _, ss in there for s in ss]
            if here is False or verdict is False:
                return False, said
            return (None if None in (here, verdict) else True), said

        inside = " or ".join(g.condition for g in inner if g is not None)
        text = " and ".join(t for t in (_describe(cond) if not _trivial(cond) else "",
                                        inside if None not in inner else "") if t)
        guard = PeftGuard(site=f"{self.path} {why}", condition=text or "always", holds=holds)
        self.result.peft_guards.append(guard)
        self._peft_function(node, guard)

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
                func = _chain(node.value.func)
                method = self.trainer_method(func)
                if method is None and len(func) == 1 and func[0] in picked:
                    method = primary_method(picked[func[0]])  # `job = cls(…)` of a picked class
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if method:
                    for target in targets:
                        if isinstance(target, ast.Name | ast.Attribute):
                            instances[".".join(_chain(target))] = method
                            instance_of[".".join(_chain(target))] = _chain(node.value.func)
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
                why = self._class_why(chain)
                self.result.add(method, f"line {line}: {'.'.join(chain)}(…)" + (f" ({why})" if why else ""))
                if method in ("PPO",) and self.root(chain) == "verl":
                    self.result.rl_config.append(f"line {line}: {'.'.join(chain)}")
            if last in _PEFT_CALLS and (self.root(chain) in ("peft", "unsloth", "transformers", None)
                                        or chain[0] in self.origin):
                self._peft(node, f"line {line}: {'.'.join(chain)}(…)")
            if last == "from_pretrained" and len(chain) >= 2 and chain[-2].startswith(
                    ("PeftModel", "AutoPeftModel")) and any(
                    kw.arg == "is_trainable" and isinstance(kw.value, ast.Constant) and kw.value.value
                    for kw in node.keywords):
                # an adapter loaded to train on (not merely to merge or evaluate)
                self._peft(node, f"line {line}: {'.'.join(chain)}(…, is_trainable=True)")
            self._peft_helper(node, chain, line)
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
                    for value in self._peft_values(kw.value):
                        self._peft(value, f"line {line}: {last}(peft_config=…)")
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
            elif isinstance(node.func, ast.Attribute):
                # A trainer class written in the code, driven by a method of its own that
                # reaches its update (`runner.train_epoch()`, `Learner(…).run()`).
                receiver = node.func.value
                cls_chain = _chain(receiver.func) if isinstance(receiver, ast.Call) else \
                    instance_of.get(".".join(_chain(receiver)))
                if cls_chain and self.trainer_method(cls_chain) and \
                        f"calls:{last}" in self.class_traits(cls_chain):
                    launches.append((line, f"{'.'.join(_chain(receiver))}.{last}()", True))
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
        from a2rl.analysis._methods import entry_module_method

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
            if sub.trains and self.path.endswith("__init__.py"):
                r.merge(sub)
            elif sub.trains and self._calls_into(module):
                reached = self._reached(module, sub)
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
            self._manual_loop(backward[0], generate)
        if r.trains and not r.framework:
            r.framework = self._framework()

    def _wrapper_spans(self) -> list[tuple[int, int]]:
        """Methods named after one update primitive that hold only that primitive (a
        strategy's `backward` calling the engine's): a method doing both a backward pass and
        an optimizer step is a training step, and stays a hand-written loop."""
        out = []
        methods = {id(f) for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef) for f in c.body}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name in _UPDATE_WRAPPERS \
                    and id(n) in methods:
                lasts = {(_chain(c.func) or [""])[-1] for c in ast.walk(n) if isinstance(c, ast.Call)}
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
                    chain = _chain(ref)
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
            if isinstance(value, ast.Call) and len(func := _chain(value.func)) == 1 and \
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
        if _chain(call.func) != ["getattr"] or len(call.args) < 2 or \
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

    def _reached(self, module: str, sub: Detection) -> Detection | None:
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
                chain = _chain(node.func)
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
                    chain = _chain(node)
                    method = self.trainer_method(chain) if chain else None
                    if method and (chain[-1].endswith("Trainer") or chain[-1] in self.classes):
                        methods.add(method)
                if not isinstance(node, ast.Call):
                    continue
                chain = _chain(node.func)
                if not chain:
                    continue
                if chain[-1] == "backward":
                    methods |= loop
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

    def _calls_into(self, module: str) -> bool:
        """The script calls something it imported from that workspace module."""
        names = self.bound.get(module, set())
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
        # Sampled generations, or log-probabilities weighted by advantages (the rollouts may be
        # sampled in another module), scored by a reward: policy-gradient RL.
        if rewards and (generate or any(_ADVANTAGE_NAME.search(i) for i in ids)):
            if any(_GROUP_NAME.search(i) for i in ids):
                r.add("GRPO", why + " on groups of sampled generations scored by a reward")
            else:
                r.add("REINFORCE", why + " on sampled generations scored by a reward")
        elif any(_TEACHER_NAME.search(i) for i in ids) and ({"kl_div", "log_softmax"} & ids):
            r.add("distillation", why + " matching a teacher's distribution")
        elif sum(1 for i in ids if _PAIR_NAME.search(i)) >= 2 and _log_sigmoid({i.lower() for i in ids}):
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
                   analyse_command: CommandAnalyser | None = None, depth: int = 0,
                   cache: dict[str, Detection] | None = None, stack: tuple[str, ...] = (),
                   settle: bool = True, settings: Settings | None = None) -> Detection:
    """What a Python script trains (see the module docstring for the evidence used).

    `read_module(dotted, importer)` returns (path, source) of a workspace module the script
    imports, so trainer classes, training functions and settings defined there count;
    `analyse_command(cmd)` analyses a command line the script starts. `cache` holds the
    analyses of modules already read (by path); `settle=False` leaves a parameter update of
    unnamed objective as it is, for a caller that still adds what the command or its config
    trains. `settings` are one run's (its command line, configs and code defaults): branches
    on a setting that they rule out are not read, in the script and the modules it imports
    (give a `cache` of that run's own)."""
    from a2rl.analysis._settings import Settings

    if read_module is None and not stack:
        read_module = _disk_reader(path, source)
    salvaged: str | None = None
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        error = f"{exc.msg} (line {exc.lineno})"
        partial_tree = _salvage(source)
        if partial_tree is None:
            return Detection(path, parse_error=error)
        tree, salvaged = partial_tree, error
    reader = _ScriptReader(path, tree, read_module, analyse_command, depth, cache, stack, settings)
    reader.imports()
    reader.class_defs()
    reader.calls()
    result = reader.result
    result.classes = dict(reader.classes)
    result.functions = reader.function_methods()
    refs, loads = _config_refs(tree)
    result.config_refs = refs + [c for c in result.config_refs if c not in refs]
    result.loads_config |= loads
    result.instantiates |= any(isinstance(n, ast.Call) and _chain(n.func)[-1:] == ["instantiate"]
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


def _disk_reader(path: str, source: str) -> ModuleReader | None:
    """Modules of a script given by its path on disk (and that path holds the text given):
    `.mod` against the file's own package, `pkg.mod` next to it or at the folder above its top
    package (where `python -m` would be run). Files over 1 MiB are left out."""
    from pathlib import Path

    try:
        if not Path(path).is_file() or Path(path).read_text(errors="replace") != source:
            return None
    except OSError:
        return None

    def read(dotted: str, importer: str) -> tuple[str, str] | None:
        level = len(dotted) - len(dotted.lstrip("."))
        rel = dotted.lstrip(".").replace(".", "/")
        here = Path(importer).parent
        if level:
            for _ in range(level - 1):
                here = here.parent
            bases = [here]
        else:
            top = here
            while (top / "__init__.py").is_file() and top.parent != top:
                top = top.parent
            bases = [here, top]
        for base in bases:
            for cand in (f"{rel}.py", f"{rel}/__init__.py") if rel else ("__init__.py",):
                f = base / cand
                try:
                    if f.is_file() and f.stat().st_size <= 1 << 20:
                        return str(f), f.read_text(errors="replace")
                except OSError:
                    continue
        return None

    return read


def _config_refs(tree: ast.Module) -> tuple[list[str], bool]:
    """YAML/JSON file names written in the code, and whether it reads such a config."""
    refs: list[str] = []
    loads = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(r"[\w./-]+\.(ya?ml|json)", node.value.strip()) and node.value not in refs:
            refs.append(node.value.strip())
        elif isinstance(node, ast.Call):
            chain = _chain(node.func)
            if chain and (chain[-1] in _CONFIG_LOADERS or chain[-1] == "load" and len(chain) >= 2
                          and chain[-2] in ("yaml", "json", "OmegaConf", "toml")):
                loads = True
            if chain[-2:] == ["hydra", "main"] or chain == ["main"] and any(
                    kw.arg == "config_name" for kw in node.keywords):
                loads = True
    return refs, loads


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
    from a2rl.analysis._methods import verl_estimator_method

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
