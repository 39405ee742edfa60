"""Studies: one held-out draw and one grader key for every run that joins, on every machine.

Without a study each installation scores on its own secret held-out seed and draws its own
hidden test split (both keyed by `$A2RL_HOME/secrets`), so two machines' runs are not scored on
the same items. A study file holds a 256-bit secret from which every task's held-out seed and
the grader key are derived, plus the public task options that change the test items. It is as
secret as the installation secret: it lives under `$A2RL_HOME/studies/` (masked in every
sandbox) or in a sweep directory (never mounted into one), mode 0600, and records name only its
public id. Copy it to another machine like a key (`a2rl run --study FILE`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl._secrets import KEY_FILE_ENV
from a2rl._util import utcnow
from a2rl.schema import RunConfig, StudyRef

STUDY_FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class Study(BaseModel):
    """A study file (`<name>.json`, mode 0600)."""

    format: int = STUDY_FORMAT
    """Version of this file's layout."""
    name: str
    """The study's name (letters, digits, `.`, `_`, `-`)."""
    id: str
    """Random public id, recorded in every run.json that joined."""
    secret: str
    """64 hex digits: the held-out seeds and the grader key are derived from it (HMAC)."""
    created_at: dt.datetime
    """When the study was created (UTC)."""
    task_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Public options fixed for every run of a task (`task -> option -> value`): those that
    change the test items, e.g. `n_heldout` or `source`."""

    def seed(self, task: str, option: str) -> int:
        """The study's value for a secret integer option of `task` (1 … 2^31-1)."""
        digest = hmac.new(bytes.fromhex(self.secret), f"seed\0{task}\0{option}".encode(),
                          hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big") % (2**31 - 2) + 1

    def grader_key_hex(self) -> str:
        return hmac.new(bytes.fromhex(self.secret), b"grader-key", hashlib.sha256).hexdigest()


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise A2RLError(f"study name {name!r} is not a plain name",
                        "use letters, digits, '.', '_' or '-' (e.g. --study paper-v1)")
    return name


def studies_dir() -> Path:
    path = cache_dir("studies")
    path.chmod(0o700)
    return path


def create_study(name: str, task_options: dict[str, dict[str, Any]] | None = None,
                 path: Path | None = None) -> tuple[Study, Path]:
    """A new study with a fresh secret, written once (never overwritten)."""
    check_name(name)
    study = Study(name=name, id=secrets.token_hex(8), secret=secrets.token_hex(32),
                  created_at=utcnow(), task_options=task_options or {})
    path = path or studies_dir() / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_study(path, study)
    except FileExistsError:
        raise A2RLError(f"study file {path} already exists",
                        "join it (a2rl run --study FILE) or choose another name") from None
    return study, path


def write_study(path: Path, study: Study) -> None:
    """Write a study file once: mode 0600 from its creation (it holds the secret), never over
    an existing one (FileExistsError)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(study.model_dump_json(indent=1))


def read_study(path: Path) -> Study:
    try:
        study = Study.model_validate_json(path.read_text())
    except OSError as exc:
        raise A2RLError(f"cannot read study file {path}: {exc}",
                        "check the path (a2rl run --study NAME|FILE)") from exc
    except ValueError as exc:
        raise A2RLError(f"{path} is not a study file: {exc}",
                        "pass a file written by a2rl (a2rl sweep creates one)") from exc
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)  # a copy made with default permissions: readable by others
    return study


def find_study(ref: str, search: list[Path] | None = None) -> tuple[Study, Path]:
    """`ref` is a study file, or a name looked up in `search` folders then
    `$A2RL_HOME/studies/`."""
    as_path = Path(ref).expanduser()
    if as_path.suffix == ".json" or os.sep in ref:
        if not as_path.is_file():
            raise A2RLError(f"no study file {as_path}", "pass an existing study file or a name")
        return read_study(as_path), as_path.absolute()
    check_name(ref)
    folders = [*(search or []), studies_dir()]
    for folder in folders:
        for candidate in (folder / f"{ref}.json", folder / "study.json"):
            if candidate.is_file():
                study = read_study(candidate)
                if study.name == ref:
                    return study, candidate.absolute()
    raise A2RLError(f"no study named {ref!r} in {', '.join(str(f) for f in folders)}",
                    "copy its file to $A2RL_HOME/studies/ (it is secret: scp, not e-mail), "
                    "pass its path, or let `a2rl sweep` create it")


def activate(study: Study) -> Path:
    """Write the study's grader key (mode 0600, under the masked secrets folder) and point this
    process and its children at it."""
    path = cache_dir("secrets") / f"study-{study.name}-{study.id}.key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(study.grader_key_hex() + "\n")
    os.environ[KEY_FILE_ENV] = str(path)
    return path


def _secret_int_fields(params_cls: Any) -> list[str]:
    """Secret options whose type admits an int (held-out seeds); a secret path is not set."""
    out = []
    for name in params_cls.secret_fields():
        annotation = str(params_cls.model_fields[name].annotation)
        if "int" in annotation:
            out.append(name)
    return sorted(out)


def study_params(study: Study, task: str, given: dict[str, Any]) -> tuple[dict[str, Any],
                                                                        list[str]]:
    """`given` task options with the study's fixed options and seeds applied; the names of the
    seeded options. A given option that contradicts the study is refused."""
    from a2rl.tasks import get_task, task_class

    params = dict(given)
    for key, value in study.task_options.get(task, {}).items():
        if key in params and params[key] != value:
            raise A2RLError(f"task option {task}.{key}={params[key]!r} contradicts study "
                            f"{study.name} ({key}={value!r})",
                            "drop the option (the study fixes it) or use another study")
        params[key] = value
    cls = task_class(task)
    seeded: list[str] = []
    for name in _secret_int_fields(cls.Params):
        if params.get(name) is not None:
            raise A2RLError(f"task option {task}.{name} is given although study {study.name} "
                            "fixes the held-out seed",
                            f"drop {name} from the task options, or run without --study")
        trial = {**params, name: study.seed(task, name)}
        try:
            get_task(task, trial)
        except A2RLError:
            # The task refuses the seed in this configuration (gsm8k's hub source has a fixed
            # test split): its held-out set does not depend on it, so the study leaves it out.
            get_task(task, params)  # a real error in the other options surfaces here
            continue
        params = trial
        seeded.append(f"{task}.{name}")
    return params, seeded


def join_study(config: RunConfig, study: Study) -> RunConfig:
    """`config` with the study applied (seeds, fixed options, `config.study`); activates the
    study's grader key for this process and its children."""
    tasks = config.tasks or [config.task]
    params = dict(config.task_params)
    seeded: list[str] = []
    fixed: dict[str, Any] = {}
    for task in tasks:
        if config.tasks:  # mode multi: per-task options are spelt task.key
            own = {k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(task + ".")}
            shared = {k: v for k, v in params.items() if "." not in k}
            new, names = study_params(study, task, {**shared, **own})
            params.update({f"{task}.{k}": v for k, v in new.items()
                           if k not in shared or shared[k] != v})
        else:
            params, names = study_params(study, task, params)
        seeded += names
        fixed.update({f"{task}.{k}": v for k, v in study.task_options.get(task, {}).items()})
    activate(study)
    ref = StudyRef(name=study.name, id=study.id, seeded=seeded, fixed_options=fixed)
    return config.model_copy(update={"task_params": params, "study": ref})
