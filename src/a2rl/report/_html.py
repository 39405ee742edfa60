"""The building blocks of the report's pages: a page and its charts, tables, Markdown shown
safely, the Content-Security-Policy, and bounded reads of a run's records and snapshots. Every
string from a record may be the agent's: it is escaped (or rendered with raw HTML and links off)
before it reaches a page."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from collections.abc import Sequence
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
        from markupsafe import Markup, escape

        if fig is None:
            self.parts.append(Markup(f'<p class="note">{escape(empty)}</p>'))
            return
        cid = f"chart{len(self.charts) + 1}"
        self.charts.append({"id": cid, "json": Markup(_safe_json(_plain_labels(fig.to_json())))})
        self.parts.append(Markup(f'<div class="chart" id="{cid}" data-figure="{cid}"></div>'))


_PLOTLY_TAG = re.compile(r"<(?!/?(?:br|b|extra)>)")


def _plain_labels(fig_json: str) -> str:
    """The figure with every `<` in its strings shown as text except the bare `<br>`, `<b>` and
    `<extra>` the charts use: plotly reads its labels as a small HTML subset (`<a href>`,
    `<span style>`), and trace names and labels come from records (routes, phases, methods)."""

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return _PLOTLY_TAG.sub("&lt;", v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return json.dumps(walk(json.loads(fig_json)))


def _safe_json(text: str) -> str:
    # Inside <script type="application/json"> a `</script>` in a string would end the element;
    # the \\u escapes keep the JSON identical while no tag can appear.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


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
    from markupsafe import Markup, escape

    out = ["<table>", header_html]
    out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr>")
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        cells = "".join(f"<td>{c if isinstance(c, Markup) else escape(_fmt(c))}</td>" for c in row)
        out.append(f"<tr{cls}>{cells}</tr>")
    out.append("</table>")
    return "\n".join(out)


def _git_files(git_dir: Path, commit: str) -> list[str]:
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only",
                          commit], capture_output=True, check=False)
    if out.returncode:
        return []
    return [n for n in out.stdout.decode(errors="replace").split("\0") if n]


def _git_blob(git_dir: Path, commit: str, name: str) -> bytes | None:
    out = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{name}"],
                         capture_output=True, check=False)
    if out.returncode or len(out.stdout) > MAX_SNAPSHOT_BYTES or b"\0" in out.stdout[:4096]:
        return None
    return out.stdout


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
