"""Checks a run makes before anything heavy (before the run folder, the model copy and the
baseline), so a user's mistake costs seconds and leaves no `failed` run behind:

- a free `--port` and a writable `--runs-dir` (each option's own range is its declared check,
  `RunConfig.check_new_run`);
- for `--agent cmd:'…'`: the folder of a script path named in the command and every
  `--agent-dir` are mounted read-only (never a folder that would expose the runs, a2rl's home
  or the user's home), a relative script path is made absolute (the agent starts in its
  workspace, not where `a2rl run` was typed), and the command is looked up *inside the sandbox*;
- after the agent: an exit within seconds (or 126/127, "cannot execute"/"not found") prints the
  transcript's last lines, since a bare "exit code 127" tells the user nothing.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._paths import a2rl_home

# Interpreters whose first non-option argument is the script they run.
_INTERPRETERS = {"bash", "sh", "zsh", "dash", "python", "python3", "node", "perl", "ruby"}
# Options after which the next word is code or a module, not a script path.
_CODE_OPTIONS = {"-c", "-m", "-e", "--eval"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_SYNTAX = set(";&|<>()$`\n*?[]{}!")
EARLY_EXIT_S = 20.0
"""An agent that ends sooner than this (with a non-zero code) did not get to work."""
NOT_RUNNABLE = (126, 127)
"""Shell exit codes: 126 found but not executable, 127 not found."""


def check_port(port: int) -> None:
    """A fixed grader port (the option's range is its declared check) is free here."""
    if port:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError as exc:
                what = ("already in use" if exc.errno == errno.EADDRINUSE else
                        f"not available ({exc.strerror})")
                raise A2RLError(f"port {port} on 127.0.0.1 is {what}",
                                "choose another --port, or leave it out to pick a free port"
                                ) from None


def check_writable_dir(path: Path, flag: str) -> None:
    """`path` exists as a writable folder, or can be created (its nearest existing parent is a
    writable folder). Nothing is created."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise A2RLError(f"{flag} {path}: {probe} is a file, not a folder",
                        f"pass a folder for {flag}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise A2RLError(f"{flag} {path} is not writable ({probe} is not writable by you)",
                        f"pass a folder you can write to, e.g. {flag} ./runs, or set "
                        "$A2RL_RUNS_DIR")


@dataclass
class CommandPlan:
    """What `--agent cmd:'…'` runs: the command with its script path made absolute, the host
    folders mounted read-only for it, and what to look up inside the sandbox."""

    command: str
    """The shell command as the sandbox runs it."""
    mounts: list[Path] = field(default_factory=list)
    """Folders mounted read-only (the script's folder, every --agent-dir)."""
    program: str | None = None
    """The first word (looked up with `command -v` inside the sandbox); None when it is not a
    plain word (a variable, a subshell)."""
    script: str | None = None
    """The script path the command runs (absolute), if it names one."""
    direct: bool = False
    """True when the script is the program itself (`./agent.sh`): it must be executable."""
    notes: list[str] = field(default_factory=list)
    """What the user should know about the plan (printed before the run)."""


def _forbidden_roots(runs_dir: Path) -> list[tuple[Path, str]]:
    return [(runs_dir.resolve(), "the runs folder (other runs' ledgers and held-out results)"),
            (a2rl_home().resolve(), "a2rl's home (grader key, caches)"),
            (Path.home().resolve(), "your home folder")]


def _exposure(path: Path, runs_dir: Path, *, folder: bool) -> str | None:
    """What mounting `path` would show the agent that the sandbox hides, or None."""
    for root, name in _forbidden_roots(runs_dir):
        if folder and (path == root or root.is_relative_to(path)):
            return f"would show the agent {name}"
        if name != "your home folder" and path.is_relative_to(root):
            return f"lies inside {name}"
    return None


def check_mountable(folder: Path, runs_dir: Path, what: str) -> Path:
    """`folder` resolved, or A2RLError when it would expose what the sandbox hides."""
    folder = folder.expanduser().resolve()
    if not folder.is_dir():
        raise A2RLError(f"{what} {folder} is not a folder",
                        "pass an existing folder (it is mounted read-only in the sandbox)")
    why = _exposure(folder, runs_dir, folder=True)
    if why is not None:
        raise A2RLError(f"{what} {folder} {why}",
                        "put the agent's files in a folder of their own (e.g. ~/my-agent/), "
                        "outside the runs folder and $A2RL_HOME, and pass that")
    return folder


def _visible_already(folder: Path) -> bool:
    """Inside what every sandbox shows read-only anyway (system folders, a2rl's Python)."""
    from a2rl.sandbox import mounted_roots

    roots = mounted_roots()
    return any(folder.is_relative_to(r) or folder.resolve().is_relative_to(r) for r in roots)


def _is_simple(command: str) -> bool:
    return not (set(command) & _SHELL_SYNTAX) and "\\" not in command


WORKSPACE_ENTRIES = frozenset({"model", "data", "code", "output", "description.md",
                               "instructions.md", "timer.sh"})
"""Names a relative path in a `cmd:` agent may start with to mean the agent's workspace."""


def _first_part(path: str) -> str:
    parts = [p for p in Path(path).parts if p != "."]
    return parts[0] if parts else ""


def plan_command(command: str, *, agent_dirs: Sequence[Path], cwd: Path,
                 runs_dir: Path) -> CommandPlan:
    """Resolve the script a `cmd:` agent names and the folders to mount for it."""
    mounts = [check_mountable(d, runs_dir, "--agent-dir") for d in agent_dirs]
    try:
        words = shlex.split(command)
    except ValueError:
        return CommandPlan(command, mounts)
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    if i >= len(words):
        return CommandPlan(command, mounts)
    program = words[i] if not (set(words[i]) & _SHELL_SYNTAX) else None
    script_at: int | None = None
    if program and "/" in program:
        script_at = i
    elif program and Path(program).name in _INTERPRETERS:
        j = i + 1
        while j < len(words) and words[j].startswith("-"):
            if words[j] in _CODE_OPTIONS:
                j = len(words)
                break
            j += 1
        if j < len(words) and not (set(words[j]) & _SHELL_SYNTAX):
            candidate = words[j]
            # `bash run.sh` names a file; `bash` followed by something that is no file on the
            # host is left to the sandbox check
            if "/" in candidate or (cwd / candidate).is_file():
                script_at = j
    plan = CommandPlan(command, mounts, program=program)
    if script_at is None:
        return plan
    given = words[script_at]
    host = Path(given).expanduser()
    host = host if host.is_absolute() else cwd / host
    if not host.exists() and not Path(given).is_absolute() and \
            _first_part(given) in WORKSPACE_ENTRIES:
        # a path in the agent's workspace (./timer.sh, code/train.py): it exists only there
        return CommandPlan(command, mounts)
    if not host.exists():
        raise A2RLError(f"the agent script {given} does not exist ({host})",
                        "give its path relative to where you run `a2rl run`, or an absolute "
                        "path")
    if host.is_dir():
        raise A2RLError(f"the agent script {given} is a folder", "name the script file itself")
    direct = script_at == i
    if direct and not os.access(host, os.X_OK):
        raise A2RLError(f"the agent script {given} is not executable",
                        f"chmod +x {host}, or run it with its interpreter: "
                        f"--agent cmd:'bash {host}'")
    # absolute, symlinks kept: a venv's bin/python must stay the venv's, not its target
    resolved = Path(os.path.normpath(host.absolute()))
    for path in dict.fromkeys([resolved, resolved.resolve()]):
        if _exposure(path, runs_dir, folder=False) is not None:
            raise A2RLError(f"the agent script {given} lies inside the runs folder or "
                            "$A2RL_HOME", "keep the agent's files in a folder of their own "
                            "and name that")
        folder = path.parent
        if _visible_already(folder) or any(folder.is_relative_to(m) for m in mounts):
            continue
        if _exposure(folder, runs_dir, folder=True) is None:
            mounts.append(folder)
        else:  # e.g. ./my_agent.sh beside ./runs: the script alone, never the runs
            mounts.append(path)
            plan.notes.append(f"mounted only {path}: its folder also holds the runs, "
                              "a2rl's home or your home; pass --agent-dir DIR for other files "
                              "it needs")
    plan.script, plan.direct = str(resolved), direct
    if direct:
        plan.program = str(resolved)
    if _is_simple(command):  # rebuilt from words only when no shell syntax could be altered
        words[script_at] = str(resolved)
        plan.command = shlex.join(words)
    elif not Path(given).is_absolute():
        raise A2RLError(f"the agent command uses a relative script path ({given}) together "
                        "with shell syntax", f"use the absolute path {resolved} in the command")
    return plan


def agent_path_env() -> str:
    """The PATH an agent gets (`Agent.environment`): a2rl's interpreter first."""
    return os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin",
                            "/bin"])


