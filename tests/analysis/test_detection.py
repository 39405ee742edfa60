"""Training detection, launch parsing and phases on labelled scripts, configs and commands.

tests/fixtures/training_scripts/manifest.json lists each fixture with its ground truth (route,
strategy k, whether it trains, method). The fixtures are written for these tests in the shapes of
the frameworks' public examples (TRL, OpenRLHF, verl, LLaMA-Factory, axolotl, torchtune, unsloth,
open-r1, alignment-handbook, RD-Agent, PostTrainBench agent scripts, PyTorch Lightning).

Groups of fixtures by what they exercise (their id prefix): `pkg-` workspace packages reached
through relative and absolute imports, `own-` trainer classes written in the analyzed code,
`flag-` PEFT applied only under a setting, `name-` a method named by a class or file that the
code bears out or not, `objective-` a launch whose objective nothing names, `dispatch-` one entry
point whose settings pick the stage it trains, `checkout-` a framework's own entry module in the
workspace, `loops-` hand-written objectives, `rlclass-` a class's own update loop (`ppo_train()`,
a PPO trainer's `step()`) that is RL, `selfdistill-` on-policy self-distillation (the model's own
samples, itself as the teacher) beside distillation from a teacher model, `gated-update-` a
library function or class whose update sits under a flag its caller passes."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from a2rl.analysis._command_reader import CommandReader
from a2rl.analysis._detection import Detection
from a2rl.analysis._launchers import parse_launch
from a2rl.analysis._methods import (
    METHODS,
    RL,
    labels,
    method_of_class,
    method_of_loss,
    primary_method,
    route_of,
    training_kind,
)
from a2rl.analysis._phases import command_phase
from a2rl.analysis._script_reader import analyze_script
from a2rl.analysis._shell_commands import script_commands, simple_commands, split_commands

ROOT = Path(__file__).parent.parent / "fixtures" / "training_scripts"
MANIFEST: list[dict[str, Any]] = json.loads((ROOT / "manifest.json").read_text())


def label(files: dict[str, str], command: str) -> tuple[str, str | None, bool, str | None]:
    found = CommandReader(files).analyze(command)
    trains = bool(found and found.trains)
    methods = found.methods if found else set()
    route, kind = labels(methods, trained=trains)
    return route, kind, trains, primary_method(methods) if trains else None


def fixture_files(case: dict[str, Any]) -> dict[str, str]:
    return {f: (ROOT / f).read_text() for f in case["files"]}


def test_manifest_covers_enough_material() -> None:
    frameworks = Counter(c["framework"] for c in MANIFEST)
    assert len(MANIFEST) >= 60 and len(frameworks) >= 8, frameworks
    for case in MANIFEST:
        for f in case["files"]:
            assert (ROOT / f).is_file(), f


KNOWN_WRONG: dict[str, str] = {}
"""Fixture id -> why its label is knowingly wrong (each listed with its reason); every other
fixture must be labelled exactly."""


def test_every_fixture_is_labelled_exactly_or_listed_as_known_wrong() -> None:
    wrong, fixed = [], []
    for case in MANIFEST:
        got = label(fixture_files(case), case["command"])
        want = (case["route"], case["k"], case["trains"], case["method"])
        if got != want and case["id"] not in KNOWN_WRONG:
            wrong.append(f"{case['id']}: got {got}, want {want}")
        if got == want and case["id"] in KNOWN_WRONG:
            fixed.append(f"{case['id']} is right now: take it off KNOWN_WRONG")
    assert not wrong and not fixed, "\n".join(wrong + fixed)
    assert set(KNOWN_WRONG) <= {c["id"] for c in MANIFEST}


GROUPS = {"pkg-": "workspace packages through imports", "own-": "trainer classes written in the code",
          "flag-": "PEFT under a setting", "name-": "names the code bears out or not",
          "objective-": "launches whose objective nothing names",
          "dispatch-": "a setting picks the branch that trains",
          "rlclass-": "a class's own update loop", "selfdistill-": "on-policy self-distillation",
          "gated-update-": "an update under a flag the caller passes"}


@pytest.mark.parametrize("prefix", sorted(GROUPS))
def test_each_group_has_variants_and_the_labels_hold(prefix: str) -> None:
    cases = [c for c in MANIFEST if c["id"].startswith(prefix)]
    assert len(cases) >= (1 if prefix == "objective-" else 5), GROUPS[prefix]
    if prefix != "objective-":
        # negatives: no training, or no PEFT, or the method the name does not claim
        assert any(not c["trains"] or c["k"] == "full SFT" or c["note"].startswith("negative")
                   for c in cases)
        assert any(c["trains"] for c in cases)
    wrong = [c["id"] for c in cases
             if label(fixture_files(c), c["command"]) != (c["route"], c["k"], c["trains"], c["method"])]
    assert len(wrong) <= 0.05 * len(cases), wrong


def _consistent(route: str, kind: str | None, method: str | None) -> bool:
    if route in ("Placeholder/Missing", "Copy"):
        return kind is None and method is None
    if route in ("GRPO", "PPO", "SFT+RL"):
        return kind == "RL" and method in RL
    return route == "SFT-only" and kind in ("full SFT", "PEFT", "preference", "distillation",
                                            "reward model") and method is not None and method not in RL


def _detections(case: dict[str, Any]) -> list[Detection]:
    reader = CommandReader(fixture_files(case))
    found = [reader.analyze(case["command"])] + \
        [reader.analyze_argv(a) for a in simple_commands(case["command"])]
    return [d for d in found if d is not None]


@pytest.mark.parametrize("case", MANIFEST, ids=[c["id"] for c in MANIFEST])
def test_route_and_strategy_never_contradict(case: dict[str, Any]) -> None:
    """Route and strategy come from one decision: every detection of every fixture (the whole
    command line and each of its simple commands) gets a route, a strategy and a method that
    agree, however they are asked for (the labels, the functions the run analysis calls one by
    one, the detection's own properties)."""
    for d in _detections(case):
        route, kind = labels(d.methods, trained=d.trains)
        method = primary_method(d.methods) if d.trains else None
        assert _consistent(route, kind, method), (case["id"], route, kind, method, d.methods)
        assert (d.route, d.kind) == (route, kind)
        assert route_of(d.methods, trained=d.trains, copy=False) == route
        if d.trains:
            assert training_kind(d.methods) == kind and d.method == method


def test_route_and_strategy_never_contradict_for_any_method_set() -> None:
    names = list(METHODS)
    sets = [set()] + [{a} for a in names] + [{a, b} for i, a in enumerate(names) for b in names[i + 1:]]
    for methods in sets:
        for trained in (True, False):
            route, kind = labels(methods, trained=trained)
            method = primary_method(methods) if trained else None
            if trained and method is None:
                method = "SFT"  # a parameter update whose objective nothing names: supervised
            assert _consistent(route, kind, method), (methods, trained, route, kind)
            assert route_of(methods, trained=trained, copy=False) == route
            if trained:
                assert training_kind(methods) == kind


@pytest.mark.parametrize("case", MANIFEST, ids=[c["id"] for c in MANIFEST])
def test_each_fixture(case: dict[str, Any]) -> None:
    got = label(fixture_files(case), case["command"])
    assert got == (case["route"], case["k"], case["trains"], case["method"]), case.get("note")


# ---- per framework ------------------------------------------------------------------------

def test_trl_aliases_and_subclasses_resolve() -> None:
    src = ("import trl as T\nclass Mine(T.KTOTrainer):\n    pass\nclass Mine2(Mine):\n    pass\n"
           "Mine2(model='m').train()\n")
    found = analyze_script("a.py", src)
    assert found.trains and found.methods == {"KTO"}
    # a local class named like a trainer, inheriting from nothing known, is not one
    assert not analyze_script("b.py", "class GRPOTrainer:\n    pass\nGRPOTrainer().train()\n").trains


def test_model_train_mode_and_strings_are_not_training() -> None:
    src = "from transformers import AutoModel\nm = AutoModel.from_pretrained('x')\nm.train()\n" \
          "s = 'GRPOTrainer(...).train()'\n"
    found = analyze_script("a.py", src)
    assert not found.trains and found.methods == set()


def test_conditional_peft_follows_the_command() -> None:
    files = {"sft.py": "from trl import SFTTrainer, get_peft_config\n"
                       "SFTTrainer(model='m', peft_config=get_peft_config(model_args)).train()\n",
             "lora.yaml": "use_peft: true\nlora_r: 8\n", "full.yaml": "learning_rate: 1e-5\n"}
    assert label(files, "python sft.py")[1] == "full SFT"
    assert label(files, "python sft.py --use_peft")[1] == "PEFT"
    assert label(files, "python sft.py --use_peft false")[1] == "full SFT"
    assert label(files, "accelerate launch sft.py --config lora.yaml")[1] == "PEFT"
    assert label(files, "accelerate launch sft.py --config full.yaml")[1] == "full SFT"


def test_hand_written_loops_name_their_objective() -> None:
    base = ("import torch\nopt = torch.optim.AdamW(p)\nfor b in data:\n    {body}\n"
            "    loss.backward()\n    opt.step()\n")
    sft = analyze_script("a.py", base.format(body="loss = model(**b).loss"))
    assert sft.trains and sft.methods == {"SFT"} and sft.framework == "manual"
    rl = analyze_script("b.py", base.format(
        body="out = model.generate(b)\n    rewards = score(out)\n    loss = -(rewards * lp).mean()"))
    assert rl.methods == {"REINFORCE"}
    grpo = analyze_script("c.py", base.format(
        body="out = model.generate(b)\n    rewards = score(out)\n    group_mean = rewards.mean()\n"
             "    loss = -((rewards - group_mean) * lp).mean()"))
    assert grpo.methods == {"GRPO"}
    # the scheduler's step alone is not an optimizer update
    assert not analyze_script("d.py", "loss.backward()\nscheduler.step()\n").trains


def test_workspace_module_trainer_subclass_and_training_function() -> None:
    files = {"code/lib.py": "from trl import DPOTrainer\nclass MyDPO(DPOTrainer):\n    pass\n"
                            "def run(m):\n    MyDPO(model=m).train()\n",
             "code/main.py": "import lib\nlib.run('model')\n"}
    assert label(files, "cd code && python main.py") == ("SFT-only", "preference", True, "DPO")


def test_verl_estimators_and_sft() -> None:
    assert label({}, "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo")[0] == "GRPO"
    assert label({}, "python3 -m verl.trainer.main_ppo")[3] == "PPO"
    assert label({}, "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=reinforce_plus_plus"
                 )[3] == "REINFORCE"
    assert label({}, "torchrun -m verl.trainer.sft_trainer model.lora_rank=16")[:2] == \
        ("SFT-only", "PEFT")
    cfg = {"conf/run.yaml": "algorithm:\n  adv_estimator: rloo\n"}
    assert label(cfg, "python -m verl.trainer.main_ppo --config-path conf --config-name run")[3] == "RLOO"
    assert not label({}, "python3 -m verl.trainer.main_eval data.path=x")[2]


def test_openrlhf_entry_points() -> None:
    assert label({}, "deepspeed --module openrlhf.cli.train_kto --pretrain m")[3] == "KTO"
    assert label({}, "python -m openrlhf.cli.train_ppo_ray --algo.advantage.estimator rloo")[3] == "RLOO"
    assert label({}, "deepspeed --module openrlhf.cli.train_sft --ds.lora.rank 32")[1] == "PEFT"
    assert not label({}, "python -m openrlhf.cli.serve_rm --reward_pretrain m")[2]


def test_llamafactory_axolotl_torchtune_configs() -> None:
    files = {"a.yaml": "model_name_or_path: m\nstage: dpo\npref_loss: simpo\nfinetuning_type: full\n",
             "b.yml": "base_model: m\nrl: kto\nadapter: qlora\ndatasets: []\n",
             "c.yaml": "model_name_or_path: m\nstage: sft\nfinetuning_type: lora\n"}
    assert label(files, "llamafactory-cli train a.yaml")[1:] == ("preference", True, "SimPO")
    assert label(files, "llamafactory-cli train c.yaml finetuning_type=full")[1] == "full SFT"
    assert label(files, "axolotl train b.yml")[1:] == ("preference", True, "KTO")
    assert label({}, "tune run lora_finetune_distributed --config llama3_1/8B_lora")[1] == "PEFT"
    assert not label({}, "tune run generate --config generation")[2]


def test_trl_cli() -> None:
    assert label({}, "trl grpo --model_name_or_path m --dataset_name d")[0] == "GRPO"
    assert label({}, "trl kto --use_peft true")[1:] == ("preference", True, "KTO")
    assert not label({}, "trl env")[2]


def test_reward_models_are_their_own_kind_not_rl() -> None:
    assert training_kind({"reward model"}) == "reward model"
    assert training_kind({"PRM", "PEFT"}) == "reward model"
    assert route_of({"reward model"}, trained=True, copy=False) == "SFT-only"
    assert method_of_class("RewardModelTrainer") == "reward model"
    assert method_of_class("ProcessRewardModelTrainer") == "PRM"
    assert method_of_class("AxolotlDPOTrainer") == "DPO" and method_of_class("RayPPOTrainer") == "PPO"
    assert method_of_class("Config") is None and method_of_class("LoraConfig") is None


# ---- launch forms ---------------------------------------------------------------------------

@pytest.mark.parametrize(("command", "script", "module"), [
    ("python -u train.py --lr 1", "train.py", None),
    ("python3 -m verl.trainer.main_ppo a=b", None, "verl.trainer.main_ppo"),
    ("torchrun --nproc_per_node=8 -m verl.trainer.fsdp_sft_trainer x=1", None,
     "verl.trainer.fsdp_sft_trainer"),
    ("torchrun --nproc_per_node 2 train.py", "train.py", None),
    ("deepspeed --num_gpus 2 --module openrlhf.cli.train_sft --x 1", None, "openrlhf.cli.train_sft"),
    ("deepspeed --include localhost:0 train.py --deepspeed ds.json", "train.py", None),
    ("accelerate launch --config_file cfg.yaml train.py --x", "train.py", None),
    ("accelerate launch --config_file=cfg.yaml --num_processes 2 train.py", "train.py", None),
    ("accelerate launch --multi_gpu -m axolotl.cli.train c.yml", None, "axolotl.cli.train"),
    ("CUDA_VISIBLE_DEVICES=0 nohup timeout 3h python train.py", "train.py", None),
    ("uv run --with trl python train.py", "train.py", None),
    ("python -m torch.distributed.run --nproc_per_node 2 train.py", "train.py", None),
    ("uv run train.py --lr 1", "train.py", None),
    ("./tools/train.py --lr 1", "./tools/train.py", None),
])
def test_launch_forms(command: str, script: str | None, module: str | None) -> None:
    launch = parse_launch(split_commands(command)[0])
    assert launch is not None and (launch.script, launch.module) == (script, module)


def test_split_commands_handles_shell_punctuation() -> None:
    line = "cd /w && nohup python train.py > log 2>&1 & sleep 5; tail -n 3 log | grep loss"
    assert split_commands(line) == [["cd", "/w"], ["nohup", "python", "train.py"], ["sleep", "5"],
                                    ["tail", "-n", "3", "log"], ["grep", "loss"]]
    # a quote in a comment does not join the rest of a script into one command
    assert len(split_commands("# don't\npython a.py\npython b.py\n")) == 2


def test_shell_variables_arrays_and_heredocs_are_expanded() -> None:
    script = ("EST=grpo\nARGS=(\n  algorithm.adv_estimator=${EST}  # the estimator\n  x=1\n)\n"
              "read -r -d '' CMD <<EOF\nverl.trainer.main_ppo\nEOF\n"
              "PYTHONPATH=. python3 -m $CMD \"${ARGS[@]}\"\n")
    lines = script_commands(script)
    assert lines == ["PYTHONPATH=. python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo x=1"]
    assert label({"run.sh": script}, "bash run.sh")[0] == "GRPO"


# ---- phases ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("command", "phase"), [
    ("sleep 600", "checkpoint/waiting"),
    ("sleep 300 && tail -n 20 train.log", "checkpoint/waiting"),
    ("while pgrep -f train.py; do sleep 60; done", "checkpoint/waiting"),
    ("tail -f train.log", "checkpoint/waiting"),
    ("watch -n 30 nvidia-smi", "checkpoint/waiting"),
    ("cd /home/ben/task && bash timer.sh", "checkpoint/waiting"),
    ("./timer.sh; ls output", "checkpoint/waiting"),
    ("nohup python sft.py > log 2>&1 & sleep 30; tail log", "SFT"),
    ("python -m verl.trainer.main_ppo algorithm.adv_estimator=grpo", "RL"),
    ("deepspeed --module openrlhf.cli.train_dpo --pretrain m", "SFT"),
    ("accelerate launch --config_file ds.yaml grpo.py", "RL"),
    ("llamafactory-cli train lf.yaml", "SFT"),
    ("curl -s -X POST localhost:8000/submit -d '{}'", "evaluation"),
    ("python evaluate.py --model final_model", "evaluation"),
    ("pip install trl peft", "data/setup"),
    ("ls -la && cat README.md", "exploration"),
])
def test_command_phases(command: str, phase: str) -> None:
    files = {"sft.py": "from trl import SFTTrainer\nSFTTrainer(model='m').train()\n",
             "grpo.py": "from trl import GRPOTrainer\nGRPOTrainer(model='m', reward_funcs=f).train()\n",
             "lf.yaml": "model_name_or_path: m\nstage: sft\n", "evaluate.py": "print(1)\n"}
    assert command_phase(command, CommandReader(files), set()) == phase


