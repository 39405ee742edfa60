"""Experiments: the training runs an agent launched, each with its output folder, parent
checkpoint, strategy, data source and stage, from the exec trace, else the agent's event log,
else the artifact index."""

from __future__ import annotations

from pathlib import Path

from a2rl.analysis._command_reader import CommandReader
from a2rl.analysis._data import data_source
from a2rl.analysis._detection import Detection
from a2rl.analysis._launchers import launched_file
from a2rl.analysis._methods import labels, primary_method
from a2rl.analysis._run_evidence import SlimAgentEvent
from a2rl.analysis._shell_commands import simple_commands
from a2rl.capture import ArtifactEntry
from a2rl.schema import ExecEvent, Experiment

_OUT_FLAGS = ("--out", "--output", "--output_dir", "--output-dir", "--save_dir", "--save-dir", "-o",
              "--save_path", "--save-path", "--out_dir", "--out-dir")
_INIT_FLAGS = ("--init", "--model", "--model_path", "--model-path", "--model_name_or_path",
               "--base", "--base_model", "--pretrain", "--init_from", "--resume_from_checkpoint",
               "--checkpoint", "--ckpt")


def command_files(argv: list[str], reader: CommandReader) -> list[str]:
    """Files of the snapshot one simple command ran (its script or config)."""
    target = launched_file(argv)
    path = reader.find(target) if target else None
    return [path] if path else []


def _flag_values(rel: list[str], flags: tuple[str, ...]) -> list[str]:
    return [rel[i + 1].rstrip("/") for i, a in enumerate(rel[:-1]) if a in flags] + \
        [a.split("=", 1)[1].rstrip("/") for a in rel if "=" in a and a.split("=", 1)[0] in flags]


def _experiment(found: Detection, *, start: float, end: float | None, exit_code: int | None,
                argv: list[str], command: str, source: str, workspace: Path,
                artifacts: list[ArtifactEntry], reader: CommandReader,
                earlier: list[Experiment] | None = None,
                launched: list[str] | None = None) -> Experiment:
    """An experiment from one launched training command (output folder and parent from the
    command's arguments, the artifact index and the outputs of earlier experiments)."""
    by_path = {a.path: a for a in artifacts}
    ws = str(workspace.resolve())
    rel = [a.replace(ws + "/", "").removeprefix("./") for a in argv[1:]]
    flagged = [rel[i + 1] for i, a in enumerate(rel[:-1]) if a in _OUT_FLAGS] + \
        [a.split("=", 1)[1] for a in rel if a.split("=", 1)[0] in _OUT_FLAGS and "=" in a]
    # The output folder: named by an --out-style flag, else a model folder on the command line
    # that first appeared after the command started.
    out_dir = next((a.rstrip("/") for a in flagged if a.rstrip("/") in by_path), None) or next(
        (a for a in rel if a in by_path and by_path[a].elapsed_s >= start), None) or next(
        iter(flagged), None)
    parent = by_path[out_dir].parent if out_dir and out_dir in by_path else None
    inputs = [a for a in rel if a.endswith((".jsonl", ".csv", ".parquet", ".txt"))
              or a.startswith("data")]
    produced = {e.path for e in earlier or [] if e.path}
    model_args = [a for a in rel if a == "model" or a.endswith("/model") or a in by_path
                  or a.rstrip("/") in produced]
    init = parent or next((a for a in _flag_values(rel, _INIT_FLAGS) if a != out_dir), None) or \
        next((a for a in model_args if a != out_dir), None)
    # A stage starts from an in-run checkpoint: one the artifact index saw or an earlier
    # experiment wrote.
    stage = "from checkpoint" if init and (init in by_path or init.rstrip("/") in produced) \
        else "from base"
    files = command_files(argv, reader)
    data = data_kind(inputs)
    if data == "unknown" and files:
        # What the script itself reads, and whether another script of the run wrote it by
        # sampling a model.
        data = data_source(files[0], reader.files, launched or [])
    strategy = labels(found.methods, trained=True)[1]
    assert strategy is not None  # trained=True always has an objective
    return Experiment(
        path=out_dir, elapsed_s=start, parent=init, strategy=strategy,
        data_source=data, stage=stage, command=command[:1000], exit_code=exit_code,
        duration_s=round(end - start, 2) if end is not None else None,
        method=primary_method(found.methods), framework=found.framework,
        script=files[0] if files else launched_file(argv),
        evidence=[w for key, whys in found.evidence.items() for w in whys][:12], source=source)


