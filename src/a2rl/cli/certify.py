"""`a2rl certify TASK`: the task's scorer against adversarial policies; writes the certificate.
a2rl.cli registers the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from a2rl.cli._options import _task_params


def certify_cmd(
    task: Annotated[str, typer.Argument(help="A task name (a2rl tasks list) or a task folder "
                                        "(like examples/tasks/reverse).")],
    task_opt: Annotated[list[str] | None, typer.Option(help="key=value (JSON values) for the "
                                                       "task.")] = None,
    items: Annotated[int, typer.Option(help="Held-out items certified (a seeded sample; 0 = "
                                       "all).")] = 40,
    model: Annotated[str, typer.Option(help="The base model whose interval a class must not "
                                       "beat.")] = "smollm2-135m",
    base: Annotated[str, typer.Option(help="When to score the base model: lazy (only when a "
                                      "class scores above zero), always, or none.")] = "lazy",
    classes: Annotated[str | None, typer.Option(help="Comma-separated classes to run (default "
                                                "all; `a2rl certify --list` names them).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the item sample and the attacks.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Folder for certificate.json/.md/.html "
                                             "(default certificates/<task>/).")] = None,
) -> None:
    """Run a library of adversarial policies (leaving the interpreter, always-equal objects,
    harness tampering, forged output, answer-extraction exploits, empty and huge outputs, judge
    injections, degenerate interactive policies) against a task's own scorer. Exit 0 when no
    class scores above the base model's interval, 1 when one does, 3 when undecided."""
    from a2rl._console import make_console
    from a2rl._errors import A2RLError
    from a2rl.certify import (
        CLASSES,
        Scored,
        base_model_score,
        certificate_markdown,
        certify,
        load_task_folder,
        write_certificate,
    )
    from a2rl.evaluate import refuse_in_agent_sandbox
    from a2rl.tasks import get_task

    refuse_in_agent_sandbox("certify")
    names = [c.strip() for c in classes.split(",") if c.strip()] if classes else None
    unknown = sorted(set(names or []) - {c.name for c in CLASSES})
    if unknown:
        raise A2RLError(f"unknown certify class(es): {', '.join(unknown)}",
                        f"choose from: {', '.join(c.name for c in CLASSES)}")
    if base not in ("lazy", "always", "none"):
        raise A2RLError(f"--base {base!r} is not one of lazy, always, none",
                        "e.g. --base lazy (score the base model only when it matters)")
    folder = Path(task)
    params = _task_params(task_opt)
    if folder.is_dir():
        t = load_task_folder(folder)(params)
    else:
        t = get_task(task, params)
    console = make_console()

    def score_base(the_task: object) -> Scored:
        console.print(f"scoring the base model {model} on the certified items …")
        return base_model_score(t, model)

    cert = certify(t, items=items, seed=seed, classes=names,
                   base_score=None if base == "none" else score_base, base_model=model,
                   lazy_base=base == "lazy",
                   on_class=lambda name: console.print(f"  {name} …", highlight=False))
    path = write_certificate(cert, out or Path("certificates") / t.name)
    typer.echo(certificate_markdown(cert))
    typer.echo(f"written: {path} (and .md, .html beside it)")
    raise typer.Exit(0 if cert.passed is True else 1 if cert.passed is False else 3)