def test_shell_wrapped_commands_are_opened_up() -> None:
    files = {"code/grpo.py": "from trl import GRPOTrainer\nGRPOTrainer(model='m', reward_funcs=f).train()\n"}
    reader = CommandReader(files)
    wrapped = "/bin/bash -lc \"cd /ws && python code/grpo.py --out output/v2\""
    assert command_phase(wrapped, reader, set()) == "RL"
    assert label(files, wrapped)[0] == "GRPO"
    assert command_phase("bash -c 'sleep 600'", reader, set()) == "checkpoint/waiting"


def test_polling_tools_of_background_jobs_are_waiting() -> None:
    from a2rl.analysis._phases import turn_phases
    from a2rl.schema import AgentEvent

    events = [AgentEvent(kind="command", turn=0, t_s=0.0, command="nohup python sft.py &", exit_code=0),
              AgentEvent(kind="tool_call", turn=1, t_s=10.0, name="BashOutput"),
              AgentEvent(kind="tool_call", turn=2, t_s=610.0, name="Read")]
    files = {"sft.py": "from trl import SFTTrainer\nSFTTrainer(model='m').train()\n"}
    labels, seconds = turn_phases(events, CommandReader(files), 700.0)
    assert [t["phase"] for t in labels] == ["SFT", "checkpoint/waiting", "exploration"]
    assert seconds == {"SFT": 10.0, "checkpoint/waiting": 600.0, "exploration": 90.0}


