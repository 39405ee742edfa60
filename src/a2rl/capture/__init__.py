"""What the agent did, recorded by the harness during the run (outside the workspace)."""

from a2rl.capture._artifacts import ArtifactEntry, ArtifactIndexer, read_artifacts, read_parent
from a2rl.capture._closing import (
    INODE_RESERVE,
    RecordSlot,
    bounded_close,
    free_inodes,
    storage_failure,
)
from a2rl.capture._cost import (
    NO_GPU,
    NO_NVML,
    ResourceSampler,
    ResourceSamples,
    UnpricedTail,
    agent_cost,
    close_cost,
    disk_bytes,
    driver_model,
    eval_gpu_hours,
    evaluation_gpus,
    gpu_hours,
    llm_spend,
    unpriced_tail,
    visible_gpus,
)
from a2rl.capture._exec_trace import (
    Connect,
    EgressTrace,
    ExecLogReader,
    FileOpen,
    Spawn,
    exec_log_t0,
    parse_egress_trace,
    parse_exec_log,
    parse_file_opens,
    read_exec_events,
)
from a2rl.capture._provenance import data_fingerprint, version_line
from a2rl.capture._snapshots import (
    CodeRecorder,
    Snapshot,
    diff_stat,
    read_snapshots,
    snapshot_files,
)

__all__ = [
    "NO_GPU", "NO_NVML", "ResourceSampler", "ResourceSamples", "UnpricedTail", "agent_cost",
    "close_cost", "data_fingerprint", "disk_bytes", "driver_model", "eval_gpu_hours",
    "evaluation_gpus", "gpu_hours", "llm_spend", "unpriced_tail", "version_line", "visible_gpus",
    "ArtifactEntry", "ArtifactIndexer", "CodeRecorder", "Connect", "EgressTrace", "ExecLogReader",
    "FileOpen", "RecordSlot", "Spawn", "exec_log_t0", "parse_egress_trace", "parse_file_opens",
    "Snapshot", "free_inodes", "INODE_RESERVE", "bounded_close", "diff_stat", "parse_exec_log",
    "read_artifacts", "read_exec_events", "read_parent", "read_snapshots", "snapshot_files",
    "storage_failure",
]
