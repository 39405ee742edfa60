"""What a command line trains, read against the workspace's files.

Each simple command of the line (`_shell_commands`) is parsed for its launcher (`_launchers`);
the training itself is read from the script it runs (`_script_reader`), the framework config it
names (`_configs`: LLaMA-Factory, axolotl, torchtune, verl, OpenRLHF, the `trl` CLI) and the
command's own arguments (Hydra overrides, `--use_peft`, …)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from a2rl.analysis._configs import (
    apply_components,
    config_detection,
    hf_args_peft,
    load_config,
    openrlhf_detection,
    overrides,
    torchtune_detection,
    trl_cli_detection,
    verl_detection,
)
from a2rl.analysis._detection import Detection, ModuleReader, decide_peft
from a2rl.analysis._launchers import Launch, flag_dict, flag_value, parse_launch
from a2rl.analysis._methods import TRAINING, entry_module_method
from a2rl.analysis._script_reader import analyze_script
from a2rl.analysis._settings import Settings
from a2rl.analysis._shell_commands import script_commands, simple_commands, split_line


class CommandReader:
    """Analyses command lines against the workspace's files (path -> text)."""

    def __init__(self, files: dict[str, str], *, cwd: str = "") -> None:
        self.files = files
        self.cwd = cwd
        self._cache: dict[str, Detection] = {}
        self._argv_cache: dict[tuple[str, ...], Detection | None] = {}
        self._depth = 0

    # ---- files -----------------------------------------------------------------------------
    def find(self, arg: str | None, *, base: str = "") -> str | None:
        """A command argument as a path in the files (absolute, ./relative, or by suffix)."""
        if not arg:
            return None
        arg = arg.strip()
        cands = [arg.removeprefix("./")]
        if base:
            cands.insert(0, str(PurePosixPath(base) / arg.removeprefix("./")))
        for c in cands:
            if c in self.files:
                return c
        parts = PurePosixPath(arg).parts
        # Absolute paths from another machine (/home/ben/task/train.py): the longest suffix
        # that names exactly one file.
        for k in range(len(parts)):
            tail = str(PurePosixPath(*parts[k:]))
            matches = [f for f in self.files if f == tail or f.endswith("/" + tail)]
            if len(matches) == 1:
                return matches[0]
            if matches and k == len(parts) - 1:
                return None
        return None

    def module_reader(self, script_path: str) -> ModuleReader:
        """Finds the workspace file of a module a script imports. `.mod` / `..pkg.mod`
        (relative, one dot per level) is resolved against the importing file's own package;
        `pkg.mod` next to the importing file, next to the launched script, at a folder above
        either (where the top package of an import like `mypkg.train.sft` sits when the code is
        run with `python -m` from there), in the command's working folder, or at the workspace
        root."""
        top = PurePosixPath(script_path).parent

        def read(dotted: str, importer: str) -> tuple[str, str] | None:
            level = len(dotted) - len(dotted.lstrip("."))
            rel = dotted.lstrip(".").replace(".", "/")
            here = PurePosixPath(importer).parent
            bases: list[PurePosixPath] = []
            if level:
                for _ in range(level - 1):
                    here = here.parent
                bases = [here]
            else:
                for start in (here, top):
                    bases += [start, *start.parents]
                bases += [PurePosixPath(self.cwd), PurePosixPath("")]
            seen: set[str] = set()
            for base in bases:
                if str(base) in seen:
                    continue
                seen.add(str(base))
                for cand in (f"{rel}.py", f"{rel}/__init__.py") if rel else ("__init__.py",):
                    path = str(base / cand) if str(base) not in ("", ".") else cand
                    if path in self.files:
                        return path, self.files[path]
            return None

        return read

    def script(self, path: str, args: list[str]) -> Detection:
        key = path
        if key not in self._cache:
            self._cache[key] = analyze_script(
                path, self.files[path], read_module=self.module_reader(path),
                analyze_command=self._nested, cache=self._cache, settle=False)
        found = self._cache[key]
        if found.dispatch:
            found = self._for_run(path, found, args)
        d = Detection(path)
        d.merge(found)
        d.parse_error = found.parse_error
        d.classes = found.classes
        d.peft_functions = found.peft_functions
        d.hydra_config = found.hydra_config
        # Config files on the command line: LLaMA-Factory's `src/train.py x.yaml`, recipe YAMLs
        # of alignment-handbook / open-r1 (`--config recipe.yaml`), TRL-style `--use_peft`.
        config = None
        configs: list[tuple[str, dict[str, Any]]] = []
        for a in args:
            if a.endswith((".yaml", ".yml", ".json")) and (p := self.find(a)):
                data = load_config(self.files[p], p)
                if data is None:
                    continue
                config = data
                configs.append((p, data))
                sub = config_detection(p, data)
                # A script that hands its config to a framework (LLaMA-Factory's run_exp,
                # axolotl's train) trains what the config says.
                if sub is not None and (not d.methods & TRAINING or
                                        d.framework in ("llamafactory", "axolotl")):
                    d.merge(sub)
        # A recipe that instantiates its config's components (torchtune's `config.instantiate`)
        # trains the model and the loss that config names.
        if d.trains and d.instantiates:
            for p, data in configs:
                apply_components(d, data, p, overrides(args))
        # HF-argparse flags of LLaMA-Factory-style scripts (`src/train_sft.py --stage sft
        # --finetuning_type lora …`): the same keys as its YAML.
        flags = flag_dict(args)
        if {"stage", "finetuning_type"} & set(flags) and (not d.methods & TRAINING or
                                                         d.framework == "llamafactory" or
                                                         "finetuning_type" in flags):
            sub = config_detection(f"{path} (arguments)", {**flags, "model_name_or_path": "?"},
                                   framework="llamafactory")
            if sub is not None:
                if "PEFT" in sub.methods or not d.methods & TRAINING:
                    d.merge(sub)
                asked = [f for f in ("do_predict", "do_eval") if f in flags]
                if asked and "do_train" not in flags:
                    # these scripts train only when asked (--do_train; TrainingArguments'
                    # default is False): evaluating or predicting alone trains nothing
                    d.trains = False
                    d.evidence.setdefault("launch", []).append(f"--{asked[0]} without --do_train")
        if d.rl_config:
            self._verl_config(d, args)
        if d.peft_guards:
            decide_peft(d, Settings(flags=flag_dict(args), overrides=overrides(args),
                                    configs=configs or self._script_configs(path, d, args),
                                    defaults=d.flag_defaults))
        if d.conditional_peft and "PEFT" not in d.methods:
            why = hf_args_peft(args, config)
            if why:
                d.add("PEFT", f"{why} turns on {d.conditional_peft[0]}")
        return d

    def _for_run(self, path: str, found: Detection, args: list[str]) -> Detection:
        """A script that branches on its settings (`if stage == "sft": … elif stage == "ppo":
        …`), read again under this run's: its command line, the configs given there (else
        those the script reads) and the defaults its code declares."""
        configs = [(p, data) for a in args if a.endswith((".yaml", ".yml", ".json"))
                   and (p := self.find(a)) and (data := load_config(self.files[p], p)) is not None]
        settings = Settings(flags=flag_dict(args), overrides=overrides(args),
                            configs=configs or self._script_configs(path, found, args),
                            defaults=found.flag_defaults)
        return analyze_script(path, self.files[path], read_module=self.module_reader(path),
                              analyze_command=self._nested, cache={}, settle=False,
                              settings=settings)

    def _script_configs(self, path: str, d: Detection, args: list[str] | None = None
                        ) -> list[tuple[str, dict[str, Any]]]:
        """Configs a script reads when its command names none: the YAML/JSON files its code
        names (next to the script or at the working folder; a Hydra config composed with its
        groups), else, when it reads a config, the ones next to it (its folder, or a
        `config`/`configs` folder there)."""
        folder = PurePosixPath(path).parent
        named: list[str] = [d.hydra_config] if d.hydra_config in self.files else []
        for ref in d.config_refs:
            for base in (folder, PurePosixPath(self.cwd), PurePosixPath("")):
                cand = str(base / ref.removeprefix("./")) if str(base) not in ("", ".") else \
                    ref.removeprefix("./")
                if cand in self.files and cand not in named:
                    named.append(cand)
                    break
        if not named and d.loads_config:
            near = {str(folder), str(folder / "config"), str(folder / "configs")}
            named = sorted(f for f in self.files if f.endswith((".yaml", ".yml", ".json"))
                           and str(PurePosixPath(f).parent) in near)
        out = []
        for cand in named:
            data = load_config(self.files[cand], cand)
            if data is not None and cand == d.hydra_config:
                data = self._hydra_groups(cand, data, overrides(args or []))
            if data is not None:
                out.append((cand, data))
        return out

    def _hydra_groups(self, path: str, data: dict[str, Any], ov: dict[str, str]) -> dict[str, Any]:
        """A Hydra config with its config groups composed in: each `defaults:` entry `group:
        option`, and each `group=option` override naming a file `<group>/<option>.yaml` next to
        the config, puts that file's mapping under `group` (an override replaces the default's
        option)."""
        folder = PurePosixPath(path).parent
        picks: dict[str, str] = {}
        defaults = data.get("defaults")
        for entry in defaults if isinstance(defaults, list) else []:
            if isinstance(entry, dict) and len(entry) == 1:
                group, option = next(iter(entry.items()))
                group = str(group).removeprefix("override ").strip()
                if isinstance(option, str | int | float) and "@" not in group:
                    picks[group] = str(option)
        for key, value in ov.items():
            if "." not in key and (folder / key).as_posix() + f"/{value}.yaml" in self.files:
                picks[key] = value
        out = dict(data)
        for group, option in picks.items():
            group_file = str(folder / group / f"{ov.get(group, option)}.yaml")
            loaded = load_config(self.files[group_file], group_file) if group_file in self.files \
                else None
            if loaded is not None:
                base = out.get(group)
                out[group] = {**base, **loaded} if isinstance(base, dict) else loaded
        return out

    def _verl_config(self, d: Detection, args: list[str]) -> None:
        """A script that builds verl's RayPPOTrainer: the estimator comes from the command's
        overrides, else from the Hydra config its `@hydra.main` names."""
        from a2rl.analysis._configs import overrides
        from a2rl.analysis._methods import verl_estimator_method

        est = overrides(args).get("algorithm.adv_estimator")
        where = f"override algorithm.adv_estimator={est}"
        if est is None and d.hydra_config:
            algorithm = (self._config(d.hydra_config) or {}).get("algorithm")
            value = algorithm.get("adv_estimator") if isinstance(algorithm, dict) else None
            if value:
                est, where = str(value), f"{d.hydra_config}: algorithm.adv_estimator: {value}"
        if est is None:
            return
        method = verl_estimator_method(est)
        if method != "PPO":
            d.methods.discard("PPO")
            d.evidence.pop("PPO", None)
        d.add(method, where)

    def notebook(self, path: str) -> Detection | None:
        """A notebook run headless (nbconvert --execute, papermill): its code cells in order,
        IPython magics and shell escapes left out."""
        import json

        try:
            cells = json.loads(self.files[path]).get("cells", [])
        except (ValueError, AttributeError):
            return None
        code: list[str] = []
        for cell in cells if isinstance(cells, list) else []:
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                src = cell.get("source", "")
                text = "".join(src) if isinstance(src, list) else str(src)
                code += [ln for ln in text.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        found = analyze_script(path, "\n".join(code), read_module=self.module_reader(path),
                               analyze_command=self._nested, cache=self._cache, settle=False)
        return found

    def _nested(self, command: str) -> Detection | None:
        if self._depth > 3:
            return None
        self._depth += 1
        try:
            return self.analyze(command)
        finally:
            self._depth -= 1

    # ---- commands --------------------------------------------------------------------------
    def analyze(self, command: str) -> Detection | None:
        """What a command line trains (None: it launches nothing we can read). Several training
        launches in one line are merged."""
        return self._combine(simple_commands(command))

    def _combine(self, commands: list[list[str]]) -> Detection | None:
        found: Detection | None = None
        for argv in commands:
            d = self.analyze_argv(argv)
            if d is None:
                continue
            if found is None or d.trains and not found.trains:
                found = _copy(d)  # cached detections are shared: never merge into them
            elif d.trains:
                found.merge(d)
        return found.settle() if found is not None else None

    def analyze_argv(self, argv: list[str]) -> Detection | None:
        key = tuple(argv)
        if key not in self._argv_cache:  # traces repeat the same commands many times
            launch = parse_launch(argv)
            found = None if launch is None else self.analyze_launch(launch)
            self._argv_cache[key] = found.settle() if found is not None else None
        return self._argv_cache[key]

    def analyze_launch(self, launch: Launch) -> Detection | None:
        lc = launch.launcher
        args = launch.args
        if launch.inline is not None:
            if lc == "bash":
                return self._nested(launch.inline)
            d = analyze_script("<python -c>", launch.inline, analyze_command=self._nested)
            return d if d.methods or d.trains else None
        if lc in ("python", "torchrun", "deepspeed", "accelerate"):
            if launch.module:
                return self.module(launch.module, args)
            path = self.find(launch.script)
            if path is None:
                return None
            if path.endswith(".sh"):
                return self.shell_script(path)
            return self.script(path, args)
        if lc == "bash":
            path = self.find(launch.script)
            return self.shell_script(path) if path and path.endswith((".sh", ".bash")) or \
                (path and not path.endswith(".py")) else None
        if lc in ("jupyter", "papermill", "ipython", "marimo") and args:
            nb = next((a for a in args if a.endswith((".ipynb", ".py"))), None)
            path = self.find(nb)
            if path is None or lc == "jupyter" and not {"nbconvert", "execute", "run"} & set(args):
                return None
            return self.script(path, []) if path.endswith(".py") else self.notebook(path)
        if lc == "trl" and args:
            cfg_arg = flag_value(args, "--config")
            cfg = self._config(cfg_arg)
            return trl_cli_detection(args[0], args[1:], cfg)
        if lc in ("llamafactory-cli", "lmf") and args and args[0] == "train":
            return self._config_launch(args[1:], "llamafactory")
        if lc == "axolotl" and args and args[0] == "train":
            return self._config_launch(args[1:], "axolotl")
        if lc == "tune" and args and args[0] == "run":
            recipe = None
            i = 1
            while i < len(args):  # torchrun-style options come before the recipe
                if args[i].startswith("-"):
                    i += 1 if "=" in args[i] else 2
                    continue
                recipe = args[i]
                break
            if recipe is None:
                return None
            local = self.find(recipe) if recipe.endswith(".py") else None
            if local is not None:
                return self.script(local, args[i + 1:])  # a recipe file of the workspace
            cfg_name = flag_value(args, "--config")
            cfg = self._config(cfg_name)
            return torchtune_detection(recipe, cfg_name, cfg, args)
        return None

    def module(self, module: str, args: list[str]) -> Detection | None:
        """What `-m module` trains. A framework's own entry point (verl, OpenRLHF, axolotl,
        LLaMA-Factory, TRL's scripts) is read by its command-line semantics (estimator, LoRA
        rank and config flags) also when the framework's checkout is in the workspace; any
        other module is read from its workspace file."""
        root = module.split(".")[0]
        local = module.replace(".", "/") + ".py"
        if root not in _FRAMEWORK_ROOTS and (path := self.find(local)) is not None:
            return self.script(path, args)
        handled, found = self._framework_module(module, args)
        if handled:
            return found
        if (path := self.find(local)) is not None:
            return self.script(path, args)
        return None

    def _framework_module(self, module: str, args: list[str]) -> tuple[bool, Detection | None]:
        """(whether a framework's entry point reads this module, what it trains)."""
        found = self._framework_entry(module, args)
        if found is not None:
            return True, found
        root = module.split(".")[0]
        # a training entry point the framework's CLI names; any other module of a checkout
        # (verl's main_generation, a script added to it) is read as code
        known = root in _FRAMEWORK_ROOTS and entry_module_method(module) is not None or \
            root == "axolotl" and module.endswith("cli.train") or \
            root == "llamafactory" and module.endswith(("launcher", "cli"))
        return known, None

    def _framework_entry(self, module: str, args: list[str]) -> Detection | None:
        root = module.split(".")[0]
        if root == "verl" or (root == "recipe" and "main" in module):
            cfg = None
            cfg_dir, cfg_name = flag_value(args, "--config-path"), flag_value(args, "--config-name")
            if cfg_name:
                cfg = self._config(str(PurePosixPath(cfg_dir or "") / cfg_name)
                                   + ("" if cfg_name.endswith((".yaml", ".yml")) else ".yaml"))
            d = verl_detection(module, args, cfg)
            return d if d.trains else None
        if root == "openrlhf":
            d = openrlhf_detection(module, args)
            return d if d.trains or d.methods else None
        if root == "axolotl" and module.endswith("cli.train"):
            return self._config_launch(args, "axolotl")
        if root == "llamafactory" and (module.endswith("launcher") or module.endswith("cli")):
            return self._config_launch(args[1:] if args[:1] == ["train"] else args, "llamafactory")
        if root == "trl" and module.startswith("trl.scripts."):
            config = self._config(flag_value(args, "--config"))
            return trl_cli_detection(module.rsplit(".", 1)[-1], args, config)
        return None

    def _config(self, arg: str | None) -> dict[str, Any] | None:
        path = self.find(arg)
        return load_config(self.files[path], path) if path else None

    def _config_launch(self, args: list[str], framework: str) -> Detection | None:
        cfg_arg = next((a for a in args if a.endswith((".yaml", ".yml", ".json"))), None)
        path = self.find(cfg_arg)
        flags = {k: v for k, v in flag_dict(args).items() if k not in ("config",)}
        if path is None and not (flags and framework == "llamafactory"):
            d = Detection(f"{framework} {cfg_arg or ''}".strip())
            d.framework = framework
            # The config is not in the workspace: the launch still trains; its method is unknown.
            d.add("SFT", f"{framework} train {cfg_arg} (config not in the workspace; "
                  "supervised assumed)")
            d.trains = True
            return d
        data: dict[str, Any] | None = load_config(self.files[path], path) if path else {}
        if data is None:
            return None
        # Overrides after the config: `key=value` (LLaMA-Factory, axolotl) and `--key value`
        # (LLaMA-Factory also takes its whole config as flags).
        for a in args:
            if "=" in a and not a.startswith("-"):
                k, _, v = a.partition("=")
                data[k] = v
        data.update(flags)
        return config_detection(path or f"{framework} arguments", data, framework=framework)

    def shell_script(self, path: str) -> Detection | None:
        if self._depth > 3:
            return None
        self._depth += 1
        try:
            # Each line on its own: an odd expanded value cannot run into the next line.
            return self._combine([argv for line in script_commands(self.files[path])
                                  for argv in split_line(line)])
        finally:
            self._depth -= 1


_FRAMEWORK_ROOTS = {"verl", "openrlhf", "axolotl", "llamafactory", "trl"}
"""Top packages of the frameworks whose `-m` entry points are read by their CLI's semantics."""


def _copy(d: Detection) -> Detection:
    out = Detection(d.path, framework=d.framework, parse_error=d.parse_error,
                    hydra_config=d.hydra_config, classes=dict(d.classes))
    out.merge(d)
    return out
