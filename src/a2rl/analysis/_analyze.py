"""`a2rl analyze RUN`: what the agent did, computed from evidence the harness recorded
(ledger, code snapshots, artifact index, transcript), never from text the agent wrote about
itself."""

from __future__ import annotations

import ast
import json
import math
import os
import re
import threading
from pathlib import Path
from typing import Any

from a2rl._util import atomic_write_text
from a2rl._walk import read_text_files
from a2rl.analysis._audit import audit, contamination, data_files, ground_truth_audit
from a2rl.analysis._data import data_source
from a2rl.analysis._detect import Detection
from a2rl.analysis._launch import CommandReader, launched_file, simple_commands
from a2rl.analysis._methods import labels, primary_method, route_of
from a2rl.analysis._phases import phase_times, turn_phases
from a2rl.analysis._trained_data import train_visible, trained_texts
from a2rl.recording import (
    ArtifactEntry,
    diff_stat,
    parse_exec_log,
    read_artifacts,
    read_snapshots,
    snapshot_files,
)
from a2rl.records import (
    AgentEvent,
    ExecEvent,
    Experiment,
    FailureType,
    Finding,
    IterationSummary,
    ProcessMetrics,
    RunAnalysis,
    RunRecord,
    SubmissionRecord,
    current_submissions,
    load_run,
    read_jsonl,
)

_RUN_SCRIPT = re.compile(r"(?:python[\d.]*|accelerate launch|torchrun|deepspeed)\s+(?:-\S+\s+)*"
                         r"(\S+\.py)")
_CONFIG_KEYS = {"learning_rate": "lr", "lr": "lr", "num_train_epochs": "epochs", "epochs": "epochs",
                "max_steps": "steps", "steps": "steps", "per_device_train_batch_size": "batch",
                "batch_size": "batch", "r": "lora_rank", "lora_r": "lora_rank",
                "lora_alpha": "lora_alpha", "num_generations": "num_generations", "beta": "beta",
                "max_train": "data_size", "max_length": "max_length"}
# Fields of an args file that record what was done (not what was asked for).
_DONE_KEYS = {"step": "steps", "global_step": "steps", "examples": "data_size",
              "n_examples": "data_size", "train_samples": "data_size"}
_ARGS_FILES = ("a2rl_train_args.json", "training_args.json", "train_args.json", "args.json")
_OUT_FLAGS = ("--out", "--output", "--output_dir", "--output-dir", "--save_dir", "--save-dir", "-o",
              "--save_path", "--save-path", "--out_dir", "--out-dir")
_INIT_FLAGS = ("--init", "--model", "--model_path", "--model-path", "--model_name_or_path",
               "--base", "--base_model", "--pretrain", "--init_from", "--resume_from_checkpoint",
               "--checkpoint", "--ckpt")


def read_agent_events(run_dir: Path) -> list[AgentEvent] | None:
    path = run_dir / "agent" / "events.jsonl"
    if not path.exists():
        return None
    return read_jsonl(path, AgentEvent)


def read_exec_events(run_dir: Path) -> list[ExecEvent] | None:
    """agent/exec.jsonl (None when the run was not traced)."""
    path = run_dir / "agent" / "exec.jsonl"
    return read_jsonl(path, ExecEvent) if path.exists() else None


def parse_warnings(run_dir: Path) -> list[str]:
    """The transcript parser's own account of what it could not read (agent/parse_report.json,
    written by the launchers' parsers), as lines for analysis.json."""
    path = run_dir / "agent" / "parse_report.json"
    if not path.exists():
        return []
    try:
        report = json.loads(path.read_text())
    except ValueError:
        return [f"{path} is not JSON: the parser's report is unreadable"]
    if not isinstance(report, dict):
        return []
    out = [str(w) for w in report.get("warnings") or [] if w]
    unparsed = report.get("unparsed_lines")
    if isinstance(unparsed, int) and unparsed and not any("unread" in w for w in out):
        out.append(f"{unparsed} transcript line(s) looked like JSON but could not be read")
    unknown = report.get("unknown_types")
    if isinstance(unknown, dict) and unknown:
        out.append("event types the parser does not know (skipped): " + ", ".join(
            f"{k} ×{v}" for k, v in sorted(unknown.items())))
    out += [f"the CLI reported: {e}" for e in report.get("cli_errors") or []]
    return out


