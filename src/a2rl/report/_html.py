"""The building blocks of the report's pages: a page and its charts, tables, Markdown shown
safely, the templates every page is rendered from, the Content-Security-Policy, and bounded
reads of a run's records and snapshots. Every
string from a record may be the agent's: it is escaped (or rendered with raw HTML and links off)
before it reaches a page."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError

MAX_SNAPSHOT_BYTES = 256 << 10
"""A snapshot's file is shown up to this size (larger files are listed, not shown)."""
CSP = ("default-src 'self'; img-src 'self' data:; script-src 'self'; "
       "style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'none'")
"""Every page's Content-Security-Policy: scripts only from the report's files (plotly.js and
assets/report.js; chart data is inert JSON), nothing fetched from elsewhere. Inline styles are
allowed because plotly.js sets them while drawing; agent text never reaches a style."""


def _deps() -> tuple[Any, Any, Any]:
    try:
        import jinja2
        import markupsafe
        import plotly
    except ImportError as exc:
        raise A2RLError(f"the report needs {exc.name}, which is not installed",
                        "pip install 'a2rl-bench[report]' (plotly, jinja2, markdown-it-py)") from exc
    return jinja2, markupsafe, plotly


@dataclass
class Page:
    """One HTML page being built: its body parts and charts."""

    path: str
    title: str
    parts: list[Any] = field(default_factory=list)
    charts: list[dict[str, str]] = field(default_factory=list)

    def html(self, text: Any) -> None:
        from markupsafe import Markup

        self.parts.append(Markup(text))

    def text(self, tag: str, text: str) -> None:
        from markupsafe import Markup, escape

        self.parts.append(Markup(f"<{tag}>{escape(text)}</{tag}>"))

    def chart(self, fig: Any, empty: str = "no data for this chart") -> None:
        self.chart_json(figure_json(fig), empty)

    def chart_json(self, fig_json: str | None, empty: str = "no data for this chart") -> None:
        """A chart from `figure_json`'s text (None: the note `empty` instead)."""
        from markupsafe import Markup, escape

        if fig_json is None:
            self.parts.append(Markup(f'<p class="note">{escape(empty)}</p>'))
            return
        cid = f"chart{len(self.charts) + 1}"
        self.charts.append({"id": cid, "json": Markup(fig_json)})
        self.parts.append(Markup(f'<div class="chart" id="{cid}" data-figure="{cid}"></div>'))


def figure_json(fig: Any) -> str | None:
    """A plotly figure as the JSON a page embeds (labels as text, no tag can appear); None for
    no figure. A figure that keeps the plain dict it was made from (`plain`) is written from it."""
    if fig is None:
        return None
    plain = getattr(fig, "plain", None)
    return _safe_json(_plain_labels(plain if isinstance(plain, dict) else json.loads(fig.to_json())))


_PLOTLY_TAG = re.compile(r"<(?!/?(?:br|b|extra)>)")


def _plain_labels(fig: dict[str, Any]) -> str:
    """The figure as JSON with every `<` in its strings shown as text except the bare `<br>`,
    `<b>` and `<extra>` the charts use: plotly reads its labels as a small HTML subset (`<a
    href>`, `<span style>`), and trace names and labels come from records (routes, phases,
    methods)."""

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return _PLOTLY_TAG.sub("&lt;", v)
        if isinstance(v, float) and not math.isfinite(v):
            return None  # JSON has no NaN: plotly.js reads null as a missing value
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return json.dumps(walk(fig))


def js_literal(obj: Any) -> str:
    """`obj` as a JavaScript literal for a script file the report writes (data handed to a
    register call): JSON with every non-ASCII character escaped (U+2028/U+2029 end lines in
    older JavaScript) and `<` escaped, so the file reads the same whatever loads it."""
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")


def _safe_json(text: str) -> str:
    # Inside <script type="application/json"> a `</script>` in a string would end the element;
    # the \\u escapes keep the JSON identical while no tag can appear.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@functools.cache
def _templates() -> Any:
    jinja2, _, _ = _deps()
    return jinja2.Environment(loader=jinja2.PackageLoader("a2rl.report", "templates"),
                              autoescape=True)


def render_template(name: str, **values: Any) -> str:
    """The report's template `name` (under templates/) filled with `values`, autoescaped."""
    return str(_templates().get_template(name).render(**values))


def marks_html(row: dict[str, Any]) -> Any:
    """The run's marks (audit flags, unsandboxed) as badges (markup)."""
    from markupsafe import Markup, escape

    from a2rl.results import marks

    return Markup("".join(f'<span class="mark">{escape(m)}</span>' for m in marks(row)))


