"""S3 buckets with the project's defaults: encrypted, TLS-only, private, access-logged."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.cdk.nag import acknowledge

ACCESS_LOG_DAYS = 365


class SecureBucket(Construct):
    """A bucket plus its server-access-log bucket.

    ``retain`` keeps both on destroy (prod); otherwise both are emptied and deleted so a test
    environment can be recreated. Names are generated (no fixed physical name to collide with).
    """

    def __init__(
        self, scope: Construct, id: str, *, retain: bool, encryption_key: kms.IKey | None = None
    ) -> None:
        super().__init__(scope, id)
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        self.access_logs = self._bucket("AccessLogs", removal, retain)
        acknowledge(
            self.access_logs,
            "AwsSolutions-S1",
            "This is the server-access-log target; logging it to itself would loop.",
        )
        self.bucket = self._bucket(
            "Bucket", removal, retain, access_logs=self.access_logs, key=encryption_key
        )

    def _bucket(
        self,
        id: str,
        removal: RemovalPolicy,
        retain: bool,
        access_logs: s3.IBucket | None = None,
        key: kms.IKey | None = None,
    ) -> s3.Bucket:
        return s3.Bucket(
            self,
            id,
            encryption=s3.BucketEncryption.KMS if key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=key,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=access_logs is not None,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="s3-access/" if access_logs else None,
            # Access logs are kept a year; the data buckets keep what their owners write.
            lifecycle_rules=None
            if access_logs
            else [s3.LifecycleRule(expiration=Duration.days(ACCESS_LOG_DAYS))],
            removal_policy=removal,
            auto_delete_objects=not retain,
        )
