"""Lambda handler of the node readiness gate (entry points in ``index``).

Nothing here may import from ``infra``: the Lambda only gets this package.
"""
