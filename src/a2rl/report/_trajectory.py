"""The report's trajectory viewer: `runs/<run>/trajectory.html`, one page per run showing how
the agent got to its score, turn by turn, on one timeline with everything else recorded.

Built from the run's records only: the parsed transcript (agent/events.jsonl, which a2rl's
launchers and the importers write: the prompts the agent received, turns, tool calls with
their arguments and outputs, commands with exit codes, file edits, messages; without one, the
agent's own log with each line's time, and the instructions a2rl gave it), the exec trace with
each program's phase (analysis.json `commands`), the phase of each turn (analysis.json
`turns`), the submissions and their scores (the ledger), the budget's end, the code snapshots
(a unified diff between consecutive ones, computed here with difflib and capped, of the agent's
own code only: checkpoints, weights and the files a2rl wrote into the workspace are listed
apart), links to each evaluation's per-item page (`_evaluations`) and, for scaffold runs,
journal entries and revision checkpoints.

The timeline is cut into chunks of at most CHUNK_TURNS turns or about CHUNK_BYTES of data, each
a script file (`trajectory/chunk-N.js`) that hands its JSON to `A2RLTrajectory.register`: the
page loads a chunk when it scrolls into view, when an anchor (`#t=<seconds>`, `#turn-<n>`)
points into it, or when a search needs it. Script files rather than fetched JSON because
Chromium refuses fetch() from file://. The chunk data is JSON (a JavaScript literal with every
non-ASCII character and `<` escaped); trajectory.js builds the DOM with textContent only, so
agent text is never parsed as markup.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2rl.report._context import SiteContext
    from a2rl.report._evaluations import Evaluation
    from a2rl.results import LoadedRun
    from a2rl.schema import AgentEvent, Finding

CHUNK_TURNS = 200
"""Turns per chunk file."""
CHUNK_ITEMS = 2000
"""Timeline items per chunk when a run has few turns but many other records (exec trace)."""
CHUNK_BYTES = 1 << 20
"""A chunk is closed once its data passes this size (turns with long tool outputs)."""
MAX_TEXT = 16384
"""Characters kept of one text field (message, command line, journal entry); tool outputs come
capped by the parser (records.OUTPUT_CAP)."""
MAX_PROMPT = 65536
"""Characters kept of a prompt the agent received."""
MAX_DIFF_LINES = 400
"""Lines of unified diff kept per snapshot (the rest is cut, and the page says so)."""
MAX_DIFF_FILES = 30
MAX_JOURNAL = 5000
MAX_INSTRUCTIONS_BYTES = 256 << 10
PAGE = "trajectory.html"
_EVIDENCE_PREFIX = re.compile(r"^[^\s:]+:\d+:\s*")

HARNESS_FILES = frozenset({"CLAUDE.md", "AGENTS.md", "GEMINI.md", "instructions.md",
                           "description.md", "timer.sh"})
"""Files a2rl writes at the workspace's root (the task, the clock, a CLI's memory file): not the
agent's code, even when the agent edits them."""
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".h5",
                   ".msgpack", ".npz")
MODEL_FILES = frozenset({"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                         "generation_config.json", "adapter_config.json", "trainer_state.json",
                         "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json",
                         "chat_template.jinja", "model.safetensors.index.json",
                         "preprocessor_config.json", "LARGE_FILES.json"})
"""Files a saved model or checkpoint consists of (with its weights and its config.json)."""
_CHECKPOINT_DIR = re.compile(r"^(checkpoints?|checkpoint[-_].*|ckpt[-_].*)$")


def _cut(text: Any, n: int = MAX_TEXT) -> str:
    s = str(text)
    return s if len(s) <= n else s[:n] + f" […{len(s) - n} more characters]"


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
    if e.output is not None:
        d["out"] = _cut(e.output)
        if e.output_chars is not None and e.output_chars > len(e.output):
            d["out_chars"] = e.output_chars
    if e.is_error:
        d["out_err"] = 1  # the tool said its call failed: its output is an error's
    extra = {k: _cut(v, 500) for k, v in e.extra.items()}
    if extra:
        d["extra"] = extra
    if e.is_error or (e.exit_code not in (None, 0)) or \
            extra.get("error") not in (None, "", "0") or \
            extra.get("status") in ("error", "failed", "failure"):
        d["err"] = 1
    return d


