"""The certificate as files (`certificate.json`, `certificate.md`, `certificate.html`, a page
that works offline) and a task loaded from a folder (a task a user is writing)."""

from __future__ import annotations

import html
import importlib.util
import inspect
import sys
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text
from a2rl.certify._certify import Certificate, Scored
from a2rl.tasks import InteractiveTask, StaticTextTask, Task


def load_task_folder(folder: Path) -> type[Task]:
    """The Task subclass a task folder defines (its `task.py`, else its `__init__.py`), imported
    as a module of its own; registration is not needed."""
    source = next((folder / n for n in ("task.py", "__init__.py") if (folder / n).is_file()), None)
    if source is None:
        raise A2RLError(f"{folder} holds no task.py or __init__.py",
                        "pass a task folder (like examples/tasks/reverse) or a task name from "
                        "`a2rl tasks list`")
    name = f"a2rl_certify_{abs(hash(folder.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, source,
                                                  submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        raise A2RLError(f"cannot import {source}", "check that it is a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    found = [obj for obj in vars(module).values()
             if inspect.isclass(obj) and issubclass(obj, Task) and obj.__module__ == name
             and not inspect.isabstract(obj) and obj not in (Task, StaticTextTask, InteractiveTask)]
    if len(found) != 1:
        raise A2RLError(f"{source} defines {len(found)} task classes "
                        f"({', '.join(c.__name__ for c in found) or 'none'})",
                        "define exactly one subclass of a2rl.tasks.StaticTextTask or "
                        "InteractiveTask in it")
    return found[0]


def _fmt(s: Scored) -> str:
    if s.status != "scored" or s.score is None:
        return f"{s.status}: {s.reason}" if s.reason else s.status
    ci = f" [{s.interval.low:.1f}, {s.interval.high:.1f}]" if s.interval else ""
    return f"{s.score:.1f}{ci}"


def _verdict(cert: Certificate) -> str:
    if cert.passed is True:
        return "PASSED: no adversarial class scores above the base model's interval"
    if cert.passed is False:
        return "FAILED: classes that win: " + ", ".join(cert.winners)
    if not any(c.status == "scored" for c in cert.classes):
        return "UNDECIDED: no class could be scored (see the reasons below)"
    return "UNDECIDED: some class scores above zero and no base model was scored"


def certificate_markdown(cert: Certificate) -> str:
    lines = [f"# Scorer certificate: {cert.task} (version {cert.task_version})", "",
             f"**{_verdict(cert)}**", "",
             f"- scorer: {cert.scorer}",
             f"- held-out items certified: {cert.items}; fingerprint `{cert.fingerprint[:16]}`",
             f"- base model ({cert.base_model or 'none'}): {_fmt(cert.base)}",
             f"- reference solution: {_fmt(cert.reference)}",
             f"- a2rl {cert.a2rl_version}, {cert.created_at:%Y-%m-%d %H:%M} UTC", "",
             "| class | score [95% CI] | wins | what it does |", "|---|---|---|---|"]
    for c in cert.classes:
        wins = {True: "**yes**", False: "no", None: "—"}[c.wins]
        lines.append(f"| {c.name} | {_fmt(c).replace('|', '/')} | {wins} | "
                     f"{c.description.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def _html(cert: Certificate) -> str:
    esc = html.escape
    rows = "".join(
        f"<tr class='{'win' if c.wins else ''}'><td>{esc(c.name)}</td><td>{esc(_fmt(c))}</td>"
        f"<td>{ {True: 'yes', False: 'no', None: '—'}[c.wins] }</td>"
        f"<td>{esc(c.description)}</td></tr>" for c in cert.classes)
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>Scorer certificate: {esc(cert.task)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:70em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left}}
tr.win{{background:#fdd}}.v{{font-weight:bold}}</style></head><body>
<h1>Scorer certificate: {esc(cert.task)} <small>(version {esc(cert.task_version)})</small></h1>
<p class="v">{esc(_verdict(cert))}</p>
<ul><li>scorer: {esc(cert.scorer)}</li>
<li>held-out items certified: {cert.items}</li>
<li>base model ({esc(cert.base_model or 'none')}): {esc(_fmt(cert.base))}</li>
<li>reference solution: {esc(_fmt(cert.reference))}</li>
<li>a2rl {esc(cert.a2rl_version)}, {cert.created_at:%Y-%m-%d %H:%M} UTC</li></ul>
<table><tr><th>class</th><th>score [95% CI]</th><th>wins</th><th>what it does</th></tr>
{rows}</table></body></html>
"""


def write_certificate(cert: Certificate, out_dir: Path) -> Path:
    """certificate.json, .md and .html in `out_dir`; returns the JSON's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "certificate.json"
    atomic_write_text(path, cert.model_dump_json(indent=1) + "\n")
    atomic_write_text(out_dir / "certificate.md", certificate_markdown(cert))
    atomic_write_text(out_dir / "certificate.html", _html(cert))
    return path
