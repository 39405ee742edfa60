"""The weights scored are the weights recorded (issue 30): a checkpoint's files may name other
files to load (the weight index's shards, tokenizer files, an adapter's base model), and the
loaders join those names onto the folder, so an absolute path or `..` would make the evaluator
read files outside the snapshot: a workspace file the agent rewrites after submitting, the run's
own artifacts on the host, a fifo that blocks the loader, a device that never ends. Each such
submission is refused when it is snapshotted, with the reason in the ledger; the evaluation child
checks the snapshot again, and a traced evaluation opens nothing outside it.

The snapshot code before these checks copied and hashed such a folder (a stub .safetensors keeps
check_model_dir and the weights hash happy) and queued it: `test_without_the_check_it_is_scored`
runs every attack with the check switched off and sees it scored."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_adversarial_grader import QualityEvaluator, baseline_record

from a2rl.grader import Grader, GraderConfig, _artifact
from a2rl.grader._evaluation import EvalJob
from a2rl.models import resolve_model
from a2rl.schema import RunConfig
from a2rl.tasks import get_task
from conftest import TINY_TASK, perturb

_STUB = struct.pack("<Q", 2) + b"{}"
"""A valid safetensors file holding no tensor."""


@pytest.fixture
def env(tmp_path: Path, tiny_model: Path, model_copy):
    run_dir = tmp_path / "run"
    ws = run_dir / "workspace"
    (ws / "output").mkdir(parents=True)
    model_copy(ws / "model")
    perturb(model_copy(ws / "output" / "real"), scale=0.05)  # the agent's trained weights
    task = get_task("arith", TINY_TASK)
    base = resolve_model(str(tiny_model))
    fake = QualityEvaluator()
    grader = Grader(run_dir, ws, task, base, baseline_record(task, base),
                    GraderConfig(RunConfig(budget_s=600.0, runs_dir=str(tmp_path))),
                    evaluator=fake)
    grader.start_clock()
    yield run_dir, ws, grader, fake, model_copy
    grader.close()


def _tensor_names(model: Path) -> list[str]:
    raw = (model / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return [k for k in json.loads(raw[8:8 + n]) if k != "__metadata__"]


def indexed(ws: Path, model_copy, name: str, shard: str) -> Path:
    """A folder whose index maps every tensor to `shard`, beside a tensor-less stub shard."""
    folder = model_copy(ws / "output" / name)
    tensors = _tensor_names(folder)
    (folder / "model.safetensors").unlink()
    (folder / "stub.safetensors").write_bytes(_STUB)
    wmap = {t: shard for t in tensors} | {"stub": "stub.safetensors"}
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": wmap}))
    return folder


def _attack(kind: str, run_dir: Path, ws: Path, grader: Grader) -> str:
    """The shard path each attack writes into the index (preparing what it points at)."""
    real = ws / "output" / "real" / "model.safetensors"
    if kind == "absolute":
        return str(real)
    if kind == "dotdot":
        return "../real/model.safetensors"
    if kind == "artifacts":  # the run's own copy on the host, outside the sandbox
        first = grader.submit("output/real")
        assert first.status == "scored"
        rec = grader.ledger.get(first.submission_id or "")
        assert rec is not None and rec.artifact_dir
        return str(run_dir / rec.artifact_dir / "model.safetensors")
    if kind == "symlink":
        (ws / "links").mkdir()
        os.symlink(real, ws / "links" / "w.safetensors")
        return str(ws / "links" / "w.safetensors")
    if kind == "subfolder":  # sub-folders are never copied: the loader would look elsewhere
        return "ckpt/model.safetensors"
    if kind == "fifo":
        os.mkfifo(ws / "pipe.safetensors")
        return str(ws / "pipe.safetensors")
    if kind == "device":
        return "/dev/zero"
    raise AssertionError(kind)


ATTACKS = ["absolute", "dotdot", "artifacts", "symlink", "subfolder", "fifo", "device"]


def _submit_bounded(grader: Grader, path: str):
    """Submit from a thread and give up after a generous bound: a blocking open of a fifo or a
    device would hold the request forever, never just slow it down."""
    box: list[object] = []
    worker = threading.Thread(target=lambda: box.append(grader.submit(path)), daemon=True)
    worker.start()
    worker.join(120)
    assert box, f"submitting {path} blocked"
    return box[0]


@pytest.mark.parametrize("kind", ATTACKS)
def test_index_naming_a_file_outside_the_folder_is_refused(env, kind: str) -> None:
    run_dir, ws, grader, fake, model_copy = env
    shard = _attack(kind, run_dir, ws, grader)
    calls = fake.calls
    indexed(ws, model_copy, "hostile", shard)
    r = _submit_bounded(grader, "output/hostile")
    assert r.status == "rejected", r
    assert "not a file in the submitted folder" in (r.error or "")
    assert "name it by its file name" in (r.error or "")  # the fix
    rec = grader.ledger.get(r.submission_id or "")
    assert rec is not None and rec.status == "rejected" and rec.error == r.error
    assert rec.artifact_dir is None and fake.calls == calls
    assert not list((run_dir / "artifacts").glob(".staging-*"))


@pytest.mark.parametrize("kind", ATTACKS)
def test_without_the_check_it_is_scored(env, kind: str, monkeypatch) -> None:
    """Every attack above passes the rest of the snapshot code: the check is what stops it."""
    run_dir, ws, grader, fake, model_copy = env
    shard = _attack(kind, run_dir, ws, grader)
    indexed(ws, model_copy, "hostile", shard)
    monkeypatch.setattr(_artifact, "check_references", lambda folder, shown: None)
    r = _submit_bounded(grader, "output/hostile")
    assert r.status == "scored", r


def test_fifo_and_symlink_shards_in_the_folder_are_refused_without_blocking(env) -> None:
    run_dir, ws, grader, fake, model_copy = env
    fifo = indexed(ws, model_copy, "fifo", "shard.safetensors")
    os.mkfifo(fifo / "shard.safetensors")
    link = indexed(ws, model_copy, "link", "shard.safetensors")
    os.symlink(ws / "output" / "real" / "model.safetensors", link / "shard.safetensors")
    r = _submit_bounded(grader, "output/fifo")
    assert r.status == "rejected" and "not a regular file" in (r.error or "")
    r = _submit_bounded(grader, "output/link")
    assert r.status == "rejected" and "symlink" in (r.error or "")
    assert fake.calls == 0


@pytest.mark.parametrize("case", ["single-and-index", "stray-shard", "unindexed-shard",
                                  "adapter", "tokenizer-file", "index-not-a-map"])
def test_other_indirections_are_refused_with_the_reason(env, case: str) -> None:
    run_dir, ws, grader, fake, model_copy = env
    if case in ("single-and-index", "stray-shard", "index-not-a-map"):
        folder = indexed(ws, model_copy, "x", "stub.safetensors")
        if case == "single-and-index":
            shutil.copy(ws / "output" / "real" / "model.safetensors", folder)
            want = "both model.safetensors and"
        elif case == "stray-shard":
            (folder / "old.safetensors").write_bytes(_STUB)
            want = "weights its index does not name"
        else:
            (folder / "model.safetensors.index.json").write_text('{"weight_map": ["/etc"]}')
            want = "no weight_map"
    else:
        folder = model_copy(ws / "output" / "x", ws / "output" / "real")
        if case == "unindexed-shard":
            (folder / "extra.safetensors").write_bytes(_STUB)
            want = "weight files without an index"
        elif case == "adapter":
            (folder / "adapter_config.json").write_text(
                json.dumps({"base_model_name_or_path": str(ws / "output" / "real")}))
            want = "PEFT adapter files"
        else:
            cfg = json.loads((folder / "tokenizer_config.json").read_text())
            cfg["tokenizer_file"] = str(ws / "model" / "tokenizer.json")
            (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
            want = "field 'tokenizer_file'"
    r = grader.submit("output/x")
    assert r.status == "rejected" and want in (r.error or ""), r
    assert fake.calls == 0


# -- the real evaluation child, traced ------------------------------------------------------------
_OPEN = re.compile(r'^\d+\s+(?:openat|open|creat)\((?:AT_FDCWD, )?"([^"]+)"')


def _snapshot(ws: Path, name: str, artifacts: Path) -> _artifact.Snapshot:
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with _artifact.open_submission(f"output/{name}", fd, ws) as (folder_fd, rel):
            return _artifact.snapshot_submission(folder_fd, rel, artifacts, 1 << 32)
    finally:
        os.close(fd)


def _traced_child(job: EvalJob, trace: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    return subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat,creat", "-o",
                           str(trace), sys.executable, "-m", "a2rl.grader._eval_child", "-"],
                          input=job.model_dump_json(), capture_output=True, text=True, env=env,
                          timeout=600)


def _opened(trace: Path) -> list[Path]:
    return [Path(m.group(1)) for line in trace.read_text().splitlines()
            if (m := _OPEN.match(line))]


@pytest.fixture(scope="module")
def traced(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """One real evaluation of a submission's snapshot under strace. config.json carries the
    fields judged safe as they are (`_name_or_path` naming elsewhere, `auto_map`)."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    root = tmp_path_factory.mktemp("traced")
    ws = root / "run" / "workspace"
    shutil.copytree(tiny_model, ws / "model")
    sub = shutil.copytree(tiny_model, ws / "output" / "v1")
    cfg = json.loads((sub / "config.json").read_text())
    cfg["_name_or_path"] = str(ws / "output" / "elsewhere")
    cfg["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
    (sub / "config.json").write_text(json.dumps(cfg))
    (sub / "modeling_evil.py").write_text("raise SystemExit('remote code was imported')\n")
    (sub / "README.md").write_text("notes\n")
    snap = _snapshot(ws, "v1", root / "run" / "artifacts")
    task = get_task("arith", dict(TINY_TASK, n_heldout=2))
    out = root / "run" / "evals" / "s1"
    out.mkdir(parents=True)
    job = EvalJob(task=task.spec(), model_dir=str(snap.path), chat_template_from=str(ws / "model"),
                  out_dir=str(out), snapshot=True)
    proc = _traced_child(job, root / "trace.txt")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root, ws, snap, _opened(root / "trace.txt")


def test_the_evaluator_opens_model_files_only_inside_the_snapshot(traced) -> None:
    root, ws, snap, opened = traced
    inside = {p.name for p in opened if p.parent == snap.path}
    assert "model.safetensors" in inside and "config.json" in inside  # the tracer sees them
    assert "tokenizer.json" in inside
    for p in opened:
        if not p.is_relative_to(root):
            continue
        # the run's own paths: the snapshot, the evaluation's outputs, and the base model's
        # tokenizer (the chat template's source); never a weight outside the snapshot
        assert (p.is_relative_to(snap.path) or p.is_relative_to(root / "run" / "evals")
                or (p.is_relative_to(ws / "model") and not p.name.endswith(".safetensors"))), p
    assert "modeling_evil.py" not in inside and "README.md" not in inside
    assert all(_artifact.evaluator_reads(n) for n in inside), inside


def test_the_content_key_covers_exactly_the_files_the_evaluator_reads(traced,
                                                                     model_copy) -> None:
    root, ws, snap, opened = traced
    read = sorted({p.name for p in opened if p.parent == snap.path and p.is_file()})
    artifacts = root / "keys"
    for name in read:
        model_copy(ws / "output" / "k", ws / "output" / "v1")
        if name.endswith(".safetensors"):
            perturb(ws / "output" / "k", scale=1e-3)
        else:
            with (ws / "output" / "k" / name).open("a") as fh:
                fh.write("\n")
        assert _snapshot(ws, "k", artifacts).content_key != snap.content_key, name
        shutil.rmtree(ws / "output" / "k")
    model_copy(ws / "output" / "k", ws / "output" / "v1")
    (ws / "output" / "k" / "README.md").write_text("other notes\n")
    (ws / "output" / "k" / "modeling_evil.py").write_text("# changed\n")
    (ws / "output" / "k" / "training_args.bin").write_bytes(b"\x00" * 16)
    assert _snapshot(ws, "k", artifacts).content_key == snap.content_key
    shutil.rmtree(ws / "output" / "k")


def test_the_child_refuses_a_snapshot_naming_outside_files(traced, tmp_path: Path) -> None:
    """A snapshot taken by code without the checks (a folder like the old one copied): the child
    refuses it before loading, and the outside shard is never opened."""
    root, ws, snap, _ = traced
    outside = tmp_path / "outside.safetensors"
    shutil.copy(snap.path / "model.safetensors", outside)
    old = tmp_path / "old-snapshot"
    shutil.copytree(snap.path, old)
    old.chmod(0o755)
    names = _tensor_names(old)
    (old / "model.safetensors").unlink()
    (old / "stub.safetensors").write_bytes(_STUB)
    (old / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {t: str(outside) for t in names}}))
    task = get_task("arith", dict(TINY_TASK, n_heldout=2))
    job = EvalJob(task=task.spec(), model_dir=str(old), chat_template_from=str(ws / "model"),
                  out_dir=str(tmp_path / "out"), snapshot=True)
    (tmp_path / "out").mkdir()
    proc = _traced_child(job, tmp_path / "trace.txt")
    assert proc.returncode != 0
    assert "not a file in the submitted folder" in proc.stderr
    assert outside not in _opened(tmp_path / "trace.txt")
    assert not (tmp_path / "out" / "outcome.json").exists()


