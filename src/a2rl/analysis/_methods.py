"""The vocabulary of training methods: names, families, route labels and strategy k.

A method name comes from evidence (a trainer class, a config key, a CLI entry point); this
module only says which family each method belongs to and how families map onto the paper's
route labels and the trajectory study's strategy k.
"""

from __future__ import annotations

import re
from typing import Literal

Route = Literal["GRPO", "PPO", "SFT-only", "SFT+RL", "Copy", "Placeholder/Missing"]
Kind = Literal["full SFT", "PEFT", "RL", "preference", "distillation", "reward model"]

GRPO_FAMILY = frozenset({"GRPO"})
"""Group-relative policy optimisation and its variants (DAPO, GSPO, GMPO, Dr. GRPO, …): the
variant is named in the evidence, the method is GRPO."""
OTHER_RL = frozenset({"PPO", "RLOO", "REINFORCE", "ReMax", "A2PO", "OPO"})
"""Policy-gradient RL that is not GRPO: the paper's PPO route covers these."""
RL = GRPO_FAMILY | OTHER_RL
PREFERENCE = frozenset({"DPO", "IPO", "CPO", "ORPO", "SimPO", "KTO", "BCO", "TPO", "OnlineDPO",
                        "XPO", "NashMD"})
DISTILLATION = frozenset({"distillation"})
REWARD = frozenset({"reward model", "PRM"})
"""Reward models and process reward models: trained with supervision on preferences or step
labels; neither is RL."""
SUPERVISED = frozenset({"SFT", "RFT"})
TRAINING = RL | PREFERENCE | DISTILLATION | REWARD | SUPERVISED
"""Methods that update parameters (PEFT and merging are modifiers, not objectives)."""
METHODS = tuple(sorted(TRAINING)) + ("PEFT", "merging")

# Trainer/config class names after their framework prefix and `Trainer`/`Config` suffix are
# removed (TRL, OpenRLHF, axolotl, LLaMA-Factory, verl, unsloth use these stems).
_STEMS: dict[str, str] = {
    "sft": "SFT", "iterativesft": "SFT", "seq2seq": "SFT", "": "SFT", "pt": "SFT",
    "dpo": "DPO", "ipo": "IPO", "cpo": "CPO", "orpo": "ORPO", "simpo": "SimPO", "kto": "KTO",
    "bco": "BCO", "tpo": "TPO", "onlinedpo": "OnlineDPO", "xpo": "XPO", "nashmd": "NashMD",
    "grpo": "GRPO", "asyncgrpo": "GRPO", "gspo": "GRPO", "gmpo": "GRPO", "gfpo": "GRPO",
    "gpg": "GRPO", "cgrpo": "GRPO", "dapo": "GRPO", "drgrpo": "GRPO",
    "grpowithreplaybuffer": "GRPO", "scalerl": "GRPO", "ebft": "GRPO", "stridedebft": "GRPO",
    "asyncebft": "GRPO", "gdpo": "GRPO",
    "ppo": "PPO", "actorppo": "PPO", "rloo": "RLOO", "reinforce": "REINFORCE", "remax": "ReMax",
    "a2po": "A2PO", "dppo": "PPO", "baseppo": "PPO",
    "reward": "reward model", "rewardmodel": "reward model", "pairwise": "reward model",
    "rm": "reward model", "prm": "PRM", "processrewardmodel": "PRM",
    "gkd": "distillation", "gold": "distillation", "distillation": "distillation",
    "serverdistillation": "distillation", "asyncdistillation": "distillation",
    "iwopd": "distillation", "minillm": "distillation", "sdft": "distillation",
    "sdpo": "distillation", "kd": "distillation", "selfdistill": "distillation",
    "selfdistillation": "distillation", "onpolicydistill": "distillation",
    # Simple self-distillation (TRL's SSDTrainer) fine-tunes on the model's own unverified samples
    # with plain cross-entropy and no teacher: supervised training on self-generated data.
    "ssd": "SFT",
}
# Loss names after `compute_`/`get_` and `Loss`/`_loss` are removed (OpenRLHF's DPOLoss,
# GPTLMLoss, PolicyLoss, KDLoss; verl's sft_loss, compute_policy_loss; hand-written dpo_loss).
_LOSS_STEMS: dict[str, str] = {
    **{k: v for k, v in _STEMS.items() if k},
    "gptlm": "SFT", "lm": "SFT", "causallm": "SFT", "nll": "SFT", "sft": "SFT",
    "policy": "PPO", "clippedpolicy": "PPO", "value": "PPO", "ppopolicy": "PPO",
    "logexp": "reward model", "pairwise": "reward model", "bradleyterry": "reward model",
    "kd": "distillation", "distill": "distillation", "kldistill": "distillation",
    "generalizedjsd": "distillation", "reversekl": "distillation",
    "vanillakto": "KTO", "sigmoiddpo": "DPO", "ipo": "IPO",
}
_PREFIXES = ("axolotl", "unsloth", "custom", "ray", "fsdp", "megatron", "trl", "hf")
_SUFFIX = re.compile(r"(Trainer|Config|Arguments|Args)$")


