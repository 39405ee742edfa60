"""Shell text as simple commands: a command line from a transcript (`cd w && nohup accelerate
launch --config_file a.yaml train.py > log 2>&1 &`) is split at separators into simple
commands, redirections and comments dropped, `bash -c "…"` and tmux commands opened up,
heredoc bodies taken out (those fed to Python kept as its code), and wrappers (nohup,
timeout, env, setsid, nice, uv run, conda run, …) and VAR=value assignments stripped. A shell
script's lines get the variables it sets expanded where they are used."""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "\n", "|&", ";;"}
_REDIRECTS = {">", ">>", "<", ">&", "&>", "<<", "<<<", ">|", "&>>"}
_KEYWORDS = {"do", "done", "then", "fi", "else", "elif", "if", "while", "until", "for", "in",
             "{", "}", "!", "time", "exec", "case", "esac"}
_WRAPPERS_NO_ARG = {"nohup", "setsid", "stdbuf", "unbuffer", "command", "builtin", "sudo", "nice",
                    "ionice", "caffeinate", "xargs"}
PYTHON_PROGRAM = re.compile(r"^(python[\d.]*|pypy3?)$")
"""A Python interpreter's program name (`python3.11`, `pypy3`)."""


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
        out += split_line(logical)
    return out


def split_line(line: str) -> list[list[str]]:
    """The simple commands of one logical line (see `split_commands`)."""
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
        inner = shell_inline(bare) or _tmux_command(bare)
        if inner is not None and depth < 3:
            out += simple_commands(inner, depth + 1)
        elif stdin_code and bare and PYTHON_PROGRAM.match(PurePosixPath(bare[0]).name) and \
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


def shell_inline(argv: list[str]) -> str | None:
    """The command text of `bash -c "…"` / `sh -lc "…"` (None: not a shell given inline code)."""
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