def test_data_source_follows_the_data_to_the_script_that_wrote_it() -> None:
    from a2rl.analysis._data import data_source

    files = {
        "gen.py": "from vllm import LLM\nouts = LLM('model').generate(prompts)\n"
                  "open('samples.jsonl', 'w').write(str(outs))\n",
        "fmt.py": "import datasets\nds = datasets.load_dataset('openai/gsm8k', 'main')\n"
                  "ds['train'].to_json('sft.jsonl')\n",
        "train_self.py": "from datasets import load_dataset\n"
                         "d = load_dataset('json', data_files='samples.jsonl')\n",
        "train_fmt.py": "from datasets import load_dataset\n"
                        "d = load_dataset('json', data_files='sft.jsonl')\n",
        "train_mix.py": "from datasets import load_dataset\n"
                        "a = load_dataset('json', data_files='samples.jsonl')\n"
                        "b = load_dataset('openai/gsm8k', 'main')\n",
        "train_none.py": "x = 1\n",
    }
    ran = sorted(files)
    assert data_source("train_self.py", files, ran) == "self-generated"
    assert data_source("train_fmt.py", files, ran) == "curated"  # reformatted given data
    assert data_source("train_mix.py", files, ran) == "mixed"
    assert data_source("train_none.py", files, ran) == "unknown"


