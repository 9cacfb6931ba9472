"""Facts about what AWS offers, each with its source: GPU instance types, the service models of
the pinned botocore, the Kubernetes minors supported and the packages that go with each."""
