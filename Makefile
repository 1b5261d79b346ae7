# raykube: every target bootstraps what it needs on a fresh machine (uv, the Python environment, the sandbox).
#
#   make demo       the main job: the local Kubernetes, built the first time (about 6 minutes), then the demo
#   make test       everything CI checks: lint, types, import layers, unit + integration + e2e tests
#   make bench      speed and memory benchmarks (results appended under benchmarks/results/)
#   make demo-down  stop the demo's sandbox and remove its files

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
UV_VERSION := 0.13.9
# Use uv from PATH if there is one, else a private copy in .tools/ (installed from PyPI with the machine's Python).
UV := $(or $(shell command -v uv 2>/dev/null),$(CURDIR)/.tools/bin/uv)
export UV_PYTHON := $(PYTHON)
export UV_PYTHON_DOWNLOADS := never
RUN := $(UV) run --no-sync
BENCH_CLUSTERS ?= 1000

.PHONY: crds manifests help demo demo-down test lint typecheck imports pytest unit sandbox-build bench lock clean

help:
	@sed -n 's/^#   //p' $(MAKEFILE_LIST)

$(CURDIR)/.tools/bin/uv:
	$(PYTHON) -m venv $(CURDIR)/.tools
	$(CURDIR)/.tools/bin/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

.venv/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --locked
	@touch $@

lock: | $(UV)
	$(UV) lock

sandbox-build: .venv/.synced
	$(RUN) raykube sandbox build

demo: .venv/.synced
	$(RUN) raykube demo

demo-down: .venv/.synced
	$(RUN) raykube sandbox down

lint: .venv/.synced
	$(RUN) ruff check src tests benchmarks
	$(RUN) ruff format --check src tests benchmarks

crds: .venv/.synced
	$(RUN) raykube crd generate

# The operator's RBAC rule files (from raykube.api.rbac) and the plain manifests rendered from the Helm chart.
manifests: sandbox-build
	$(RUN) raykube rbac generate
	$(RUN) python -c 'from raykube.cli.install import write_manifests; write_manifests()'

typecheck: .venv/.synced
	$(RUN) mypy

imports: .venv/.synced
	$(RUN) lint-imports

unit: .venv/.synced
	$(RUN) pytest -m unit

pytest: sandbox-build
	@mkdir -p .reports
	$(RUN) pytest --junitxml=.reports/junit.xml

test: lint typecheck imports pytest

bench: sandbox-build
	$(RUN) python -m benchmarks.sandbox_startup
	$(RUN) python -m benchmarks.doctor_all
	$(RUN) python -m benchmarks.scale --clusters $(BENCH_CLUSTERS)
	$(RUN) python -m benchmarks.process_cluster

clean:
	rm -rf .venv .tools .mypy_cache .ruff_cache .pytest_cache .reports .import_linter_cache
