"""The analysis of a scaffold run: journal use, suggestion adoption (the trajectory study's Figure 4
asymmetry), plan-review outcomes, revision decisions and whether behaviour followed them,
inference tokens against the autonomous baseline, and the time spent in scaffold tools.

Adoption is judged on behaviour, not on what the agent says: the strategy state of each
verified training experiment (k/d/g of analysis.json) and the recorded code snapshots.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from a2rl._util import atomic_write_text
from a2rl.analysis import span_union
from a2rl.capture import Snapshot, read_snapshots, snapshot_files
from a2rl.schema import (
    AgentEvent,
    CheckpointEvent,
    CheckpointOutcome,
    EvaluatorReport,
    ExecEvent,
    Experiment,
    JournalEntry,
    LevelAdoption,
    LLMCall,
    PlanEvent,
    PlanOutcome,
    RunAnalysis,
    RunRecord,
    ScaffoldAnalysis,
    Strategy,
    SuggestionOutcome,
    load_run,
    read_jsonl,
)

log = logging.getLogger("a2rl.analysis")

SCAFFOLD_JSON = "scaffold.json"
JOURNAL_MARKERS = ("scaffold.sh", "/scaffold")
SKILL_MARKER = "skills/"


def _rows(path: Path, model: type) -> list:  # type: ignore[type-arg]
    return read_jsonl(path, model) if path.exists() else []


def _state(e: Experiment) -> dict[str, str]:
    return {"k": e.strategy, "d": e.data_source, "g": e.stage}


def _before(experiments: list[Experiment], t: float) -> Experiment | None:
    earlier = [e for e in experiments if e.elapsed_s <= t]
    return earlier[-1] if earlier else None


def _fmt(e: Experiment) -> str:
    return (f"{e.path or e.script or 'experiment'} at {e.elapsed_s:.0f} s "
            f"({e.strategy}, {e.data_source}, {e.stage})")


def _changed_lines(run_dir: Path, snaps: list[Snapshot], t0: float, t1: float) -> list[str]:
    """Lines of the agent's code (not output/) added between the last snapshot at or before t0
    and the code when the experiment at t1 started: the last snapshot after t0 and at or before
    t1, else the first one after t1."""
    old = [s for s in snaps if s.elapsed_s <= t0]
    new = [s for s in snaps if t0 < s.elapsed_s <= t1][-1:] or \
        [s for s in snaps if s.elapsed_s > t1][:1]
    if not new:
        return []
    try:
        before = snapshot_files(run_dir, old[-1].commit) if old else {}
        after = snapshot_files(run_dir, new[0].commit)
    except Exception as exc:  # a missing shadow repository: no code evidence
        log.info("code snapshots unreadable: %s", exc)
        return []
    out: list[str] = []
    for path, text in after.items():
        if path.startswith("output/") or path == "LARGE_FILES.json":
            continue
        seen = set((before.get(path) or "").splitlines())
        out += [f"{path}: {line.strip()}" for line in text.splitlines()
                if line.strip() and line not in seen]
    return out


def _suggestion_outcomes(run_dir: Path, reports: list[EvaluatorReport],
                         experiments: list[Experiment],
                         journal: list[JournalEntry]) -> list[SuggestionOutcome]:
    snaps = read_snapshots(run_dir)
    cited = {sid for e in journal if e.author == "agent" for sid in e.follows}
    out = []
    for report in reports:
        t = report.elapsed_s
        then = _before(experiments, t)
        later = [e for e in experiments if e.elapsed_s > t]
        for s in report.suggestions:
            change = s.change.dimensions() if s.change else {}
            adopted, evidence = False, "no later experiment"
            if s.level == "strategy":
                if not change:
                    evidence = "the suggestion names no k/d/g change"
                elif then is not None and all(_state(then)[k] == v for k, v in change.items()):
                    evidence = "already the strategy then"
                else:
                    hit = next((e for e in later if all(_state(e)[k] == v
                                                        for k, v in change.items())), None)
                    if hit is not None:
                        adopted, evidence = True, _fmt(hit)
                    elif later:
                        evidence = "later experiments: " + "; ".join(_fmt(e) for e in later[:3])
            else:
                same = [e for e in later if then is None or _state(e) == _state(then)]
                for e in same:
                    lines = _changed_lines(run_dir, snaps, t, e.elapsed_s)
                    if s.target:
                        lines = [ln for ln in lines if s.target.lower() in ln.lower()]
                    if lines:
                        adopted, evidence = True, f"{_fmt(e)}; code: {lines[0][:200]}"
                        break
                else:
                    if same:
                        evidence = ("no code change naming " + repr(s.target) if s.target
                                    else "no code change") + " before a later experiment"
                    elif later:
                        evidence = "later experiments changed strategy"
            out.append(SuggestionOutcome(id=s.id, level=s.level, elapsed_s=t, text=s.text,
                                         change=change, target=s.target, adopted=adopted,
                                         evidence=evidence, claimed=s.id in cited))
    return out


def _adoption(items: list[SuggestionOutcome]) -> LevelAdoption:
    n, k = len(items), sum(1 for s in items if s.adopted)
    return LevelAdoption(n=n, adopted=k, rate=round(k / n, 4) if n else None)


def _plans(events: list[PlanEvent]) -> list[PlanOutcome]:
    out: dict[str, PlanOutcome] = {}
    for e in events:
        if e.event == "submitted" and e.plan is not None:
            out[e.plan_id] = PlanOutcome(plan_id=e.plan_id, submitted_s=e.elapsed_s,
                                         strategy=e.plan.strategy, outcome="pending")
        elif e.plan_id in out and e.event == "reviewed" and e.review is not None:
            out[e.plan_id] = out[e.plan_id].model_copy(update={
                "outcome": e.review.verdict, "reviewer": e.reviewer,
                "rationale": e.review.rationale})
        elif e.plan_id in out and e.event == "review_failed":
            out[e.plan_id] = out[e.plan_id].model_copy(update={
                "outcome": "review_failed", "rationale": e.error})
    return list(out.values())


def _matches(e: Experiment, s: Strategy, dims: list[str]) -> bool:
    return all(_state(e)[d] == getattr(s, d) for d in dims)


def _checkpoints(events: list[CheckpointEvent],
                 experiments: list[Experiment]) -> list[CheckpointOutcome]:
    out: dict[str, CheckpointOutcome] = {}
    for e in events:
        if e.event == "opened":
            out[e.checkpoint_id] = CheckpointOutcome(checkpoint_id=e.checkpoint_id,
                                                     triggers=e.triggers, opened_s=e.elapsed_s)
            continue
        if e.checkpoint_id not in out or e.decision is None:
            continue
        d, t = e.decision, e.elapsed_s
        then = _before(experiments, t)
        later = [x for x in experiments if x.elapsed_s > t]
        followed: bool | None = None
        evidence = None
        if d.action == "switch" and d.strategy is not None:
            dims = [k for k in ("k", "d", "g")
                    if then is None or _state(then)[k] != getattr(d.strategy, k)] or ["k"]
            hit = next((x for x in later if _matches(x, d.strategy, dims)), None)
            followed = None if not later else hit is not None
            evidence = _fmt(hit) if hit else (_fmt(later[0]) if later else None)
        elif d.action == "keep" and then is not None and later:
            followed = _state(later[0])["k"] == _state(then)["k"]
            evidence = _fmt(later[0])
        out[e.checkpoint_id] = out[e.checkpoint_id].model_copy(update={
            "decided_s": t, "action": d.action, "reason": d.reason, "strategy": d.strategy,
            "followed": followed, "evidence": evidence})
    return list(out.values())


def _usage_tokens(analysis: RunAnalysis | None) -> int | None:
    if analysis is None or not analysis.usage:
        return None
    return int(analysis.usage.get("input_tokens", 0) + analysis.usage.get("output_tokens", 0))


def _tool_time(run_dir: Path) -> tuple[float, float, int]:
    """Seconds in scaffold-tool and skill commands, and the number of skill reads: from the
    model's commands (events.jsonl), else from the exec trace."""
    journal: list[tuple[float, float]] = []
    skills: list[tuple[float, float]] = []
    reads = 0
    events = _rows(run_dir / "agent" / "events.jsonl", AgentEvent)
    commands = [(e.command or "", e.t_s, e.end_s) for e in events if e.kind == "command"]
    if not commands:
        commands = [(" ".join(e.argv), e.start_s, e.end_s)
                    for e in _rows(run_dir / "agent" / "exec.jsonl", ExecEvent)]
    for text, start, end in commands:
        span = (start, end if end is not None else start)
        if SKILL_MARKER in text:
            skills.append(span)
            reads += "SKILL.md" in text
        elif any(m in text for m in JOURNAL_MARKERS):
            journal.append(span)
    return round(span_union(journal), 3), round(span_union(skills), 3), reads