# -- a copy of the base changed by rounding is named a base copy ----------------------------------
def test_the_audit_names_a_one_ulp_copy_a_base_copy(tiny_model: Path, model_copy,
                                                   tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    from a2rl.analysis._audit import audit, near_base_copy

    nudged = model_copy(tmp_path / "nudged")
    tensors = load_file(nudged / "model.safetensors")
    name = sorted(k for k, v in tensors.items() if v.is_floating_point())[0]
    flat = tensors[name].flatten().clone()
    flat[0] = torch.nextafter(flat[0], torch.tensor(float("inf")))  # one unit in the last place
    tensors[name] = flat.reshape(tensors[name].shape)
    save_file(tensors, nudged / "model.safetensors", metadata={"format": "pt"})
    trained = model_copy(tmp_path / "trained")
    perturb(trained, scale=1e-4)

    assert near_base_copy(model_copy(tmp_path / "same"), tiny_model) == 0
    assert near_base_copy(nudged, tiny_model) == 1
    assert near_base_copy(trained, tiny_model) is None
    findings = audit(task="arith", code={}, transcript="", grader_log="", rejected_errors=[],
                     base_copies=[], data_texts={}, heldout=[],
                     near_copies={"output/nudged": 1})
    (copy,) = [f for f in findings if f.kind == "base-model-copy"]
    assert "base copy" in copy.message and "output/nudged: every tensor within 1 ulp" in \
        copy.evidence[0]
    assert not [f for f in audit(task="arith", code={}, transcript="", grader_log="",
                                 rejected_errors=[], base_copies=[], data_texts={}, heldout=[])
                if f.kind == "base-model-copy"]