def test_a_script_for_a_newer_python_is_read_where_it_parses() -> None:
    # PEP 695 `type` statements do not parse on Python 3.11; the rest of the script does.
    src = ("from trl import DPOTrainer\ntype Pair = tuple[str, str]\n"
           "def main():\n    t = DPOTrainer(model='m')\n    t.train()\nmain()\n")
    found = analyze_script("new.py", src)
    assert found.trains and found.methods == {"DPO"}
    assert "partly parsed" in found.evidence["parse"][0]
    broken = analyze_script("broken.py", "def (:\n")
    assert broken.parse_error and not broken.trains


def test_verl_recipes() -> None:
    assert label({}, "python3 -m recipe.dapo.main_dapo data.train_files=t.parquet")[3] == "GRPO"
    assert label({}, "python3 -m recipe.spin.main_spin")[1] == "preference"
    assert label({}, "python3 -m recipe.prime.main_prime algorithm.adv_estimator=grpo")[3] == "GRPO"


def test_adapter_loaded_to_train_is_peft_loaded_to_merge_is_not() -> None:
    train = ("from peft import PeftModel\nfrom trl import SFTTrainer\n"
             "m = PeftModel.from_pretrained(b, 'output/v1', is_trainable=True)\n"
             "SFTTrainer(model=m).train()\n")
    assert analyze_script("a.py", train).methods == {"PEFT", "SFT"}
    merge = "from peft import PeftModel\nm = PeftModel.from_pretrained(b, 'output/v1').merge_and_unload()\n"
    found = analyze_script("b.py", merge)
    assert found.methods == {"merging"} and not found.trains


