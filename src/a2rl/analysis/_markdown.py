"""summary.md: a run's analysis for people (the overview, then one section per iteration)."""

from __future__ import annotations

from a2rl.schema import IterationSummary, RunAnalysis


def hms(seconds: float | None) -> str:
    """Seconds as hh:mm:ss (a placeholder where unknown)."""
    if seconds is None:
        return "--:--:--"
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def render_markdown(a: RunAnalysis) -> str:
    """summary.md: the run's overview first, then one section per iteration."""
    body = "".join(render_iteration(it) + "\n" for it in a.iterations)
    return render_overview(a) + "\n" + body


def _num(x: float | None, digits: int = 2, unknown: str = "unknown") -> str:
    """A number for people: fixed decimals (none for counts), a word where there is none."""
    if x is None:
        return unknown
    if float(x).is_integer() and digits == 0:
        return f"{int(x)}"
    return f"{x:.{digits}f}"


def _signed(x: float | None, unknown: str = "unknown") -> str:
    return unknown if x is None else f"{x:+.2f}"


def _pct(x: float | None) -> str:
    return "unknown" if x is None else f"{100 * x:.0f}%"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def render_iteration(it: IterationSummary) -> str:
    title = f"Iteration {it.index}" + (f" — {it.submission_id}" if it.submission_id else " — final")
    code = f" (exit code {it.exit_code})" if it.exit_code is not None else ""
    out = [f"## {title} [{it.elapsed_marker}]", "", f"- status: {it.status}{code}"]
    if it.status == "rejected" and it.failure_type is None:
        reason = it.failure_evidence or "no reason recorded"
        out.append(f"- refused by the grader before any evaluation: {reason}")
    elif it.score is not None:
        out.append(f"- score: {_num(it.score)}"
                   + ("" if it.improvement is None else f" ({_signed(it.improvement)} vs the baseline)"))
    else:
        out.append("- score: not scored")
    out.append(f"- training type: {it.training_type}; methods: {', '.join(it.methods) or 'none'}")
    if it.config:
        out.append("- configuration: " + ", ".join(
            f"{k}={_num(v, 0) if isinstance(v, int) else v}" for k, v in sorted(it.config.items())))
    if it.scripts:
        out.append("- scripts run: " + ", ".join(it.scripts))
    if it.changed_files:
        out.append("- changed since the previous snapshot: " + ", ".join(it.changed_files[:15]))
    if it.diff_stat:
        out.append("- code diff: " + "; ".join(it.diff_stat[-6:]))
    if it.failure_type:
        out.append(f"- failure: **{it.failure_type}** — {it.failure_evidence}")
    if it.excerpt:
        out += ["", f"```python\n{it.excerpt}\n```"]
    return "\n".join(out) + "\n"


