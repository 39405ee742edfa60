"""The vocabulary of training methods: names, families, route labels and strategy k.

A method name comes from evidence (a trainer class, a config key, a CLI entry point); this
module only says which family each method belongs to and how families map onto the paper's
route labels and paper B's strategy k.
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
    "sdpo": "distillation", "ssd": "distillation", "kd": "distillation",
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


def route_of(methods: set[str], *, trained: bool, copy: bool) -> Route:
    """The paper's route label from the methods of the code that ran."""
    rl = methods & RL
    if copy and not trained:
        return "Copy"
    if not trained or not methods & TRAINING:
        return "Placeholder/Missing"
    if rl and methods & (SUPERVISED | PREFERENCE | DISTILLATION):
        return "SFT+RL"
    if rl & GRPO_FAMILY:
        return "GRPO"
    if rl:
        return "PPO"
    return "SFT-only"


def training_kind(methods: set[str]) -> Kind:
    """Strategy k of paper B for one experiment: the objective decides (RL, preference,
    distillation, reward model); supervised training is PEFT or full SFT by what it updates."""
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


def primary_method(methods: set[str]) -> str | None:
    """The method that names an experiment (the objective, not the modifiers)."""
    for family in (RL, PREFERENCE, DISTILLATION, REWARD, SUPERVISED):
        found = sorted(methods & family)
        if found:
            return found[0]
    return None