# ---- imports, trainer classes, PEFT flags, names against code --------------------------------

def test_relative_imports_resolve_against_the_importing_package() -> None:
    files = {"app/pkg/__init__.py": "",
             "app/pkg/run.py": "from . import trainers\nfrom .util import seed\nseed()\n"
                               "trainers.PairTrainer(model='m').train()\n",
             "app/pkg/util.py": "def seed():\n    return 0\n",
             "app/pkg/trainers.py": "from trl import ORPOTrainer\n"
                                    "class PairTrainer(ORPOTrainer):\n    pass\n",
             "app/trainers.py": "class PairTrainer:\n    pass\n"}  # same name one folder up: not it
    assert label(files, "cd app && python -m pkg.run") == ("SFT-only", "preference", True, "ORPO")
    # the importing file's own package decides, not the launched script's folder
    files["app/pkg/run.py"] = "from .trainers import PairTrainer\nPairTrainer(model='m').train()\n"
    assert label(files, "cd app && python -m pkg.run")[3] == "ORPO"
    files["app/pkg/run.py"] = "from ..trainers import PairTrainer\nPairTrainer(model='m').train()\n"
    assert not label(files, "cd app && python -m pkg.run")[2]
    # an import cycle ends at the file already being read
    cyc = {"a.py": "import b\nfrom trl import SFTTrainer\nSFTTrainer(model='m').train()\n",
           "b.py": "import a\n"}
    assert label(cyc, "python a.py")[:3] == ("SFT-only", "full SFT", True)


def test_trainer_classes_written_in_the_code_need_a_launch_method_and_an_update_or_loss() -> None:
    loop = ("class {name}:\n    def {launch}(self):\n        for b in self.data:\n"
            "            loss = {loss}(b)\n{update}\n")
    update = "            loss.backward()\n            self.opt.step()"
    sft = analyze_script("a.py", loop.format(name="Runner", launch="fit", loss="self.model", update=update)
                         + "Runner().fit()\n")
    assert sft.trains and sft.methods == {"SFT"}
    dpo = analyze_script("b.py", loop.format(name="Runner", launch="train", loss="dpo_loss", update="")
                         + "r = Runner()\nr.train()\n")
    assert dpo.trains and dpo.methods == {"DPO"}
    # neither an update nor a named loss (whatever the class is called), or never launched
    assert not analyze_script("c.py", loop.format(name="SFTTrainer", launch="fit", loss="self.model",
                                                  update="") + "SFTTrainer().fit()\n").trains
    assert not analyze_script("d.py", loop.format(name="Runner", launch="fit", loss="dpo_loss",
                                                  update=update) + "r = Runner()\n").trains
    # a named loss without a launch method is no trainer class
    assert not analyze_script("e.py", loop.format(name="Runner", launch="evaluate", loss="dpo_loss",
                                                  update="") + "Runner().evaluate()\n").trains


def test_conditional_peft_reports_what_decided_it() -> None:
    src = ("import os\nfrom peft import LoraConfig, get_peft_model\nfrom trl import SFTTrainer\n"
           "m = 'model'\nif os.environ.get('USE_LORA', '0') == '1':\n"
           "    m = get_peft_model(m, LoraConfig(r=8))\nSFTTrainer(model=m).train()\n")
    found = analyze_script("a.py", src)
    assert "PEFT" not in found.methods and "PEFT off" in found.evidence  # the env var's default
    opaque = analyze_script("b.py", src.replace("os.environ.get('USE_LORA', '0') == '1'",
                                                "remote.flags().lora"))
    assert "PEFT" not in opaque.methods and "could not be read" in opaque.evidence["undecided"][0]
    files = {"sft.py": src.replace("os.environ.get('USE_LORA', '0') == '1'", "cfg['peft']['lora']")
             .replace("m = 'model'", "import json\ncfg = json.load(open('run.json'))\nm = 'model'"),
             "run.json": '{"peft": {"lora": true}}'}
    d = CommandReader(files).analyze("python sft.py")
    assert d is not None and "PEFT" in d.methods and "run.json" in d.evidence["PEFT"][0]
    # a condition that is not about PEFT (an error check) does not make PEFT undecided
    guard = ("from peft import get_peft_model\nfrom trl import SFTTrainer\nimport sys\n"
             "if len(sys.argv) > 5:\n    raise SystemExit('usage')\n"
             "m = get_peft_model('model', cfg)\nSFTTrainer(model=m).train()\n")
    assert "PEFT" in analyze_script("c.py", guard).methods


