"""`run.json`: the record models now live in `a2rl.records`; re-exported here for old imports."""

from a2rl.records import ExitReason, ImportInfo, ModelInfo, RunConfig, RunRecord, TaskInfo, Timings

__all__ = ["ExitReason", "ImportInfo", "ModelInfo", "RunConfig", "RunRecord", "TaskInfo", "Timings"]