def method_of_class(name: str) -> str | None:
    """The method a trainer or trainer-config class name stands for (None: not a trainer).

    `Trainer` itself (transformers) is supervised training; `RayPPOTrainer` is PPO until its
    configuration says otherwise (verl picks the advantage estimator from the config)."""
    if not _SUFFIX.search(name):
        return None
    stem = _SUFFIX.sub("", name).lower()
    for prefix in _PREFIXES:
        if stem.startswith(prefix) and stem != prefix and stem[len(prefix):] in _STEMS:
            stem = stem[len(prefix):]
            break
    if stem in ("custom", "unsloth", "axolotl", "hf"):
        stem = ""
    if stem == "" and not name.endswith("Trainer"):
        return None  # `Config`, `UnslothConfig`: settings, not a trainer
    return _STEMS.get(stem)


def method_of_loss(name: str) -> str | None:
    """The method a loss's name stands for (`DPOLoss` -> DPO, `sft_loss` -> SFT,
    `compute_policy_loss` -> PPO, `KDLoss` -> distillation); None: the name says nothing."""
    m = re.fullmatch(r"(?:compute_|get_|_)?(\w+?)_?(?:loss|Loss)(?:_fn|Fn|_func)?", name)
    if m is None:
        return None
    stem = m.group(1).lower().replace("_", "")
    return _LOSS_STEMS.get(stem)


def objective(methods: set[str], *, trained: bool) -> frozenset[str]:
    """The training objectives a run's labels are decided from: none when nothing trained;
    supervised when a parameter update was seen but nothing names what it optimises."""
    if not trained:
        return frozenset()
    found = frozenset(methods & TRAINING)
    return found or frozenset({"SFT"})


def labels(methods: set[str], *, trained: bool, copy: bool = False) -> tuple[Route, Kind | None]:
    """The route label and strategy k of one run or experiment, from one decision (the
    objectives that trained), so they cannot contradict: no objective is Placeholder/Missing
    (or Copy) with no strategy; an objective gives both its route and its strategy."""
    goals = objective(methods, trained=trained)
    if not goals:
        return ("Copy" if copy else "Placeholder/Missing"), None
    rl = goals & RL
    route: Route
    if rl and goals & (SUPERVISED | PREFERENCE | DISTILLATION):
        route = "SFT+RL"
    elif rl & GRPO_FAMILY:
        route = "GRPO"
    elif rl:
        route = "PPO"
    else:
        route = "SFT-only"
    return route, _kind(goals | (methods & {"PEFT"}))


def route_of(methods: set[str], *, trained: bool, copy: bool) -> Route:
    """The paper's route label from the methods of the code that ran (see `labels`)."""
    return labels(methods, trained=trained, copy=copy)[0]