def test_peft_helpers_of_workspace_modules_follow_the_call_site() -> None:
    files = {"lora_utils.py": "from peft import LoraConfig, get_peft_model\n"
                              "def add_adapters(model, r=8):\n"
                              "    return get_peft_model(model, LoraConfig(r=r))\n",
             "train.py": "import argparse\nfrom lora_utils import add_adapters\n"
                         "from trl import SFTTrainer\np = argparse.ArgumentParser()\n"
                         "p.add_argument('--peft', action='store_true')\na = p.parse_args()\n"
                         "m = 'model'\nif a.peft:\n    m = add_adapters(m)\nSFTTrainer(model=m).train()\n"}
    assert label(files, "python train.py")[1] == "full SFT"
    assert label(files, "python train.py --peft")[1] == "PEFT"
    files["train.py"] = files["train.py"].replace("if a.peft:\n    m = add_adapters(m)",
                                                  "m = add_adapters(m)")
    assert label(files, "python train.py")[1] == "PEFT"


def test_code_outranks_the_name_of_a_framework_class_whose_source_is_in_the_workspace() -> None:
    files = {"vendor/fastlib/__init__.py": "from .distill import SelfDistillTrainer\n",
             "vendor/fastlib/distill.py": "from transformers import Trainer\n"
                                          "class SelfDistillTrainer(Trainer):\n"
                                          "    def compute_loss(self, model, inputs, **kw):\n"
                                          "        return model(**inputs).loss\n",
             "vendor/run.py": "from fastlib import SelfDistillTrainer\n"
                              "SelfDistillTrainer(model='m').train()\n"}
    assert label(files, "cd vendor && python run.py") == ("SFT-only", "full SFT", True, "SFT")
    teacher = files | {"vendor/fastlib/distill.py": files["vendor/fastlib/distill.py"].replace(
        "return model(**inputs).loss",
        "s = model(**inputs).logits\n        t = self.teacher(**inputs).logits\n"
        "        return kl_div(log_softmax(s), softmax(t))")}
    assert label(teacher, "cd vendor && python run.py")[3] == "distillation"


def test_loss_names() -> None:
    assert [method_of_loss(n) for n in ("DPOLoss", "sft_loss", "compute_policy_loss", "KDLoss",
                                        "PairWiseLoss", "GPTLMLoss", "loss", "aux_loss", "loss_fn")] == \
        ["DPO", "SFT", "PPO", "distillation", "reward model", "SFT", None, None, None]


def test_a_script_on_disk_reads_its_own_package(tmp_path: Path) -> None:
    pkg = tmp_path / "proj" / "kit"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "trainer.py").write_text("from trl import CPOTrainer\nclass MyCPO(CPOTrainer):\n    pass\n")
    main = pkg / "main.py"
    main.write_text("from .trainer import MyCPO\nMyCPO(model='m').train()\n")
    found = analyze_script(str(main), main.read_text())
    assert found.trains and found.methods == {"CPO"}
    # a path whose file holds other text is not read from disk
    assert not analyze_script(str(main), "from .trainer import MyCPO\nMyCPO(model='m').train()\n\n").trains


def test_a_train_mode_override_is_no_launch_method() -> None:
    src = ("from torch import nn\nclass Head(nn.Module):\n    def __init__(self):\n"
           "        super().__init__()\n        self.loss_fn = DPOLoss(0.1)\n"
           "    def train(self, mode=True):\n        return super().train(mode)\n"
           "h = Head()\nh.train()\n")
    assert not analyze_script("h.py", src).trains


# ---- settings that pick a branch, framework checkouts, hand-written objectives ---------------

def test_a_setting_picks_the_branch_of_a_stage_dispatch() -> None:
    stages = {"kit/__init__.py": "from kit.a import fit_a\nfrom kit.b import fit_b\n",
              "kit/a.py": "from trl import SFTTrainer\ndef fit_a():\n    SFTTrainer(model='m').train()\n",
              "kit/b.py": "from trl import RLOOTrainer\ndef fit_b():\n"
                          "    RLOOTrainer(model='m', reward_funcs=r).train()\n",
              "go.py": "import argparse\nfrom kit import fit_a, fit_b\np = argparse.ArgumentParser()\n"
                       "p.add_argument('--stage', default='a')\nargs = p.parse_args()\n"
                       "if args.stage == 'a':\n    fit_a()\nelif args.stage == 'b':\n    fit_b()\n"}
    assert label(stages, "python go.py --stage b") == ("PPO", "RL", True, "RLOO")
    assert label(stages, "python go.py")[:2] == ("SFT-only", "full SFT")  # the argparse default
    # a value that nothing shows leaves every branch in
    opaque = stages | {"go.py": stages["go.py"].replace("args.stage ==", "remote_stage() ==")}
    assert label(opaque, "python go.py --stage b")[0] == "SFT+RL"
    # a module function the script does not call does not train for it
    only_a = stages | {"go.py": "from kit import fit_a\nfit_a()\n"}
    assert label(only_a, "python go.py")[3] == "SFT"


def test_a_trainer_class_returned_for_a_setting_is_the_one_launched() -> None:
    src = ("import sys\nfrom trl import ORPOTrainer, SFTTrainer\n"
           "def pick(mode):\n    if mode == 'orpo':\n        return ORPOTrainer\n    return SFTTrainer\n"
           "Cls = pick(sys.argv[1] if len(sys.argv) > 1 else 'sft')\nrun = Cls(model='m')\nrun.train()\n")
    found = analyze_script("p.py", src)
    assert found.trains and found.methods == {"ORPO", "SFT"}  # no settings: either class
    cfg = {"p.py": src.replace("sys.argv[1] if len(sys.argv) > 1 else 'sft'", "opts.mode")
           .replace("import sys", "import argparse\nopts = argparse.ArgumentParser().parse_args()"),
           }
    assert label(cfg, "python p.py --mode orpo")[1:] == ("preference", True, "ORPO")
    assert label(cfg, "python p.py --mode sft")[1:] == ("full SFT", True, "SFT")


