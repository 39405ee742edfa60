"""What config-driven launches train: the frameworks that are run as `CLI + config file` or as
a module with Hydra-style overrides, read from the config and the command line.

- LLaMA-Factory: `llamafactory-cli train x.yaml` — `stage` (pt, sft, rm, ppo, dpo, kto),
  `finetuning_type` (lora, freeze, full), `pref_loss` (sigmoid, orpo, simpo, ipo, …);
- axolotl: `axolotl train x.yml` / `-m axolotl.cli.train x.yml` — `rl` (dpo, ipo, kto, orpo,
  simpo, grpo), `adapter` (lora, qlora), `reward_model`, `process_reward_model`;
- torchtune: `tune run RECIPE --config CFG` — the recipe names the method (lora_/full_ finetune,
  _dpo_, ppo_, knowledge_distillation_, grpo), the config's model component says LoRA;
- verl: `-m verl.trainer.main_ppo` with `algorithm.adv_estimator=…` (default gae: PPO) and
  `…lora_rank=N`; `-m verl.trainer.fsdp_sft_trainer` is SFT;
- OpenRLHF: `-m openrlhf.cli.train_{sft,dpo,kto,rm,prm,ppo,ppo_ray,kd,…}` with
  `--advantage_estimator` and `--lora_rank`;
- TRL's CLI: `trl {sft,dpo,grpo,kto,rloo,reward} …` with `--use_peft` or `--config x.yaml`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from a2rl.analysis._detect import Detection

_LF_STAGE = {"pt": "SFT", "sft": "SFT", "rm": "reward model", "ppo": "PPO", "dpo": "DPO",
             "kto": "KTO"}
_LF_PREF_LOSS = {"sigmoid": "DPO", "hinge": "DPO", "ipo": "IPO", "orpo": "ORPO", "simpo": "SimPO",
                 "kto_pair": "KTO"}
_AXOLOTL_RL = {"dpo": "DPO", "ipo": "IPO", "kto": "KTO", "orpo": "ORPO", "simpo": "SimPO",
               "grpo": "GRPO", "gdpo": "GRPO", "ebft": "GRPO"}
"""axolotl's `rl:` types; GDPO and EBFT (energy-based fine-tuning: feature-matching rewards on
sampled completions) run on its GRPO trainer."""
_VERL_ESTIMATORS = {"gae": "PPO", "grpo": "GRPO", "grpo_passk": "GRPO", "grpo_vectorized": "GRPO",
                    "drgrpo": "GRPO", "dr_grpo": "GRPO", "gpg": "GRPO", "optimal_token_baseline":
                    "GRPO", "rloo": "RLOO", "rloo_vectorized": "RLOO", "reinforce_plus_plus":
                    "REINFORCE", "reinforce_plus_plus_baseline": "REINFORCE", "remax": "ReMax",
                    "opo": "OPO"}
_OPENRLHF_ESTIMATORS = {"gae": "PPO", "group_norm": "GRPO", "grpo": "GRPO", "dr_grpo": "GRPO",
                        "rloo": "RLOO", "reinforce": "REINFORCE", "reinforce_baseline": "REINFORCE"}
_OPENRLHF_CLI = {"train_sft": "SFT", "train_vl_sft": "SFT", "train_dpo": "DPO",
                 "train_vl_dpo": "DPO", "train_kto": "KTO", "train_rm": "reward model",
                 "train_prm": "PRM", "train_ppo": "PPO", "train_ppo_ray": "PPO",
                 "train_search_ppo": "PPO", "train_grpo": "GRPO", "train_grpo_ray": "GRPO",
                 "train_kd": "distillation", "train_opd": "distillation"}
_TRL_CLI = {"sft": "SFT", "dpo": "DPO", "grpo": "GRPO", "kto": "KTO", "rloo": "RLOO",
            "reward": "reward model", "ppo": "PPO", "orpo": "ORPO", "cpo": "CPO", "bco": "BCO",
            "gkd": "distillation", "xpo": "XPO", "nash_md": "NashMD", "online_dpo": "OnlineDPO",
            "prm": "PRM"}
_TORCHTUNE = [(re.compile(r"grpo"), "GRPO"), (re.compile(r"ppo"), "PPO"),
              (re.compile(r"dpo"), "DPO"), (re.compile(r"distill"), "distillation"),
              (re.compile(r"(finetune|qat)"), "SFT")]


_VERL_RECIPES = {"dapo": "GRPO", "gspo": "GRPO", "grpo": "GRPO", "prime": "RLOO", "spin": "DPO",
                 "sppo": "DPO", "retool": "GRPO", "entropy": "GRPO", "remax": "ReMax"}
"""verl recipe names -> the method their entry point trains when no estimator is given."""


def verl_estimator_method(value: str) -> str:
    return _VERL_ESTIMATORS.get(value.strip().strip("'\"").lower(), "PPO")


def entry_module_method(module: str) -> str | None:
    """Method of a framework entry-point module (`openrlhf.cli.train_dpo` -> DPO)."""
    last = module.rsplit(".", 1)[-1]
    if module.startswith("openrlhf"):
        return _OPENRLHF_CLI.get(last)
    if module.startswith("verl") or module.startswith("recipe"):
        if "sft" in last:
            return "SFT"
        if last.startswith("main_ppo") or last in ("main_remax", "main_agent_ppo"):
            return "PPO"
        if module.startswith("recipe") and last.startswith("main_"):
            # verl's recipes (recipe/<name>/main_<name>.py) run the RL loop of that recipe
            return _VERL_RECIPES.get(last.removeprefix("main_"), "PPO")
        return None
    if module.startswith("trl.scripts"):
        return _TRL_CLI.get(last)
    return None


def load_config(text: str, path: str) -> dict[str, Any] | None:
    """A YAML or JSON config as a mapping (None: not a mapping or not parseable)."""
    import yaml

    try:
        data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1", "yes")


def _dig(data: dict[str, Any], dotted: str) -> Any:
    cur: Any = data
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _lora_rank(value: Any) -> bool:
    try:
        return int(value) > 0
    except (TypeError, ValueError):
        return False


def config_detection(path: str, data: dict[str, Any], *, framework: str | None = None
                     ) -> Detection | None:
    """What a training config file trains (None: not a training config we recognise).
    `framework` says which tool reads it when the command tells (llamafactory, axolotl)."""
    d = Detection(path)
    where = f"{path}:"
    lf_keys = {"stage", "finetuning_type", "model_name_or_path"} & set(data)
    if framework == "llamafactory" and lf_keys or "stage" in data and len(lf_keys) >= 2:
        stage = str(data.get("stage", "sft")).lower()
        method = _LF_STAGE.get(stage)
        if method is None:
            return None
        if method == "DPO":
            method = _LF_PREF_LOSS.get(str(data.get("pref_loss", "sigmoid")).lower(), "DPO")
        d.add(method, f"{where} stage: {stage}" + (f", pref_loss: {data['pref_loss']}"
                                                   if "pref_loss" in data else ""))
        ftype = str(data.get("finetuning_type", "lora")).lower()
        # Adapters (LoRA, OFT) are PEFT; freeze-tuning updates some layers' own weights.
        if ftype in ("lora", "oft"):
            d.add("PEFT", f"{where} finetuning_type: {ftype}"
                  + (" (the default)" if "finetuning_type" not in data else ""))
        # A predict-only config (do_predict, no do_train) evaluates; it does not train.
        d.trains = _truthy(data["do_train"]) if "do_train" in data else not _truthy(data.get("do_predict"))
        d.framework = "llamafactory"
        return d
    if framework == "axolotl" and "base_model" in data or "base_model" in data and (
            "datasets" in data or "rl" in data):
        rl = str(data.get("rl") or "").lower()
        if _truthy(data.get("process_reward_model")):
            d.add("PRM", f"{where} process_reward_model: true")
        elif _truthy(data.get("reward_model")):
            d.add("reward model", f"{where} reward_model: true")
        elif rl in _AXOLOTL_RL:
            d.add(_AXOLOTL_RL[rl], f"{where} rl: {rl}")
        elif rl:
            # An `rl:` type this version of a2rl does not know: axolotl's rl types are
            # preference or RL trainers; preference is the safer reading (no rollouts seen).
            d.add("DPO", f"{where} rl: {rl} (unknown type, read as preference optimisation)")
        else:
            d.add("SFT", f"{where} datasets without `rl` (supervised)")
        adapter = str(data.get("adapter") or "").lower()
        if adapter in ("lora", "qlora", "ia3", "llama-adapter"):
            d.add("PEFT", f"{where} adapter: {adapter}")
        d.trains = True
        d.framework = "axolotl"
        return d
    return None


def hf_args_peft(args: list[str], config: dict[str, Any] | None) -> str | None:
    """TRL-style arguments (`--use_peft`, `--lora_r`, `load_in_4bit`) on a command line or in a
    recipe YAML: the reason PEFT is on, or None."""
    for i, a in enumerate(args):
        key, _, value = a.partition("=")
        if key in ("--use_peft", "--use-peft"):
            nxt = value or (args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-")
                            else "true")
            if _truthy(nxt):
                return f"argument {a}" + (f" {nxt}" if not value and nxt != "true" else "")
        if key in ("--load_in_4bit", "--load_in_8bit") and (not value or _truthy(value)):
            return f"argument {a}"
    if config:
        if _truthy(config.get("use_peft")):
            return "config use_peft: true"
        if _truthy(config.get("load_in_4bit")):
            return "config load_in_4bit: true"
    return None


def overrides(args: list[str]) -> dict[str, str]:
    """Hydra `key=value` overrides (`+key=value` and `++key=value` too)."""
    out: dict[str, str] = {}
    for a in args:
        if "=" in a and not a.startswith("-"):
            key, _, value = a.partition("=")
            out[key.lstrip("+")] = value
    return out


def verl_detection(module: str, args: list[str], config: dict[str, Any] | None) -> Detection:
    """verl: the entry module and the Hydra overrides (and the config they point at)."""
    d = Detection(f"-m {module}")
    d.framework = "verl"
    ov = overrides(args)
    method = entry_module_method(module)
    if method is None:
        return d  # main_generation, main_eval, …: not training
    if method == "SFT":
        d.add("SFT", f"-m {module}")
        rank = ov.get("model.lora_rank") or (_dig(config, "model.lora_rank") if config else None)
        if _lora_rank(rank):
            d.add("PEFT", f"model.lora_rank={rank}")
    else:
        est = ov.get("algorithm.adv_estimator") or (
            str(_dig(config, "algorithm.adv_estimator")) if config and _dig(config, "algorithm.adv_estimator")
            else None)
        if est:
            d.add(verl_estimator_method(est), f"algorithm.adv_estimator={est}")
        elif module.startswith("recipe."):
            d.add(method, f"-m {module} (verl recipe {module.split('.')[1]})")
        else:
            d.add("PPO", f"-m {module} without algorithm.adv_estimator (verl's default: gae, PPO)")
        rank = ov.get("actor_rollout_ref.model.lora_rank") or (
            _dig(config, "actor_rollout_ref.model.lora_rank") if config else None)
        if _lora_rank(rank):
            d.add("PEFT", f"actor_rollout_ref.model.lora_rank={rank}")
    d.trains = True
    return d


def openrlhf_detection(module: str, args: list[str]) -> Detection:
    d = Detection(f"-m {module}")
    d.framework = "openrlhf"
    method = entry_module_method(module)
    if method is None:
        if module.endswith("lora_combiner"):
            d.add("merging", f"-m {module}")
        return d  # serve_rm, batch_inference, interactive_chat: not training
    if method in ("PPO", "GRPO"):
        est = _flag_value(args, "advantage_estimator", "advantage.estimator")
        if est:
            method = _OPENRLHF_ESTIMATORS.get(est, method)
            d.add(method, f"--advantage_estimator {est}")
        else:
            d.add(method, f"-m {module}")
    elif method == "DPO" and any(a.endswith("ipo") and a.startswith("--") for a in args):
        d.add("IPO", "--ipo")
    else:
        d.add(method, f"-m {module}")
    rank = _flag_value(args, "lora_rank", "lora.rank")
    if _lora_rank(rank):
        d.add("PEFT", f"LoRA rank {rank}")
    d.trains = True
    return d


def trl_cli_detection(sub: str, args: list[str], config: dict[str, Any] | None) -> Detection | None:
    method = _TRL_CLI.get(sub.replace("-", "_"))
    if method is None:
        return None  # vllm-serve, env, …
    d = Detection(f"trl {sub}")
    d.framework = "trl"
    d.add(method, f"trl {sub}")
    why = hf_args_peft(args, config)
    if why:
        d.add("PEFT", why)
    d.trains = True
    return d


def torchtune_detection(recipe: str, config_name: str | None, config: dict[str, Any] | None,
                        args: list[str]) -> Detection | None:
    d = Detection(f"tune run {recipe}")
    d.framework = "torchtune"
    name = recipe.rsplit("/", 1)[-1].lower()
    if name.endswith(".py"):
        name = name[:-3]
    method = next((m for pattern, m in _TORCHTUNE if pattern.search(name)), None)
    if method is None:
        return None  # eleuther_eval, generate, quantize: not training
    d.add(method, f"recipe {recipe}")
    lora_why = None
    if re.search(r"lora", name):
        lora_why = f"recipe {recipe}"
    elif config_name and re.search(r"lora", config_name.rsplit("/", 1)[-1], re.I):
        lora_why = f"config {config_name}"
    elif config and re.search(r"lora", str(_dig(config, "model._component_") or ""), re.I):
        lora_why = f"model component {_dig(config, 'model._component_')}"
    if lora_why:
        d.add("PEFT", lora_why)
    if config is not None:
        loss = str(_dig(config, "loss._component_") or "")
        if "DPO" in loss or "SimPO" in loss or "RSO" in loss:
            d.methods.discard("SFT")
            d.evidence.pop("SFT", None)
            d.add("SimPO" if "SimPO" in loss else "DPO", f"loss {loss}")
    d.trains = True
    return d


def _flag_value(args: list[str], *names: str) -> str | None:
    """Value of a flag given by any of its spellings: `--lora_rank` and the dotted groups of
    newer releases (`--ds.lora.rank`, `--algo.advantage.estimator`) match by their last parts."""
    wanted = {n.lstrip("-").replace(".", "_") for n in names}
    for i, a in enumerate(args):
        if not a.startswith("--"):
            continue
        key, eq, value = a[2:].partition("=")
        norm = key.replace(".", "_")
        if any(norm == w or norm.endswith("_" + w) for w in wanted):
            if eq:
                return value
            if i + 1 < len(args) and not args[i + 1].startswith("--"):
                return args[i + 1]
    return None


# ---- flag values: what a run's settings say a flag is --------------------------------------

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
    functions (fire / typer style entry points: `typer.Option(False, …)`), and module-level
    constants."""
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
    return out


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
                value = _agreed([v for v, _ in entries])
                if value is MISSING:
                    return MISSING, ""  # defaults that disagree (two settings classes): unknown
                return value, f"default {key}={value!r} ({entries[0][1]})"
        return MISSING, ""