def workspace_files(workspace: Path, *, max_bytes: int = 1 << 20) -> dict[str, str]:
    """Text files of a workspace that can say what ran (code, shell scripts, configs), for
    runs without code snapshots (imported runs)."""
    suffixes = (".py", ".sh", ".yaml", ".yml", ".json", ".toml", ".cfg", ".md", ".txt", ".ipynb")
    return read_text_files(
        workspace, max_bytes=max_bytes,
        enter=lambda rel: not any(part.startswith(".") or part in ("__pycache__", "node_modules",
                                                                    "wandb")
                                  for part in rel.split("/")),
        accept=lambda rel: rel.endswith(suffixes) and not rel.rsplit("/", 1)[-1].startswith("."))


def hms(seconds: float | None) -> str:
    if seconds is None:
        return "--:--:--"
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def executed_scripts(transcript: str, files: dict[str, str]) -> set[str]:
    """Scripts in the snapshot that the transcript shows being run (plain-text transcripts)."""
    ran = {Path(m).name for m in _RUN_SCRIPT.findall(transcript)}
    return {p for p in files if p.endswith(".py") and Path(p).name in ran}


def _command_files(argv: list[str], reader: CommandReader) -> list[str]:
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
    files = _command_files(argv, reader)
    data = _data_kind(inputs)
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


def training_excerpt(path: str, source: str, found: Detection, *, before: int = 3,
                     after: int = 14) -> str:
    """The lines around the first training-method evidence (trainer/config construction)."""
    lines = source.splitlines()
    numbers = [int(e.split(":")[0].removeprefix("line ")) for ev in found.evidence.values()
               for e in ev if e.startswith("line ")]
    first = min((n for n in numbers if n > 0 and not lines[n - 1].lstrip().startswith(
        ("import", "from"))), default=1)
    lo, hi = max(1, first - before), min(len(lines), first + after)
    return f"# {path}, lines {lo}-{hi}\n" + "\n".join(lines[lo - 1:hi])


def _ast_config(source: str) -> dict[str, Any]:
    """Constant keyword arguments and argparse defaults that name training knobs."""
    out: dict[str, Any] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg in _CONFIG_KEYS and isinstance(kw.value, ast.Constant) \
                    and isinstance(kw.value.value, int | float) and not isinstance(kw.value.value, bool):
                out.setdefault(_CONFIG_KEYS[kw.arg], kw.value.value)
        # argparse: add_argument("--lr", type=float, default=1e-4)
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            name = node.args[0].value.lstrip("-").replace("-", "_")
            default = next((kw.value for kw in node.keywords if kw.arg == "default"), None)
            if name in _CONFIG_KEYS and isinstance(default, ast.Constant) \
                    and isinstance(default.value, int | float) and not isinstance(default.value, bool):
                out.setdefault(_CONFIG_KEYS[name], default.value)
    return out


def _train_args(files: dict[str, str], model_path: str) -> dict[str, Any] | None:
    """Training arguments saved next to a model folder (the first args file that parses)."""
    for name in _ARGS_FILES:
        text = files.get(f"{model_path.rstrip('/')}/{name}")
        if text:
            try:
                data = json.loads(text)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return None


def _args_config(files: dict[str, str], model_path: str) -> dict[str, Any]:
    """Training arguments saved next to the submitted model (they override script defaults)."""
    data = _train_args(files, model_path) or {}
    config = {_CONFIG_KEYS[k]: v for k, v in data.items()
              if k in _CONFIG_KEYS and isinstance(v, int | float) and not isinstance(v, bool)}
    if config.get("data_size") == 0:  # "0 = all rows" in the reference script: not a size
        del config["data_size"]
    # What the training did, where it says so, outranks what it was asked for: the steps it
    # reached (a time-limited run stops early) and the examples it trained on.
    for key, name in _DONE_KEYS.items():
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            config[name] = value
    return config


