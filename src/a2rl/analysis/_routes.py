"""Route labels and strategy k (kept as the public entry points of the method detection; the
evidence is read in `_detect` (scripts), `_configs` (config-driven launches) and `_launch`
(command lines)). `labels` decides both from one objective, so they never contradict;
`route_of` and `training_kind` are its two halves."""

from __future__ import annotations

from a2rl.analysis._detect import Detection, ScriptMethods, analyse_script
from a2rl.analysis._methods import (
    METHODS,
    Kind,
    Route,
    labels,
    primary_method,
    route_of,
    training_kind,
)

__all__ = ["METHODS", "Detection", "Kind", "Route", "ScriptMethods", "analyse_script", "labels",
           "primary_method", "route_of", "training_kind"]
