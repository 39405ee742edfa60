"""Benchmark: the bytes a run writes for the base model and for its submissions.

    sudo python bench/disk_copies.py [--size-gb 1] [--submissions 3] [--keep DIR]

Needs root (it makes loop-mounted file systems), mkfs.xfs (xfsprogs) and mkfs.ext4, bwrap and
podman. Each measurement runs whole `a2rl run`s on a file system of its own (a sparse image,
loop-mounted), holding the runs folder, $A2RL_HOME and the model, so the used-space deltas
(statvfs) count everything the run writes and nothing the rest of the machine does.

The model is a generated local folder: a 2-layer random Llama with the SmolLM2 tokenizer (so the
baseline and the submissions are really evaluated) in one shard, and a second shard of about
`--size-gb` of random bytes (one tensor the loader ignores), with the weight index naming both.

The agent is `bench/disk_copies.py agent` (a `cmd:` agent). At its start it records the used
space (so: bytes written before the agent starts = that minus the used space before
`a2rl run`), then for each submission writes output/vN (the model with fresh random bytes in
the big shard: distinct submissions of the model's size), and submits it; the used space just
before and after each /submit is the snapshot's cost.

Runs: XFS (reflink=1) with bwrap and three submissions; XFS with podman (no submission); ext4
(no clones) with bwrap and three submissions. Results: bytes before the agent starts and the
snapshots' bytes as multiples of the model's size, the setup time, and the bytes in the
workspace's model/ on the host.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

PADDING = "a2rl_bench.padding"
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
INDEX = "model.safetensors.index.json"
USAGE = "usage.json"
TASK_OPTS = ("n_train=40", "n_heldout=6", "heldout_seed=4242")


def used_bytes(path: Path | str) -> int:
    os.sync()
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def settled_used_bytes(path: Path, timeout_s: float = 60) -> int:
    """Used bytes once deleted files are freed (XFS frees their blocks in the background)."""
    last, deadline = used_bytes(path), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(1)
        now = used_bytes(path)
        if now == last:
            return now
        last = now
    return last


def write_padding_shard(path: Path, n_bytes: int) -> None:
    """A safetensors file holding one uint8 tensor of `n_bytes` random bytes."""
    header = json.dumps({PADDING: {"dtype": "U8", "shape": [n_bytes],
                                   "data_offsets": [0, n_bytes]}}).encode()
    header += b" " * (-len(header) % 8)
    with path.open("wb") as fh:
        fh.write(len(header).to_bytes(8, "little") + header)
        left = n_bytes
        while left:
            chunk = min(left, 64 << 20)
            fh.write(os.urandom(chunk))
            left -= chunk


# -- the agent (runs inside the sandbox) ----------------------------------------------------
def agent(n_submissions: int) -> int:
    submissions: list[dict[str, object]] = []
    usage = {"at_start": used_bytes("."), "submissions": submissions}
    Path("code", USAGE).write_text(json.dumps(usage))
    padding = Path("model", SHARDS[1]).stat().st_size
    for i in range(1, n_submissions + 1):
        out = Path("output", f"v{i}")
        out.mkdir(parents=True)
        for f in Path("model").iterdir():
            if f.is_file() and not f.name.startswith(".") and f.name != SHARDS[1]:
                shutil.copyfile(f, out / f.name)
        header_len = int.from_bytes(Path("model", SHARDS[1]).open("rb").read(8), "little")
        write_padding_shard(out / SHARDS[1], padding - 8 - header_len)
        before = used_bytes(".")
        request = urllib.request.Request(
            os.environ["A2RL_GRADER_URL"] + "/submit", method="POST",
            data=json.dumps({"model_path": str(out), "wait": False}).encode(),
            headers={"Authorization": f"Bearer {os.environ['A2RL_TOKEN']}",
                     "Content-Type": "application/json"})
        reply = json.loads(urllib.request.urlopen(request, timeout=600).read())
        after = used_bytes(".")
        submissions.append({"id": reply.get("submission_id"), "status": reply.get("status"),
                            "before": before, "after": after})
        Path("code", USAGE).write_text(json.dumps(usage))
    return 0


# -- the harness side -------------------------------------------------------------------------
@contextmanager
def loop_fs(kind: str, size_gb: int, parent: Path) -> Iterator[Path]:
    image, mount = parent / f"{kind}.img", parent / kind
    with image.open("wb") as fh:
        fh.truncate(size_gb << 30)
    mkfs = ["mkfs.xfs", "-q", "-m", "reflink=1"] if kind == "xfs" else ["mkfs.ext4", "-q", "-F"]
    subprocess.run([*mkfs, str(image)], check=True)
    mount.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True)
    try:
        mount.chmod(0o755)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)
        mount.rmdir()
        image.unlink()


def make_model(folder: Path, padding_bytes: int) -> int:
    """The generated model (see the module docstring); returns its size in bytes."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from a2rl.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m").path)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, tie_word_embeddings=True,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    folder.mkdir(parents=True)
    model.config.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    tok.save_pretrained(folder)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_file(state, str(folder / SHARDS[0]), metadata={"format": "pt"})
    write_padding_shard(folder / SHARDS[1], padding_bytes)
    weight_map = {**{k: SHARDS[0] for k in state}, PADDING: SHARDS[1]}
    (folder / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return sum(p.stat().st_size for p in folder.iterdir())


def du(path: Path) -> int:
    out = subprocess.run(["du", "-s", "-B1", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.returncode == 0 else -1


@dataclass
class Measured:
    fs: str
    sandbox: str
    rc: int
    model_bytes: int
    before_agent_bytes: int
    """Used space when the agent started minus before `a2rl run`."""
    setup_s: float | None
    baseline_s: float | None
    wall_s: float
    workspace_model_bytes: int
    """`du` of workspace/model on the host."""
    snapshot_bytes: list[int]
    """Used space added by each /submit (the snapshot)."""
    n_snapshots: int
    statuses: list[str]
    total_bytes: int
    workspace: dict[str, tuple[float, int]]
    """model/ alone: (seconds, bytes) as a bind point, as --sandbox none's copy, as a byte copy."""
    stderr_tail: str


def workspace_costs(model: Path, root: Path) -> dict[str, tuple[float, int]]:
    """Seconds and bytes of the workspace's model/ alone, three ways: the bind point (what a
    sandboxed run makes), the copy of `--sandbox none` (a clone where the file system can), and
    a byte copy of every file (what a sandboxed run made before the bind point)."""
    from a2rl.models import resolve_model
    from a2rl.sandbox import make_bind_point
    from a2rl.workspace import copy_model, mount_source

    base = resolve_model(str(model))
    ways = {"bind_point": lambda d: make_bind_point(d, mount_source(base)),
            "sandbox_none_copy": lambda d: copy_model(base, d),
            "byte_copy": lambda d: (d.mkdir(), [shutil.copyfile(f, d / f.name)
                                                for f in sorted(model.iterdir())])}
    out = {}
    for name, make in ways.items():
        target = root / f"ws-{name}"
        before, t0 = settled_used_bytes(root), time.perf_counter()
        make(target)
        os.sync()
        out[name] = (round(time.perf_counter() - t0, 3), used_bytes(root) - before)
        for p in target.iterdir():
            p.unlink()
        target.chmod(0o755)
        target.rmdir()
    return out


def measure(kind: str, sandbox: str, n_submissions: int, padding_bytes: int, root: Path,
            a2rl: str) -> Measured:
    home, runs, model = root / "home", root / "runs", root / "model"
    model_bytes = make_model(model, padding_bytes)
    env = {**os.environ, "A2RL_HOME": str(home), "OMP_NUM_THREADS": "1"}
    before = settled_used_bytes(root)
    t0 = time.monotonic()
    cmd = [a2rl, "run", "--task", "arith", *[a for o in TASK_OPTS for a in ("--task-opt", o)],
           "--model", str(model), "--sandbox", sandbox, "--runs-dir", str(runs),
           "--budget", "20m", "--keep-artifacts", "all", "--no-echo-agent",
           "--agent", f"cmd:python {Path(__file__).resolve()} agent --submissions {n_submissions}"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    run_dir = next(runs.glob("arith/*/run.json")).parent
    record = json.loads((run_dir / "run.json").read_text())
    usage = json.loads((run_dir / "workspace" / "code" / USAGE).read_text())
    total = used_bytes(root) - before
    workspace = workspace_costs(model, root)
    artifacts = run_dir / "artifacts"
    snapshots = [p for p in artifacts.iterdir() if p.is_dir() and not p.name.startswith(".")] \
        if artifacts.is_dir() else []
    return Measured(
        fs=kind, sandbox=sandbox, rc=done.returncode, model_bytes=model_bytes,
        before_agent_bytes=usage["at_start"] - before, setup_s=record["timings"].get("setup_s"),
        baseline_s=record["timings"].get("baseline_s"), wall_s=round(wall, 1),
        workspace_model_bytes=du(run_dir / "workspace" / "model"),
        snapshot_bytes=[s["after"] - s["before"] for s in usage["submissions"]],
        n_snapshots=len(snapshots),
        statuses=[str(s.get("status")) for s in record.get("submissions", [])],
        total_bytes=total, workspace=workspace,
        stderr_tail=done.stderr[-1500:] if done.returncode else "")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "agent":
        ap = argparse.ArgumentParser()
        ap.add_argument("agent")
        ap.add_argument("--submissions", type=int, default=3)
        return agent(ap.parse_args().submissions)
    from _common import result

    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--submissions", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None, help="where the images go (default /var/tmp)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root: it loop-mounts file system images", file=sys.stderr)
        return 2
    a2rl = str(Path(sys.executable).parent / "a2rl")
    padding = int(args.size_gb * (1 << 30))
    image_gb = int(args.size_gb * (args.submissions * 2 + 2)) + 2
    plan = [("xfs", "bwrap", args.submissions), ("xfs", "podman", 0),
            ("ext4", "bwrap", args.submissions)]
    rows: list[Measured] = []
    with tempfile.TemporaryDirectory(dir=args.work or "/var/tmp", prefix="a2rl-disk-") as tmp:
        for kind, sandbox, n in plan:
            with loop_fs(kind, image_gb, Path(tmp)) as root:
                row = measure(kind, sandbox, n, padding, root, a2rl)
            rows.append(row)
            print(json.dumps(asdict(row)), flush=True)
    for row in rows:
        size, tag = row.model_bytes, f"{row.fs}.{row.sandbox}"
        before = row.before_agent_bytes / size
        result(f"disk_copies.before_agent.{tag}", before, "x model", target="< 0.01",
               ok=before < 0.01, note=f"model {size / 2**30:.2f} GiB; setup {row.setup_s} s")
        result(f"disk_copies.workspace_model.{tag}", row.workspace_model_bytes, "bytes",
               note="workspace/model on the host (the bind point)")
        for way, (seconds, n_bytes) in row.workspace.items():
            result(f"disk_copies.model_dir.{way}.{row.fs}", n_bytes / size, "x model",
                   note=f"{seconds} s to make model/ this way")
        if row.snapshot_bytes:
            total = sum(row.snapshot_bytes) / size
            stored = row.n_snapshots == len(row.snapshot_bytes) and all(
                s == "scored" for s in row.statuses)
            note = f"{row.n_snapshots} snapshots of {len(row.snapshot_bytes)} distinct submissions"
            if row.fs == "xfs":
                result(f"disk_copies.snapshots.{tag}", total, "x model", target="< 0.01",
                       ok=total < 0.01 and stored, note=note + " (reflink clones)")
            else:
                result(f"disk_copies.snapshots.{tag}", total, "x model", ok=stored,
                       note=note + " (copies; identical blobs stored once)")
    return 0 if all(r.rc == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