def _skill_usage(run_dir: Path, out: ScaffoldAnalysis) -> None:
    """Consults per skill and created skills, counted by the skill library's own module."""
    from a2rl.extensions.scaffold import _usage as skills

    try:
        out.skill_consults = dict(skills.skill_consults(run_dir))
        usage = skills.load_skill_usage(run_dir)
    except Exception as exc:  # diagnostics: a missing module or record is reported, not fatal
        log.warning("skill reads not counted: %s", exc)
        return
    if usage is not None:
        out.skill_reads = int(usage.total_consults)
        out.created_skills = [c.name for c in usage.created]


def scaffold_analysis(run_dir: Path, analysis: RunAnalysis,
                      run: RunRecord | None = None) -> ScaffoldAnalysis | None:
    """None for a run without --scaffold."""
    run = run or load_run(run_dir)
    config = run.config.scaffold
    if config is None:
        return None
    d = run_dir / "scaffold"
    journal = _rows(d / "journal.jsonl", JournalEntry)
    reports = _rows(d / "evaluations.jsonl", EvaluatorReport)
    calls = _rows(d / "llm_calls.jsonl", LLMCall)
    experiments = sorted(analysis.experiments, key=lambda e: e.elapsed_s)
    out = ScaffoldAnalysis(run_id=run.run_id, components=config.components)
    for e in journal:
        out.journal_by_author[e.author] = out.journal_by_author.get(e.author, 0) + 1
        if e.author == "agent":
            out.journal_by_kind[e.kind] = out.journal_by_kind.get(e.kind, 0) + 1
    out.evaluations = len(reports)
    for c in calls:
        if c.failure:
            out.evaluation_failures[c.failure] = out.evaluation_failures.get(c.failure, 0) + 1
    out.suggestions = _suggestion_outcomes(run_dir, reports, experiments, journal)
    for level in ("execution", "strategy"):
        out.adoption[level] = _adoption([s for s in out.suggestions if s.level == level])
    ex, st = out.adoption["execution"].rate, out.adoption["strategy"].rate
    out.adoption_asymmetry = round(ex - st, 4) if ex is not None and st is not None else None
    out.first_training_s = experiments[0].elapsed_s if experiments else None
    if out.first_training_s is not None:
        out.strategy_adoption_after_training = _adoption(
            [s for s in out.suggestions if s.level == "strategy"
             and s.elapsed_s >= out.first_training_s])
    if "plan-review" in config.components:
        plans = _rows(d / "plans.jsonl", PlanEvent)
        out.plans = _plans(plans)
        approvals = [p for p in out.plans if p.outcome == "approve"]
        approved = [e.elapsed_s for e in plans if e.event == "reviewed" and e.review is not None
                    and e.review.verdict == "approve"]
        out.approved_at_s = min(approved) if approved else None
        if experiments:
            limit = out.approved_at_s if out.approved_at_s is not None else float("inf")
            out.experiments_before_approval = sum(1 for e in experiments if e.elapsed_s < limit)
            out.trained_before_approval = out.experiments_before_approval > 0
        if approvals and out.plans:
            out.plan_redirected = approvals[0].strategy != out.plans[0].strategy
    if "revision" in config.components:
        out.checkpoints = _checkpoints(_rows(d / "checkpoints.jsonl", CheckpointEvent),
                                       experiments)
    out.tokens = _usage_tokens(analysis)
    if config.baseline_run:
        base = Path(config.baseline_run)
        try:  # only its usage: an older analysis format still has it
            usage = json.loads((base / "analysis.json").read_text()).get("usage") or {}
            out.baseline_tokens = int(usage.get("input_tokens", 0) +
                                      usage.get("output_tokens", 0)) or None
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("baseline run %s has no readable analysis.json: %s", base, exc)
    if out.tokens is not None and out.baseline_tokens:
        out.token_ratio = round(out.tokens / out.baseline_tokens, 4)
    out.journal_seconds, out.skill_seconds, out.skill_reads = _tool_time(run_dir)
    if "skills" in config.components:
        _skill_usage(run_dir, out)
    if run.timings.agent_s > 0:
        out.scaffold_time_share = round((out.journal_seconds + out.skill_seconds)
                                        / run.timings.agent_s, 4)
    return out


