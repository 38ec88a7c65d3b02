# repro: every target does its own set-up (venv, install, Docker engine) on a fresh machine.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
REPRO := $(BIN)/repro

.PHONY: help setup docker test-tools sglang-engine test test-unit test-docker demo demo-real lint recipe-name recipe image push clean

help:
	@echo "make demo               run the demo recipe end to end on the CPU simulator"
	@echo "make demo-real          run qwen3-tiny-cpu end to end on SGLang's own engine (CPU)"
	@echo "make test               run every test (unit + real Docker engine + SGLang's engine)"
	@echo "make test-unit          the fast tier: no Docker engine, no SGLang (minutes)"
	@echo "make lint               ruff + mypy + the layers contract (import-linter)"
	@echo "make recipe R=<name>    lock, build, fetch, launch and benchmark recipes/<name>.yaml"
	@echo "make image R=<name>     build the pinned image of a recipe"
	@echo "make push R=<name> REGISTRY=<host/ns>   push a recipe's image"

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing repro and its dependencies into $(VENV) (the first time takes a few minutes)"
	@set -o pipefail; $(BIN)/pip install --disable-pip-version-check -e '.[dev]' \
		| grep --line-buffered -E '^ *(Collecting|Processing|Downloading|Installing collected|Successfully)' | sed -u 's/^/  /'
	@touch $(STAMP)

docker:
	@scripts/ensure-docker

test-tools:
	@scripts/ensure-test-tools

# SGLang 0.5.23's own CPU engine for the real_sglang tests (.venv-sglang/).
sglang-engine:
	@scripts/ensure-sglang

test: setup docker test-tools sglang-engine
	$(BIN)/pytest

# The fast tier: neither the Docker engine nor SGLang's own (tests marked `docker` or
# `real_sglang` are left out), so a fresh machine runs it without either installed.
test-unit: setup test-tools
	$(BIN)/pytest -m "not docker and not real_sglang"

test-docker: setup docker test-tools
	$(BIN)/pytest -m docker

demo: setup docker
	$(REPRO) run demo

# SGLang 0.5.23's own engine on the CPU, on a tiny model the project makes: no GPU, no Hub.
demo-real: setup docker
	$(REPRO) image tiny-model
	HF_HUB_OFFLINE=1 $(REPRO) run qwen3-tiny-cpu

lint: setup
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy src
	$(BIN)/lint-imports --no-cache

# R and REGISTRY reach the shell only as exported environment variables, quoted: a value such
# as R='x;touch y' is a name to refuse, never a command to run.
# $(value ...) keeps make from expanding a value such as R='$(shell ...)' as a function.
override R := $(value R)
override REGISTRY := $(value REGISTRY)
export R REGISTRY

# Checked before any set-up, so a bad name costs nothing.
recipe-name:
	@test -n "$$R" || { echo "usage: make recipe|image|push R=<name>   (names: ls recipes/)" >&2; exit 2; }
	@[[ "$$R" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$$ && -f "recipes/$$R.yaml" ]] \
		|| { printf 'error: R=%q is not a recipe name (names: ls recipes/)\n' "$$R" >&2; exit 2; }

recipe: recipe-name setup docker
	$(REPRO) run "recipes/$$R.yaml"

image: recipe-name setup docker
	$(REPRO) image build "$$R"

push: recipe-name setup docker
	@test -n "$$REGISTRY" || { echo "usage: make push R=<name> REGISTRY=<host/ns>" >&2; exit 2; }
	$(REPRO) image push "$$R" --registry "$$REGISTRY"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