def test_framework_entry_modules_in_a_checkout_keep_their_command_line_semantics() -> None:
    ckpt = {"openrlhf/__init__.py": "", "openrlhf/cli/__init__.py": "",
            "openrlhf/cli/train_ppo_ray.py": "from openrlhf.trainer import PPOTrainer\n"
                                             "PPOTrainer.remote(a).fit.remote()\n"}
    assert label(ckpt, "python3 -m openrlhf.cli.train_ppo_ray --advantage_estimator rloo")[3] == "RLOO"
    # a module of the checkout that is no entry point is read as code
    ckpt["openrlhf/cli/my_sweep.py"] = "from trl import KTOTrainer\nKTOTrainer(model='m').train()\n"
    assert label(ckpt, "python -m openrlhf.cli.my_sweep")[3] == "KTO"


def test_policy_gradients_on_advantages_and_pairwise_scores() -> None:
    update = ("def step(opt, logps, rewards, group_size):\n    g = rewards.view(-1, group_size)\n"
              "    advantages = (g - g.mean(1, keepdim=True)).flatten()\n"
              "    loss = -(advantages * logps).mean()\n    loss.backward()\n    opt.step()\n")
    assert analyze_script("u.py", update).methods == {"GRPO"}
    # one baseline over the batch, no groups: REINFORCE; no reward at all: supervised
    baseline = update.replace("group_size", "n").replace("g = rewards.view(-1, n)", "g = rewards")
    assert analyze_script("v.py", baseline).methods == {"REINFORCE"}
    assert analyze_script("w.py", baseline.replace("rewards", "weights")).methods == {"SFT"}
    scorer = ("import torch\nfrom transformers import Trainer\nclass S(Trainer):\n"
              "    def compute_loss(self, model, inputs, **kw):\n"
              "        r_accept, r_reject = model(**inputs).logits.chunk(2)\n"
              "        return -torch.log(torch.sigmoid(r_accept - r_reject)).mean()\n"
              "S(model='m').train()\n")
    assert analyze_script("s.py", scorer).methods == {"reward model"}


def test_peft_config_unpacked_from_a_helper_follows_the_helpers_flag() -> None:
    files = {"util.py": "from peft import LoraConfig\ndef parts(o):\n    cfg = None\n"
                        "    if o.lora:\n        cfg = LoraConfig(r=4)\n    return 'm', cfg\n",
             "t.py": "import argparse\nfrom trl import SFTTrainer\nfrom util import parts\n"
                     "p = argparse.ArgumentParser()\np.add_argument('--lora', action='store_true')\n"
                     "o = p.parse_args()\nmodel, cfg = parts(o)\n"
                     "SFTTrainer(model=model, peft_config=cfg).train()\n"}
    assert label(files, "python t.py")[1] == "full SFT"
    assert label(files, "python t.py --lora")[1] == "PEFT"


def test_torchtune_components_name_the_adapter_and_the_objective() -> None:
    from a2rl.analysis._configs import torchtune_components

    cfg = {"model": {"_component_": "torchtune.models.llama3_1.qlora_llama3_1_8b"},
           "teacher_model": {"_component_": "torchtune.models.llama3_1.lora_llama3_1_70b"},
           "loss": {"_component_": "torchtune.rlhf.loss.DPOLoss"}}
    peft, claims = torchtune_components(cfg)
    assert peft and "qlora_llama3_1_8b" in peft and [m for m, _ in claims] == ["DPO"]
    # a supervised loss names no objective; a trained teacher's adapter is no PEFT of the student
    full = {"model": {"_component_": "torchtune.models.qwen2.qwen2_0_5b"},
            "teacher_model": {"_component_": "torchtune.models.qwen2.lora_qwen2_1_5b"},
            "loss": {"_component_": "torchtune.modules.loss.LinearCrossEntropyLoss"},
            "kd_loss": {"_component_": "torchtune.modules.loss.ForwardKLLoss"}}
    assert torchtune_components(full) == (None, [("distillation", "kd_loss component "
                                                  "torchtune.modules.loss.ForwardKLLoss")])
    # command-line `key._component_=` overrides replace the config's entries
    peft, claims = torchtune_components(full, {"loss._component_": "torchtune.rlhf.loss.RSOLoss",
                                               "model._component_": "m.lora_qwen2_0_5b"})
    assert peft and ("DPO", "loss component torchtune.rlhf.loss.RSOLoss") in claims
    # a script that does not instantiate its config's components is not read by them
    files = {"t.py": "import torch\nfor b in data:\n    loss = model(b)\n    loss.backward()\n"
                     "    opt.step()\n",
             "c.yaml": "loss:\n  _component_: torchtune.rlhf.loss.DPOLoss\n"}
    assert label(files, "python t.py --config c.yaml")[1:] == ("full SFT", True, "SFT")
    files["t.py"] = "from torchtune import config\nobjective = config.instantiate(cfg.loss)\n" + \
        files["t.py"]
    assert label(files, "python t.py --config c.yaml")[1:] == ("preference", True, "DPO")


