"""Command lines: what each simple command in a shell line launches, and what that trains.

A command line from a transcript (`cd w && nohup accelerate launch --config_file a.yaml
train.py > log 2>&1 &`) is split into simple commands; each loses its environment assignments
and wrappers (nohup, timeout, env, setsid, nice, time, uv run, conda run); then the launcher
(python, torchrun, deepspeed, accelerate, trl, llamafactory-cli, axolotl, tune, bash) says where
the script, module or config is. The training itself is read from that script or config (in the
workspace files) and the command's own arguments (Hydra overrides, --use_peft, …).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
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
from a2rl.analysis._detect import Detection, ModuleReader, analyse_script, decide_peft
from a2rl.analysis._methods import TRAINING, entry_module_method
from a2rl.analysis._settings import Settings

_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "\n", "|&", ";;"}
_REDIRECTS = {">", ">>", "<", ">&", "&>", "<<", "<<<", ">|", "&>>"}
_KEYWORDS = {"do", "done", "then", "fi", "else", "elif", "if", "while", "until", "for", "in",
             "{", "}", "!", "time", "exec", "case", "esac"}
_WRAPPERS_NO_ARG = {"nohup", "setsid", "stdbuf", "unbuffer", "command", "builtin", "sudo", "nice",
                    "ionice", "caffeinate", "xargs"}
_PY = re.compile(r"^(python[\d.]*|pypy3?)$")
_MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.\w+)+$")
_FLAG_ONLY = {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--cpu", "--debug", "--quiet", "-q",
              "--standalone", "--no_python", "--no-python", "--tee", "--use_megatron_lm",
              "--no_local_rank", "--autotuning", "--bind_cores_to_rank", "--force_multi", "-u"}
WAIT_PROGRAMS = {"sleep", "wait", "watch", "timeout_wait"}


@dataclass
class Launch:
    """One simple command, after wrappers."""

    argv: list[str]
    """The command as run (wrappers and VAR=value assignments removed)."""
    launcher: str
    """Program name: python, torchrun, deepspeed, accelerate, trl, llamafactory-cli, axolotl,
    tune, bash, or any other program."""
    script: str | None = None
    """The .py (or .sh) file it runs."""
    module: str | None = None
    """The module of `-m`/`--module`."""
    args: list[str] = field(default_factory=list)
    """Arguments after the script or module."""
    inline: str | None = None
    """Code of `python -c`."""


def logical_lines(text: str) -> list[str]:
    """Lines of a shell text, with `\\`-continuations joined and newlines inside quotes kept
    (a `python -c "…"` spanning lines is one command)."""
    text = re.sub(r"\\\r?\n", " ", text)
    lines: list[str] = []
    cur: list[str] = []
    quote: str | None = None
    escaped = False
    comment = False
    for ch in text:
        if comment:  # quotes in a comment ("don't") open nothing
            if ch != "\n":
                continue
            comment = False
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif not quote and ch == "#" and (not cur or cur[-1] in " \t;&|("):
            comment = True
            continue
        elif quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "\n":
            lines.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    lines.append("".join(cur))
    return [ln for ln in lines if ln.strip()]


def split_commands(line: str) -> list[list[str]]:
    """Simple commands of a shell text (split at ; && || | & and newlines; redirections and
    comments dropped)."""
    out: list[list[str]] = []
    for logical in logical_lines(line):
        out += _split_line(logical)
    return out


def _split_line(line: str) -> list[list[str]]:
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError:
        tokens = line.split()
    out: list[list[str]] = []
    cur: list[str] = []
    skip = False
    for tok in tokens:
        if skip:
            skip = False
            continue
        if tok in _SEPARATORS or set(tok) <= set(";&|()"):
            if cur:
                out.append(cur)
            cur = []
            continue
        if tok in _REDIRECTS or set(tok) <= set("<>&|") and ("<" in tok or ">" in tok):
            # `2>&1`, `2> log`: the descriptor number before the operator is not an argument.
            if cur and re.fullmatch(r"\d", cur[-1]):
                cur.pop()
            skip = True
            continue
        if not cur and tok in _KEYWORDS:
            continue
        cur.append(tok)
    if cur:
        out.append(cur)
    return out


_HEREDOC_IN_LINE = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n(.*?)\n[ \t]*\2[ \t]*(?=\n|$)", re.S)
_PY_STDIN = re.compile(r"(?:^|[\s;&|(])(python[\d.]*|python3)(\s+-[uBO]+)*\s+(-\s*)?$")


def _heredocs(command: str) -> tuple[str, list[str]]:
    """A command line without its heredoc bodies (`cat > f.py <<'EOF' … EOF` writes a file; its
    lines are not commands), and the bodies fed to Python on stdin (`python - <<'EOF' … EOF`),
    which are code that runs."""
    python: list[str] = []

    def cut(m: re.Match[str]) -> str:
        before = command[:m.start()]
        if _PY_STDIN.search(before.split("\n")[-1]):
            python.append(m.group(3))
        return ""

    return _HEREDOC_IN_LINE.sub(cut, command), python


def simple_commands(command: str, depth: int = 0) -> list[list[str]]:
    """The simple commands of a command line, with `bash -c "…"` / `sh -lc "…"` and
    `tmux new -d '…'` opened up (how Codex and other CLIs wrap commands), heredoc bodies taken
    out, and Python fed on stdin shown as `python -c <code>`."""
    command, stdin_code = _heredocs(command)
    out: list[list[str]] = []
    for argv in split_commands(command):
        bare = strip_wrappers(argv)
        inner = _shell_inline(bare) or _tmux_command(bare)
        if inner is not None and depth < 3:
            out += simple_commands(inner, depth + 1)
        elif stdin_code and bare and _PY.match(PurePosixPath(bare[0]).name) and \
                (bare[1:] == [] or bare[-1] == "-"):
            out.append(["python", "-c", stdin_code.pop(0)])
        else:
            out.append(argv)
    return out


def _tmux_command(argv: list[str]) -> str | None:
    """`tmux new-session -d -s train 'python train.py'`: the command is the last word."""
    if len(argv) >= 3 and PurePosixPath(argv[0]).name == "tmux" and argv[1] in (
            "new", "new-session", "send-keys", "send"):
        return argv[-1] if argv[-1] not in ("Enter", "C-m") else (argv[-2] if len(argv) > 3 else None)
    return None


def _shell_inline(argv: list[str]) -> str | None:
    if len(argv) < 3 or PurePosixPath(argv[0]).name not in ("bash", "sh", "zsh", "dash"):
        return None
    for i, a in enumerate(argv[1:-1], 1):
        if re.fullmatch(r"-[a-z]*c[a-z]*", a):
            return argv[i + 1]
        if not a.startswith("-"):
            return None
    return None


def strip_wrappers(argv: list[str]) -> list[str]:
    """Drop VAR=value assignments and wrapper programs in front of the real command."""
    i = 0
    while i < len(argv):
        a = argv[i]
        name = PurePosixPath(a).name
        if re.fullmatch(r"[A-Za-z_]\w*=.*", a):
            i += 1
        elif name == "screen":
            i += 1  # screen -dmS name [-L] cmd …
            while i < len(argv) and argv[i].startswith("-"):
                i += 2 if re.fullmatch(r"-(d?m?S|S|Logfile|c|p|t)", argv[i]) else 1
        elif name in ("srun", "mpirun"):
            i += 1  # short options take a value, long ones carry it with `=` or are flags
            while i < len(argv) and argv[i].startswith("-"):
                i += 2 if re.fullmatch(r"-[A-Za-z]", argv[i]) else 1
        elif name == "ray" and "--" in argv[i:]:
            i = argv.index("--", i) + 1  # `ray job submit … -- python3 -m …`
        elif name in _WRAPPERS_NO_ARG:
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 2 if argv[i] in ("-n", "-c", "-o", "-e", "-i") else 1
        elif name == "env":
            i += 1
            while i < len(argv) and (argv[i].startswith("-") or "=" in argv[i]):
                i += 1
        elif name == "timeout":
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 2 if argv[i] in ("-s", "-k", "--signal", "--kill-after") else 1
            i += 1  # the duration
        elif name in ("uv", "poetry", "pipenv", "pixi") and i + 1 < len(argv) and argv[i + 1] == "run":
            i += 2
            while i < len(argv) and argv[i].startswith("-"):
                i += 2 if argv[i] in ("--with", "--python", "-p", "--env-file") else 1
        elif name in ("conda", "mamba", "micromamba") and i + 1 < len(argv) and argv[i + 1] == "run":
            i += 2
            while i < len(argv) and argv[i].startswith("-"):
                i += 2 if argv[i] in ("-n", "--name", "-p", "--prefix") else 1
        else:
            break
    return argv[i:]


def _after_options(argv: list[str], start: int) -> tuple[str | None, str | None, int]:
    """Launcher options up to the script or module: (script, module, index after it)."""
    i = start
    while i < len(argv):
        a = argv[i]
        if a in ("-m", "--module"):
            j = i + 1
            # deepspeed/accelerate `--module` is a flag; the module is the next positional.
            while j < len(argv) and argv[j].startswith("-"):
                j += 1 if argv[j] in _FLAG_ONLY or "=" in argv[j] else 2
            return None, (argv[j] if j < len(argv) else None), j + 1
        if a.startswith("-"):
            if "=" in a or a in _FLAG_ONLY or a in ("-O", "-OO", "-B", "-s", "-S", "-E", "-I"):
                i += 1
            elif a in ("-X", "-W"):
                i += 2
            elif i + 1 < len(argv) and (argv[i + 1].endswith(".py") or argv[i + 1].startswith("-")):
                i += 1
            else:
                i += 2
            continue
        if a.endswith((".py", ".sh")) or "/" in a or not _MODULE_NAME.match(a):
            return a, None, i + 1
        return a, None, i + 1
    return None, None, i


def parse_launch(argv: list[str]) -> Launch | None:
    argv = strip_wrappers(argv)
    if not argv:
        return None
    prog = PurePosixPath(argv[0]).name
    if _PY.match(prog):
        if "-c" in argv[1:3] or (len(argv) > 1 and argv[1].startswith("-") and "c" in argv[1][1:]
                                 and argv[1] not in ("--config",)):
            k = argv.index("-c") if "-c" in argv else 1
            return Launch(argv, "python", inline=argv[k + 1] if k + 1 < len(argv) else "")
        script, module, rest = _after_options(argv, 1)
        if module in ("torch.distributed.run", "torch.distributed.launch"):
            script, module, rest2 = _after_options(argv, rest)
            return Launch(argv, "torchrun", script=script, module=module, args=argv[rest2:])
        if module == "accelerate.commands.launch":
            script, module, rest2 = _after_options(argv, rest)
            return Launch(argv, "accelerate", script=script, module=module, args=argv[rest2:])
        return Launch(argv, "python", script=script, module=module, args=argv[rest:])
    if prog in ("torchrun", "deepspeed"):
        script, module, rest = _after_options(argv, 1)
        return Launch(argv, prog, script=script, module=module, args=argv[rest:])
    if prog == "accelerate" and len(argv) > 1 and argv[1] == "launch":
        script, module, rest = _after_options(argv, 2)
        return Launch(argv, "accelerate", script=script, module=module, args=argv[rest:])
    if prog in ("bash", "sh", "zsh", "dash", "source", "."):
        inline = _shell_inline(argv)
        if inline is not None:
            return Launch(argv, "bash", inline=inline)
        target = next((a for a in argv[1:] if not a.startswith("-")), None)
        return Launch(argv, "bash", script=target, args=argv[2:])
    if prog.endswith(".sh"):
        return Launch(argv, "bash", script=argv[0], args=argv[1:])
    if prog.endswith(".py"):
        # `./train.py` (a shebang) and `uv run train.py` run the file with Python
        return Launch(argv, "python", script=argv[0], args=argv[1:])
    return Launch(argv, prog, args=argv[1:])


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
            self._cache[key] = analyse_script(
                path, self.files[path], read_module=self.module_reader(path),
                analyse_command=self._nested, cache=self._cache, settle=False)
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
        flags = _flag_dict(args)
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
            decide_peft(d, Settings(flags=_flag_dict(args), overrides=overrides(args),
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
        settings = Settings(flags=_flag_dict(args), overrides=overrides(args),
                            configs=configs or self._script_configs(path, found, args),
                            defaults=found.flag_defaults)
        return analyse_script(path, self.files[path], read_module=self.module_reader(path),
                              analyse_command=self._nested, cache={}, settle=False,
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
        found = analyse_script(path, "\n".join(code), read_module=self.module_reader(path),
                               analyse_command=self._nested, cache=self._cache, settle=False)
        return found

    def _nested(self, command: str) -> Detection | None:
        if self._depth > 3:
            return None
        self._depth += 1
        try:
            return self.analyse(command)
        finally:
            self._depth -= 1

    # ---- commands --------------------------------------------------------------------------
    def analyse(self, command: str) -> Detection | None:
        """What a command line trains (None: it launches nothing we can read). Several training
        launches in one line are merged."""
        return self._combine(simple_commands(command))

    def _combine(self, commands: list[list[str]]) -> Detection | None:
        found: Detection | None = None
        for argv in commands:
            d = self.analyse_argv(argv)
            if d is None:
                continue
            if found is None or d.trains and not found.trains:
                found = _copy(d)  # cached detections are shared: never merge into them
            elif d.trains:
                found.merge(d)
        return found.settle() if found is not None else None

    def analyse_argv(self, argv: list[str]) -> Detection | None:
        key = tuple(argv)
        if key not in self._argv_cache:  # traces repeat the same commands many times
            launch = parse_launch(argv)
            found = None if launch is None else self.analyse_launch(launch)
            self._argv_cache[key] = found.settle() if found is not None else None
        return self._argv_cache[key]

    def analyse_launch(self, launch: Launch) -> Detection | None:
        lc = launch.launcher
        args = launch.args
        if launch.inline is not None:
            if lc == "bash":
                return self._nested(launch.inline)
            d = analyse_script("<python -c>", launch.inline, analyse_command=self._nested)
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
            cfg_arg = _flag(args, "--config")
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
            cfg_name = _flag(args, "--config")
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
            cfg_dir, cfg_name = _flag(args, "--config-path"), _flag(args, "--config-name")
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
            return trl_cli_detection(module.rsplit(".", 1)[-1], args, self._config(_flag(args, "--config")))
        return None

    def _config(self, arg: str | None) -> dict[str, Any] | None:
        path = self.find(arg)
        return load_config(self.files[path], path) if path else None

    def _config_launch(self, args: list[str], framework: str) -> Detection | None:
        cfg_arg = next((a for a in args if a.endswith((".yaml", ".yml", ".json"))), None)
        path = self.find(cfg_arg)
        flags = {k: v for k, v in _flag_dict(args).items() if k not in ("config",)}
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
                                  for argv in _split_line(line)])
        finally:
            self._depth -= 1


_FRAMEWORK_ROOTS = {"verl", "openrlhf", "axolotl", "llamafactory", "trl"}
"""Top packages of the frameworks whose `-m` entry points are read by their CLI's semantics."""


