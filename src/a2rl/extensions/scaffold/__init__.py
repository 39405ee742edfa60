"""The experience-driven scaffold (`a2rl run --scaffold journal,skills,evaluator,plan-review,
revision`): paper B's interventions plus strategy-revision checkpoints, as a protocol option for
any agent.

- `journal`: typed, append-only experiment journal (POST/GET /scaffold/journal).
- `skills`: the skill library, mounted read-only
  (`a2rl.extensions.scaffold._skills.mount_skills`).
- `evaluator`: a separate LLM reviews each submission asked with `"evaluate": true`.
- `plan-review`: the first plan is reviewed (LLM, or a person through `a2rl review <run>`).
- `revision`: checkpoints asking for an explicit keep/switch decision.

Records: `a2rl.records` (scaffold.json, scaffold/*.jsonl); analysis of a scaffold run: `_analysis`.
"""

from __future__ import annotations

from a2rl._errors import A2RLError
from a2rl.extensions.scaffold._core import Scaffold, normalize_strategy, read_scaffold_files
from a2rl.extensions.scaffold._review_cli import review_run
from a2rl.extensions.scaffold._workspace import SCRIPT, install
from a2rl.records import COMPONENTS, ScaffoldConfig


def parse_components(text: str) -> list[str]:
    """`journal,skills,...` → the component list (`all` = every one; `none` or empty = off)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names in (["all"],):
        return list(COMPONENTS)
    if names in ([], ["none"]):
        return []
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown:
        raise A2RLError(f"unknown scaffold component(s): {', '.join(unknown)}",
                        f"choose from {', '.join(COMPONENTS)} (comma-separated), or `all`")
    return [c for c in COMPONENTS if c in names]


def scaffold_config(components: str, options: dict[str, str]) -> ScaffoldConfig:
    """The ScaffoldConfig from `--scaffold` and `--scaffold-opt key=value` pairs."""
    fields = ScaffoldConfig.model_fields
    data: dict[str, object] = {"components": parse_components(components)}
    for key, value in options.items():
        if key not in fields or key == "components":
            raise A2RLError(f"unknown --scaffold-opt {key!r}",
                            "choose from " + ", ".join(k for k in fields if k != "components"))
        if key == "revision_fractions":
            data[key] = [float(v) for v in value.split(",") if v.strip()]
        elif value.lower() in ("none", "off", "") and key.startswith("revision_"):
            data[key] = None
        else:
            data[key] = value
    try:
        return ScaffoldConfig.model_validate(data)
    except ValueError as exc:
        raise A2RLError(f"bad --scaffold-opt: {exc}".splitlines()[0] + " " + str(exc)[:300],
                        "see `a2rl schema run` (config.scaffold) for the options") from exc


__all__ = [
    "COMPONENTS", "SCRIPT", "Scaffold", "ScaffoldConfig", "install", "normalize_strategy",
    "parse_components", "read_scaffold_files", "review_run", "scaffold_config",
]
