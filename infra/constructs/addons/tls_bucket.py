"""The bucket where the inference operator keeps the TLS certificates it issues for endpoints."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_s3 as s3
from constructs import Construct


class TlsCertificateBucket(Construct):
    """Encrypted, TLS-only, no public access, server-access-logged to a sibling logs bucket.

    ``retain`` (``retain_stateful_resources``) keeps both on destroy; otherwise they are emptied
    and deleted so short-lived environments tear down cleanly.
    """

    def __init__(self, scope: Construct, id: str, *, retain: bool) -> None:
        super().__init__(scope, id)
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        common = {
            "encryption": s3.BucketEncryption.S3_MANAGED,
            "enforce_ssl": True,
            "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
            "removal_policy": removal,
            "auto_delete_objects": not retain,
        }
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(365))],
            **common,  # type: ignore[arg-type]
        )
        Validations.of(self.access_logs).acknowledge(
            Acknowledgment(
                id="AwsSolutions-S1",
                reason="This is the server access log target; logging it into itself would loop.",
            )
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="tls-certificates/",
            **common,  # type: ignore[arg-type]
        )