def _rate(a: LevelAdoption | None) -> str:
    if a is None or a.rate is None:
        return "—"
    return f"{a.adopted}/{a.n} ({100 * a.rate:.0f}%)"


def render_scaffold(s: ScaffoldAnalysis) -> str:
    lines = ["", f"## Scaffold ({', '.join(s.components) or 'autonomous'})", ""]
    if "journal" in s.components:
        lines.append("- journal entries by the agent: " + (", ".join(
            f"{k} {v}" for k, v in sorted(s.journal_by_kind.items())) or "none") +
            "; by author: " + (", ".join(f"{k} {v}" for k, v in
                                         sorted(s.journal_by_author.items())) or "none"))
    if "evaluator" in s.components:
        lines.append(f"- evaluator reports {s.evaluations}; LLM failures: " + (", ".join(
            f"{k} {v}" for k, v in sorted(s.evaluation_failures.items())) or "none"))
        lines.append(f"- suggestions adopted: execution {_rate(s.adoption.get('execution'))}, "
                     f"strategy {_rate(s.adoption.get('strategy'))}; asymmetry "
                     f"{s.adoption_asymmetry if s.adoption_asymmetry is not None else '—'}; "
                     "strategy suggestions after the first training launch: "
                     f"{_rate(s.strategy_adoption_after_training)}")
        for o in s.suggestions:
            change = f" {o.change}" if o.change else (f" target {o.target}" if o.target else "")
            lines.append(f"    - {o.id} [{o.level}{change}] "
                         f"{'ADOPTED' if o.adopted else 'not adopted'}"
                         f"{' (cited)' if o.claimed else ''}: {o.evidence}")
    if "plan-review" in s.components:
        lines.append("- plans: " + ("; ".join(
            f"{p.plan_id} ({p.strategy.k}, {p.strategy.d}, {p.strategy.g}) → {p.outcome}"
            + (f" by {p.reviewer}" if p.reviewer else "") for p in s.plans) or "none submitted")
            + f"; approved at {s.approved_at_s} s; first training at {s.first_training_s} s; "
            f"trained before approval: {s.trained_before_approval} "
            f"({s.experiments_before_approval} experiment(s)); redirected: {s.plan_redirected}")
    if "revision" in s.components:
        lines.append("- revision checkpoints: " + ("; ".join(
            f"{c.checkpoint_id} ({', '.join(c.triggers)}) → "
            + (f"{c.action}" + (f" to {c.strategy.k}/{c.strategy.d}/{c.strategy.g}"
                                if c.strategy else "") + f", followed: {c.followed}"
               if c.action else "unanswered") for c in s.checkpoints) or "none opened"))
    if "skills" in s.components:
        lines.append("- skill consults: " + (", ".join(
            f"{k} {v}" for k, v in sorted(s.skill_consults.items())) or "none counted")
            + "; created skills: " + (", ".join(s.created_skills) or "none"))
    lines.append(f"- inference tokens {s.tokens if s.tokens is not None else '—'}"
                 + (f" vs autonomous baseline {s.baseline_tokens} (×{s.token_ratio})"
                    if s.baseline_tokens else "")
                 + f"; time in scaffold tools {s.journal_seconds:.0f} s, in skills "
                 f"{s.skill_seconds:.0f} s ({s.skill_reads} skill reads); share "
                 f"{s.scaffold_time_share if s.scaffold_time_share is not None else '—'}")
    return "\n".join(lines) + "\n"


def write_scaffold_analysis(run_dir: Path, analysis: RunAnalysis) -> ScaffoldAnalysis | None:
    """scaffold.json and the scaffold's section appended to summary.md (scaffold runs only)."""
    result = scaffold_analysis(run_dir, analysis)
    if result is None:
        return None
    atomic_write_text(run_dir / SCAFFOLD_JSON, result.model_dump_json(indent=2))
    with (run_dir / "summary.md").open("a") as fh:
        fh.write(render_scaffold(result))
    return result
