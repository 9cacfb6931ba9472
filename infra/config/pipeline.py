"""The delivery pipeline (CDK Pipelines), defined in the config of the environment it ends with.

``config/prod.yaml`` carries it: the pipeline deploys ``test_environment`` first, verifies it,
waits for a manual approval and then deploys the environment whose file holds this section.
"""

from __future__ import annotations

import re

from pydantic import field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.schedules import eventbridge_schedule

CONNECTION_ARN = re.compile(
    r"^arn:aws[a-z-]*:(codestar-connections|codeconnections):[a-z0-9-]+:[0-9]{12}:"
    r"connection/[0-9a-f-]{36}$"
)
REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class GitHubActionsConfig(Section):
    deploy_role_name: str | None = None
    """Name of the IAM role GitHub Actions assumes through OIDC to deploy from main (created by
    the pipeline stack; the workflow reads it from here). null: no GitHub deploy role."""
    create_oidc_provider: bool = True
    """Create the account's token.actions.githubusercontent.com OIDC provider (false when the
    account already has one: IAM allows one per URL)."""

    @field_validator("deploy_role_name")
    @classmethod
    def _role_name(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[\w+=,.@-]{1,64}$", v):
            raise RuleViolation("an IAM role name (1-64 of letters, digits, +=,.@_-)", "rename")
        return v


class PipelineConfig(Section):
    enabled: bool = False
    """Define the self-mutating pipeline for this environment (deployed once per account with
    `make pipeline ENV=<env>`)."""
    connection_arn: str | None = None
    """CodeConnections (CodeStar) connection to the Git host, created and authorized once in the
    console."""
    repository: str | None = None
    """``owner/name`` of this repository on the Git host."""
    branch: str = "main"
    """Branch the pipeline builds."""
    test_environment: str = "test"
    """Environment deployed and verified before the manual approval."""
    verify_test_environment: bool = True
    """Run ``hpkv verify`` against the test environment after it deploys."""
    nightly_recreate: bool = False
    """Tear the test environment down and recreate it on a schedule, so drift and recreate
    failures show up before a release."""
    nightly_schedule: str = "cron(0 3 * * ? *)"
    """EventBridge schedule of the nightly recreate (UTC): ``cron(...)`` with six fields (the
    year last, ``?`` in one of the two day fields) or ``rate(...)``; a CronJob's five fields
    are refused."""
    github_actions: GitHubActionsConfig = GitHubActionsConfig()

    @field_validator("connection_arn")
    @classmethod
    def _connection(cls, v: str | None) -> str | None:
        if v is not None and not CONNECTION_ARN.match(v):
            raise RuleViolation(
                "a CodeConnections ARN (arn:aws:codeconnections:<region>:<account>:connection/"
                "<uuid>)",
                "copy it from Developer Tools > Settings > Connections",
            )
        return v

    @field_validator("repository")
    @classmethod
    def _repository(cls, v: str | None) -> str | None:
        if v is not None and not REPOSITORY.match(v):
            raise RuleViolation("owner/name", "write the repository as owner/name")
        return v

    @field_validator("nightly_schedule")
    @classmethod
    def _schedule(cls, v: str) -> str:
        return eventbridge_schedule(v, "pipeline.nightly_schedule")