def training_kind(methods: set[str]) -> Kind:
    """Strategy k of the trajectory study for one experiment that trained (see `labels`)."""
    kind = labels(methods, trained=True)[1]
    assert kind is not None  # trained=True always has an objective
    return kind


def _kind(methods: set[str] | frozenset[str]) -> Kind:
    """Strategy k: the objective decides (RL, preference, distillation, reward model);
    supervised training is PEFT or full SFT by what it updates."""
    if methods & RL:
        return "RL"
    if methods & PREFERENCE:
        return "preference"
    if methods & DISTILLATION:
        return "distillation"
    if methods & REWARD and not methods & SUPERVISED:
        return "reward model"
    if "PEFT" in methods:
        return "PEFT"
    return "full SFT"


def primary_method(methods: set[str] | frozenset[str]) -> str | None:
    """The method that names an experiment (the objective, not the modifiers)."""
    for family in (RL, PREFERENCE, DISTILLATION, REWARD, SUPERVISED):
        found = sorted(methods & family)
        if found:
            return found[0]
    return None


# ---- framework entry points: the method each one trains --------------------------------

VERL_ESTIMATORS = {"gae": "PPO", "grpo": "GRPO", "grpo_passk": "GRPO", "grpo_vectorized": "GRPO",
                    "drgrpo": "GRPO", "dr_grpo": "GRPO", "gpg": "GRPO", "optimal_token_baseline":
                    "GRPO", "rloo": "RLOO", "rloo_vectorized": "RLOO", "reinforce_plus_plus":
                    "REINFORCE", "reinforce_plus_plus_baseline": "REINFORCE", "remax": "ReMax",
                    "opo": "OPO"}
OPENRLHF_CLI = {"train_sft": "SFT", "train_vl_sft": "SFT", "train_dpo": "DPO",
                 "train_vl_dpo": "DPO", "train_kto": "KTO", "train_rm": "reward model",
                 "train_prm": "PRM", "train_ppo": "PPO", "train_ppo_ray": "PPO",
                 "train_search_ppo": "PPO", "train_grpo": "GRPO", "train_grpo_ray": "GRPO",
                 "train_kd": "distillation", "train_opd": "distillation"}
TRL_CLI = {"sft": "SFT", "dpo": "DPO", "grpo": "GRPO", "kto": "KTO", "rloo": "RLOO",
            "reward": "reward model", "ppo": "PPO", "orpo": "ORPO", "cpo": "CPO", "bco": "BCO",
            "gkd": "distillation", "xpo": "XPO", "nash_md": "NashMD", "online_dpo": "OnlineDPO",
            "prm": "PRM"}

VERL_RECIPES = {"dapo": "GRPO", "gspo": "GRPO", "grpo": "GRPO", "prime": "RLOO", "spin": "DPO",
                 "sppo": "DPO", "retool": "GRPO", "entropy": "GRPO", "remax": "ReMax"}
"""verl recipe names -> the method their entry point trains when no estimator is given."""


def verl_estimator_method(value: str) -> str:
    return VERL_ESTIMATORS.get(value.strip().strip("'\"").lower(), "PPO")


def entry_module_method(module: str) -> str | None:
    """Method of a framework entry-point module (`openrlhf.cli.train_dpo` -> DPO)."""
    last = module.rsplit(".", 1)[-1]
    if module.startswith("openrlhf"):
        return OPENRLHF_CLI.get(last)
    if module.startswith("verl") or module.startswith("recipe"):
        if "sft" in last:
            return "SFT"
        if last.startswith("main_ppo") or last in ("main_remax", "main_agent_ppo"):
            return "PPO"
        if module.startswith("recipe") and last.startswith("main_"):
            # verl's recipes (recipe/<name>/main_<name>.py) run the RL loop of that recipe
            return VERL_RECIPES.get(last.removeprefix("main_"), "PPO")
        return None
    if module.startswith("trl.scripts"):
        return TRL_CLI.get(last)
    return None