def check_in_sandbox(plan: CommandPlan, sandbox: object, *, timeout_s: float = 60) -> None:
    """Look the command up inside the sandbox as the agent will see it; A2RLError naming what
    is missing and the fix."""
    from a2rl.sandbox import owner_only_masks_in

    checks: list[str] = []
    if plan.program:
        checks.append(f"command -v -- {shlex.quote(plan.program)} >/dev/null || "
                      "{ echo missing; exit 3; }")
    if plan.script:
        test = "-x" if plan.direct else "-r"
        script = shlex.quote(plan.script)  # masked (owner-only): /dev/null, no regular file
        checks.append(f"[ -f {script} ] && [ {test} {script} ] || {{ echo unreadable; exit 4; }}")
    if not checks:
        return
    env = {"PATH": agent_path_env(), "HOME": "/tmp/home"}
    with tempfile.TemporaryDirectory(prefix="a2rl-precheck-") as ws:
        argv = sandbox.wrap(["bash", "-c", "; ".join(checks)],  # type: ignore[attr-defined]
                            workspace=Path(ws), read_only=plan.mounts,
                            masks=owner_only_masks_in(plan.mounts), env=env)
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=timeout_s, env={**os.environ, **env}, errors="replace")
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise A2RLError(f"could not check the agent command inside the sandbox "
                            f"({type(exc).__name__}: {exc})",
                            "check that the sandbox starts (`a2rl run --agent cmd:true`)") from None
    if done.returncode == 3:
        raise A2RLError(f"the agent command {plan.program!r} is not found inside the sandbox",
                        "the sandbox sees /usr, /bin, /opt, a2rl's Python environment, the "
                        "workspace and the folders of --agent-dir; give a full path to a "
                        "program there, or pass its folder with --agent-dir DIR")
    if done.returncode == 4:
        raise A2RLError(f"the agent script {plan.script} is not "
                        f"{'executable' if plan.direct else 'readable'} inside the sandbox "
                        "(it runs as another user; what only its owner may read is masked)",
                        f"make it readable by everyone: chmod a+r{'x' if plan.direct else ''} "
                        f"{plan.script} (and a+x on its folders)")
    if done.returncode != 0:
        raise A2RLError(f"could not check the agent command inside the sandbox (exit "
                        f"{done.returncode}: {(done.stderr or done.stdout).strip()[-300:]})",
                        "check that the sandbox starts (`a2rl run --agent cmd:true`)")


def early_exit_hint(transcript: Path, code: int | None, seconds: float,
                    lines: int = 15) -> list[str] | None:
    """When the agent ended at once (or could not run): the transcript's last lines and what
    they usually mean, for the console. None when the exit looks like real work."""
    if code is None or code == 0 or (code not in NOT_RUNNABLE and seconds >= EARLY_EXIT_S):
        return None
    try:
        text = transcript.read_text(errors="replace")
    except OSError:
        text = ""
    tail = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    why = {127: "exit 127: the shell did not find the command (or a program the script runs)",
           126: "exit 126: the command was found but could not be executed (permissions?)"}
    head = why.get(code, f"the agent exited with code {code} after {seconds:.0f} s")
    return [head, *(["last lines of agent/transcript.log:"] + [f"  {ln}" for ln in tail]
                    if tail else ["agent/transcript.log is empty"])]
