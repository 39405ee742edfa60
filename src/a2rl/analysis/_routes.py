"""Which training methods a script uses, read from its syntax tree (imports, classes, calls),
not from substrings: a comment or a string that mentions GRPO does not make a GRPO run."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Literal

Route = Literal["GRPO", "PPO", "SFT-only", "SFT+RL", "Copy", "Placeholder/Missing"]
METHODS = ("SFT", "PEFT", "GRPO", "PPO", "DPO", "KTO", "ORPO", "RFT", "merging", "distillation")

# Names (last attribute or imported symbol) that identify a method.
_SYMBOLS: dict[str, str] = {
    "SFTTrainer": "SFT", "SFTConfig": "SFT", "DataCollatorForCompletionOnlyLM": "SFT",
    "Seq2SeqTrainer": "SFT",
    "GRPOTrainer": "GRPO", "GRPOConfig": "GRPO",
    "PPOTrainer": "PPO", "PPOConfig": "PPO", "RLOOTrainer": "PPO", "AutoModelForCausalLMWithValueHead": "PPO",
    "DPOTrainer": "DPO", "DPOConfig": "DPO",
    "KTOTrainer": "KTO", "KTOConfig": "KTO",
    "ORPOTrainer": "ORPO", "ORPOConfig": "ORPO",
    "LoraConfig": "PEFT", "get_peft_model": "PEFT", "prepare_model_for_kbit_training": "PEFT",
    "merge_and_unload": "merging", "add_weighted_adapter": "merging",
    "GKDTrainer": "distillation",
}
_MODULES: dict[str, str] = {"mergekit": "merging", "verl": "GRPO", "openrlhf": "PPO"}
_RFT_NAME = re.compile(r"(rejection|rft|best_of_n|filter_correct)", re.I)
_TRAINING_CALLS = {"train", "backward", "step"}


@dataclass
class ScriptMethods:
    path: str
    methods: set[str] = field(default_factory=set)
    """Methods found (see METHODS)."""
    evidence: dict[str, list[str]] = field(default_factory=dict)
    """method -> the symbols/lines that showed it."""
    trains: bool = False
    """The script performs a parameter update (trainer.train(), loss.backward()+step)."""
    parse_error: str | None = None

    def add(self, method: str, why: str) -> None:
        self.methods.add(method)
        self.evidence.setdefault(method, []).append(why)


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return _names(node.value) + [node.attr]
    if isinstance(node, ast.Call):
        return _names(node.func)
    return []


def analyse_script(path: str, source: str) -> ScriptMethods:
    result = ScriptMethods(path)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        result.parse_error = f"{exc.msg} (line {exc.lineno})"
        return result
    calls: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            if root in _MODULES:
                result.add(_MODULES[root], f"line {node.lineno}: from {node.module} import …")
            for alias in node.names:
                if alias.name in _SYMBOLS:
                    result.add(_SYMBOLS[alias.name], f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root in _MODULES:
                    result.add(_MODULES[root], f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.Call):
            chain = _names(node.func)
            if not chain:
                continue
            last = chain[-1]
            calls.add(last)
            if last in _SYMBOLS:
                result.add(_SYMBOLS[last], f"line {node.lineno}: {'.'.join(chain)}(…)")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _RFT_NAME.search(node.name):
            result.add("RFT", f"line {node.lineno}: def {node.name}")
    trainer_methods = result.methods & {"SFT", "GRPO", "PPO", "DPO", "KTO", "ORPO", "distillation"}
    manual_update = "backward" in calls and "step" in calls
    result.trains = bool(trainer_methods and "train" in calls) or manual_update
    if manual_update and not trainer_methods:
        # A hand-written loop: supervised unless it samples and scores its own outputs.
        sampled = "generate" in calls
        result.add("GRPO" if sampled and ("reward" in source.lower()) else "SFT",
                   "manual loop: loss.backward() + optimizer.step()"
                   + (" on sampled generations with a reward" if sampled else ""))
    return result


def route_of(methods: set[str], *, trained: bool, copy: bool) -> Route:
    """The paper's route label from the methods of the code that ran."""
    rl = methods & {"GRPO", "PPO"}
    if copy and not trained:
        return "Copy"
    if not trained:
        return "Placeholder/Missing"
    if rl and (methods & {"SFT", "DPO", "KTO", "ORPO", "RFT", "distillation"}):
        return "SFT+RL"
    if "GRPO" in rl:
        return "GRPO"
    if "PPO" in rl:
        return "PPO"
    return "SFT-only"


def training_kind(methods: set[str]) -> str:
    """Strategy k of paper B for one experiment."""
    if methods & {"GRPO", "PPO"}:
        return "RL"
    if methods & {"DPO", "KTO", "ORPO"}:
        return "preference"
    if "distillation" in methods:
        return "distillation"
    if "PEFT" in methods:
        return "PEFT"
    return "full SFT"