def in_hours(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / 3600


def clock(seconds: float | None) -> str:
    """A duration or an elapsed time as h:mm:ss (hours not capped at 24); "—" when unknown."""
    if seconds is None:
        return "—"
    s = max(0, round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
           row_classes: Sequence[str] | None = None, header_html: str = "") -> str:
    from markupsafe import escape

    out = ["<table><thead>", header_html]
    out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr></thead><tbody>")
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        out.append(f"<tr{cls}>{''.join(f'<td>{_cell(c)}</td>' for c in row)}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _cell(value: Any) -> str:
    """A table cell's HTML: markup the site built as it is, anything else escaped text."""
    from markupsafe import Markup, escape

    return str(value) if isinstance(value, Markup) else str(escape(_fmt(value)))


LAZY_ROWS = 200
"""A table longer than this goes into its page as JSON, its rows made by report.js only when
their page of the table is shown (a page of a thousand runs stays quick to open)."""


def data_table(table_id: str, headers: Sequence[str], rows: Sequence[Sequence[Any]],
               row_classes: Sequence[str] | None = None) -> str:
    """A table report.js can sort and filter: `_table`'s HTML when short, else the same cells
    as inert JSON (each cell's escaped HTML) in a `div.dt-lazy` that report.js fills."""
    if len(rows) <= LAZY_ROWS:
        return _table(headers, rows, row_classes)
    spec = {"headers": list(headers), "rows": [[_cell(c) for c in row] for row in rows],
            "classes": list(row_classes) if row_classes else None}
    return (f'<div class="dt-lazy" data-table="{table_id}"></div><script type="application/json" '
            f'id="{table_id}">{_safe_json(json.dumps(spec))}</script>')


class GitObjects:
    """Reads objects of a shadow repository through one `git cat-file --batch` process, so a
    run's snapshots cost one process rather than one per file. Open it with `git_objects`:
    `_git_files` and `_git_blob` use it for its repository while it is open."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self.proc = subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)

    def read(self, spec: str, limit: int) -> tuple[str, bytes, int] | None:
        """The object `spec` names: its type, its first `limit` bytes and its whole size; None
        when there is no such object."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if "\n" in spec:  # one request per line: such a name cannot be asked for
            return None
        self.proc.stdin.write(spec.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3:  # `<spec> missing` or `ambiguous`
            return None
        kind, size = header[1].decode(), int(header[2])
        data = self.proc.stdout.read(min(size, limit))
        left = size - len(data)
        while left > 0:  # the rest of an oversized object is read past, never kept
            left -= len(self.proc.stdout.read(min(left, 1 << 20)))
        self.proc.stdout.read(1)  # the newline after each object
        return kind, data, size

    def files(self, tree: str, prefix: str = "") -> list[str]:
        """Every path in `tree` (a commit or tree), as `git ls-tree -r --name-only` lists them."""
        obj = self.read(f"{tree}^{{tree}}" if not prefix else tree, 1 << 30)
        if obj is None or obj[0] != "tree":
            return []
        data, out, i = obj[1], [], 0
        sha_len = len(tree) // 2 if len(tree) in (40, 64) else 20
        while i < len(data):
            space = data.index(b" ", i)
            nul = data.index(b"\0", space)
            mode, name = data[i:space], data[space + 1:nul].decode(errors="replace")
            sha = data[nul + 1:nul + 1 + sha_len].hex()
            i = nul + 1 + sha_len
            if mode == b"40000":
                out.extend(self.files(sha, f"{prefix}{name}/"))
            else:
                out.append(prefix + name)
        return out

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


_OPEN: dict[Path, GitObjects] = {}


@contextmanager
def git_objects(git_dir: Path) -> Iterator[None]:
    """Keep one reader of `git_dir` open for `_git_files` and `_git_blob` (nothing when git
    or the repository is missing: they then run git once per call, and find nothing)."""
    if git_dir in _OPEN or not git_dir.is_dir() or shutil.which("git") is None:
        yield
        return
    reader = _OPEN[git_dir] = GitObjects(git_dir)
    try:
        yield
    finally:
        del _OPEN[git_dir]
        reader.close()


def _git_files(git_dir: Path, commit: str) -> list[str]:
    if git_dir in _OPEN and len(commit) in (40, 64):
        return _OPEN[git_dir].files(commit)
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only",
                          commit], capture_output=True, check=False)
    if out.returncode:
        return []
    return [n for n in out.stdout.decode(errors="replace").split("\0") if n]


def _git_blob(git_dir: Path, commit: str, name: str) -> bytes | None:
    """A snapshot's text file, None when missing, binary or over MAX_SNAPSHOT_BYTES."""
    if git_dir in _OPEN:
        obj = _OPEN[git_dir].read(f"{commit}:{name}", MAX_SNAPSHOT_BYTES + 1)
        data = obj[1] if obj is not None and obj[0] == "blob" else None
    else:
        out = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{name}"],
                             capture_output=True, check=False)
        data = None if out.returncode else out.stdout
    if data is None or len(data) > MAX_SNAPSHOT_BYTES or b"\0" in data[:4096]:
        return None
    return data


def _read_record(run_dir: Path, rel: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of the regular file `rel` under `run_dir`, or None when it is absent,
    not a regular file, or reached through a symbolic link (a record the agent replaced by a
    link to a file elsewhere is not published)."""
    path = run_dir
    for part in rel.split("/")[:-1]:
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return None
    try:
        fd = os.open(run_dir / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(limit)
    finally:
        os.close(fd)


def _markdown(text: str) -> str:
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        from markupsafe import escape

        return f"<pre>{escape(text)}</pre>"
    # html=False: raw HTML in the (agent-influenced) text is shown as text, never parsed.
    # Refusing every link target leaves links, images and autolinks as their source text, so
    # no page refers to anything the agent named (a remote image would be a beacon).
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.validateLink = lambda url: False  # type: ignore[method-assign]
    return str(md.render(text))
