"""Exit codes, and the translation of what AWS, Kubernetes, the network or the file system
raised into one line every command ends with."""

from __future__ import annotations

from enum import IntEnum

from botocore import exceptions as aws
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3 import exceptions as net

from infra.cdk.written import OutputRefused


class Exit(IntEnum):
    """Process exit codes, the same for every command (docs/cli.md lists them)."""

    OK = 0
    CHECK_FAILED = 1  # a check or verdict failed (preflight, verify)
    USAGE = 2  # bad option or invalid config file (one line on stderr)
    REFUSED = 3  # refused on purpose: prod without --allow-prod, destructive without --yes
    OPERATION_FAILED = 4  # an AWS or Kubernetes call failed or a wait timed out


class OperationError(RuntimeError):
    """A step of a multi-step operation failed; the message says which and how to resume."""


class CliError(Exception):
    """A failure the CLI reports as one line (and in the JSON object) with its exit code."""

    def __init__(self, message: str, code: Exit = Exit.OPERATION_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def shown(value: object) -> str:
    """A value as the user gave it: bare when it reads unambiguously, else quoted (empty, with
    spaces, quotes or characters a terminal would not show)."""
    if not isinstance(value, str):
        return str(value)
    plain = value.isprintable() and not any(c.isspace() or c in "'\"" for c in value)
    return value if value and plain else repr(value)


def bad_option(option: str, value: object, allowed: str, fix: str) -> CliError:
    """The one line of a value the command cannot use: ``<option> = <value>: allowed: ...;
    fix: ...`` (exit 2), as the command line's own refusals read."""
    return CliError(f"{option} = {shown(value)}: allowed: {allowed}; fix: {fix}", Exit.USAGE)


def _one_line(text: object, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def describe_failure(exc: BaseException) -> CliError | None:
    """Translate what AWS, Kubernetes, the network or the file system raised into one line that
    says what failed, why and what to do; None for anything else (a bug: let it show)."""
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, OperationError):
        return CliError(_one_line(exc))
    if isinstance(exc, OutputRefused):  # a bad --out or --png: the user's folder, untouched
        return CliError(str(exc), Exit.USAGE)
    if isinstance(exc, aws.NoCredentialsError | aws.PartialCredentialsError):
        return CliError(
            "no AWS credentials: run `aws configure` or `aws sso login`, or set AWS_PROFILE"
        )
    if isinstance(exc, aws.NoRegionError):
        return CliError(
            "no AWS region: set `region` in config/<env>.yaml or AWS_REGION", Exit.USAGE
        )
    if isinstance(exc, aws.TokenRetrievalError | aws.SSOTokenLoadError):
        return CliError("AWS SSO session expired: run `aws sso login` (with your AWS_PROFILE)")
    if isinstance(exc, aws.ProfileNotFound):
        return CliError(
            f"{_one_line(exc)}: fix AWS_PROFILE or run `aws configure --profile`", Exit.USAGE
        )
    if isinstance(
        exc, aws.EndpointConnectionError | aws.ConnectTimeoutError | aws.ReadTimeoutError
    ):
        return CliError(f"cannot reach AWS ({_one_line(exc)}): check the network, proxy and region")
    if isinstance(exc, aws.ClientError):
        err = exc.response.get("Error", {})
        code, op = err.get("Code", "?"), exc.operation_name
        message = _one_line(err.get("Message", ""), 200)
        if code in ("ExpiredToken", "ExpiredTokenException", "RequestExpired"):
            hint = "refresh the credentials (`aws sso login`) and re-run"
        elif code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation"):
            hint = "use a role that allows this call (see docs/cli.md) and re-run"
        elif code in (
            "InvalidClientTokenId",
            "UnrecognizedClientException",
            "SignatureDoesNotMatch",
        ):
            hint = "the credentials are not valid: check AWS_PROFILE or run `aws configure`"
        else:
            hint = "fix the cause and re-run (finished steps are skipped)"
        return CliError(f"AWS {op} failed: {code}: {message}; {hint}")
    if isinstance(exc, aws.BotoCoreError):
        return CliError(f"AWS: {_one_line(exc)}; check the AWS configuration and re-run")
    if isinstance(exc, ConfigException):
        return CliError(
            f"no Kubernetes access ({_one_line(exc, 120)}): run `aws eks update-kubeconfig "
            "--name <cluster> --region <region>` or set KUBECONFIG"
        )
    if isinstance(exc, net.MaxRetryError | net.NewConnectionError | net.TimeoutError):
        pool = getattr(exc, "pool", None)
        where = f"{pool.host}:{pool.port}" if pool is not None else "the API server"
        return CliError(
            f"cannot reach the Kubernetes API server at {where}: check the kubeconfig context, "
            "the network (VPN, private endpoint) and that the cluster exists"
        )
    if isinstance(exc, net.HTTPError):
        return CliError(f"Kubernetes API connection failed ({_one_line(exc, 160)}); re-run")
    if isinstance(exc, ApiException):
        if exc.status in (401, 403):
            hint = "give your IAM principal an EKS access entry, or refresh the kubeconfig"
        else:
            hint = "check the cluster and re-run"
        return CliError(f"Kubernetes API: {exc.status} {exc.reason}; {hint}")
    if isinstance(exc, OSError):
        name = f"{exc.filename}: " if exc.filename else ""
        return CliError(f"{name}{exc.strerror or _one_line(exc)}; check the path and permissions")
    return None
