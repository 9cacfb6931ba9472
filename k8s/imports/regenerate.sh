#!/usr/bin/env bash
# Regenerates the typed InferenceEndpointConfig classes from the pinned CRD copy.
# Run from anywhere; writes k8s/imports/hyperpod_inference/. Needs Node.js and the npm registry.
set -euo pipefail
CDK8S_CLI_VERSION=2.207.56
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
crd="${repo}/k8s/schemas/hyperpod-inference/3.3/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
cd "${repo}"
rm -rf k8s/imports/hyperpod_inference
# An absolute path: cdk8s-cli treats a relative "name:=path" source as a URL.
npx --yes "cdk8s-cli@${CDK8S_CLI_VERSION}" import "hyperpod_inference:=${crd}" \
  --language python --output k8s/imports
