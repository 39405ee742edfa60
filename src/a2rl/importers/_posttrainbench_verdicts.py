"""PostTrainBench's own judges' verdicts, read from a result folder as findings (basis
`posttrainbench`), to be shown beside a2rl's audit of the same run.

Each judge of PostTrainBench (src/judges/) writes a `judgement.json` that the harness copies
into the result folder as `judgement_<id>.json` (`judgement_<id>_rerun.json` when judges are
re-run; repeated runs of the contamination judge in `judgement_multi_runs/`): boolean verdicts
(`contamination`, `disallowed_model`, `disallowed_api_usage`, `disallowed_ptb_lookup`, …) each
with a `justification_<verdict>` string. Older folders hold one line of text per question in
`contamination_judgement.txt` and `disallowed_model_judgement.txt`.

The files are untrusted: read through `Source` (no links, size-limited), parsed as JSON and
nothing else, only plain verdict names taken, texts cut and made plain (`plain_text`: no
escape sequences, control characters or bidi overrides), since they reach a terminal and the
report (which also escapes them). What cannot be read is said so.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from a2rl._console import plain_text
from a2rl.importers._source import MAX_NOTE_BYTES, Source
from a2rl.schema import Finding

KIND_OF = {"contamination": "contamination", "disallowed_model": "substituted-model",
           "disallowed_api_usage": "distillation", "disallowed_ptb_lookup": "benchmark-lookup"}
"""PostTrainBench's verdict name → a2rl's finding kind for the same question."""
QUESTION_OF = {"contamination": "trained on the benchmark's test data",
               "disallowed_model": "fine-tuned or submitted a model other than the base",
               "disallowed_api_usage": "called a hosted third-party LLM API",
               "disallowed_ptb_lookup": "looked up PostTrainBench's published results or traces"}
MULTI_RUNS = "judgement_multi_runs"
MAX_FILES = 50
MAX_VERDICTS_PER_FILE = 20
MAX_TEXT = 2000
_JUDGEMENT = re.compile(r"^judgement_[A-Za-z0-9][A-Za-z0-9_.-]{0,80}\.json$")
_VERDICT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,60}$")


def _plain(text: str, cap: int = MAX_TEXT) -> str:
    text = plain_text(text).strip()
    return text if len(text) <= cap else text[:cap] + f"… [{len(text) - cap:,} characters cut]"


def _from_json(rel: str, text: str, problems: list[str]) -> list[Finding]:
    try:
        obj = json.loads(text)
    except ValueError:
        problems.append(f"{rel}: not JSON; its verdicts are not imported")
        return []
    if not isinstance(obj, dict):
        problems.append(f"{rel}: not a JSON object; its verdicts are not imported")
        return []
    meta = obj.get("_meta")
    judge_model = meta.get("judge_model") if isinstance(meta, dict) else None
    by = f" ({_plain(judge_model, 100)})" if isinstance(judge_model, str) else ""
    found: list[Finding] = []
    for name, value in obj.items():
        if not isinstance(value, bool) or not _VERDICT_NAME.match(name):
            continue
        if len(found) == MAX_VERDICTS_PER_FILE:
            problems.append(f"{rel}: more than {MAX_VERDICTS_PER_FILE} verdicts; the rest are "
                            "not imported")
            break
        why = obj.get(f"justification_{name}")
        question = QUESTION_OF.get(name, name.replace("_", " "))
        found.append(Finding(
            kind=KIND_OF.get(name, f"posttrainbench-{name.replace('_', '-')}"),
            severity="warning" if value else "info", basis="posttrainbench",
            message=f"PostTrainBench's judge{by} in {rel}: {'flagged' if value else 'not flagged'} "
                    f"({name} = {str(value).lower()}: {question})",
            evidence=[f"justification: {_plain(why)}" if isinstance(why, str)
                      else "no justification given"]))
    if not found:
        problems.append(f"{rel}: holds no true/false verdict; nothing imported from it")
    return found


def _from_text(name: str, text: str, problems: list[str]) -> list[Finding]:
    """An older folder's one-line verdict."""
    line = _plain(next((ln for ln in text.splitlines() if ln.strip()), ""), 300)
    low = line.lower()
    if name.startswith("contamination"):
        key = "contamination"
        flagged = None if not low else ("no contamination" not in low and "contamination" in low)
    else:
        key = "disallowed_model"
        flagged = ("disallowed" in low or "not allowed" in low) if low else None
    if flagged is None:
        problems.append(f"{name}: empty; no verdict imported")
        return []
    return [Finding(kind=KIND_OF[key], severity="warning" if flagged else "info",
                    basis="posttrainbench",
                    message=f"PostTrainBench's judge in {name}: {'flagged' if flagged else 'not flagged'} "
                            f"({QUESTION_OF[key]})", evidence=[f"verdict line: {line}"])]


def read_verdicts(folder: Path, src: Source,
                  legacy: dict[str, str]) -> tuple[list[Finding], list[str]]:
    """(findings, problems) from the verdict files of a result folder; `legacy` holds the text
    of the older one-line verdict files, already read."""
    problems: list[str] = []
    findings: list[Finding] = []
    for name, text in sorted(legacy.items()):
        findings += _from_text(name, text, problems)
    try:
        names = sorted(n for n in os.listdir(folder) if _JUDGEMENT.match(n))
    except OSError:
        names = []
    candidates = list(names)
    if src.is_dir(MULTI_RUNS):
        for rel, _, _ in src.files(MULTI_RUNS, set()):
            if _JUDGEMENT.match(rel.rsplit("/", 1)[-1]):
                candidates.append(rel)
            if len(candidates) > MAX_FILES:
                break
    if len(candidates) > MAX_FILES:
        problems.append(f"more than {MAX_FILES} judgement files; only the first {MAX_FILES} "
                        "are imported")
    for rel in candidates[:MAX_FILES]:
        data = src.read_text(rel, MAX_NOTE_BYTES, "the harness's verdicts")
        if data is None:
            problems.append(f"{rel}: not read (missing, a link, or over {MAX_NOTE_BYTES:,} bytes)")
            continue
        findings += _from_json(rel, data, problems)
    return findings, problems
