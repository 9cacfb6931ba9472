"""Lambda handler of the Tiered Storage custom resource (entry points in ``index``).

Bundled with a pinned boto3 by ``../construct.py``; nothing here may import from ``infra`` (the
Lambda only gets this package), so limits are repeated in ``properties``.
"""
