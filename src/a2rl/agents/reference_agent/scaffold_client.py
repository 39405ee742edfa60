"""The reference agent's use of the experience-driven scaffold (`a2rl run --scaffold ...`).

It goes through `./scaffold.sh`, the tool the run's instructions give every agent (so the
exec trace and the analysis see its scaffold work as they see any agent's), and only when the
run installed it: without `scaffold.sh` in the workspace every method here does nothing, and
the pipeline runs exactly as it does without a scaffold.

What the fixed recipe does with each component:
- plan-review: before the first training launch it submits its plan (strategy k/d/g, data,
  budget split, evaluation plan) and waits for the review; the recipe is fixed, so a `revise`
  verdict is journaled and the run goes on (the analysis then records training before
  approval);
- journal: a plan entry, an eval_result per dev measurement, a lesson at the end;
- revision: every pending checkpoint gets an explicit decision (keep, with the evidence);
- evaluator: submissions ask for the evaluator's review.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOOL = Path("scaffold.sh")
POLL_S = 5.0
"""How often a plan under a person's review is polled."""


class ScaffoldClient:
    def __init__(self, log: Callable[[str], None], tool: Path = TOOL) -> None:
        self.log, self.tool = log, tool
        self.components: set[str] = set()
        if tool.exists():
            state = self._call("state")
            if isinstance(state, dict):
                self.components = set(state.get("components") or [])
                self.log(f"scaffold on: {', '.join(sorted(self.components))}")

    def on(self, component: str) -> bool:
        return component in self.components

    def _call(self, *args: str) -> Any:
        """The tool's JSON answer (its first document), or None when it failed (logged: the
        scaffold must never stop the pipeline)."""
        try:
            out = subprocess.run([f"./{self.tool}", *args], capture_output=True, text=True,
                                 timeout=1200, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.log(f"scaffold.sh {args[0]} failed: {exc}")
            return None
        if out.returncode != 0:
            self.log(f"scaffold.sh {args[0]} failed: {(out.stderr or out.stdout).strip()[:500]}")
            return None
        try:
            return json.JSONDecoder().raw_decode(out.stdout.lstrip())[0]
        except ValueError:
            self.log(f"scaffold.sh {args[0]}: unreadable answer {out.stdout[:200]!r}")
            return None

    def journal(self, kind: str, text: str, strategy: dict[str, str] | None = None) -> None:
        if not self.on("journal"):
            return
        args = ["journal", "add", kind, text]
        if strategy is not None:
            args += ["--strategy", ",".join(strategy[d] for d in ("k", "d", "g"))]
        self._call(*args)

    def submit_plan(self, plan: dict[str, Any], path: Path, max_wait_s: float) -> str | None:
        """Submit the plan and wait for its review (at most `max_wait_s` for a person's);
        returns the plan status (approved, revise, unreviewed, pending), None when off."""
        if not self.on("plan-review"):
            return None
        path.write_text(json.dumps(plan, indent=1) + "\n")
        event = self._call("plan", str(path))
        status, state = ("unreviewed" if event is None else "pending"), None
        deadline = time.monotonic() + max(0.0, max_wait_s)
        while event is not None:
            state = self._call("plan")
            status = state.get("status", "unreviewed") if isinstance(state, dict) else "unreviewed"
            if status != "pending" or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        review = _latest_review(state)
        self.log(f"plan review: {status}" + (f" ({review})" if review else ""))
        if status != "approved":
            self.journal("observation", f"plan review: {status}" + (f" ({review})" if review
                                                                      else "")
                         + "; the reference recipe is fixed, so it goes on as planned")
        return status

    def answer_checkpoint(self, reason: str) -> None:
        """An explicit decision on the checkpoint waiting, if any: the fixed recipe keeps its
        strategy, and says on what evidence."""
        if not self.on("revision"):
            return
        pending = self._call("decision")
        if not isinstance(pending, dict) or not pending.get("checkpoint_id"):
            return
        triggers = ", ".join(pending.get("triggers") or [])
        self.log(f"revision checkpoint {pending['checkpoint_id']} ({triggers}): keep")
        self._call("decide", "keep", reason)

    def submit_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """A /submit body, asking for the evaluator's review when the evaluator is on."""
        return {**body, "evaluate": True} if self.on("evaluator") else body


def _latest_review(state: Any) -> str | None:
    if not isinstance(state, dict):
        return None
    reviews = [e.get("review") for e in state.get("events") or [] if e.get("review")]
    if not reviews:
        return None
    return f"{reviews[-1].get('verdict')}: {str(reviews[-1].get('rationale'))[:300]}"


def budget_split(left_s: float, data_s: float, evaluation_s: float) -> dict[str, float]:
    """Shares of the time left per phase (sum 1), as the plan JSON wants them."""
    left = max(left_s, 1.0)
    data = round(min(0.45, max(0.0, data_s) / left), 3)
    evaluation = round(min(0.45, max(0.0, evaluation_s) / left), 3)
    return {"data": data, "training": round(1.0 - data - evaluation, 3),
            "evaluation": evaluation}
