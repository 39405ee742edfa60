"""What config-driven launches train: the frameworks that are run as `CLI + config file` or as
a module with Hydra-style overrides, read from the config and the command line.

- LLaMA-Factory: `llamafactory-cli train x.yaml` — `stage` (pt, sft, rm, ppo, dpo, kto),
  `finetuning_type` (lora, freeze, full), `pref_loss` (sigmoid, orpo, simpo, ipo, …);
- axolotl: `axolotl train x.yml` / `-m axolotl.cli.train x.yml` — `rl` (dpo, ipo, kto, orpo,
  simpo, grpo), `adapter` (lora, qlora), `reward_model`, `process_reward_model`;
- torchtune: `tune run RECIPE --config CFG` — the recipe names the method (lora_/full_ finetune,
  _dpo_, ppo_, knowledge_distillation_, grpo); the config's `_component_`s (also for a recipe
  file run as a script) say LoRA (the model's builder) and the objective (the loss's class);
- verl: `-m verl.trainer.main_ppo` with `algorithm.adv_estimator=…` (default gae: PPO) and
  `…lora_rank=N`; `-m verl.trainer.fsdp_sft_trainer` is SFT;
- OpenRLHF: `-m openrlhf.cli.train_{sft,dpo,kto,rm,prm,ppo,ppo_ray,kd,…}` with
  `--advantage_estimator` and `--lora_rank`;
- TRL's CLI: `trl {sft,dpo,grpo,kto,rloo,reward} …` with `--use_peft` or `--config x.yaml`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from a2rl.analysis._detection import Detection
from a2rl.analysis._methods import TRL_CLI, entry_module_method, verl_estimator_method

_LF_STAGE = {"pt": "SFT", "sft": "SFT", "rm": "reward model", "ppo": "PPO", "dpo": "DPO",
             "kto": "KTO"}
_LF_PREF_LOSS = {"sigmoid": "DPO", "hinge": "DPO", "ipo": "IPO", "orpo": "ORPO", "simpo": "SimPO",
                 "kto_pair": "KTO"}
_AXOLOTL_RL = {"dpo": "DPO", "ipo": "IPO", "kto": "KTO", "orpo": "ORPO", "simpo": "SimPO",
               "grpo": "GRPO", "gdpo": "GRPO", "ebft": "GRPO"}
"""axolotl's `rl:` types; GDPO and EBFT (energy-based fine-tuning: feature-matching rewards on
sampled completions) run on its GRPO trainer."""
_OPENRLHF_ESTIMATORS = {"gae": "PPO", "group_norm": "GRPO", "grpo": "GRPO", "dr_grpo": "GRPO",
                        "rloo": "RLOO", "reinforce": "REINFORCE", "reinforce_baseline": "REINFORCE"}
_TORCHTUNE = [(re.compile(r"grpo"), "GRPO"), (re.compile(r"ppo"), "PPO"),
              (re.compile(r"dpo"), "DPO"), (re.compile(r"distill"), "distillation"),
              (re.compile(r"(finetune|qat)"), "SFT")]


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
    method = TRL_CLI.get(sub.replace("-", "_"))
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
    apply_components(d, config or {}, config_name or "config", overrides(args), lora_why=lora_why)
    d.trains = True
    return d


_TT_MODEL_KEYS = ("model", "policy_model")
"""Keys of the model a torchtune recipe trains (`teacher_model`, `ref_policy` are not trained)."""
_TT_LOSS_STEMS = {"rso": "DPO", "rsop": "DPO"}
"""Loss names method_of_loss does not know: rejection-sampling optimisation is a preference loss."""
_TT_ADAPTER = re.compile(r"(^|_)(q?lora|dora)(_|$)", re.I)


def _component(config: dict[str, Any], key: str, ov: dict[str, str]) -> str | None:
    """The `_component_` of a config entry (a `key._component_=…` override first)."""
    given = ov.get(f"{key}._component_")
    if given:
        return given
    entry = config.get(key)
    value = entry.get("_component_") if isinstance(entry, dict) else None
    return str(value) if value else None


def torchtune_components(config: dict[str, Any], ov: dict[str, str] | None = None
                         ) -> tuple[str | None, list[tuple[str, str]]]:
    """torchtune's config semantics: each `_component_` is the dotted path `config.instantiate`
    builds. The trained model's builder says LoRA / QLoRA / DoRA (`…lora_llama3_2_1b`); a loss
    entry (`loss:`, `kd_loss:`) names the objective by its class (`DPOLoss`, `PPOLoss`,
    `SimPOLoss`) or, for an auxiliary loss, by its key (`kd_loss`: distillation).
    Returns (why PEFT is on or None, [(method, why)] of the losses that name one; a supervised
    loss names none)."""
    from a2rl.analysis._methods import method_of_loss

    ov = ov or {}
    peft = None
    for key in _TT_MODEL_KEYS:
        comp = _component(config, key, ov)
        if comp and _TT_ADAPTER.search(comp.rsplit(".", 1)[-1]):
            peft = f"{key} component {comp}"
            break
    claims: list[tuple[str, str]] = []
    keys = list(config) + [k.rsplit(".", 1)[0] for k in ov if k.endswith("._component_")]
    for key in dict.fromkeys(keys):
        if not (key == "loss" or key.endswith("_loss")):
            continue
        comp = _component(config, key, ov)
        if not comp:
            continue
        cls = comp.rsplit(".", 1)[-1]
        stem = re.sub(r"_?loss$", "", cls, flags=re.I).lower()
        method = _TT_LOSS_STEMS.get(stem) or method_of_loss(cls) or \
            (method_of_loss(key) if key != "loss" else None)
        if method and method != "SFT":
            claims.append((method, f"{key} component {comp}"))
    return peft, claims


def apply_components(d: Detection, config: dict[str, Any], where: str, ov: dict[str, str],
                     *, lora_why: str | None = None) -> None:
    """What a torchtune-style config's components say about a recipe that instantiates them:
    PEFT from the model's builder, and the objective from the loss, which replaces a supervised
    reading of the recipe (the recipe optimises whatever loss the config gives it)."""
    peft, claims = torchtune_components(config, ov)
    if lora_why or peft:
        d.add("PEFT", lora_why or f"{where}: {peft}")
    if claims:
        d.drop("SFT")
    for method, why in claims:
        d.add(method, f"{where}: {why}")


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
