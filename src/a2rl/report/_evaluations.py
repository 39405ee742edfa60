"""The report's per-item pages of a run's evaluations: `runs/<run>/evals/<id>.html`, one per
evaluation with per-item records (`evals/<id>/details.jsonl`: the baseline's and each scored
submission's), listing every item's prompt, completion and verdict.

Tasks write their own detail rows (a static task: id, prompt, completion, extracted, answer,
score; HumanEval: task_id, completions, pass counts; an interactive task: an episode with its
steps), so a row is read for the fields it has: an id, a prompt, a completion, a verdict (the
first of VERDICT_KEYS that is a number or a boolean) and every other field as text.

A 2,000-item evaluation stays light: the items go into script files of PAGE_ITEMS rows each
(`evals/<id>/page-N.js`, calling `A2RLEvaluation.register`), loaded when their page is shown or
when a filter needs them; evaluation.js builds the DOM with textContent only, so completions
(model output) are never parsed as markup. An imported run has no evaluation pages: its import
manifest lists only the records the importer wrote.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2rl.results import LoadedRun

PAGE_ITEMS = 100
"""Items per page file."""
MAX_DETAILS_BYTES = 64 << 20
"""An evaluation's details.jsonl is read up to this size (the page says when it was cut)."""
MAX_FIELD = 8000
"""Characters kept of a prompt or a completion."""
MAX_OTHER = 1000
"""Characters kept of any other field."""
MAX_FIELDS = 30
MAX_EVALUATIONS = 500
ID_KEYS = ("id", "task_id", "item_id", "episode_id", "instance_id")
PROMPT_KEYS = ("prompt", "instruction", "question", "input", "messages")
COMPLETION_KEYS = ("completion", "completions", "response", "output_text", "steps", "actions")
VERDICT_KEYS = ("score", "correct", "passed", "success", "reward", "n_correct")
PAGE = "evaluation.html"
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")


@dataclass(frozen=True)
class Evaluation:
    """One evaluation's page, written."""

    id: str
    """The evaluation's folder under evals/ (`baseline`, a submission id)."""
    href: str
    """Its page, relative to the trajectory page's folder (or the run page, after
    `relative_to`)."""
    items: int
    right: int | None
    """Items with a full verdict (score 1, true); None when no row has a verdict."""
    cut: bool = False

    def relative_to(self, folder: str) -> Evaluation:
        return replace(self, href=f"{folder}/{self.href}")


def _text(value: Any, n: int) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value) and len(value) > 1:
        value = "\n".join(f"── sample {i + 1} ──\n{v}" for i, v in enumerate(value))
    elif isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]
    s = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False,
                                                        default=str)
    return s if len(s) <= n else s[:n] + f" […{len(s) - n} more characters]"


def _verdict(value: Any) -> tuple[Any, str] | None:
    """(the verdict shown, right/wrong/partial) of a score-like value, or None."""
    if isinstance(value, bool):
        return value, "right" if value else "wrong"
    if isinstance(value, int | float) and value == value:
        return value, "right" if value >= 1 else "wrong" if value <= 0 else "partial"
    return None


def item(row: dict[str, Any], index: int) -> dict[str, Any]:
    """One detail row as the page shows it: i, id, prompt, completion, verdict, class, fields."""
    out: dict[str, Any] = {"i": index}
    used: set[str] = set()
    for keys, name, n in ((ID_KEYS, "id", 300), (PROMPT_KEYS, "prompt", MAX_FIELD),
                          (COMPLETION_KEYS, "completion", MAX_FIELD)):
        key = next((k for k in keys if row.get(k) not in (None, "", [])), None)
        if key is not None:
            out[name] = _text(row[key], n)
            used.add(key)
    for key in VERDICT_KEYS:
        v = _verdict(row.get(key))
        if v is not None:
            out["verdict"], out["cls"] = f"{key} {v[0]}", v[1]
            used.add(key)
            break
    rest = {k: _text(v, MAX_OTHER) for k, v in list(row.items())[:MAX_FIELDS + len(used)]
            if k not in used and v is not None}
    if rest:
        out["fields"] = rest
    return out


def _rows(raw: bytes) -> list[dict[str, Any]]:
    rows = []
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a torn last line, or not JSON: the rest is still shown
        rows.append(obj if isinstance(obj, dict) else {"value": obj})
    return rows


def _order(name: str) -> tuple[int, str]:
    return (0 if name == "baseline" else 1, name)


def build(r: LoadedRun, folder: Path) -> list[Evaluation]:
    """Write `folder/evals/<id>.html` and its page files for each of the run's evaluations
    with per-item records; return them, hrefs relative to `folder`."""
    from a2rl.report._html import CSP, _deps, _read_record, js_literal, render_template

    evals_dir = r.path / "evals"
    if r.record.imported is not None or not evals_dir.is_dir() or evals_dir.is_symlink():
        return []
    names = sorted((p.name for p in evals_dir.iterdir() if _SAFE_ID.match(p.name)),
                   key=_order)[:MAX_EVALUATIONS]
    _, markupsafe, _ = _deps()
    out: list[Evaluation] = []
    for name in names:
        raw = _read_record(r.path, f"evals/{name}/details.jsonl", MAX_DETAILS_BYTES + 1)
        if raw is None:
            continue
        cut = len(raw) > MAX_DETAILS_BYTES
        items = [item(row, i) for i, row in enumerate(_rows(raw[:MAX_DETAILS_BYTES]))]
        data_dir = folder / "evals" / name
        data_dir.mkdir(parents=True, exist_ok=True)
        pages: list[str] = []
        for k in range(0, len(items), PAGE_ITEMS):
            (data_dir / f"page-{len(pages)}.js").write_text(
                f"A2RLEvaluation.register({len(pages)},{js_literal(items[k:k + PAGE_ITEMS])});\n")
            pages.append(f"{name}/page-{len(pages)}.js")
        counts = {c: sum(1 for x in items if x.get("cls") == c)
                  for c in ("right", "wrong", "partial")}
        judged = any("cls" in x for x in items)
        meta = {"id": name, "n_items": len(items), "pages": pages, "page_items": PAGE_ITEMS,
                "counts": counts if judged else None, "cut": cut}
        html = render_template(
            PAGE, title=f"evaluation {name} of {r.record.run_id}", csp=CSP, root="../../../",
            trajectory="../trajectory.html", meta=meta, cut_mb=MAX_DETAILS_BYTES >> 20,
            data=markupsafe.Markup(js_literal(meta).replace(">", "\\u003e")
                                   .replace("&", "\\u0026")))
        (folder / "evals" / f"{name}.html").write_text(html)
        out.append(Evaluation(id=name, href=f"evals/{name}.html", items=len(items),
                              right=counts["right"] if judged else None, cut=cut))
    return out
