"""The experience-driven scaffold (`a2rl run --scaffold journal,skills,evaluator,plan-review,
revision`): the trajectory study's interventions plus strategy-revision checkpoints, as a protocol option for
any agent.

- `journal`: typed, append-only experiment journal (POST/GET /scaffold/journal).
- `skills`: the skill library, mounted read-only
  (`a2rl.extensions.scaffold._mount.mount_skills`), its reads counted afterwards
  (`_usage.count_skill_reads`).
- `evaluator`: a separate LLM reviews each submission asked with `"evaluate": true`.
- `plan-review`: the first plan is reviewed (LLM, or a person through `a2rl review <run>`).
- `revision`: checkpoints asking for an explicit keep/switch decision.

Records: `a2rl.schema` (scaffold.json, scaffold/*.jsonl); analysis of a scaffold run: `_analysis`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2rl._util import lazy_exports

if TYPE_CHECKING:
    from a2rl.extensions.scaffold._core import Scaffold, normalize_strategy, read_scaffold_files
    from a2rl.extensions.scaffold._review_cli import review_run
    from a2rl.extensions.scaffold._workspace import SCRIPT, install
    from a2rl.schema import COMPONENTS, ScaffoldConfig

# Public name -> the module that defines it. Imported on first use, so loading one part of the
# scaffold (its CLI command, for `a2rl --help`) does not load the rest.
_HOMES = {
    "Scaffold": "a2rl.extensions.scaffold._core",
    "normalize_strategy": "a2rl.extensions.scaffold._core",
    "read_scaffold_files": "a2rl.extensions.scaffold._core",
    "review_run": "a2rl.extensions.scaffold._review_cli",
    "SCRIPT": "a2rl.extensions.scaffold._workspace",
    "install": "a2rl.extensions.scaffold._workspace",
    "COMPONENTS": "a2rl.schema",
    "ScaffoldConfig": "a2rl.schema",
}


__getattr__ = lazy_exports(__name__, _HOMES)


__all__ = [
    "COMPONENTS", "SCRIPT", "Scaffold", "ScaffoldConfig", "install", "normalize_strategy",
    "read_scaffold_files", "review_run",
]
