"""The report's trajectory viewer: `runs/<run>/trajectory.html`, one page per run showing how
the agent got to its score, turn by turn, on one timeline with everything else recorded.

Built from the run's records only: the parsed transcript (agent/events.jsonl, which a2rl's
launchers and the importers write; turns, tool calls with their arguments, commands with exit
codes, file edits, messages), the exec trace with each program's phase (analysis.json
`commands`), the phase of each turn (analysis.json `turns`), the submissions and their scores
(the ledger), the budget's end, the code snapshots (a unified diff between consecutive ones,
computed here with difflib and capped) and, for scaffold runs, journal entries and revision
checkpoints.

The timeline is cut into chunks of at most CHUNK_TURNS turns, each a script file
(`trajectory/chunk-N.js`) that hands its JSON to `A2RLTrajectory.register`: the page loads a
chunk when it scrolls into view, when an anchor (`#t=<seconds>`, `#turn-<n>`) points into it,
or when a search needs it. Script files rather than fetched JSON because Chromium refuses
fetch() from file://. The chunk data is JSON (a JavaScript literal with every non-ASCII
character and `<` escaped); trajectory.js builds the DOM with textContent only, so agent text
is never parsed as markup.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2rl.records import AgentEvent, Finding
    from a2rl.report._site import Site
    from a2rl.results import LoadedRun

CHUNK_TURNS = 200
"""Turns per chunk file."""
CHUNK_ITEMS = 2000
"""Timeline items per chunk when a run has few turns but many other records (exec trace)."""
MAX_TEXT = 4000
"""Characters kept of one text field (message, command line, journal entry)."""
MAX_DIFF_LINES = 400
"""Lines of unified diff kept per snapshot (the rest is cut, and the page says so)."""
MAX_DIFF_FILES = 30
MAX_JOURNAL = 5000
ASSETS = ("trajectory.js", "trajectory.css")
PAGE = "trajectory.html"
_EVIDENCE_PREFIX = re.compile(r"^[^\s:]+:\d+:\s*")


def _cut(text: Any, n: int = MAX_TEXT) -> str:
    s = str(text)
    return s if len(s) <= n else s[:n] + f" […{len(s) - n} more characters]"


def _js_literal(obj: Any) -> str:
    # ensure_ascii escapes U+2028/U+2029 (line ends in older JavaScript); `<` escaped so the
    # file reads the same whatever loads it.
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")


def _event_item(e: AgentEvent) -> dict[str, Any]:
    d: dict[str, Any] = {"k": e.kind, "t": round(e.t_s, 2)}
    for key, value in (("name", e.name), ("cmd", e.command), ("path", e.path), ("text", e.text)):
        if value:
            d[key] = _cut(value)
    if e.exit_code is not None:
        d["exit"] = e.exit_code
    if e.end_s is not None:
        d["end"] = round(e.end_s, 2)
    if e.kind == "usage":
        d["tokens"] = [e.input_tokens, e.output_tokens]
    extra = {k: _cut(v, 500) for k, v in e.extra.items()}
    if extra:
        d["extra"] = extra
    if (e.exit_code not in (None, 0)) or extra.get("error") not in (None, "", "0") or \
            extra.get("status") in ("error", "failed", "failure"):
        d["err"] = 1
    return d


def _turns(events: list[AgentEvent], phases: dict[int, str]) -> list[dict[str, Any]]:
    """One item per model turn, its events in order; a turn's time is its first event's."""
    by_turn: dict[int, list[AgentEvent]] = {}
    for e in events:
        by_turn.setdefault(e.turn, []).append(e)
    out = []
    for n in sorted(by_turn):
        evs = by_turn[n]
        items = [_event_item(e) for e in evs if e.kind != "turn"]
        head = next((e for e in evs if e.kind == "turn"), None)
        item: dict[str, Any] = {"k": "turn", "n": n, "t": round(min(e.t_s for e in evs), 2),
                                "ev": items,
                                "tools": sum(1 for e in evs if e.kind == "tool_call")}
        if head is not None and head.extra:
            item["extra"] = {k: _cut(v, 500) for k, v in head.extra.items()}
        if n in phases:
            item["phase"] = phases[n]
        if any(i.get("err") for i in items):
            item["err"] = 1
        out.append(item)
    return out


def _diff(git_dir: Path, old: str | None, new: str, changed: list[str]) -> tuple[str, bool]:
    from a2rl.report._html import _git_blob

    lines: list[str] = []
    cut = False
    for name in changed[:MAX_DIFF_FILES]:
        a = _git_blob(git_dir, old, name) if old else b""
        b = _git_blob(git_dir, new, name)
        if a is None or b is None:
            # _git_blob gives None for a binary or oversized file, and for a deleted one
            lines.append(f"--- {name}: binary, too large or deleted\n")
            continue
        lines.extend(difflib.unified_diff(
            (a or b"").decode(errors="replace").splitlines(keepends=True),
            (b or b"").decode(errors="replace").splitlines(keepends=True),
            fromfile=f"a/{name}", tofile=f"b/{name}", n=2))
        if len(lines) > MAX_DIFF_LINES:
            break
    if len(changed) > MAX_DIFF_FILES or len(lines) > MAX_DIFF_LINES:
        cut = True
    text = "".join(x if x.endswith("\n") else x + "\n" for x in lines[:MAX_DIFF_LINES])
    return _cut(text, 60_000), cut


def _snapshots(r: LoadedRun) -> list[dict[str, Any]]:
    import shutil

    from a2rl.recording import read_snapshots

    try:
        snaps = read_snapshots(r.path)
    except ValueError:
        return []
    git_dir = r.path / "code-history.git"
    have_git = git_dir.is_dir() and shutil.which("git") is not None
    out = []
    prev: str | None = None
    for s in snaps:
        item: dict[str, Any] = {"k": "snap", "t": round(s.elapsed_s, 2), "tag": s.tag,
                                "files": s.files, "changed": [_cut(c, 300) for c in s.changed[:50]]}
        if have_git and s.changed:
            item["diff"], cut = _diff(git_dir, prev, s.commit, s.changed)
            if cut:
                item["cut"] = 1
        prev = s.commit
        out.append(item)
    return out


def _scaffold(r: LoadedRun) -> list[dict[str, Any]]:
    """Journal entries (scaffold/journal.jsonl) and revision checkpoints (scaffold.json) of a
    scaffold run; a2rl's own runs only (an imported run publishes what its manifest lists)."""
    from a2rl.records import JournalEntry, ScaffoldAnalysis

    if r.record.imported is not None:
        return []
    out: list[dict[str, Any]] = []
    journal = r.path / "scaffold" / "journal.jsonl"
    if journal.is_file() and not journal.is_symlink():
        for line in journal.read_text(errors="replace").splitlines()[:MAX_JOURNAL]:
            try:
                j = JournalEntry.model_validate_json(line)
            except ValueError:
                continue
            out.append({"k": "journal", "t": round(j.elapsed_s, 2), "id": j.id, "kind": j.kind,
                        "author": j.author, "text": _cut(j.text)})
    path = r.path / "scaffold.json"
    if path.is_file() and not path.is_symlink():
        try:
            s = ScaffoldAnalysis.model_validate_json(path.read_text())
        except ValueError:
            s = None
        for c in s.checkpoints if s else []:
            out.append({"k": "ckpt", "t": round(c.opened_s, 2), "id": c.checkpoint_id,
                        "triggers": [_cut(x, 300) for x in c.triggers],
                        "action": c.action or "unanswered", "reason": _cut(c.reason or ""),
                        "followed": c.followed})
    return out