def _run_failure(run: RunRecord, subs: list[SubmissionRecord],
                 no_valid: bool) -> tuple[FailureType | None, str | None]:
    """The whole run's failure type. An agent command that never ran (exit 126/127: not
    executable / not found) without a single submission is the setup's failure, not the
    agent's coding."""
    code = run.agent_exit_code
    if not subs and code in (126, 127):
        what = "was not found" if code == 127 else "could not be executed"
        return ("harness/setup failure",
                f"the agent command {what} (exit {code} after {run.timings.agent_s:.0f} s); "
                "see agent/transcript.log")
    if no_valid:
        return "early coding failure", "no valid submission in the whole run"
    return None, None


def _failure(rec: SubmissionRecord, *, level: str, methods: set[str], trained: bool,
             best_before: float | None, had_valid_before: bool) -> tuple[FailureType | None, str | None]:
    if rec.status == "baseline_copy":
        return None, None
    if rec.status == "rejected" and had_valid_before:
        # Refused before evaluation (its path, its size) after a working model: no training to
        # judge, so never a training collapse; the grader's reason stays as the evidence.
        return None, rec.error or "refused by the grader"
    if rec.valid and rec.improvement is None:
        return None, None  # no baseline (an imported run without one): improvement unknown
    improving = rec.valid and rec.score is not None and rec.improvement is not None \
        and rec.improvement > 0 and (best_before is None or rec.score >= best_before)
    if improving:
        return None, None
    if not rec.valid:
        if had_valid_before:
            return ("training collapse/instability",
                    f"{rec.status} after earlier valid submissions: {rec.error}")
        if not trained:
            return "early coding failure", f"{rec.status} before any training ran: {rec.error}"
        return "early coding failure", f"{rec.status}: {rec.error}"
    assert rec.score is not None
    if best_before is not None and rec.score < best_before - 1.0:
        return ("training collapse/instability",
                f"score {rec.score:.2f} fell below the earlier best {best_before:.2f}")
    if level == "L3" and methods and not (methods & {"GRPO", "PPO"}):
        return "static shortcut without transfer", "only supervised training on static data"
    if level == "L3" and methods & {"GRPO", "PPO"}:
        return "rollout construction failure", "RL code present but no improvement"
    return "reward/data design failure", f"training ran ({', '.join(sorted(methods)) or 'unknown'}) " \
                                         f"but the score did not improve ({rec.improvement:+.2f})"


