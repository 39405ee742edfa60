"""Keyed fingerprints, redacted task options and the dev/test split, all under the grader key.

A held-out seed is a small integer, so a plain sha256 of it (or of anything built from it and
public data) is reversed by trying every seed. Everything the grader writes about the held-out set
therefore goes through an HMAC with a 256-bit key kept under `$A2RL_HOME/secrets/` (never mounted
into a sandbox). The same key draws the hidden-final split, item by item, so a task needs no
change to be split and the test half is the same for every run on this installation: no feedback
of any run ever touches it.
"""

from __future__ import annotations

from typing import Any

from a2rl._secrets import keyed

REDACTED_PREFIX = "hmac:"


def secret_fields(params: Any) -> frozenset[str]:
    """The options marked secret on their field (`secret_field()`), whatever their names."""
    marked = getattr(params, "secret_fields", None)
    return frozenset(marked()) if callable(marked) else frozenset()


def redacted_params(task: Any) -> dict[str, Any]:
    """The task's options with every secret field (the held-out seed) replaced by a keyed
    fingerprint: enough to tell two runs used the same held-out set, not to regenerate it."""
    params = task.params.model_dump(mode="json")
    for name in secret_fields(task.params):
        if name in params and params[name] is not None:
            params[name] = REDACTED_PREFIX + keyed(f"param:{task.name}:{name}", params[name])[:16]
    return params


def redacted_spec(spec: dict[str, Any], secret: frozenset[str], task_name: str) -> dict[str, Any]:
    """A TaskSpec dump with its secret parameters replaced (for job files on disk)."""
    params = dict(spec.get("params", {}))
    for name in secret:
        if name in params and params[name] is not None:
            params[name] = REDACTED_PREFIX + keyed(f"param:{task_name}:{name}", params[name])[:16]
    return {**spec, "params": params}


def public_fingerprint(task: Any) -> str:
    """The evaluation's identity for records a reader can see (ledger, baseline, run.json).

    Task.fingerprint() hashes the options (seed included) and the items; without a key, trying
    each seed and regenerating the items would reveal the seed. Keyed, it cannot be inverted."""
    return keyed("fingerprint", task.fingerprint())


def item_key(item: dict[str, Any]) -> str:
    """Keyed id of one held-out item (the same item gets the same id in every run here)."""
    return keyed("item", item)


def split_test_keys(keys: list[str], test_fraction: float) -> set[str]:
    """Which item keys form the hidden test split: the `round(n × fraction)` smallest keyed ids,
    clamped so both splits hold at least one item. Raises ValueError when n < 2."""
    unique = sorted(set(keys))
    if len(unique) < 2:
        raise ValueError(f"{len(unique)} distinct held-out item(s) cannot be split into a dev and "
                         "a test half")
    n_test = min(len(unique) - 1, max(1, round(len(unique) * test_fraction)))
    return set(unique[:n_test])


def restore_task(name: str, params: dict[str, Any],
                 seeds: dict[str, Any] | None = None) -> Any:
    """Rebuild a task from redacted options (run.json), e.g. for `a2rl analyze`'s contamination
    check. A redacted field is tried as "this installation's own secret" (the option left unset)
    and then as the value in `seeds`; the keyed fingerprint must match. Raises A2RLError when
    neither matches (the run came from another installation, or used an explicit seed)."""
    from a2rl._errors import A2RLError
    from a2rl.tasks import get_task

    redacted = {k: v for k, v in params.items()
                if isinstance(v, str) and v.startswith(REDACTED_PREFIX)}
    if not redacted:
        return get_task(name, params)
    attempts: list[dict[str, Any]] = [{k: None for k in redacted}]
    if seeds:
        attempts.append({k: seeds.get(k) for k in redacted})
    for attempt in attempts:
        task = get_task(name, {**params, **attempt})
        shown = redacted_params(task)
        if all(shown.get(k) == v for k, v in redacted.items()):
            return task
    raise A2RLError(f"the held-out options {sorted(redacted)} of this {name} run are redacted "
                    "and do not match this installation's secret seed",
                    "analyze the run on the installation that ran it, or pass the seed "
                    "(e.g. --task-opt heldout_seed=N) if it was set explicitly")
