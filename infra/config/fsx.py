"""The L2 store on Amazon FSx for Lustre (endpoints with ``l2_backend: fsx_lustre``) and its
optional export to S3."""

from __future__ import annotations

from pydantic import Field, field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.fields import aws_id, region, s3_bucket

# FSx for Lustre PERSISTENT_2 (SSD): throughput per TiB it accepts, and its capacity steps
# (CreateFileSystem / UpdateFileSystem, "Managing throughput capacity" in the Lustre guide).
FSX_PERSISTENT_2_THROUGHPUTS = (125, 250, 500, 1000)
FSX_FIRST_CAPACITY_GIB, FSX_CAPACITY_STEP_GIB = 1200, 2400
FSX_LUSTRE_VERSIONS = ("2.12", "2.15")


class FsxDataRepositoryConfig(Section):
    """T4: a data repository association exporting the L2 files to S3, so sessions survive a
    cluster (and file system) rebuild. The app does not own the bucket: expiry of the exported
    objects is an S3 lifecycle rule on the bucket (an association has no expiry setting)."""

    bucket: str
    """Bare name of the S3 bucket (no ``s3://``, no ARN) the L2 files are exported to."""
    bucket_region: str
    """Region of that bucket; must be the environment's region (an association links a bucket
    in the file system's region)."""
    prefix: str = "l2cache/"
    """Key prefix in the bucket, ending in ``/`` (empty: the whole bucket)."""
    import_on_create: bool = True
    """List the bucket's objects under the prefix in the file system when the association is
    created (``BatchImportMetaDataOnCreate``): a rebuilt file system finds the earlier sessions
    and loads their bytes from S3 on first read."""

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str) -> str:
        return s3_bucket(v, "write the bare bucket name; put the key prefix in prefix")

    @field_validator("bucket_region")
    @classmethod
    def _region(cls, v: str) -> str:
        return region(v, "run `aws s3api get-bucket-location --bucket <name>` and copy it")

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if v.startswith(("/", "s3://")) or (v and not v.endswith("/")):
            raise RuleViolation(
                "a key prefix inside the bucket ending in '/', like l2cache/ (or empty)",
                "drop a leading / or s3:// and end it with /",
            )
        return v

    @property
    def s3_uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


class FsxLustreConfig(Section):
    """The shared tier on Amazon FSx for Lustre (``l2_backend: fsx_lustre``): one PERSISTENT_2
    file system in the HyperPod subnet, mounted RWX in every endpoint Pod through the FSx CSI
    driver. Data compression is off: KV blocks are dense tensors that LZ4 barely shrinks, and
    compression adds CPU work on the file servers to every read on the TTFT path."""

    storage_capacity_gib: int = 1200
    """Capacity in GiB: 1200, 2400, then steps of 2400 (PERSISTENT_2 SSD). Also the size the
    evictor keeps the L2 tree under (``curvine.evictor`` percentages)."""
    throughput_mb_per_tib: int = 250
    """Throughput per TiB of storage (``PerUnitStorageThroughput``): 125, 250, 500 or 1000
    MB/s/TiB. The file system serves capacity (TiB) x this value in aggregate."""
    file_system_type_version: str = "2.15"
    """Lustre version of the file system (2.12 or 2.15; the FSx CSI driver's client mounts both)."""
    backup_retention_days: int | None = Field(default=None, ge=0, le=90)
    """Daily automatic backups kept, in days. Null: 7 when ``retain_stateful_resources`` is on
    (prod), 0 (no backups: the cache is recomputable) otherwise."""
    data_repository: FsxDataRepositoryConfig | None = None
    """Optional T4: export new L2 files to S3 (null: no S3 link)."""
    hyperpod_subnet_id: str | None = None
    """Existing-cluster mode only: the HyperPod cluster's subnet (``aws sagemaker
    describe-cluster --query VpcConfig.Subnets``). The file system is placed there, in the GPU
    nodes' AZ. With a cluster the app creates, its HyperPod subnet is used and this stays null."""
    vpc_id: str | None = None
    """Existing-cluster mode only: the VPC of that subnet (the file system's security group)."""
    client_security_group_id: str | None = None
    """Existing-cluster mode only: the security group of the HyperPod nodes (``VpcConfig.
    SecurityGroupIds``); Lustre's ports are opened to it only."""

    @field_validator("storage_capacity_gib")
    @classmethod
    def _capacity(cls, v: int) -> int:
        if v != FSX_FIRST_CAPACITY_GIB and (v <= 0 or v % FSX_CAPACITY_STEP_GIB):
            lower = max(FSX_CAPACITY_STEP_GIB, v // FSX_CAPACITY_STEP_GIB * FSX_CAPACITY_STEP_GIB)
            raise RuleViolation(
                f"{FSX_FIRST_CAPACITY_GIB} or a multiple of {FSX_CAPACITY_STEP_GIB} GiB "
                "(FSx for Lustre PERSISTENT_2 SSD)",
                f"use {lower} or {lower + FSX_CAPACITY_STEP_GIB}",
            )
        return v

    @field_validator("throughput_mb_per_tib")
    @classmethod
    def _throughput(cls, v: int) -> int:
        if v not in FSX_PERSISTENT_2_THROUGHPUTS:
            raise RuleViolation(
                f"{', '.join(map(str, FSX_PERSISTENT_2_THROUGHPUTS))} MB/s/TiB (PERSISTENT_2)",
                "pick one of them; aggregate throughput = capacity in TiB x this value",
            )
        return v

    @field_validator("file_system_type_version")
    @classmethod
    def _version(cls, v: str) -> str:
        if v not in FSX_LUSTRE_VERSIONS:
            raise RuleViolation(
                f"{' or '.join(FSX_LUSTRE_VERSIONS)} (Lustre versions of PERSISTENT_2)",
                "use 2.15",
            )
        return v

    @field_validator("hyperpod_subnet_id")
    @classmethod
    def _subnet(cls, v: str | None) -> str | None:
        return None if v is None else aws_id(v, "subnet", "kvcache.fsx.hyperpod_subnet_id")

    @field_validator("vpc_id")
    @classmethod
    def _vpc(cls, v: str | None) -> str | None:
        return None if v is None else aws_id(v, "vpc", "kvcache.fsx.vpc_id")

    @field_validator("client_security_group_id")
    @classmethod
    def _sg(cls, v: str | None) -> str | None:
        return None if v is None else aws_id(v, "sg", "kvcache.fsx.client_security_group_id")

    def backup_days(self, retain: bool) -> int:
        if self.backup_retention_days is not None:
            return self.backup_retention_days
        return 7 if retain else 0