@dataclass
class Trajectory:
    """One run's viewer, written; what the run page links to."""

    href: str
    """The viewer page relative to the run page."""
    turns: list[dict[str, Any]]
    phases: list[dict[str, Any]] = field(default_factory=list)
    """Consecutive turns (or programs) of one phase: phase, start_s, end_s, first turn."""
    n_tools: int = 0

    def anchor(self, t_s: float | None) -> str:
        """The viewer at the first timeline item at or after `t_s` seconds."""
        return self.href if t_s is None else f"{self.href}#t={t_s:.2f}"

    def turn_anchor(self, n: int) -> str:
        return f"{self.href}#turn-{n}"

    def finding_anchor(self, f: Finding) -> str | None:
        """The turn whose command, path or text holds one of the finding's evidence lines
        (evidence reads `file:line: text`; the text is what is looked for), else None."""
        needles = [_EVIDENCE_PREFIX.sub("", ev).strip()[:160] for ev in f.evidence]
        needles = [n for n in needles if len(n) >= 4]
        for turn in self.turns:
            for ev in turn["ev"]:
                hay = " ".join(str(ev.get(k, "")) for k in ("cmd", "path", "text"))
                if any(n in hay or (len(hay) >= 8 and hay in n) for n in needles):
                    return self.turn_anchor(turn["n"])
        return None