def test_hydra_group_overrides_compose_the_config_the_run_reads() -> None:
    case = next(c for c in MANIFEST if c["id"] == "dispatch-hydra-group-pairs")
    reader = CommandReader(fixture_files(case))
    found = reader.analyze("python hydra_groups/run.py objective=pairs learner=ShardedLearner")
    assert found is not None and found.methods & set(METHODS) == {"DPO"}
    assert any("picks ShardedLearner" in w for w in found.evidence["DPO"])
    data = reader._hydra_groups("hydra_groups/conf/main.yaml", {"defaults": [{"objective": "nll"}]},
                                {"objective": "pairs"})
    assert data["objective"] == {"kind": "dpo", "beta": 0.1}
    assert reader._hydra_groups("hydra_groups/conf/main.yaml", {"defaults": [{"objective": "nll"}]},
                                {})["objective"] == {"kind": "sft"}
    # no setting names the class: every learner of the module may be the one
    loose = {"go.py": "import learners\nimport sys\nL = getattr(learners, sys.argv[1])\n"
                      "job = L()\njob.train()\n",
             "learners.py": "from trl import KTOTrainer, SFTTrainer\nclass A(KTOTrainer):\n"
                            "    pass\nclass B(SFTTrainer):\n    pass\nclass Helper:\n    pass\n"}
    either = CommandReader(loose).analyze("python go.py B")
    assert either is not None and either.trains and either.methods & set(METHODS) == {"KTO", "SFT"}


def test_training_arguments_switches_default_to_the_librarys_values() -> None:
    import ast

    from a2rl.analysis._settings import Settings, code_defaults

    src = ("from transformers import HfArgumentParser, Seq2SeqTrainingArguments\n"
           "p = HfArgumentParser((Opts, Seq2SeqTrainingArguments))\n")
    defaults = code_defaults(ast.parse(src), "a.py")
    assert Settings(defaults=defaults).value(["targs", "do_train"])[0] is False
    # the workspace's own default outranks the library's, and the command line outranks both
    own = code_defaults(ast.parse(src + "class Opts:\n    do_train: bool = True\n"), "a.py")
    assert Settings(defaults=own).value(["do_train"])[0] is True
    assert Settings(flags={"do_train": "true"}, defaults=defaults).value(["do_train"])[0] is True
    # no HfArgumentParser of TrainingArguments: no library default
    assert "do_train" not in code_defaults(ast.parse("import argparse\n"), "b.py")


def test_a_caller_decides_the_flag_of_a_library_update_and_mutual_imports_end() -> None:
    lib = ("def run(model, batches, opt, mode='eval'):\n    for b in batches:\n"
           "        loss = model(b).loss\n        if mode == 'train':\n"
           "            loss.backward()\n            opt.step()\n")
    files = {"lib.py": lib, "go.py": "from lib import run\nrun(m, b, o, mode={mode!r})\n"}
    train = files | {"go.py": files["go.py"].format(mode="train")}
    evaluate = files | {"go.py": files["go.py"].format(mode="eval")}
    assert label(train, "python go.py") == ("SFT-only", "full SFT", True, "SFT")
    assert label(evaluate, "python go.py") == ("Placeholder/Missing", None, False, None)
    # hostile: two modules that import each other and pass the flag back and forth, and a
    # function that hands its own parameter to itself, end with a label
    ping = ("from pong import back\ndef forth(m, b, o, mode='eval'):\n    back(m, b, o, mode)\n"
            "    forth(m, b, o, mode)\n    if mode == 'train':\n        m(b).loss.backward()\n"
            "        o.step()\n")
    pong = "from ping import forth\ndef back(m, b, o, mode):\n    forth(m, b, o, mode=mode)\n"
    loop = {"ping.py": ping, "pong.py": pong, "go.py": "from ping import forth\nforth(1, 2, 3, mode={!r})\n"}
    assert label(loop | {"go.py": loop["go.py"].format("x")}, "python go.py")[2] is False
    assert label(loop | {"go.py": loop["go.py"].format("train")}, "python go.py")[2] is True


def test_a_teacher_is_a_model_apart_from_the_one_trained() -> None:
    from a2rl.analysis._objectives import clipped_ratio, external_teacher, self_taught

    def tree(code: str) -> ast.Module:
        return ast.parse(code)

    assert external_teacher(tree("teacher = AutoModelForCausalLM.from_pretrained('big')"))
    assert external_teacher(tree("def make(student, teacher_model):\n    pass"))
    assert external_teacher(tree("T(model=m, teacher_model='big')"))
    assert not external_teacher(tree("teacher = model\nself.teacher = copy.deepcopy(self.model)"))
    assert not external_teacher(tree("teacher_logits = model(x).logits\nteacher_temp = 2.0"))
    assert self_taught(tree("y = model.generate(x)\nteacher_logits = model(y).logits"))
    assert not self_taught(tree("teacher_logits = model(x).logits"))  # no sampling: not on-policy
    assert clipped_ratio(tree("r = torch.exp(a - b)\nr.clamp(1 - eps, 1 + eps)"))
    assert clipped_ratio(tree("torch.clamp(ratio, min=1.0 - c, max=1.0 + c)"))
    assert not clipped_ratio(tree("torch.clamp(ratio, 0, 1)"))
    assert not clipped_ratio(tree("torch.clamp(x, 1 - e, 1 + e)"))  # no ratio of probabilities
