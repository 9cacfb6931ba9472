"""What every custom resource of this repository is built from: its handler package, the role and
log groups of its functions, the functions themselves and the Provider framework around them.

Each custom resource lives in ``infra/custom_resources/<name>/``: ``construct.py`` beside the
Lambda package ``handler/``. Its Provider is built in one stack and its ``CustomResource`` in the
stack that uses it, given the Provider's service token, so the construct tree matches which
stack owns what.

A handler package is shipped with the pure-Python distributions it imports, copied from the
virtualenv that requirements.txt pins: no Docker, no network, and the same bytes (so the same
asset hash) on every synth. A distribution whose installed version differs from its pin fails the
synth, naming the fix.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
    AssetHashType,
    BundlingOptions,
    DockerImage,
    Duration,
    ILocalBundling,
    RemovalPolicy,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.cdk.nag import acknowledge

REPO_ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO_ROOT / "requirements.txt"
# Never run: the local bundler always succeeds or raises. Named because BundlingOptions needs one.
FALLBACK_IMAGE = "public.ecr.aws/sam/build-python3.13"
# Install bookkeeping that may name this machine; METADATA and licences stay.
_BOOKKEEPING = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})


def pinned_versions(requirements: Path = REQUIREMENTS) -> dict[str, str]:
    """``name==version`` lines of requirements.txt, names lower-cased."""
    pins: dict[str, str] = {}
    for line in requirements.read_text().splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_.\-\[\],]+?)\s*==\s*([^\s#;]+)", line)
        if m:
            pins[re.sub(r"\[.*\]", "", m[1]).lower()] = m[2]
    return pins


def skipped_always(relative: Path) -> bool:
    """Console scripts outside site-packages, bytecode of this interpreter, install bookkeeping."""
    parts = relative.parts
    if parts[0] == ".." or "__pycache__" in parts or relative.suffix == ".pyc":
        return True
    return parts[0].endswith(".dist-info") and relative.name in _BOOKKEEPING


@dataclass(frozen=True)
class HandlerBundle:
    """One handler package: ``handler_dir`` copied as the package ``package`` (the name the
    functions' ``handler`` strings start with), plus ``distributions``.

    ``skip`` leaves out more of a distribution (unused service models, compiled extensions)."""

    handler_dir: Path
    package: str
    distributions: tuple[str, ...]
    skip: Callable[[Path], bool] = lambda _relative: False

    def write(self, output_dir: Path) -> None:
        target = output_dir / self.package
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted(self.handler_dir.glob("*.py")):
            shutil.copyfile(source, target / source.name)
        folders, files = _shipped(self.distributions, self.skip)
        for folder in folders:
            (output_dir / folder).mkdir(parents=True, exist_ok=True)
        for source, relative in files:
            # copyfile, not copy2: contents only, so timestamps cannot change the asset hash.
            shutil.copyfile(source, output_dir / relative)

    def code(self) -> lambda_.Code:
        return lambda_.Code.from_asset(
            str(self.handler_dir),
            # Hash what is shipped (handler + packages), not the handler sources alone: a
            # package bump must change the asset, and identical bytes must keep it.
            asset_hash_type=AssetHashType.OUTPUT,
            bundling=BundlingOptions(
                image=DockerImage.from_registry(FALLBACK_IMAGE), local=_LocalBundler(self)
            ),
        )


@functools.cache
def _shipped(
    names: tuple[str, ...], skip: Callable[[Path], bool]
) -> tuple[tuple[Path, ...], tuple[tuple[Path, Path], ...]]:
    """The folders and (installed file, relative path) pairs ``names`` ship, read from their
    RECORDs once per process: the pipeline's app bundles each handler once per stage, and the
    RECORDs of the bundled SDKs list thousands of files."""
    pins = pinned_versions()
    files: list[tuple[Path, Path]] = []
    for name in names:
        dist = importlib.metadata.distribution(name)
        pinned = pins.get(name.lower())
        if pinned is not None and dist.version != pinned:
            raise RuntimeError(
                f"{name} {dist.version} is installed but requirements.txt pins {pinned}: "
                "run `.venv/bin/pip install -r requirements.txt` before synth"
            )
        if not dist.files:
            raise RuntimeError(f"{name} has no RECORD of its files: reinstall it with pip")
        for relative in dist.files:
            rel = Path(str(relative))
            if not (skipped_always(rel) or skip(rel)):
                files.append((Path(str(relative.locate())), rel))
    return tuple(sorted({rel.parent for _, rel in files})), tuple(files)


@jsii.implements(ILocalBundling)
class _LocalBundler:
    """Bundles in this process (the Docker image in BundlingOptions is never used)."""

    def __init__(self, bundle: HandlerBundle) -> None:
        self._bundle = bundle

    def try_bundle(self, output_dir: str, *_options: Any, **_kw: Any) -> bool:
        # jsii passes the BundlingOptions struct positionally (the typed interface declares them
        # as keywords); nothing in it is needed here.
        self._bundle.write(Path(output_dir))
        return True


# Lambda Python 3.12+ puts the function's own packages ahead of the runtime's (the Tiered Storage
# handler ships a newer boto3 than the runtime's); every handler runs on this pinned runtime.
RUNTIME = lambda_.Runtime.PYTHON_3_13
RUNTIME_PINNED = (
    f"{RUNTIME.name} is pinned on purpose (3.12+ puts a function's bundled packages ahead of the "
    "runtime's); move RUNTIME in infra/custom_resources/provider.py to a newer one after a test "
    "deploy."
)


def log_groups(
    scope: Construct,
    *,
    retention: logs.RetentionDays,
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
) -> Callable[[str], logs.LogGroup]:
    """A maker of ``scope``'s log groups by id, each kept ``retention``."""

    def log_group(name: str) -> logs.LogGroup:
        return logs.LogGroup(scope, name, retention=retention, removal_policy=removal_policy)

    return log_group


def handler_function(
    scope: Construct,
    name: str,
    *,
    code: lambda_.Code,
    handler: str,
    role: iam.IRole,
    timeout: Duration,
    log_group: logs.ILogGroup,
    description: str,
    memory_size: int = 256,
    environment: dict[str, str] | None = None,
    **network: Any,
) -> lambda_.Function:
    """One handler function on the pinned runtime (arm64); ``network``: vpc, vpc_subnets and
    security_groups for a function in the VPC."""
    fn = lambda_.Function(
        scope,
        name,
        runtime=RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        handler=handler,
        code=code,
        role=role,
        timeout=timeout,
        memory_size=memory_size,
        log_group=log_group,
        environment=environment,
        description=description,
        **network,
    )
    acknowledge(fn, "AwsSolutions-L1", RUNTIME_PINNED)
    return fn


def polling_provider(
    scope: Construct,
    *,
    on_event: lambda_.IFunction,
    is_complete: lambda_.IFunction,
    query_interval: Duration,
    total_timeout: Duration,
    log_group: Callable[[str], logs.ILogGroup],
) -> cr.Provider:
    """``Provider`` with on_event/is_complete, a bounded total timeout and both of its logs kept:
    the framework's (``FrameworkLogs``) and the waiter state machine's (``WaiterLogs``), which is
    where a stuck poll is diagnosed and which CDK leaves off by default."""
    provider = cr.Provider(
        scope,
        "Provider",
        on_event_handler=on_event,
        is_complete_handler=is_complete,
        query_interval=query_interval,
        total_timeout=total_timeout,
        log_group=log_group("FrameworkLogs"),
        disable_waiter_state_machine_logging=False,
        waiter_state_machine_log_options=cr.LogOptions(
            destination=log_group("WaiterLogs"), level=sfn.LogLevel.ALL
        ),
    )
    acknowledge(
        provider,
        "AwsSolutions-SF2",
        "The Provider's waiter state machine has no X-Ray option; it only polls is_complete, "
        "and its execution log (level ALL) is kept.",
    )
    return provider


@dataclass(frozen=True)
class PollingHandler:
    """What a polling custom resource's Provider is made of (one per custom resource type)."""

    bundle: HandlerBundle
    role_description: str
    function_description: str
    """Prefix of each function's description (``<prefix>: on_event``)."""
    on_event_timeout: Duration
    is_complete_timeout: Duration
    environment: dict[str, str]
    query_interval: Duration
    total_timeout: Duration
    log_statement_sid: str | None = None


class PollingProvider(Construct):
    """The Provider side of a long-wait custom resource, built in one stack: ``HandlerRole``
    (allowed to write ``HandlerLogs``), the ``OnEvent`` and ``IsComplete`` functions and the
    Provider framework with its logs. None of it references the cluster, so it is built while the
    cluster is created.

    The custom resource, in the stack that uses it, gets ``service_token`` and attaches its
    cluster-scoped policy to ``role``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        handler: PollingHandler,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        log_removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
    ) -> None:
        super().__init__(scope, id)
        log_group = log_groups(self, retention=log_retention, removal_policy=log_removal_policy)
        handler_logs = log_group("HandlerLogs")
        self.role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=handler.role_description,
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid=handler.log_statement_sid,
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[handler_logs.log_group_arn],
            )
        )
        code = handler.bundle.code()

        def function(name: str, entry: str, timeout: Duration) -> lambda_.Function:
            fn = handler_function(
                self,
                name,
                code=code,
                handler=f"{handler.bundle.package}.index.{entry}",
                role=self.role,
                timeout=timeout,
                log_group=handler_logs,
                environment=handler.environment,
                description=f"{handler.function_description}: {entry}",
            )
            fn.node.add_dependency(self.role)  # its policy must exist before CloudFormation invokes
            return fn

        self.on_event_function = function("OnEvent", "on_event", handler.on_event_timeout)
        self.is_complete_function = function(
            "IsComplete", "is_complete", handler.is_complete_timeout
        )
        self.provider = polling_provider(
            self,
            on_event=self.on_event_function,
            is_complete=self.is_complete_function,
            query_interval=handler.query_interval,
            total_timeout=handler.total_timeout,
            log_group=log_group,
        )

    @property
    def service_token(self) -> str:
        return self.provider.service_token