_HEREDOC = re.compile(r"read\s+(?:-\w+\s+(?:''\s+)?)*(\w+)\s*<<-?\s*['\"]?(\w+)['\"]?\n(.*?)\n\s*\2\s*$",
                      re.S | re.M)
_ARRAY = re.compile(r"^\s*([A-Za-z_]\w*)=\((.*?)\)\s*$", re.S | re.M)
_ASSIGN = re.compile(r"^\s*(?:export\s+|readonly\s+|local\s+)?([A-Za-z_]\w*)=(.*?)\s*$")


def script_commands(text: str) -> list[str]:
    """The command lines of a shell script, with the variables it sets expanded where they are
    used: commands kept in a heredoc (`read -r -d '' cmd <<EOF … EOF; deepspeed --module
    $cmd`), in arrays (`ARGS=( … )`, `"${ARGS[@]}"`) or in plain assignments (`MODEL=…`,
    `X=${X:-default}`). Lines are split before expanding, so an odd value cannot swallow the
    rest of the script; values from outside the script stay as they are."""
    values: dict[str, str] = {}
    for m in _ARRAY.finditer(text):
        body = "\n".join(line.split("#", 1)[0] for line in m.group(2).splitlines())
        values[m.group(1)] = " ".join(re.sub(r"\\\r?\n", " ", body).split())
    text = _ARRAY.sub("", text)
    for m in _HEREDOC.finditer(text):
        values[m.group(1)] = re.sub(r"\\\r?\n", " ", m.group(3))
    text = _HEREDOC.sub("", text)

    def sub(m: re.Match[str]) -> str:
        name = m.group("name") or m.group("bare")
        if name in values:
            return values[name]
        if m.group("default") is not None:  # ${NAME:-default}
            return m.group("default").strip("\"'")
        return m.group(0)

    def expand(line: str) -> str:
        for _ in range(3):  # values that use other values
            line = _VAR.sub(lambda v: _requote(v, sub(v)), line)
        return line

    out: list[str] = []
    for line in logical_lines(text):
        assign = _ASSIGN.match(line)
        if assign and _one_word(line):  # in order: a value may use the ones before it
            values.setdefault(assign.group(1), expand(assign.group(2)).strip("\"'"))
            continue
        out.append(expand(line))
    return out