def artifact_experiments(artifacts: list[ArtifactEntry], methods_by_path: dict[str, set[str]],
                         data_by_path: dict[str, str],
                         trained_by_path: dict[str, bool] | None = None) -> list[Experiment]:
    """Experiments of an untraced run: model folders with training lineage. Their strategy
    comes from `labels`, the decision the iteration's route comes from: a submitted folder whose
    code shows no parameter update is no training experiment; a folder never submitted has
    only its lineage (trained, objective unnamed)."""
    seen: set[str] = set()
    out: list[Experiment] = []
    for a in sorted(artifacts, key=lambda a: a.elapsed_s):
        if a.path in seen or a.parent is None:
            continue  # no lineage evidence: cannot tell it was trained (e.g. a plain copy)
        seen.add(a.path)
        methods = methods_by_path.get(a.path, set())
        _, strategy = labels(methods, trained=(trained_by_path or {}).get(a.path, True))
        if strategy is None:
            continue
        stage = "from base" if a.parent in ("model", "") or a.parent.endswith("/model") \
            else "from checkpoint"
        out.append(Experiment(path=a.path, elapsed_s=a.elapsed_s, parent=a.parent,
                              strategy=strategy,
                              data_source=data_by_path.get(a.path, "unknown"), stage=stage))
    return out


def data_kind(paths: list[str]) -> str:
    """Where a training's data came from, by the paths it read: the task's data/ (curated),
    the agent's own files (self-generated), both (mixed)."""
    given = any("/data/" in p or p.startswith("data/") for p in paths)
    own = any(not ("/data/" in p or p.startswith("data/")) for p in paths)
    return "mixed" if given and own else "curated" if given else \
        "self-generated" if own else "unknown"


def training_launches(labelled: list[tuple[ExecEvent, str]], reader: CommandReader
                      ) -> list[tuple[ExecEvent, Detection]]:
    """The traced programs that launched training (one that updates parameters)."""
    out: list[tuple[ExecEvent, Detection]] = []
    for ev, phase in labelled:
        if phase not in ("SFT", "RL"):
            continue
        found = reader.analyze_argv(ev.argv)
        if found is not None and found.trains:
            out.append((ev, found))
    return out


def traced_experiments(labelled: list[tuple[ExecEvent, str]], reader: CommandReader,
                       workspace: Path, artifacts: list[ArtifactEntry]) -> list[Experiment]:
    """One experiment per program that launched training (one that updates parameters),
    successful or not: a crashed run is still an attempt. Worker processes a launcher starts
    (torchrun, accelerate, deepspeed children running the same file) belong to their launcher."""
    out: list[Experiment] = []
    running: list[tuple[str, float]] = []  # (file, end) of accepted launches
    launched = sorted({f for ev, _ in labelled for f in command_files(ev.argv, reader)})
    for ev, found in training_launches(labelled, reader):
        key = launched_file(ev.argv) or " ".join(ev.argv)
        if any(k == key and ev.start_s <= end for k, end in running):
            continue
        running.append((key, ev.end_s if ev.end_s is not None else float("inf")))
        out.append(_experiment(found, start=ev.start_s, end=ev.end_s, exit_code=ev.exit_code,
                               argv=ev.argv, command=" ".join(ev.argv), source="exec",
                               workspace=workspace, artifacts=artifacts, reader=reader,
                               earlier=out, launched=launched))
    return out


def transcript_experiments(events: list[SlimAgentEvent], reader: CommandReader, workspace: Path,
                           artifacts: list[ArtifactEntry]) -> list[Experiment]:
    """One experiment per command of the agent's event log that launched training."""
    out: list[Experiment] = []
    launched = sorted({f for ev in events if ev.kind == "command" and ev.command
                       for argv in simple_commands(ev.command) for f in command_files(argv, reader)})
    for ev in events:
        if ev.kind != "command" or not ev.command:
            continue
        for argv in simple_commands(ev.command):
            found = reader.analyze_argv(argv)
            if found is None or not found.trains:
                continue
            out.append(_experiment(found, start=ev.t_s, end=ev.end_s, exit_code=ev.exit_code,
                                   argv=argv, command=ev.command, source="transcript",
                                   workspace=workspace, artifacts=artifacts, reader=reader,
                                   earlier=out, launched=launched))
    return out

