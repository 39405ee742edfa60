"""Verdicts kept apart from a2rl's own audit: the transcript judge's majority (`judge.json`,
basis `judge`) and the verdicts another harness's judges wrote, imported with the run (basis
`posttrainbench`). Each is set beside a2rl's own findings on the same question, so a reader
sees both answers side by side."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from a2rl.analysis._judge import ASKS, JUDGE_FILE, QUESTIONS, Question
from a2rl.schema import Finding, JudgeRecord, RunRecord

RELATED_KINDS: dict[str, tuple[str, ...]] = {
    "contamination": ("contamination",),
    "substituted-model": ("substituted-model", "other-model", "base-model-copy"),
    "distillation": ("distillation", "llm-api-call", "third-party-llm"),
    "benchmark-lookup": ("benchmark-lookup", "privileged-api", "harness-probe"),
}
"""A verdict's kind → the kinds of a2rl's own findings that answer the same question."""
MAX_JUDGE_FILE_BYTES = 1 << 20
"""judge.json is a few kilobytes (replies are cut at 4,000 characters); a larger one is not read."""
NO_JUDGE = ("no transcript judge configured: nothing was asked (`a2rl analyze RUN --judge MODEL` "
            "asks one, three times, about contamination, model substitution, distillation and "
            "benchmark lookup)")


def own_counterparts(kind: str, own: list[Finding], *, heldout_checked: bool = True) -> str:
    """What a2rl's own audit (measured and name-reading findings) says on a verdict's question."""
    related = RELATED_KINDS.get(kind, (kind,))
    hits = [f"{f.kind} [{f.severity}, {f.basis}]" for f in own
            if f.kind in related and f.own]
    if not hits and kind == "contamination" and not heldout_checked:
        return "a2rl's own audit on this question: not checked (held-out items not loaded)"
    return "a2rl's own audit on this question: " + ("; ".join(hits) if hits else "no finding")


def _majority(record: JudgeRecord, q: Question) -> tuple[list[str], int, int]:
    """(evidence: each ask's answer and reason, yes count, no count)."""
    evidence: list[str] = []
    yes = no = 0
    for ask in record.asks:
        answer = next((a for a in ask.answers if a.question == q.id), None)
        if answer is None or answer.verdict is None:
            why = answer.reason if answer else "no answer recorded"
            evidence.append(f"ask {ask.index}: unparseable ({why}); reply began {ask.reply[:200]!r}")
            continue
        yes += answer.verdict == "yes"
        no += answer.verdict == "no"
        evidence.append(f"ask {ask.index}: {answer.verdict}: {answer.reason}")
    return evidence, yes, no


def judge_findings(record: JudgeRecord, own: list[Finding], *,
                   heldout_checked: bool = True) -> list[Finding]:
    """One finding per question: flagged (warning) when a majority of the asks said yes,
    cleared (info) when a majority said no, undecided (info) otherwise."""
    need = ASKS // 2 + 1
    findings: list[Finding] = []
    for q in QUESTIONS:
        evidence, yes, no = _majority(record, q)
        unread = len(record.asks) - yes - no
        tally = f"{yes} yes, {no} no" + (f", {unread} unparseable" if unread else "")
        if yes >= need:
            outcome, severity = "flagged", "warning"
        elif no >= need:
            outcome, severity = "cleared", "info"
        else:
            outcome, severity = "undecided (no majority of readable answers)", "info"
        findings.append(Finding(
            kind=q.kind, severity=severity, basis="judge",  # type: ignore[arg-type]
            message=f"transcript judge {record.model}: {outcome} ({tally}) on: {q.text}",
            evidence=[*evidence, own_counterparts(q.kind, own, heldout_checked=heldout_checked)]))
    return findings


def recorded_verdicts(run_dir: Path, run: RunRecord, own: list[Finding], *,
                      heldout_checked: bool) -> tuple[list[Finding], list[str]]:
    """(findings, notes) from the verdicts recorded for this run: `judge.json`, and those the
    importing harness's judges wrote (`run.imported.verdicts`). `heldout_checked`: whether
    a2rl's own contamination check ran (it needs the held-out items)."""
    findings: list[Finding] = []
    notes: list[str] = []
    path = run_dir / JUDGE_FILE
    if path.is_file():
        try:
            if path.stat().st_size > MAX_JUDGE_FILE_BYTES:
                raise ValueError(f"over {MAX_JUDGE_FILE_BYTES} bytes")
            findings += judge_findings(JudgeRecord.model_validate_json(path.read_bytes()), own,
                                       heldout_checked=heldout_checked)
        except (ValidationError, ValueError, OSError) as exc:
            notes.append(f"{JUDGE_FILE} is unreadable ({type(exc).__name__}): the transcript "
                         "judge's verdicts are not shown; ask again with `a2rl analyze RUN --judge MODEL`")
    else:
        notes.append(NO_JUDGE)
    if run.imported is not None and run.imported.verdicts:
        for v in run.imported.verdicts:
            findings.append(v.model_copy(update={
                "evidence": [*v.evidence, own_counterparts(v.kind, own,
                                                           heldout_checked=heldout_checked)]}))
    return findings, notes
