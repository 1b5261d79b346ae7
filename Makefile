# raykube: every target bootstraps what it needs on a fresh machine (uv, the Python environment, the sandbox).
#
#   make demo       the main job: the local Kubernetes, built the first time (16 minutes on 2 cores), then the demo
#   make test       everything CI checks: lint, types, import layers, unit + integration + e2e tests
#   make bench      speed and memory benchmarks (results appended under benchmarks/results/), then make reliability
#   make reliability  every test, the fault and bad-input ones at full size (~30 min); rewrites docs/reliability.md
#   make conformance  KubeRay v1.7.0's own e2e tests against raykube and KubeRay (SUITE=raycluster|rayjob|..., RUN=TestRegex,
#                   KUBERAY_SRC=<a checkout of the tag>, else cloned from GitHub; OPERATOR=raykube for raykube alone),
#                   then raykube's objects against KubeRay v1.7.0's for its samples (SUITE=objects alone)
#   make browser    the tests that need Debian's chromium (apt-get install chromium; UPDATE_SCREENSHOT=1 redraws docs/doctor-html.png)
#   make vectors    rewrite tests/vectors/*.json with Go's own answers (tools/govectors), then compare raykube with them
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
UVRUN := $(UV) run --no-sync
# make bench: RayClusters in the side-by-side scale run (floor, raykube, KubeRay), and how many rounds (3: a median
# per contender); the KubeRay release every run beside KubeRay compares with (v1.7.0: from $KUBERAY_SRC or a clone).
BENCH_CLUSTERS ?= 1000
BENCH_ROUNDS ?= 3
BENCH_KUBERAY ?= 1.7.0
# make test: pytest-xdist workers. 3 (default): the kwok tests on one, the process-node tests in two halves on the
# others, the unit tests on whichever runs dry first (tests/conftest.py); TEST_WORKERS=1 runs them in one process.
TEST_WORKERS ?= 3
# make conformance: which suites (comma-separated, `raykube conformance --list`) and an optional -test.run regex.
SUITE ?= raycluster
RUN ?=
# make conformance: against which operators, one after the other in the same invocation, and which KubeRay release's
# tests (1.7.0 from $(KUBERAY_SRC) or a clone of the tag; 1.6.1 from the Go module proxy).
OPERATOR ?= raykube,kuberay
KUBERAY ?= 1.7.0

.PHONY: bytecode crds manifests help demo demo-down test preflight lint typecheck imports pytest unit sandbox-build bench reliability browser conformance vectors lock clean

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

sandbox-build: bytecode
	$(UVRUN) raykube sandbox build

# Byte-compile raykube and its dependencies (2 s when nothing changed). Where PYTHONDONTWRITEBYTECODE is set, as on
# CI machines, Python would otherwise compile the same ~700 modules again in every process the tests and the demo
# start (the CLI, the process nodes' kubelets, the operators: hundreds in make test, 0.3-1 CPU-s each).
bytecode: .venv/.synced
	@$(UVRUN) python -m compileall -q -j 0 src "$$($(UVRUN) python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null

demo: bytecode
	$(UVRUN) raykube demo

demo-down: .venv/.synced
	$(UVRUN) raykube sandbox down

lint: .venv/.synced
	$(UVRUN) ruff check src tests benchmarks
	$(UVRUN) ruff format --check src tests benchmarks

crds: .venv/.synced
	$(UVRUN) raykube crd generate

# The operator's RBAC rule files (from raykube.api.rbac) and the plain manifests rendered from the Helm chart.
manifests: sandbox-build
	$(UVRUN) raykube rbac generate
	$(UVRUN) python -c 'from raykube.deploy.manifests import write_manifests; write_manifests()'

typecheck: .venv/.synced
	$(UVRUN) mypy

imports: .venv/.synced
	$(UVRUN) lint-imports

unit: .venv/.synced
	$(UVRUN) pytest -m 'unit and not browser'

# What make test needs, checked first so a machine without it fails at once with one sentence naming what is missing
# (not with the process-node tests skipping): root on Linux, ip, nsenter, unshare, Go (raykube sandbox preflight).
preflight: .venv/.synced
	@$(UVRUN) raykube sandbox preflight

