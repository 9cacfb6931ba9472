"""Ownership-aware apply of Kubernetes objects on a cluster the app does not own (a custom
resource handler; its construct is ../construct.py)."""
