"""Where a script's text comes from: the modules it imports read from disk next to it, and
the statements of a file that does not parse as a whole."""

from __future__ import annotations

import ast
from pathlib import Path

from a2rl.analysis._detection import ModuleReader


def disk_reader(path: str, source: str) -> ModuleReader | None:
    """Modules of a script given by its path on disk (and that path holds the text given):
    `.mod` against the file's own package, `pkg.mod` next to it or at the folder above its top
    package (where `python -m` would be run). Files over 1 MiB are left out."""
    try:
        if not Path(path).is_file() or Path(path).read_text(errors="replace") != source:
            return None
    except OSError:
        return None

    def read(dotted: str, importer: str) -> tuple[str, str] | None:
        level = len(dotted) - len(dotted.lstrip("."))
        rel = dotted.lstrip(".").replace(".", "/")
        here = Path(importer).parent
        if level:
            for _ in range(level - 1):
                here = here.parent
            bases = [here]
        else:
            top = here
            while (top / "__init__.py").is_file() and top.parent != top:
                top = top.parent
            bases = [here, top]
        for base in bases:
            for cand in (f"{rel}.py", f"{rel}/__init__.py") if rel else ("__init__.py",):
                f = base / cand
                try:
                    if f.is_file() and f.stat().st_size <= 1 << 20:
                        return str(f), f.read_text(errors="replace")
                except OSError:
                    continue
        return None

    return read


def salvage(source: str) -> ast.Module | None:
    """The top-level statements of a script that parse on their own (a block starts at a line
    in column 0 and runs to the next such line); None when none do."""
    lines = source.splitlines()
    starts = [i for i, ln in enumerate(lines)
              if ln and not ln[0].isspace() and not ln.startswith(("#", ")", "]", "}"))]
    body: list[ast.stmt] = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        chunk = "\n".join(lines[start:end])
        try:
            part = ast.parse(chunk)
        except SyntaxError:
            continue
        ast.increment_lineno(part, start)
        body += part.body
    return ast.Module(body=body, type_ignores=[]) if body else None