def _one_word(line: str) -> bool:
    """`X=1` is an assignment; `X=1 python t.py` runs a program with X set."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return False
    while words and words[0] in ("export", "readonly", "local", "declare"):
        words = words[1:]
    return len(words) == 1


_VAR = re.compile(r"(?P<q>\")?\$\{(?P<name>\w+)(?:\[[@*]\])?(?::-(?P<default>[^}]*))?\}(?(q)\")"
                  r"|\$(?P<bare>\w+)")


def _requote(m: re.Match[str], value: str) -> str:
    """Keep the quotes around a scalar expansion; drop them around an array (`"${A[@]}"` is
    several words)."""
    whole = m.group(0)
    if not m.group("q"):
        return value
    if "[@]" in whole or "[*]" in whole:
        return value
    return f'"{value}"'


def _copy(d: Detection) -> Detection:
    out = Detection(d.path, framework=d.framework, parse_error=d.parse_error,
                    hydra_config=d.hydra_config, classes=dict(d.classes))
    out.merge(d)
    return out


def _flag_dict(args: list[str]) -> dict[str, str]:
    """`--key value`, `--key=value` and bare `--flag` (true) arguments as a mapping."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and len(a) > 2:
            key, eq, value = a[2:].partition("=")
            if eq:
                out[key] = value
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                out[key] = args[i + 1]
                i += 1
            else:
                out[key] = "true"
        i += 1
    return out


def _flag(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def launched_file(command_argv: list[str]) -> str | None:
    """The script or config a simple command runs (for joining experiments to files)."""
    launch = parse_launch(command_argv)
    if launch is None:
        return None
    if launch.script:
        return launch.script
    cfg = next((a for a in launch.args if a.endswith((".yaml", ".yml", ".json"))), None)
    return cfg or launch.module