def _phase_runs(turns: list[dict[str, Any]], commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Phases as spans: consecutive turns of one phase, else consecutive exec programs."""
    spans: list[dict[str, Any]] = []
    if any("phase" in t for t in turns):
        for t in turns:
            if "phase" not in t:
                continue
            if spans and spans[-1]["phase"] == t["phase"]:
                spans[-1]["end_s"] = t["t"]
                spans[-1]["turns"] += 1
            else:
                spans.append({"phase": t["phase"], "start_s": t["t"], "end_s": t["t"],
                              "turn": t["n"], "turns": 1})
        return spans
    for c in commands:
        phase, start = c.get("phase"), c.get("start_s")
        if not isinstance(phase, str) or not isinstance(start, int | float):
            continue
        end = c.get("end_s") if isinstance(c.get("end_s"), int | float) else start
        if spans and spans[-1]["phase"] == phase:
            spans[-1]["end_s"] = max(spans[-1]["end_s"], end)
        else:
            spans.append({"phase": phase, "start_s": start, "end_s": end, "turn": None,
                          "turns": 0})
    return spans


LOG_GAP_S = 5.0
"""A pause after which the agent's log starts a new block on the timeline."""
LOG_BLOCK_LINES = 40
MAX_LOG_BYTES = 4 << 20


def _log_blocks(run_dir: Path, publishable: list[str]) -> list[dict[str, Any]]:
    """The agent's own log (agent/transcript.log, each line at its recorded time) as timeline
    blocks, for an agent whose output is not a parsed transcript (the reference agent, a
    `cmd:` agent): consecutive lines within LOG_GAP_S of each other, at most LOG_BLOCK_LINES
    per block."""
    from a2rl.report._html import _read_record

    if "agent/transcript.log" not in publishable:
        return []
    raw = _read_record(run_dir, "agent/transcript.log", MAX_LOG_BYTES)
    times_raw = _read_record(run_dir, "agent/transcript.times", MAX_LOG_BYTES)
    if not raw or not times_raw:
        return []
    lines = raw.decode("utf-8", "replace").splitlines()
    times: list[float] = []
    for word in times_raw.decode("ascii", "replace").split():
        try:
            times.append(float(word))
        except ValueError:
            times.append(times[-1] if times else 0.0)
    blocks: list[tuple[float, float, list[str]]] = []  # (start, last line's time, lines)
    for line, t in zip(lines, times, strict=False):
        if not line.strip():
            continue
        if not blocks or t - blocks[-1][1] > LOG_GAP_S or len(blocks[-1][2]) >= LOG_BLOCK_LINES:
            blocks.append((t, t, []))
        start, _, block = blocks[-1]
        block.append(_cut(line, 1000))
        blocks[-1] = (start, t, block)
    return [{"k": "log", "t": round(max(0.0, start), 2), "text": "\n".join(block),
             "lines": len(block)} for start, _, block in blocks]


def _chunks(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    chunks: list[list[dict[str, Any]]] = [[]]
    turns = 0
    for item in items:
        cur = chunks[-1]
        if cur and ((item["k"] == "turn" and turns >= CHUNK_TURNS) or len(cur) >= CHUNK_ITEMS):
            chunks.append([])
            turns = 0
        chunks[-1].append(item)
        turns += item["k"] == "turn"
    return chunks if chunks[0] else []


def build(site: Site, r: LoadedRun, row: dict[str, Any], here: Path) -> Trajectory:
    """Write `<run>/trajectory.html` and its chunks beside the run page (in `here`); return
    what the run page links to."""
    from importlib.resources import files

    from a2rl.report._html import CSP, _deps

    jinja2, markupsafe, _ = _deps()

    stem = Path(site.page_of[row["run_id"]]).stem
    folder = here / stem
    data_dir = folder / "trajectory"
    data_dir.mkdir(parents=True, exist_ok=True)
    for name in ASSETS:
        (site.out / "assets" / name).write_bytes(
            files("a2rl.report").joinpath("assets", name).read_bytes())

    a = r.analysis
    phases = {int(t["turn"]): str(t["phase"]) for t in (a.turns if a else [])
              if isinstance(t.get("turn"), int) and isinstance(t.get("phase"), str)}
    # An imported run's event log is shown only when its import manifest lists it (as the run
    # page publishes only those records).
    events = (r.events or []) if "agent/events.jsonl" in site.publishable(r) else []
    turns = _turns(events, phases)
    items: list[dict[str, Any]] = list(turns)
    for c in a.commands if a else []:
        if not isinstance(c.get("start_s"), int | float):
            continue
        item = {"k": "exec", "t": round(float(c["start_s"]), 2), "cmd": _cut(c.get("argv", "")),
                "phase": str(c.get("phase") or ""), "exit": c.get("exit_code"),
                "end": c.get("end_s")}
        if c.get("exit_code") not in (None, 0):
            item["err"] = 1
        items.append(item)
    for s in r.submissions:
        if s.status == "pending" and any(o.id == s.id and o is not s for o in r.submissions):
            continue
        item = {"k": "sub", "t": round(s.elapsed_s or 0.0, 2), "id": s.id, "status": s.status,
                "score": s.score, "improvement": s.improvement}
        if s.error:
            item["error"] = _cut(s.error, 1000)
        if s.status not in ("scored", "baseline_copy", "pending"):
            item["err"] = 1
        items.append(item)
    items += _snapshots(r) + _scaffold(r)
    if not events:  # no parsed transcript: the agent's own log, line by line, instead
        items += _log_blocks(r.path, site.publishable(r))
    budget = r.record.config.budget_s if r.record.config else None
    if budget:
        items.append({"k": "budget", "t": round(float(budget), 2)})
    order = {"turn": 0, "log": 0, "exec": 1, "sub": 2, "snap": 3, "journal": 4, "ckpt": 5,
             "budget": 6}
    items.sort(key=lambda i: (i["t"], order.get(i["k"], 9), i.get("n", 0)))

    chunks = _chunks(items)
    index = []
    for i, chunk in enumerate(chunks):
        (data_dir / f"chunk-{i}.js").write_text(
            f"A2RLTrajectory.register({i},{_js_literal(chunk)});\n")
        tn = [x["n"] for x in chunk if x["k"] == "turn"]
        index.append({"src": f"trajectory/chunk-{i}.js", "t0": chunk[0]["t"],
                      "t1": chunk[-1]["t"], "turn0": min(tn) if tn else None,
                      "turn1": max(tn) if tn else None, "items": len(chunk), "turns": len(tn)})
    n_tools = sum(t["tools"] for t in turns)
    meta = {"run_id": row["run_id"], "turns": len(turns), "tools": n_tools,
            "log_lines": sum(i.get("lines", 0) for i in items if i["k"] == "log"),
            "commands": sum(1 for i in items if i["k"] == "exec"),
            "submissions": sum(1 for i in items if i["k"] == "sub"), "budget_s": budget,
            "chunks": index, "imported": row.get("imported") or None}
    env = jinja2.Environment(loader=jinja2.PackageLoader("a2rl.report", "templates"),
                             autoescape=True)
    html = env.get_template(PAGE).render(
        title=f"trajectory of {row['run_id']}", csp=CSP, root="../../",
        run_page=f"../{stem}.html", meta=meta,
        data=markupsafe.Markup(_js_literal(meta).replace(">", "\\u003e").replace("&", "\\u0026")))
    (folder / PAGE).write_text(html)
    return Trajectory(href=f"{stem}/{PAGE}", turns=turns,
                      phases=_phase_runs(turns, a.commands if a else []), n_tools=n_tools)


def phases_table(traj: Trajectory) -> str:
    """The run page's phase list, each phase linked to its first turn (or program)."""
    from markupsafe import escape

    if not traj.phases:
        return '<p class="note">no phases (run `a2rl analyze`)</p>'
    rows = []
    for s in traj.phases[:500]:
        href = traj.turn_anchor(s["turn"]) if s["turn"] is not None else traj.anchor(s["start_s"])
        rows.append(f'<tr><td><a href="{escape(href)}">{escape(s["phase"])}</a></td>'
                    f'<td>{s["start_s"] / 3600:.2f}</td><td>{s["end_s"] / 3600:.2f}</td>'
                    f'<td>{s["turns"]}</td></tr>')
    more = (f'<p class="note">{len(traj.phases) - 500} more phase spans in the viewer</p>'
            if len(traj.phases) > 500 else "")
    return ("<table><tr><th>phase</th><th>from h</th><th>to h</th><th>turns</th></tr>"
            + "".join(rows) + "</table>" + more)
