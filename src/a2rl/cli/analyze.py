"""`a2rl analyze`: a run's summary and analysis files, computed from its records, and the
optional transcript judge of its audit. a2rl.cli registers the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from a2rl.cli._options import RunsDir, _find_run


def _ask_judge(path: Path, model: str, base_url: str | None) -> None:
    """Ask the transcript judge about the run at `path` (writes judge.json there). The endpoint
    is checked before anything is read; the key comes only from A2RL_JUDGE_API_KEY."""
    import os

    from a2rl._console import make_console, safe
    from a2rl._secrets import scrub
    from a2rl.agents import clean_text
    from a2rl.analysis import ask_judge, judge_settings
    from a2rl.schema import load_run
    from a2rl.tasks import JudgeClient

    settings = judge_settings(model, base_url)
    record = load_run(path)
    key = os.environ.get("A2RL_JUDGE_API_KEY", "")
    with JudgeClient(settings) as client:
        judged = ask_judge(path, client, task=record.config.task, model=record.config.model,
                           redact=lambda text: clean_text(scrub(text, [key])))
    make_console().print(safe(f"transcript judge {judged.model}: {len(judged.asks)} answer(s) "
                              f"recorded in {path / 'judge.json'}"), highlight=False)


def analyze(run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
            runs_dir: RunsDir = None,
            judge: Annotated[str | None, typer.Option(
                help="Also ask this model (any OpenAI-compatible chat endpoint), three times, "
                     "whether the run trained on held-out data, substituted the model, distilled "
                     "from a third-party API or looked up the benchmark's answers; its answers "
                     "are kept in judge.json and shown apart from a2rl's own findings. Key: "
                     "A2RL_JUDGE_API_KEY.")] = None,
            judge_base_url: Annotated[str | None, typer.Option(
                help="The judge's endpoint, e.g. http://127.0.0.1:8000/v1 (default: "
                     "A2RL_JUDGE_BASE_URL).")] = None) -> None:
    """(Re)compute summary.md, summary.jsonl and analysis.json of a run from its records."""
    from a2rl._console import make_console, safe
    from a2rl._errors import A2RLError
    from a2rl.analysis import analyze_run
    from a2rl.extensions import add_to_analysis
    from a2rl.grader import restore_task
    from a2rl.schema import load_run

    if judge_base_url is not None and not judge:
        raise A2RLError("--judge-base-url was given without --judge",
                        "name the judge model too: --judge MODEL --judge-base-url URL")
    path = _find_run(run, runs_dir)
    record = load_run(path)
    if judge:
        _ask_judge(path, judge, judge_base_url)
    heldout = None
    if record.task is not None:
        try:
            heldout = restore_task(record.task.name, record.task.params).heldout_items()
        except A2RLError as exc:  # e.g. a hub task analyzed offline
            make_console(stderr=True).print(f"[yellow]held-out items unavailable "
                                       f"({safe(exc.message)}); contamination is not checked[/]")
    analysis = analyze_run(path, heldout=heldout)
    add_to_analysis(path, analysis)
    console = make_console()
    console.print(safe(f"route {analysis.route}; methods "
                       f"{', '.join(analysis.methods_attempted) or 'none'}; "
                       f"{len(analysis.findings)} finding(s)"), highlight=False)

    for f in analysis.findings:  # findings quote agent-controlled text: never markup
        console.print(safe(f"  [{f.severity}] {f.kind} ({f.basis}): {f.message}"), highlight=False)
    if not judge and not (path / "judge.json").exists():
        console.print("no transcript judge configured: nothing was asked (--judge MODEL asks one)",
                      highlight=False)
    console.print(safe(f"wrote {path / 'summary.md'}, {path / 'summary.jsonl'}, "
                       f"{path / 'analysis.json'}"), highlight=False)
