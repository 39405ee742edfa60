"""The report's scaffold page (`scaffold.html`): what the experience-driven scaffold's runs
did with it, per run and per ablation arm (the agent stack, whose label carries the arm's
components). Read from each run's `scaffold.json` (written by the scaffold extension), nothing
else:

journal entries by kind, skill consults per skill, evaluator suggestions by level with their
adoption (the trajectory study's Figure 4 asymmetry: execution-level suggestions adopted, strategy-level
ones not), plan-review outcomes, revision-checkpoint decisions and whether a switch followed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from a2rl.schema import JOURNAL_KINDS, LevelAdoption, ScaffoldAnalysis

if TYPE_CHECKING:
    from a2rl.report._context import SiteContext
    from a2rl.report._html import Page
    from a2rl.results import LoadedRun

SCAFFOLD_JSON = "scaffold.json"
LEVELS = ("execution", "strategy")
PLAN_OUTCOMES = ("approve", "revise", "pending", "review_failed")
DECISIONS = ("keep", "switch, followed", "switch, not followed", "switch, not yet tested",
             "unanswered")


@dataclass
class ScaffoldRun:
    """One shown run with its scaffold analysis."""

    run: LoadedRun
    row: dict[str, Any]
    s: ScaffoldAnalysis

    @property
    def arm(self) -> str:
        return str(self.row["stack"])


def load(site: SiteContext) -> tuple[list[ScaffoldRun], list[tuple[str, str]]]:
    """The shown runs that have a scaffold.json, and (run id, problem) for unreadable ones."""
    out: list[ScaffoldRun] = []
    bad: list[tuple[str, str]] = []
    for r, row in site.shown:
        path = r.path / SCAFFOLD_JSON
        if not path.exists():
            continue
        try:
            out.append(ScaffoldRun(r, row, ScaffoldAnalysis.model_validate_json(
                path.read_text())))
        except ValueError as exc:
            bad.append((row["run_id"], f"{SCAFFOLD_JSON} unreadable: {str(exc)[:200]}"))
    return out, bad


def decision_label(c: Any) -> str:
    if c.action is None:
        return "unanswered"
    if c.action == "keep":
        return "keep"
    return {True: "switch, followed", False: "switch, not followed"}.get(
        c.followed, "switch, not yet tested")


def _counts(items: Sequence[tuple[str, str]]) -> dict[str, Counter[str]]:
    """(group, label) pairs → group → label counts."""
    out: dict[str, Counter[str]] = {}
    for group, label in items:
        out.setdefault(group, Counter())[label] += 1
    return out


def _rate(n: int, k: int) -> str:
    return f"{k}/{n} ({100 * k / n:.0f}%)" if n else "—"


# ---- charts --------------------------------------------------------------------------------
def _fig(title: str, x_title: str, y_title: str, **layout: Any) -> go.Figure:
    from a2rl.report._figures import _fig as base

    fig = base(title, **layout)
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title)
    return fig


def stacked_counts(counts: dict[str, Counter[str]], order: Sequence[str], title: str,
                   x_title: str, y_title: str = "count") -> go.Figure | None:
    """One bar per group, stacked by label (labels in `order` first, then any other)."""
    labels = list(order) + sorted({lb for c in counts.values() for lb in c} - set(order))
    groups = sorted(counts)
    if not any(sum(c.values()) for c in counts.values()):
        return None
    fig = _fig(title, x_title, y_title, barmode="stack")
    for label in labels:
        ys = [counts[g].get(label, 0) for g in groups]
        if any(ys):
            fig.add_trace(go.Bar(x=groups, y=ys, name=label,
                                 hovertemplate=f"%{{x}}<br>{label}: %{{y}}<extra></extra>"))
    return fig


def adoption(rows: Sequence[dict[str, Any]], title: str) -> go.Figure | None:
    """Adoption rate per suggestion level and arm (the trajectory study's Figure 4), n on each bar."""
    rows = [r for r in rows if r["n"]]
    if not rows:
        return None
    fig = _fig(title, "agent stack (arm)", "share of suggestions adopted", barmode="group",
               yaxis=dict(range=[0, 1.05]))
    for level in LEVELS:
        mine = [r for r in rows if r["level"] == level]
        if mine:
            fig.add_trace(go.Bar(x=[r["arm"] for r in mine], y=[r["rate"] for r in mine],
                                 name=level, text=[f"{r['adopted']}/{r['n']}" for r in mine],
                                 textposition="outside",
                                 hovertemplate=f"%{{x}}<br>{level}: %{{text}}<extra></extra>"))
    return fig


# ---- the page ------------------------------------------------------------------------------
def build(site: SiteContext, page: Page) -> None:
    from markupsafe import Markup, escape

    from a2rl.report._html import _table

    runs, bad = load(site)
    page.html('<p class="note">What each scaffold run did with the experience-driven scaffold '
              "(<code>a2rl run --scaffold</code>), from its <code>scaffold.json</code>. Rows "
              "group runs by agent stack, whose label names the arm's components. Adoption is "
              "judged on behaviour: a strategy suggestion is adopted when a later training "
              "experiment has the suggested k/d/g; an execution one when a later experiment "
              "of the same strategy follows a code change (naming its target). A switch "
              "decision is followed when a later experiment has the new strategy.</p>")
    if bad:
        page.text("h2", "Unreadable scaffold records")
        page.html(_table(["run", "problem"], bad))
    if not runs:
        page.text("p", "No shown run used the scaffold.")
        return
    arms = sorted({x.arm for x in runs})

    # per run
    per_run: list[dict[str, Any]] = []
    for x in runs:
        s = x.s
        a = {lv: s.adoption.get(lv) or LevelAdoption(n=0, adopted=0, rate=None)
             for lv in LEVELS}
        per_run.append({
            "run_id": x.row["run_id"], "arm": x.arm, "task": x.row["task"],
            "components": ",".join(s.components),
            "journal": ", ".join(f"{k} {v}" for k, v in sorted(s.journal_by_kind.items())),
            "skill_consults": ", ".join(f"{k} {v}" for k, v in sorted(s.skill_consults.items())),
            "created_skills": ", ".join(s.created_skills),
            **{f"{lv}_adopted": _rate(a[lv].n, a[lv].adopted) for lv in LEVELS},
            "asymmetry": s.adoption_asymmetry,
            "plans": ", ".join(f"{p.plan_id} {p.outcome}" for p in s.plans),
            "trained_before_approval": s.trained_before_approval,
            "checkpoints": ", ".join(f"{c.checkpoint_id} {decision_label(c)}"
                                     for c in s.checkpoints),
            "time_share": s.scaffold_time_share, "tokens_all_models": s.tokens,
            "token_ratio": s.token_ratio})
    site.save_table("scaffold_runs", per_run)

    # per arm: adoption per level
    adopt_rows: list[dict[str, Any]] = []
    for arm in arms:
        mine = [o for x in runs if x.arm == arm for o in x.s.suggestions]
        for lv in LEVELS:
            n = sum(1 for o in mine if o.level == lv)
            k = sum(1 for o in mine if o.level == lv and o.adopted)
            adopt_rows.append({"arm": arm, "level": lv, "n": n, "adopted": k,
                               "rate": round(k / n, 4) if n else None,
                               "claimed": sum(1 for o in mine if o.level == lv and o.claimed)})
    site.save_table("scaffold_adoption", adopt_rows)
    suggestions = [{"run_id": x.row["run_id"], "arm": x.arm, "id": o.id, "level": o.level,
                    "elapsed_h": o.elapsed_s / 3600,
                    "change": ", ".join(f"{k}={v}" for k, v in o.change.items()),
                    "target": o.target, "adopted": o.adopted, "claimed": o.claimed,
                    "evidence": o.evidence, "text": o.text}
                   for x in runs for o in x.s.suggestions]
    site.save_table("scaffold_suggestions", suggestions)
    checkpoints = [{"run_id": x.row["run_id"], "arm": x.arm, "id": c.checkpoint_id,
                    "triggers": "; ".join(c.triggers), "opened_h": c.opened_s / 3600,
                    "decision": decision_label(c),
                    "strategy": f"{c.strategy.k}, {c.strategy.d}, {c.strategy.g}"
                    if c.strategy else "", "reason": c.reason, "evidence": c.evidence}
                   for x in runs for c in x.s.checkpoints]
    site.save_table("scaffold_checkpoints", checkpoints)
    page.html(site.table_links("scaffold_runs", "scaffold_adoption", "scaffold_suggestions",
                               "scaffold_checkpoints"))

    page.text("h2", "Per arm")
    arm_rows: list[list[Any]] = []
    for arm in arms:
        arm_runs = [x for x in runs if x.arm == arm]
        by = {r["level"]: r for r in adopt_rows if r["arm"] == arm}
        plans = Counter(p.outcome for x in arm_runs for p in x.s.plans)
        early = sum(1 for x in arm_runs if x.s.trained_before_approval)
        decisions = Counter(decision_label(c) for x in arm_runs for c in x.s.checkpoints)
        arm_rows.append([arm, len(arm_runs),
                         sum(sum(x.s.journal_by_kind.values()) for x in arm_runs),
                         sum(sum(x.s.skill_consults.values()) for x in arm_runs),
                         _rate(by["execution"]["n"], by["execution"]["adopted"]),
                         _rate(by["strategy"]["n"], by["strategy"]["adopted"]),
                         ", ".join(f"{k} {v}" for k, v in sorted(plans.items())) or "—",
                         f"{early} of {len(arm_runs)}",
                         ", ".join(f"{k} {v}" for k, v in sorted(decisions.items())) or "—"])
    page.html(_table(["agent stack (arm)", "runs", "journal entries (agent)", "skill consults",
                      "execution adopted", "strategy adopted", "plan outcomes",
                      "runs that trained before approval", "checkpoint decisions"], arm_rows))

    page.text("h2", "Suggestion adoption by level")
    page.chart(adoption(adopt_rows, "evaluator suggestions adopted, per level and arm"),
               "no evaluator suggestion was made")
    page.text("h2", "Journal entries by kind")
    page.chart(stacked_counts(_counts([(x.row["run_id"], k) for x in runs
                                       for k, v in x.s.journal_by_kind.items()
                                       for _ in range(v)]),
                              JOURNAL_KINDS, "journal entries the agent wrote, per run", "run"),
               "no run's agent wrote a journal entry")
    page.text("h2", "Skill consults per skill")
    page.chart(stacked_counts(_counts([(skill, x.arm) for x in runs
                                       for skill, v in x.s.skill_consults.items()
                                       for _ in range(v)]),
                              arms, "skill consults per skill (stacked by arm)", "skill"),
               "no skill consult was counted")
    page.text("h2", "Plan-review outcomes")
    page.chart(stacked_counts(_counts([(x.arm, p.outcome) for x in runs for p in x.s.plans]),
                              PLAN_OUTCOMES, "plans per review outcome, per arm",
                              "agent stack (arm)", "plans"),
               "no plan was submitted")
    page.text("h2", "Revision-checkpoint decisions")
    page.chart(stacked_counts(_counts([(x.arm, decision_label(c)) for x in runs
                                       for c in x.s.checkpoints]),
                              DECISIONS, "checkpoint decisions and whether a switch followed, "
                              "per arm", "agent stack (arm)", "checkpoints"),
               "no revision checkpoint opened")

    page.text("h2", "Per run")
    page.html(_table(["run", "arm", "components", "journal (agent)", "skill consults",
                      "execution adopted", "strategy adopted", "asymmetry", "plans",
                      "trained before approval", "checkpoints", "scaffold time share"],
                     [[site.run_link(x.row), r["arm"], r["components"], r["journal"] or "—",
                       r["skill_consults"] or "—", r["execution_adopted"],
                       r["strategy_adopted"], r["asymmetry"], r["plans"] or "—",
                       r["trained_before_approval"], r["checkpoints"] or "—", r["time_share"]]
                      for x, r in zip(runs, per_run, strict=True)]))
    if suggestions:
        page.text("h2", "Suggestions")
        page.html(_table(["run", "id", "level", "change / target", "adopted", "cited",
                          "evidence"],
                         [[s["run_id"], s["id"], s["level"], s["change"] or s["target"] or "—",
                           s["adopted"], s["claimed"],
                           Markup(f"<small>{escape(s['evidence'] or '')}</small>")]
                          for s in suggestions]))
    if checkpoints:
        page.text("h2", "Checkpoints")
        page.html(_table(["run", "id", "triggers", "decision", "new strategy", "reason",
                          "evidence"],
                         [[c["run_id"], c["id"], c["triggers"], c["decision"],
                           c["strategy"] or "—", c["reason"], c["evidence"]]
                          for c in checkpoints]))


__all__ = ["build", "load"]
