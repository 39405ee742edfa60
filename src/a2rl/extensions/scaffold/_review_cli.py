"""`a2rl review <run>`: a person reviews the agent's pending plan from a terminal.

The review is written to `scaffold/reviews/<plan_id>.json` in the run folder; the running
harness ingests it within a second and the agent sees it at its next poll. The command is
registered with the CLI through `a2rl.extensions.COMMANDS`; this module imports only Typer at
load time so `a2rl --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from a2rl.schema import PlanEvent, PlanReview


def review(
    run_dir: Annotated[Path, typer.Argument(help="The run folder (runs/<task>/<run_id>).")],
    verdict: Annotated[str | None, typer.Option(help="approve or revise (default: ask).")] = None,
    rationale: Annotated[str | None, typer.Option(help="Why (default: ask).")] = None,
    change: Annotated[list[str] | None, typer.Option(help="A requested change (revise; "
                                                      "repeatable).")] = None,
) -> None:
    """Review the plan a scaffold run's agent submitted (--scaffold plan-review with
    --scaffold-opt reviewer=person): shows it, records your verdict for the agent."""
    review_run(run_dir, verdict=verdict, rationale=rationale, changes=change or [])


def pending_plan(run_dir: Path) -> PlanEvent | None:
    """The latest plan the agent submitted that has no review yet, if any."""
    from a2rl.extensions.scaffold._core import PLANS
    from a2rl.schema import PlanEvent, read_jsonl

    path = run_dir / "scaffold" / PLANS
    if not path.exists():
        return None
    events = read_jsonl(path, PlanEvent)
    submitted = [e for e in events if e.event == "submitted"]
    if not submitted:
        return None
    latest = submitted[-1]
    done = any(e.plan_id == latest.plan_id and e.event != "submitted" for e in events)
    return None if done else latest


def review_run(run_dir: Path, *, verdict: str | None, rationale: str | None,
               changes: list[str], console: Console | None = None) -> PlanReview:
    """Show the pending plan, take the verdict (asking for what is not given) and record it."""
    from rich.console import Console

    from a2rl._errors import A2RLError
    from a2rl._util import atomic_write_text
    from a2rl.extensions.scaffold._core import REVIEWS
    from a2rl.schema import PlanReview

    console = console or Console()
    if not (run_dir / "scaffold").is_dir():
        raise A2RLError(f"{run_dir} is not a scaffold run (no scaffold/ folder)",
                        "pass the folder of a run started with --scaffold ...,plan-review")
    plan = pending_plan(run_dir)
    if plan is None or plan.plan is None:
        raise A2RLError(f"no plan of {run_dir.name} waits for a review",
                        "wait until the agent submits one (scaffold/plans.jsonl), then rerun")
    console.print(f"[bold]plan {plan.plan_id}[/] submitted at {plan.elapsed_s:.0f} s:")
    console.print_json(plan.plan.model_dump_json())
    if verdict is None:
        verdict = console.input("verdict (approve/revise): ").strip().lower()
    if verdict not in ("approve", "revise"):
        raise A2RLError(f"verdict {verdict!r} is neither approve nor revise",
                        "answer approve or revise (or pass --verdict)")
    if rationale is None:
        rationale = console.input("rationale: ").strip()
    if not rationale:
        raise A2RLError("a review needs a rationale", "write one sentence on why")
    if verdict == "revise" and not changes:
        raw = console.input("requested changes (separate with ';', empty for none): ")
        changes = [c.strip() for c in raw.split(";") if c.strip()]
    review = PlanReview(verdict=verdict, rationale=rationale,  # type: ignore[arg-type]
                        requested_changes=changes)
    atomic_write_text(run_dir / "scaffold" / REVIEWS / f"{plan.plan_id}.json",
                      review.model_dump_json(indent=1))
    console.print(f"recorded: {verdict} ({plan.plan_id}); the agent sees it at its next poll")
    return review
