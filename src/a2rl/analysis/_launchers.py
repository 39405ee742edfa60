"""Launchers: what a simple command runs. The launcher (python, torchrun, deepspeed,
accelerate, bash, a `.py` with a shebang, or any other program) says where the script, module
or inline code is and which arguments follow it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from a2rl.analysis._shell_commands import PYTHON_PROGRAM, shell_inline, strip_wrappers

_MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.\w+)+$")
_FLAG_ONLY = {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--cpu", "--debug", "--quiet", "-q",
              "--standalone", "--no_python", "--no-python", "--tee", "--use_megatron_lm",
              "--no_local_rank", "--autotuning", "--bind_cores_to_rank", "--force_multi", "-u"}


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
    """What one simple command runs, after its wrappers (None: nothing is left)."""
    argv = strip_wrappers(argv)
    if not argv:
        return None
    prog = PurePosixPath(argv[0]).name
    if PYTHON_PROGRAM.match(prog):
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
        inline = shell_inline(argv)
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


def flag_dict(args: list[str]) -> dict[str, str]:
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


def flag_value(args: list[str], flag: str) -> str | None:
    """The value given to one flag (`--config x.yaml` or `--config=x.yaml`; None: not given)."""
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
