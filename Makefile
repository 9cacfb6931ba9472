# The commands the README gives. Everything installs itself into .venv on first use.
ENV ?= dev
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
OUT := cdk.out
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: install synth validate test lint docs chart deploy destroy pipeline pipeline-synth \
	preflight verify teardown bench deploy-plan dashboard clean

# Reinstall only when a requirements file changes.
$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	touch $@

## synth: synthesize config/$(ENV).yaml into cdk.out/ (no CLI, no network), then validate it
synth: install
	rm -rf $(OUT)
	$(PY) app.py -c env=$(ENV) --outdir $(OUT)
	$(PY) -m k8s.render --env $(ENV) --out dist/$(ENV)
	$(MAKE) --no-print-directory validate

## validate: cfn-lint on every template (cdk-nag already ran inside the synth)
validate: install
	$(PY) -m scripts.validate_templates $(OUT)

## test: the whole test suite
test: install
	$(PY) -m pytest

## docs: regenerate the configuration reference in README.md from the config model
docs: install
	$(PY) -m scripts.config_reference

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

## chart: fetch the pinned HyperPod dependencies chart into .charts/ (needs git, helm, network)
chart: install
	$(PY) -m scripts.fetch_chart --env $(ENV)

## deploy / destroy: the CDK CLI (pinned in package.json) on config/$(ENV).yaml; deploy adds
## --import-existing-resources when an add-on is on adopt (scripts/deploy_args.py)
deploy: install node_modules/.installed chart
	import=$$($(PY) -m scripts.deploy_args --env $(ENV)) && \
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk deploy --all -c env=$(ENV) $$import --require-approval never

destroy: install node_modules/.installed
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk destroy --all -c env=$(ENV) --force

## pipeline-synth: synthesize the delivery pipeline defined in config/$(ENV).yaml (prod)
pipeline-synth: install
	rm -rf $(OUT)
	$(PY) app.py -c env=$(ENV) -c pipeline=true --outdir $(OUT)
	$(MAKE) --no-print-directory validate

## pipeline: deploy the delivery pipeline once per account (it then updates itself)
pipeline: install node_modules/.installed chart
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk deploy -c env=$(ENV) -c pipeline=true --all --require-approval never

## preflight / verify / teardown: the operations CLI on config/$(ENV).yaml (see README)
preflight verify: install
	$(PY) -m scripts $@ --env $(ENV)

teardown: install
	$(PY) -m scripts teardown --env $(ENV)

## deploy-plan: modelled duration of cdk deploy/destroy --all from cdk.out (make synth first)
deploy-plan: install
	$(PY) -m scripts.deploy_plan --out $(OUT) --png $(OUT)/deploy-plan.png

## bench: synth time and peak memory against a bare one-VPC app; TTFT measurement accuracy
bench: install
	$(PY) -m bench.synth_bench --env $(ENV)
	$(PY) -m bench.ttft_accuracy

## dashboard: Grafana dashboard JSON and alert rules of config/$(ENV).yaml into dist/$(ENV)/
dashboard: install
	$(PY) -m scripts.dashboard --env $(ENV)

clean:
	rm -rf $(OUT) dist .pytest_cache .mypy_cache .ruff_cache