def render_overview(a: RunAnalysis) -> str:
    m = a.metrics
    fin = a.final
    hidden: list[str] = []
    if fin is not None:
        ci = "" if fin.ci_low is None or fin.ci_high is None else \
            f" [{_num(fin.ci_low)}, {_num(fin.ci_high)}]"
        sig = {True: "significant", False: "within noise", None: "significance unknown"}[fin.significant]
        if fin.score is None:
            hidden = [f"- **hidden final** ({fin.status})" + (f": {fin.error}" if fin.error else "")]
        else:
            hidden = [f"- **hidden final** ({fin.status}): test-split score **{_num(fin.score)}**{ci} "
                      f"vs base {_num(fin.test_baseline)}, improvement {_signed(fin.improvement)} "
                      f"({sig}); {fin.submission_id} ({fin.model_path}) chosen by {fin.chosen_by}, "
                      f"dev score {_num(fin.dev_score)}" + (f"; {fin.error}" if fin.error else "")]
    if m.best is None:
        result = f"- baseline {_num(m.baseline, unknown='not recorded')}; no valid submission"
    else:
        result = (f"- baseline {_num(m.baseline, unknown='not recorded')}, best **{_num(m.best)}**"
                  f"{' (dev split)' if hidden else ''}"
                  + ("" if m.improvement is None else f", improvement {_signed(m.improvement)}"))
    valid = "" if m.valid_rate is None else f", {_pct(m.valid_rate)} of them valid"
    zero = "" if m.zero_score_rate is None else f", {_pct(m.zero_score_rate)} scored zero"
    timing = []
    if m.time_to_first_improvement_s is not None:
        timing.append(f"first improvement at {hms(m.time_to_first_improvement_s)}")
    if m.time_to_best_s is not None:
        timing.append(f"best at {hms(m.time_to_best_s)}")
    if m.time_used_ratio is not None:
        timing.append(f"{_pct(m.time_used_ratio)} of the budget used")
    if m.last_submit_gap_s is not None:
        timing.append(f"{hms(m.last_submit_gap_s)} between the last submission and the end")
    changes = (f"{_plural(a.strategy_changes, 'strategy change')}"
               + ("" if a.change_rate is None else f" ({_pct(a.change_rate)} of consecutive pairs)"))
    usage = ""
    if a.usage:
        usage = (f"; tokens in/out {_num(a.usage.get('input_tokens', 0), 0)}/"
                 f"{_num(a.usage.get('output_tokens', 0), 0)} (all models)"
                 + (f", main model {_num(a.usage['main_input_tokens'], 0)}/"
                    f"{_num(a.usage.get('main_output_tokens', 0), 0)}"
                    if "main_input_tokens" in a.usage else "")
                 + (f", cost ${a.usage['cost_usd']:.2f}" if a.usage.get("cost_usd") else ""))
    out = [f"# Run {a.run_id} ({a.task}): overview", "", *hidden, result,
           f"- route: **{a.route}**; methods attempted: {', '.join(a.methods_attempted) or 'none'};"
           f" in the best submission: {', '.join(a.methods_in_best) or 'none'}",
           f"- {_plural(m.submissions, 'submission')}{valid}{zero}",
           "- time: " + ("; ".join(timing) or "no timing recorded"),
           f"- {_plural(m.code_files_written, 'code file')} written, "
           f"{_plural(m.model_versions, 'model version')}; {changes}",
           "- experiments: " + ("; ".join(f"{e.path or e.script or '?'} ({e.strategy}"
                                         + (f": {e.method}" if e.method and e.method != "SFT" else "")
                                         + (f" via {e.framework}" if e.framework else "")
                                         + f", {e.data_source}, {e.stage})" for e in a.experiments)
                                or "none found"),
           "- time per phase (programs the agent ran): "
           + (", ".join(f"{k} {v:,.0f} s" for k, v in a.phase_seconds.items()) or "not traced"),
           "- time per phase (model turns): "
           + (", ".join(f"{k} {v:,.0f} s" for k, v in a.turn_phase_seconds.items()) or "no event log")
           + usage]
    if not a.sandboxed:
        out.append("- **UNSANDBOXED RUN**")
    if a.imported_from:
        out.append(f"- imported from {a.imported_from}: see the notes for what could not be recovered")
    out.append("")
    if a.findings:
        out += ["## Audit", ""]
        for basis, title in (("ground-truth", "Measured (what ran, the submitted weights)"),
                             ("heuristic", "Read from code and commands"),
                             ("judge", "Transcript judge (majority of three answers)"),
                             ("posttrainbench", "PostTrainBench's own judges (imported)")):
            chosen = [f for f in a.findings if f.basis == basis]
            if chosen:
                out += [f"### {title}", ""]
            for f in chosen:
                out.append(f"- [{f.severity}] {f.kind}: {f.message}")
                out += [f"    - `{e}`" for e in f.evidence[:5]]
            out += [""] if chosen else []
    if a.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in a.notes]
    return "\n".join(out) + "\n"