def _outputs_under_commands(items: list[dict[str, Any]]) -> None:
    """A shell call is a tool_call followed by its command event (paired by extra["call_id"],
    else adjacent): its output is shown once, under the command beside its exit code,
    whichever of the two carries it."""
    calls: dict[str, dict[str, Any]] = {}
    prev: dict[str, Any] | None = None
    for item in items:
        call_id = (item.get("extra") or {}).get("call_id")
        if item["k"] == "tool_call" and call_id:
            calls[call_id] = item
        call = calls.get(call_id) if call_id else prev if prev and prev["k"] == "tool_call" \
            else None
        prev = item
        if item["k"] != "command" or call is None or "out" not in call:
            continue
        if "out" not in item:
            item["out"] = call["out"]
            if "out_chars" in call:
                item["out_chars"] = call["out_chars"]
        if item["out"] == call["out"]:
            del call["out"]
            call.pop("out_chars", None)
            if call.get("out_err"):
                item["out_err"] = item["err"] = 1


def _prompt_item(t: float, text: str, source: str) -> dict[str, Any]:
    return {"k": "prompt", "t": round(t, 2), "text": _cut(text, MAX_PROMPT), "src": source}


def _turns(events: list[AgentEvent], phases: dict[int, str]
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one item per model turn, its events in order, a turn's time its first event's;
    the prompts the agent received, each an item of its own)."""
    by_turn: dict[int, list[AgentEvent]] = {}
    prompts: list[dict[str, Any]] = []
    for e in events:
        if e.kind == "prompt":
            prompts.append(_prompt_item(e.t_s, e.text or "", e.extra.get("source") or (
                "first prompt" if not prompts else "prompt")))
        else:
            by_turn.setdefault(e.turn, []).append(e)
    out = []
    for n in sorted(by_turn):
        evs = by_turn[n]
        items = [_event_item(e) for e in evs if e.kind != "turn"]
        _outputs_under_commands(items)
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
    return out, prompts


# ---- code snapshots ------------------------------------------------------------------------
def _model_dirs(files: list[str]) -> set[str]:
    """Folders that hold a saved model (weights or tokenizer/config companions)."""
    return {name.rpartition("/")[0] for name in files
            if name.endswith(WEIGHT_SUFFIXES) or name.rpartition("/")[2] in MODEL_FILES}


def file_role(name: str, model_dirs: set[str]) -> str:
    """"harness" (a file a2rl wrote at the workspace's root), "artifact" (a checkpoint's or
    saved model's file: weights, tokenizer, config.json beside them) or "code"."""
    folder, _, base = name.rpartition("/")
    if not folder and base in HARNESS_FILES:
        return "harness"
    if base.endswith(WEIGHT_SUFFIXES) or base in MODEL_FILES or \
            any(_CHECKPOINT_DIR.match(part) for part in folder.split("/") if part):
        return "artifact"
    if base == "config.json" and folder in model_dirs:
        return "artifact"
    return "code"


def _tree(git_dir: Path, commit: str) -> list[str]:
    """A snapshot's files, with the large ones it lists in LARGE_FILES.json (not copied)."""
    from a2rl.report._html import _git_blob, _git_files

    files = _git_files(git_dir, commit)
    if "LARGE_FILES.json" in files:
        try:
            large = json.loads(_git_blob(git_dir, commit, "LARGE_FILES.json") or b"[]")
        except ValueError:
            large = []
        files += [x["path"] for x in large if isinstance(x, dict) and isinstance(x.get("path"), str)]
    return files


def _diff(git_dir: Path, old: str | None, new: str, changed: list[str],
          new_files: list[str]) -> tuple[str, bool]:
    """The unified diff of `changed` from snapshot `old` (None: nothing before) to `new`; a
    file new in `new` diffs against nothing, a file gone from it against nothing."""
    from a2rl.report._html import _git_blob, _git_files

    old_files = set(_git_files(git_dir, old)) if old else set()
    present = set(new_files)
    lines: list[str] = []
    for name in changed[:MAX_DIFF_FILES]:
        a = _git_blob(git_dir, old, name) if old and name in old_files else b""
        b = _git_blob(git_dir, new, name) if name in present else b""
        if a is None or b is None:
            # _git_blob gives None for a binary or oversized file
            lines.append(f"--- {name}: binary or too large to show\n")
            continue
        lines.extend(difflib.unified_diff(
            a.decode(errors="replace").splitlines(keepends=True),
            b.decode(errors="replace").splitlines(keepends=True),
            fromfile=f"a/{name}" if a or name in old_files else "/dev/null",
            tofile=f"b/{name}" if name in present else "/dev/null", n=2))
        if len(lines) > MAX_DIFF_LINES:
            break
    cut = len(changed) > MAX_DIFF_FILES or len(lines) > MAX_DIFF_LINES
    text = "".join(x if x.endswith("\n") else x + "\n" for x in lines[:MAX_DIFF_LINES])
    return _cut(text, 60_000), cut


def _snapshots(r: LoadedRun) -> list[dict[str, Any]]:
    """One item per code snapshot: the agent's changed code with its diff from the previous
    snapshot, and apart from it the changed checkpoint/model files and harness-written files."""
    import shutil

    from a2rl.capture import read_snapshots

    try:
        snaps = read_snapshots(r.path)
    except ValueError:
        return []
    git_dir = r.path / "code-history.git"
    have_git = git_dir.is_dir() and shutil.which("git") is not None
    out = []
    prev: str | None = None
    for s in snaps:
        tree = _tree(git_dir, s.commit) if have_git and s.changed else []
        model_dirs = _model_dirs(tree)
        roles: dict[str, list[str]] = {"code": [], "artifact": [], "harness": []}
        for name in s.changed:
            roles[file_role(name, model_dirs)].append(name)
        item: dict[str, Any] = {"k": "snap", "t": round(s.elapsed_s, 2), "tag": s.tag,
                                "files": s.files,
                                "changed": [_cut(c, 300) for c in roles["code"][:50]],
                                "n_changed": len(roles["code"])}
        for role in ("artifact", "harness"):
            if roles[role]:
                item[role] = [_cut(c, 300) for c in roles[role][:50]]
                item[f"n_{role}"] = len(roles[role])
        if have_git and roles["code"]:
            item["diff"], cut = _diff(git_dir, prev, s.commit, roles["code"], tree)
            if cut:
                item["cut"] = 1
        prev = s.commit
        out.append(item)
    return out


def _scaffold(r: LoadedRun) -> list[dict[str, Any]]:
    """Journal entries (scaffold/journal.jsonl) and revision checkpoints (scaffold.json) of a
    scaffold run; a2rl's own runs only (an imported run publishes what its manifest lists)."""
    from a2rl.schema import JournalEntry, ScaffoldAnalysis

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
    evaluations: list[Evaluation] = field(default_factory=list)
    """The run's evaluations with a per-item page (hrefs relative to the run page)."""

    def anchor(self, t_s: float | None) -> str:
        """The viewer at the first timeline item at or after `t_s` seconds."""
        return self.href if t_s is None else f"{self.href}#t={t_s:.2f}"

    def turn_anchor(self, n: int) -> str:
        return f"{self.href}#turn-{n}"

    def finding_anchor(self, f: Finding) -> str | None:
        """The turn whose command, path, text or output holds one of the finding's evidence
        lines (evidence reads `file:line: text`; the text is what is looked for), else None."""
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


MAX_LOG_BYTES = 4 << 20


def _log_blocks(run_dir: Path, publishable: list[str], marks: list[float]) -> list[dict[str, Any]]:
    """The agent's own log (agent/transcript.log, each line at its time in transcript.times)
    as timeline blocks, for an agent whose output is not a parsed transcript (the reference
    agent, a `cmd:` agent): the blocks of `a2rl.agents.log_events` (lines written close
    together; none spans one of `marks`, the submissions' and snapshots' times, so each line
    sits among what happened around it), each with its lines' times."""
    from a2rl.agents import log_events
    from a2rl.report._html import _read_record

    if "agent/transcript.log" not in publishable:
        return []
    raw = _read_record(run_dir, "agent/transcript.log", MAX_LOG_BYTES)
    times_raw = _read_record(run_dir, "agent/transcript.times", MAX_LOG_BYTES)
    if not raw or not times_raw:
        return []
    times: list[float] = []
    for word in times_raw.decode("ascii", "replace").split():
        try:
            times.append(float(word))
        except ValueError:
            times.append(times[-1] if times else 0.0)
    lines = list(zip(times, raw.decode("utf-8", "replace").splitlines(), strict=False))
    out = []
    for e in log_events(lines, breaks=marks):
        line_times = [round(float(x), 2) for x in e.extra.get("times", "").split()]
        out.append({"k": "log", "t": round(e.t_s, 2), "text": e.text or "",
                    "times": line_times, "lines": len((e.text or "").split("\n"))})
    return out


PROMPT_RECORDS = (("agent/prompt.md", "first prompt (agent/prompt.md)"),
                  ("workspace/instructions.md", "instructions given to the agent "
                                                "(workspace/instructions.md)"))
"""Where the first prompt of a run whose transcript records none is read, in this order."""


def _recorded_prompt(r: LoadedRun) -> list[dict[str, Any]]:
    """The first prompt of a2rl's own run whose transcript holds none (a `cmd:` or reference
    agent reads the instructions a2rl wrote into its workspace), as a timeline item."""
    from a2rl.report._html import _read_record

    if r.record.imported is not None:
        return []
    for rel, label in PROMPT_RECORDS:
        raw = _read_record(r.path, rel, MAX_INSTRUCTIONS_BYTES)
        if raw:
            return [_prompt_item(0.0, raw.decode("utf-8", "replace"), label)]
    return []


def _chunks(items: list[dict[str, Any]]) -> list[tuple[list[dict[str, Any]], str]]:
    """The timeline in chunks, each with its data as a JavaScript literal."""
    from a2rl.report._html import js_literal

    chunks: list[tuple[list[dict[str, Any]], list[str]]] = []
    turns = size = 0
    for item in items:
        literal = js_literal(item)
        if not chunks or (item["k"] == "turn" and turns >= CHUNK_TURNS) or \
                len(chunks[-1][0]) >= CHUNK_ITEMS or size >= CHUNK_BYTES:
            chunks.append(([], []))
            turns = size = 0
        chunks[-1][0].append(item)
        chunks[-1][1].append(literal)
        turns += item["k"] == "turn"
        size += len(literal)
    return [(chunk, "[" + ",".join(literals) + "]") for chunk, literals in chunks]


ORDER = {"prompt": -1, "turn": 0, "log": 0, "exec": 1, "sub": 2, "snap": 3, "journal": 4,
         "ckpt": 5, "budget": 6}
"""Items at the same second, in this order."""


def build(site: SiteContext, r: LoadedRun, row: dict[str, Any], here: Path) -> Trajectory:
    """Write `<run>/trajectory.html`, its chunks and the run's evaluation pages beside the
    run page (in `here`); return what the run page links to."""
    from a2rl.report import _evaluations
    from a2rl.report._html import CSP, _deps, js_literal, render_template
    from a2rl.report._published import publishable

    _, markupsafe, _ = _deps()

    stem = Path(site.page_of[row["run_id"]]).stem
    folder = here / stem
    data_dir = folder / "trajectory"
    data_dir.mkdir(parents=True, exist_ok=True)
    evaluations = _evaluations.build(r, folder)

    a = r.analysis
    phases = {int(t["turn"]): str(t["phase"]) for t in (a.turns if a else [])
              if isinstance(t.get("turn"), int) and isinstance(t.get("phase"), str)}
    # An imported run's event log is shown only when its import manifest lists it (as the run
    # page publishes only those records).
    events = (r.events or []) if "agent/events.jsonl" in publishable(r) else []
    turns, prompts = _turns(events, phases)
    items: list[dict[str, Any]] = list(turns) + (prompts or _recorded_prompt(r))
    for c in a.commands if a else []:
        if not isinstance(c.get("start_s"), int | float):
            continue
        item = {"k": "exec", "t": round(float(c["start_s"]), 2), "cmd": _cut(c.get("argv", "")),
                "phase": str(c.get("phase") or ""), "exit": c.get("exit_code"),
                "end": c.get("end_s")}
        if c.get("exit_code") not in (None, 0):
            item["err"] = 1
        items.append(item)
    eval_pages = {e.id: e.href for e in evaluations}
    for s in r.submissions:
        if s.status == "pending" and any(o.id == s.id and o is not s for o in r.submissions):
            continue
        item = {"k": "sub", "t": round(s.elapsed_s or 0.0, 2), "id": s.id, "status": s.status,
                "score": s.score, "improvement": s.improvement}
        if s.error:
            item["error"] = _cut(s.error, 1000)
        if s.status not in ("scored", "baseline_copy", "pending"):
            item["err"] = 1
        if s.id in eval_pages:
            item["eval"] = eval_pages[s.id]
        items.append(item)
    items += _snapshots(r) + _scaffold(r)
    if not events:  # no parsed transcript: the agent's own log, line by line, instead
        marks = sorted(i["t"] for i in items if i["k"] in ("sub", "snap", "journal", "ckpt"))
        items += _log_blocks(r.path, publishable(r), marks)
    budget = r.record.config.budget_s if r.record.config else None
    if budget:
        items.append({"k": "budget", "t": round(float(budget), 2)})
    items.sort(key=lambda i: (i["t"], ORDER.get(i["k"], 9), i.get("n", 0)))

    index = []
    for i, (chunk, literal) in enumerate(_chunks(items)):
        (data_dir / f"chunk-{i}.js").write_text(f"A2RLTrajectory.register({i},{literal});\n")
        tn = [x["n"] for x in chunk if x["k"] == "turn"]
        index.append({"src": f"trajectory/chunk-{i}.js", "t0": chunk[0]["t"],
                      "t1": chunk[-1]["t"], "turn0": min(tn) if tn else None,
                      "turn1": max(tn) if tn else None, "items": len(chunk), "turns": len(tn)})
    n_tools = sum(t["tools"] for t in turns)
    meta = {"run_id": row["run_id"], "turns": len(turns), "tools": n_tools,
            "outputs": sum(1 for t in turns for e in t["ev"] if "out" in e),
            "log_lines": sum(i.get("lines", 0) for i in items if i["k"] == "log"),
            "commands": sum(1 for i in items if i["k"] == "exec"),
            "submissions": sum(1 for i in items if i["k"] == "sub"), "budget_s": budget,
            "chunks": index, "imported": row.get("imported") or None,
            "evaluations": [{"id": e.id, "href": e.href, "n": e.items}
                            for e in evaluations]}
    html = render_template(
        PAGE, title=f"trajectory of {row['run_id']}", csp=CSP, root="../../",
        run_page=f"../{stem}.html", meta=meta,
        data=markupsafe.Markup(js_literal(meta).replace(">", "\\u003e").replace("&", "\\u0026")))
    (folder / PAGE).write_text(html)
    return Trajectory(href=f"{stem}/{PAGE}", turns=turns,
                      phases=_phase_runs(turns, a.commands if a else []), n_tools=n_tools,
                      evaluations=[e.relative_to(stem) for e in evaluations])


def phases_table(traj: Trajectory) -> str:
    """The run page's phase list (times as h:mm:ss), each phase linked to its first turn (or
    program)."""
    from markupsafe import escape

    from a2rl.report._html import clock

    if not traj.phases:
        return '<p class="note">no phases (run `a2rl analyze`)</p>'
    rows = []
    for s in traj.phases[:500]:
        href = traj.turn_anchor(s["turn"]) if s["turn"] is not None else traj.anchor(s["start_s"])
        rows.append(f'<tr><td><a href="{escape(href)}">{escape(s["phase"])}</a></td>'
                    f'<td>{clock(s["start_s"])}</td><td>{clock(s["end_s"])}</td>'
                    f'<td>{clock(s["end_s"] - s["start_s"])}</td><td>{s["turns"]}</td></tr>')
    more = (f'<p class="note">{len(traj.phases) - 500} more phase spans in the viewer</p>'
            if len(traj.phases) > 500 else "")
    return ("<table><tr><th>phase</th><th>from</th><th>to</th><th>duration</th><th>turns</th>"
            "</tr>" + "".join(rows) + "</table>" + more)


def evaluations_list(traj: Trajectory) -> str:
    """The run page's links to each evaluation's per-item page."""
    from markupsafe import escape

    if not traj.evaluations:
        return '<p class="note">no per-item records (evals/*/details.jsonl) for this run</p>'
    return "<p>Per-item prompts, completions and verdicts: " + " · ".join(
        f'<a href="{escape(e.href)}">{escape(e.id)}</a> ({e.items} item{"s" * (e.items != 1)}'
        + (f", {e.right} right" if e.right is not None else "") + ")"
        for e in traj.evaluations) + "</p>"
