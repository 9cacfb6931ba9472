"""Ownership-aware apply of Kubernetes objects on a cluster the app does not own (a custom
resource handler; see infra/constructs/owned_manifest.py)."""