pytest: preflight sandbox-build
	@mkdir -p .reports
	RAYKUBE_RELIABILITY_REPORT=.reports/reliability.md $(UVRUN) pytest -m 'not long and not browser' \
		$(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadgroup) --durations=25 --junitxml=.reports/junit.xml

test: preflight lint typecheck imports pytest

bench: sandbox-build
	$(UVRUN) python -m benchmarks.sandbox_startup
	$(UVRUN) python -m benchmarks.doctor_all
	$(UVRUN) python -m benchmarks.kube_client
	$(UVRUN) python -m benchmarks.passes
	$(UVRUN) python -m benchmarks.scale --clusters $(BENCH_CLUSTERS) --repeat $(BENCH_ROUNDS) --kuberay $(BENCH_KUBERAY)
	$(UVRUN) python -m benchmarks.rest --kuberay $(BENCH_KUBERAY)
	$(UVRUN) python -m benchmarks.process_cluster
	$(UVRUN) python -m benchmarks.rayjob --kuberay $(BENCH_KUBERAY)
	$(UVRUN) python -m benchmarks.rayservice --kuberay $(BENCH_KUBERAY)
	$(UVRUN) python -m benchmarks.incremental --kuberay $(BENCH_KUBERAY)
	$(MAKE) reliability

# Every test but the long ones, with those marked reliability (they record into tests/ledger.py) at their full size
# (make test runs them short). The whole run, because one row is which RBAC permissions all the tests used.
reliability: preflight sandbox-build
	RAYKUBE_RELIABILITY_PROFILE=full RAYKUBE_RELIABILITY_REPORT=docs/reliability.md $(UVRUN) pytest -m 'not long and not browser'

# The tests that look at raykube's pages in a real browser: Debian's Chromium (apt-get install chromium), which make
# test cannot count on (it needs only the Go module proxy and PyPI); without it they fail, naming the package.
# UPDATE_SCREENSHOT=1 also rewrites docs/doctor-html.png.
browser: .venv/.synced
	$(UVRUN) pytest -m browser

# Not part of `make test` (each suite takes minutes per operator): first checks that the committed KubeRay v1.7.0
# vectors and struct table are what tools/kuberay/generate.py writes from the tag; builds KubeRay's e2e test binaries
# and its operator the first time (from KUBERAY_SRC, a checkout of the v1.7.0 tag, else a clone of it from GitHub; 2
# minutes with a warm Go cache), runs them on process sandboxes against the raykube operator and then KubeRay's, and
# updates docs/conformance.md (not with RUN=); then, unless SUITE or RUN picks something, raykube's own long tests and
# the objects raykube generates from each KubeRay v1.7.0 sample against KubeRay v1.7.0's own (rewrites
# docs/differential.md; SUITE=objects alone, RUN= a regex over sample paths).
conformance: sandbox-build
	$(UVRUN) python tools/kuberay/generate.py --check
ifeq ($(SUITE),objects)
	$(UVRUN) raykube conformance --objects $(if $(RUN),--run '$(RUN)')
else
	$(UVRUN) raykube conformance --suite '$(SUITE)' --operator '$(OPERATOR)' --kuberay-version '$(KUBERAY)' \
		$(if $(RUN),--run '$(RUN)')
	$(if $(filter file,$(origin SUITE)),$(if $(RUN),,$(UVRUN) pytest -m long))
	$(if $(filter file,$(origin SUITE)),$(if $(RUN),,$(UVRUN) raykube conformance --objects))
endif

# Needs Go (1.26, as for the sandbox) and the Go module proxy; the files are byte-stable (no dates, fixed seeds).
vectors: .venv/.synced
	@command -v go >/dev/null || { echo "make vectors needs the Go toolchain (go) on PATH: https://go.dev/doc/install" >&2; exit 1; }
	cd tools/govectors && go run -buildvcs=false . -out ../../tests/vectors
	$(UVRUN) pytest -q -p no:cacheprovider tests/unit/test_api_cron.py tests/unit/test_golang_formats.py \
		tests/unit/test_golang_gojson.py tests/unit/test_builders_rayservice.py \
		-k "vector or curated or matches_go or quantity or initializing_timeout or duration_strings"
	$(UVRUN) python tools/govectors/report.py

clean:
	rm -rf .venv .tools .mypy_cache .ruff_cache .pytest_cache .reports .import_linter_cache
