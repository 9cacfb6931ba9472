"""``preflight``: can this account, AZ and workstation deploy the environment? One row per check.

``run.run_preflight`` runs the rows of an owned cluster (``owned``) or, with
``existing_cluster``, of an existing one (``existing``, ``routes``); both ask ``versions``
about the Kubernetes minor, the add-on versions and the local tools.
"""

from __future__ import annotations