def _experiments(artifacts: list[ArtifactEntry], methods_by_path: dict[str, set[str]],
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


def _data_kind(paths: list[str]) -> str:
    given = any("/data/" in p or p.startswith("data/") for p in paths)
    own = any(not ("/data/" in p or p.startswith("data/")) for p in paths)
    return "mixed" if given and own else "curated" if given else \
        "self-generated" if own else "unknown"


def _training_launches(labelled: list[tuple[ExecEvent, str]], reader: CommandReader
                       ) -> list[tuple[ExecEvent, Detection]]:
    """The traced programs that launched training (one that updates parameters)."""
    out: list[tuple[ExecEvent, Detection]] = []
    for ev, phase in labelled:
        if phase not in ("SFT", "RL"):
            continue
        found = reader.analyse_argv(ev.argv)
        if found is not None and found.trains:
            out.append((ev, found))
    return out


def _traced_experiments(labelled: list[tuple[ExecEvent, str]], reader: CommandReader,
                        workspace: Path, artifacts: list[ArtifactEntry]) -> list[Experiment]:
    """One experiment per program that launched training (one that updates parameters),
    successful or not: a crashed run is still an attempt. Worker processes a launcher starts
    (torchrun, accelerate, deepspeed children running the same file) belong to their launcher."""
    out: list[Experiment] = []
    running: list[tuple[str, float]] = []  # (file, end) of accepted launches
    launched = sorted({f for ev, _ in labelled for f in _command_files(ev.argv, reader)})
    for ev, found in _training_launches(labelled, reader):
        key = launched_file(ev.argv) or " ".join(ev.argv)
        if any(k == key and ev.start_s <= end for k, end in running):
            continue
        running.append((key, ev.end_s if ev.end_s is not None else float("inf")))
        out.append(_experiment(found, start=ev.start_s, end=ev.end_s, exit_code=ev.exit_code,
                               argv=ev.argv, command=" ".join(ev.argv), source="exec",
                               workspace=workspace, artifacts=artifacts, reader=reader,
                               earlier=out, launched=launched))
    return out


def _transcript_experiments(events: list[AgentEvent], reader: CommandReader, workspace: Path,
                            artifacts: list[ArtifactEntry]) -> list[Experiment]:
    """One experiment per command of the agent's event log that launched training."""
    out: list[Experiment] = []
    launched = sorted({f for ev in events if ev.kind == "command" and ev.command
                       for argv in simple_commands(ev.command) for f in _command_files(argv, reader)})
    for ev in events:
        if ev.kind != "command" or not ev.command:
            continue
        for argv in simple_commands(ev.command):
            found = reader.analyse_argv(argv)
            if found is None or not found.trains:
                continue
            out.append(_experiment(found, start=ev.t_s, end=ev.end_s, exit_code=ev.exit_code,
                                   argv=argv, command=ev.command, source="transcript",
                                   workspace=workspace, artifacts=artifacts, reader=reader,
                                   earlier=out, launched=launched))
    return out


def _data_source(files: dict[str, str], model_path: str) -> str:
    """Data source of the run that wrote `model_path`, from the training arguments saved there."""
    data = _train_args(files, model_path)
    if data is None:
        return "unknown"
    return _data_kind([str(v) for k, v in data.items() if "data" in k.lower() and isinstance(v, str)])


class IterationBuilder:
    """Turns submissions into IterationSummary records, one at a time, in arrival order.

    Used after the run (a2rl analyze) and live, as each submission finishes (the runner appends
    the result to summary.jsonl / summary.md). Only evidence recorded so far is used: the code
    snapshot taken when the submission arrived and the transcript up to now.
    """

    def __init__(self, run_dir: Path, level: str, exec_t0: float | None = None) -> None:
        self.run_dir, self.level, self.exec_t0 = run_dir, level, exec_t0
        self.best: float | None = None
        self.had_valid = False
        self.prev_elapsed = 0.0
        self.methods_by_path: dict[str, set[str]] = {}
        self.trained_by_path: dict[str, bool] = {}
        self.data_by_path: dict[str, str] = {}
        self._analysed: dict[tuple[str, str], Detection] = {}
        self._prev_commit: str | None = None
        self._agent_events: list[AgentEvent] | None = None
        self._fallback: dict[str, str] | None = None

    @property
    def fallback_files(self) -> dict[str, str]:
        """For runs without code snapshots: the workspace as it is now (read once, on demand)."""
        if self._fallback is None:
            self._fallback = {} if read_snapshots(self.run_dir) else \
                workspace_files(self.run_dir / "workspace")
        return self._fallback

    def agent_events(self) -> list[AgentEvent] | None:
        if self._agent_events is None:
            self._agent_events = read_agent_events(self.run_dir)
        return self._agent_events

    def transcript(self) -> str:
        path = self.run_dir / "agent" / "transcript.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def exec_events(self) -> list[ExecEvent] | None:
        """The exec trace: final (exec.jsonl) after the run, parsed from the raw log during it."""
        events = read_exec_events(self.run_dir)
        raw = self.run_dir / "agent" / "exec.log"
        if events is None and self.exec_t0 is not None and raw.exists():
            events = [ExecEvent.model_validate(e, from_attributes=True)
                      for e in parse_exec_log(raw.read_text(errors="replace"), self.exec_t0)]
        return events

    def methods_in(self, files: dict[str, str], until: float | None = None
                   ) -> tuple[set[str], bool, list[str]]:
        """Methods of everything launched up to `until`: from the exec trace, else from the
        agent's event log, else from script names in a plain transcript."""
        reader = CommandReader(files)
        launches: list[list[str]] = []
        events = self.exec_events()
        agent_events = self.agent_events() if events is None else None
        if events is not None:
            launches = [ev.argv for ev in events if until is None or ev.start_s <= until]
        elif agent_events is not None:
            launches = [argv for ev in agent_events if ev.kind == "command" and ev.command
                        and (until is None or ev.t_s <= until) for argv in simple_commands(ev.command)]
        else:
            launches = [["python", p] for p in sorted(executed_scripts(self.transcript(), files))]
        methods: set[str] = set()
        trained = False
        ran: set[str] = set()
        seen: set[tuple[str, ...]] = set()
        for argv in launches:
            if tuple(argv) in seen:
                continue
            seen.add(tuple(argv))
            found = reader.analyse_argv(argv)
            if found is None:
                continue
            for path in _command_files(argv, reader):
                ran.add(path)
                self._analysed.setdefault((path, files[path]), found)
            if found.trains or found.methods - {"PEFT"}:
                methods |= found.methods
            trained |= found.trains
        return methods, trained, sorted(ran)

    def add(self, rec: SubmissionRecord) -> IterationSummary:
        snap = next((s for s in read_snapshots(self.run_dir) if s.tag == rec.id), None)
        files = snapshot_files(self.run_dir, snap.commit) if snap else self.fallback_files
        methods, trained, ran = self.methods_in(files, until=rec.elapsed_s)
        rel_model = rec.model_path
        if rec.resolved_path:
            try:
                rel_model = str(Path(rec.resolved_path).relative_to(
                    (self.run_dir / "workspace").resolve()))
            except ValueError:
                pass
        self.methods_by_path[rel_model] = methods
        self.trained_by_path[rel_model] = trained
        self.data_by_path[rel_model] = _data_source(files, rel_model)
        config: dict[str, Any] = {}
        for path in ran:
            config.update({k: v for k, v in _ast_config(files[path]).items() if k not in config})
        config.update(_args_config(files, rel_model))
        route: str = route_of(methods, trained=trained, copy=rec.status == "baseline_copy") \
            if snap or files else "unknown (no snapshot)"
        failure, evidence = _failure(rec, level=self.level, methods=methods, trained=trained,
                                     best_before=self.best, had_valid_before=self.had_valid)
        elapsed = rec.elapsed_s
        stat = diff_stat(self.run_dir, self._prev_commit, snap.commit) if snap else []
        if snap:
            self._prev_commit = snap.commit
        excerpt = None
        for path in ran:
            found = self._analysed.get((path, files[path]))
            if found and found.trains and path.endswith(".py"):
                excerpt = training_excerpt(path, files[path], found)
                break
            if found and found.trains and path.endswith((".yaml", ".yml", ".json", ".sh")):
                # A config- or script-driven launch: its first lines say what it trains.
                head = files[path].splitlines()[:20]
                excerpt = f"# {path}, lines 1-{len(head)}\n" + "\n".join(head)
                break
        item = IterationSummary(
            index=rec.seq, submission_id=rec.id, elapsed_marker=hms(elapsed), elapsed_s=elapsed,
            duration_s=round(elapsed - self.prev_elapsed, 2) if elapsed is not None else None,
            status=rec.status, score=rec.score, improvement=rec.improvement, training_type=route,
            methods=sorted(methods), failure_type=failure, failure_evidence=evidence, config=config,
            changed_files=snap.changed[:50] if snap else [], scripts=ran, diff_stat=stat[:20],
            excerpt=excerpt)
        if elapsed is not None:
            self.prev_elapsed = elapsed
        if rec.valid and rec.score is not None:
            self.had_valid = True
            self.best = rec.score if self.best is None else max(self.best, rec.score)
        return item


def _submissions(run_dir: Path, run: RunRecord) -> list[SubmissionRecord]:
    """The agent's submissions. The ledger is the source of truth; run.json's copy is used when
    the ledger is gone. A hidden-final run's test-split record is the harness's own evaluation,
    not an iteration of the agent's (it is `RunAnalysis.final`)."""
    ledger = run_dir / "ledger.jsonl"
    subs = current_submissions(ledger) if ledger.exists() else list(run.submissions)
    return [r for r in subs if r.split != "test"]


def _measured_seen(run: RunRecord) -> set[str] | None:
    """Keyed ids of the held-out items the task measured in its train-visible data, from the
    baseline's per-item record (None when the task does not measure that overlap)."""
    if run.baseline is None:
        return None
    parts = [v for v in (run.baseline.items, run.baseline.test_items)
             if v is not None and v.keys is not None and v.seen is not None]
    if not parts:
        return None
    return {k for v in parts for k, s in zip(v.keys or [], v.seen or [], strict=True) if s}


def analyze_run(run_dir: Path, *, heldout: list[dict[str, Any]] | None = None) -> RunAnalysis:
    """Compute the analysis of a finished run and (re)write summary.jsonl, summary.md and
    analysis.json from scratch (what extensions add to it: `a2rl.extensions.add_to_analysis`)."""
    run: RunRecord = load_run(run_dir)
    subs = _submissions(run_dir, run)
    builder = IterationBuilder(run_dir, run.task.level if run.task else "L1")
    iterations = [builder.add(rec) for rec in subs]
    analysis = _run_level(run_dir, run, subs, builder, iterations, heldout)
    write_analysis(run_dir, analysis)
    return analysis


def _run_level(run_dir: Path, run: RunRecord, subs: list[SubmissionRecord],
               builder: IterationBuilder, iterations: list[IterationSummary],
               heldout: list[dict[str, Any]] | None) -> RunAnalysis:
    transcript = builder.transcript()
    grader_log = (run_dir / "grader.log").read_text(errors="replace") \
        if (run_dir / "grader.log").exists() else ""
    snapshots = {s.tag: s for s in read_snapshots(run_dir)}
    artifacts = read_artifacts(run_dir)
    notes: list[str] = []
    if not snapshots and not builder.fallback_files:
        notes.append("no code snapshots were recorded; methods and routes are unknown")
    elif not snapshots:
        notes.append("no code snapshots: methods are read from the workspace as it was at the end")
    if heldout is None:
        notes.append("held-out items not loaded: contamination not checked")
    final_snap = snapshots.get("final") or (list(snapshots.values())[-1] if snapshots else None)
    final_files = snapshot_files(run_dir, final_snap.commit) if final_snap else builder.fallback_files
    iterations = list(iterations)
    all_methods, all_trained, _ = builder.methods_in(final_files)
    best_rec = next((r for r in subs if run.best and r.id == run.best.submission_id), None)
    best_iter = next((it for it in iterations if best_rec and it.submission_id == best_rec.id), None)
    run_route = best_iter.training_type if best_iter else route_of(all_methods, trained=all_trained,
                                                                   copy=False) \
        if final_snap or final_files else "unknown (no snapshot)"
    agent_s = run.timings.agent_s or None
    no_valid = not any(r.valid for r in subs)
    failure_type, failure_evidence = _run_failure(run, subs, no_valid)
    iterations.append(IterationSummary(
        index=len(subs) + 1, submission_id=None, elapsed_marker=hms(agent_s),
        elapsed_s=agent_s, duration_s=round(agent_s - builder.prev_elapsed, 2) if agent_s else None,
        status=run.exit_reason or run.status, exit_code=run.agent_exit_code,
        score=run.best.score if run.best else None, improvement=run.improvement,
        training_type=run_route, methods=sorted(all_methods),
        failure_type=failure_type, failure_evidence=failure_evidence,
        changed_files=final_snap.changed[:50] if final_snap else [],
        scripts=sorted(executed_scripts(transcript, final_files))))

    valid = [r for r in subs if r.valid]
    # Imported runs carry no baseline.json: the harness's baseline is on its submissions.
    baseline = run.baseline.score if run.baseline else next(
        (r.baseline for r in subs if not math.isnan(r.baseline)), None)
    improving = [r for r in subs if r.valid and r.improvement is not None and r.improvement > 0]
    budget = run.config.budget_s
    last_elapsed = max((r.elapsed_s for r in subs if r.elapsed_s is not None), default=None)
    metrics = ProcessMetrics(
        baseline=baseline, best=run.best.score if run.best else None, improvement=run.improvement,
        scores=[r.score for r in subs], submissions=len(subs),
        valid_rate=round(len(valid) / len(subs), 4) if subs else None,
        zero_score_rate=round(sum(1 for r in subs if r.status == "failed" or r.score == 0)
                              / len(subs), 4) if subs else None,
        best_at_submission=best_rec.seq if best_rec else None,
        time_to_first_improvement_s=improving[0].elapsed_s if improving else None,
        time_to_best_s=best_rec.elapsed_s if best_rec else None,
        time_used_ratio=round(run.timings.agent_s / budget, 4) if budget else None,
        last_submit_gap_s=round(budget - last_elapsed, 2) if last_elapsed is not None else None,
        code_files_written=len([p for p in final_files if p.startswith("code/") or
                                (p.endswith((".py", ".sh")) and not p.startswith("output/"))]),
        model_versions=len({a.path for a in artifacts}))

    events = builder.exec_events()
    agent_events = builder.agent_events()
    labelled: list[tuple[ExecEvent, str]] = []
    phase_seconds: dict[str, float] = {}
    reader = CommandReader(final_files)
    ws = run_dir / "workspace"
    if events is not None:
        labelled, phase_seconds = phase_times(events, reader, horizon=agent_s or 0.0)
        experiments = _traced_experiments(labelled, reader, ws, artifacts)
    elif agent_events is not None:
        notes.append("no exec trace: experiments are the training commands of the agent's "
                     "event log, joined to the workspace's scripts and configs")
        experiments = _transcript_experiments(agent_events, reader, ws, artifacts)
    else:
        notes.append("no exec trace (strace missing or disabled): experiments come from the "
                     "artifact index, scripts from the transcript")
        experiments = _experiments(artifacts, builder.methods_by_path, builder.data_by_path,
                                   builder.trained_by_path)
    pairs = list(zip(experiments, experiments[1:], strict=False))
    changes = sum(1 for a, b in pairs if (a.strategy, a.data_source, a.stage) !=
                  (b.strategy, b.data_source, b.stage))
    turns: list[dict[str, Any]] = []
    turn_seconds: dict[str, float] = {}
    usage: dict[str, float] = {}
    if agent_events is not None:
        turns, turn_seconds = turn_phases(agent_events, reader, agent_s or 0.0)
        for aev in agent_events:
            # every model the CLI called (input/output_tokens) and the main model alone
            # (main_*, from launchers that tell them apart)
            for key in ("input_tokens", "output_tokens", "main_input_tokens", "main_output_tokens",
                        "cost_usd"):
                value = getattr(aev, key)
                if value is not None:
                    usage[key] = usage.get(key, 0.0) + float(value)
    else:
        notes.append("no agent event log (agent/events.jsonl): phases are labelled per program "
                     "the agent ran, not per model turn")

    base_hash = run.model.content_hash if run.model else None
    given = train_visible(run_dir, run)
    notes += given.notes
    # Data files the traced training launches read, checked on their own (ground truth); the
    # task's untouched files among them hold only what the task gave.
    trained = {rel: text for rel, text in trained_texts(
        [ev.argv for ev, _ in _training_launches(labelled, reader)], reader, ws).items()
        if given.original.get(rel) != text}
    seen = _measured_seen(run)
    findings = audit(task=run.config.task, code=final_files, transcript=transcript,
                     grader_log=grader_log,
                     rejected_errors=[r.error or "" for r in subs if r.status == "rejected"],
                     base_copies=[a.path for a in artifacts
                                  if base_hash and a.weights_hash == base_hash],
                     data_texts={rel: text for rel, text in (data_files(ws) | given.agent_written)
                                 .items() if rel not in trained},
                     heldout=heldout or [], train_texts=given.original, seen=seen)
    findings = _drop_base_model_loads(findings, run)
    findings += given.findings
    findings += contamination(trained, heldout or [], train_texts=given.original, seen=seen,
                              where="data files the traced training programs read",
                              basis="ground-truth")
    findings += ground_truth_audit(run_dir, submissions=subs,
                                   base=Path(run.model.path) if run.model else None,
                                   driver_base_url=run.config.driver_base_url)
    if not run.sandboxed and run.imported is not None:
        findings.append(Finding(
            kind="unsandboxed", severity="warning", message=f"imported from {run.imported.harness}: "
            "the agent ran without OS isolation of that harness's grader and held-out data"))
    elif not run.sandboxed:
        findings.append(Finding(
            kind="unsandboxed", severity="critical", message="the agent ran without a sandbox "
            "(--no-sandbox): isolation of held-out data and the ledger was not enforced"))
    if run.imported is not None:
        notes.append(f"imported from {run.imported.harness} ({run.imported.source}); not "
                     "recovered: " + "; ".join(run.imported.unrecovered))
    analysis = RunAnalysis(
        run_id=run.run_id, task=run.config.task, route=run_route, final=run.final,
        methods_attempted=sorted(all_methods | {m for it in iterations for m in it.methods}),
        methods_in_best=best_iter.methods if best_iter else [], metrics=metrics,
        experiments=experiments, strategy_changes=changes,
        change_rate=round(changes / len(pairs), 4) if pairs else None,
        persistence=round(1 - changes / len(pairs), 4) if pairs else None, iterations=iterations,
        turns=turns, turn_phase_seconds=turn_seconds, usage=usage,
        findings=findings, sandboxed=run.sandboxed, notes=notes, exec_traced=events is not None,
        imported_from=run.imported.harness if run.imported else None,
        parse_warnings=parse_warnings(run_dir),
        phase_seconds=phase_seconds,
        commands=[{"start_s": ev.start_s, "end_s": ev.end_s, "exit_code": ev.exit_code,
                   "phase": phase, "argv": " ".join(ev.argv)[:1000]} for ev, phase in labelled])
    return analysis


def _drop_base_model_loads(findings: list[Finding], run: RunRecord) -> list[Finding]:
    """Loading the run's own base model by its hub id (how other harnesses hand it to the agent)
    is not a foreign model: keep only the evidence that names another one."""
    base = run.config.model
    if "/" not in base:
        return findings
    out = []
    for f in findings:
        if f.kind == "other-model":
            rest = [e for e in f.evidence if base not in e]
            if not rest:
                continue
            f = f.model_copy(update={"evidence": rest})
        out.append(f)
    return out


class LiveSummary:
    """Append-only summary.jsonl / summary.md written while the run goes on: one iteration as
    each submission finishes (in completion order), then the final record and the run-level
    sections when the run ends. `a2rl analyze` can always rebuild both files from evidence."""

    def __init__(self, run_dir: Path, level: str) -> None:
        self.run_dir = run_dir
        self.builder = IterationBuilder(run_dir, level)
        self.iterations: list[IterationSummary] = []
        self._lock = threading.Lock()

    def _append(self, name: str, text: str) -> None:
        with (self.run_dir / name).open("a") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())

    def submission_finished(self, rec: SubmissionRecord) -> None:
        with self._lock:
            item = self.builder.add(rec)
            self.iterations.append(item)
            self._append("summary.jsonl", item.model_dump_json() + "\n")
            self._append("summary.md", render_iteration(item) + "\n")

    def finish(self, heldout: list[dict[str, Any]] | None) -> RunAnalysis:
        with self._lock:
            run = load_run(self.run_dir)
            subs = _submissions(self.run_dir, run)
            done = {it.submission_id for it in self.iterations}
            for rec in subs:  # anything that finished without an event (e.g. interrupted)
                if rec.id not in done:
                    self.iterations.append(self.builder.add(rec))
                    self._append("summary.jsonl", self.iterations[-1].model_dump_json() + "\n")
            analysis = _run_level(self.run_dir, run, subs, self.builder, self.iterations, heldout)
            final = analysis.iterations[-1]
            self._append("summary.jsonl", final.model_dump_json() + "\n")
            atomic_write_text(self.run_dir / "summary.md", render_markdown(analysis))
            atomic_write_text(self.run_dir / "analysis.json", analysis.model_dump_json(indent=2))
            return analysis


def write_analysis(run_dir: Path, analysis: RunAnalysis) -> None:
    atomic_write_text(run_dir / "analysis.json", analysis.model_dump_json(indent=2))
    atomic_write_text(run_dir / "summary.jsonl",
                      "".join(it.model_dump_json() + "\n" for it in analysis.iterations))
    atomic_write_text(run_dir / "summary.md", render_markdown(analysis))


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
                             ("heuristic", "Read from code and commands")):
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
