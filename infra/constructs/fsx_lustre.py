"""The shared KV tier on Amazon FSx for Lustre (``kvcache.l2_backend: fsx_lustre``).

One PERSISTENT_2 file system in the HyperPod subnet (the GPU nodes' AZ: a cross-AZ hop would add
latency and transfer cost to every read), encrypted with a key of its own, behind a security group
that admits Lustre only from the nodes' security group and from itself. Optionally a data
repository association exports new L2 files to S3 (T4). The Kubernetes layer mounts it through a
static PersistentVolume of the FSx CSI driver (k8s/l2_volume.py) built from ``volume``.
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Fn, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.cdk.removal import removal_policy
from infra.config import AppConfig
from infra.config.fsx import FsxLustreConfig
from infra.constructs.network import Network
from infra.environment.fsx import DNS_OUTPUT, ID_OUTPUT, MOUNT_OUTPUT, FsxVolume

# LNet: servers listen on 988; clients connect from the privileged ports 1018-1023, and the
# file servers talk to each other on the same ports (FSx for Lustre guide, "File system access
# control with Amazon VPC").
LUSTRE_PORTS = ((988, 988), (1018, 1023))
# Compression stays off: KV blocks are dense fp16/bf16 tensors that LZ4 barely shrinks, and the
# file servers would spend CPU on every read on the time-to-first-token path.
DATA_COMPRESSION = "NONE"
BACKUP_START_UTC = "03:00"


class FsxLustreL2(Construct):
    """The file system, its key and security group, and the optional S3 link."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: FsxLustreConfig,
        vpc: ec2.IVpc,
        subnet_id: str,
        client_security_group: ec2.ISecurityGroup,
        retain: bool,
        removal: RemovalPolicy,
    ) -> None:
        super().__init__(scope, id)
        self.key = kms.Key(
            self,
            "Key",
            description="FSx for Lustre L2 KV cache: encryption at rest",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            allow_all_outbound=False,
            description="FSx for Lustre L2: Lustre from the HyperPod nodes and the file servers",
        )
        sg = self.security_group
        for i, (low, high) in enumerate(LUSTRE_PORTS):
            port = ec2.Port.tcp_range(low, high) if low != high else ec2.Port.tcp(low)
            sg.add_ingress_rule(client_security_group, port, "Lustre from the HyperPod nodes")
            sg.add_ingress_rule(sg, port, "Lustre between the file servers")
            sg.add_egress_rule(client_security_group, port, "Lustre to the HyperPod nodes")
            sg.add_egress_rule(sg, port, "Lustre between the file servers")
            # The guide's client rules: the nodes accept Lustre from the file servers too. A
            # resource of this construct (not add_ingress_rule on the nodes' group, which would
            # land in the network stack and make it depend on this one).
            ec2.CfnSecurityGroupIngress(
                self,
                f"NodesFromServers{i}",
                group_id=client_security_group.security_group_id,
                source_security_group_id=sg.security_group_id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description="Lustre from the FSx L2 file servers",
            )
        backup_days = config.backup_days(retain)
        lustre = fsx.CfnFileSystem.LustreConfigurationProperty(
            deployment_type="PERSISTENT_2",
            per_unit_storage_throughput=config.throughput_mb_per_tib,
            data_compression_type=DATA_COMPRESSION,
            automatic_backup_retention_days=backup_days,
            daily_automatic_backup_start_time=BACKUP_START_UTC if backup_days else None,
            copy_tags_to_backups=True if backup_days else None,
        )
        self.file_system = fsx.CfnFileSystem(
            self,
            "FileSystem",
            file_system_type="LUSTRE",
            file_system_type_version=config.file_system_type_version,
            storage_type="SSD",
            storage_capacity=config.storage_capacity_gib,
            subnet_ids=[subnet_id],
            security_group_ids=[sg.security_group_id],
            kms_key_id=self.key.key_id,
            lustre_configuration=lustre,
        )
        # Kept on stack deletion and on replacement when the environment retains state (prod):
        # CloudFormation cannot ask for a final backup, so the file system itself stays, with
        # its daily backups (docs/architecture.md: removing it with a final backup).
        self.file_system.apply_removal_policy(removal)
        self.association: fsx.CfnDataRepositoryAssociation | None = None
        repo = config.data_repository
        if repo is not None:
            self.association = fsx.CfnDataRepositoryAssociation(
                self,
                "S3Export",
                file_system_id=self.file_system.ref,
                file_system_path="/",
                data_repository_path=repo.s3_uri,
                batch_import_meta_data_on_create=repo.import_on_create,
                # New chunk files only: LMCache writes each chunk once, and the evictor's
                # deletions must not delete the S3 copy (T4 outlives the file system's copy).
                s3=fsx.CfnDataRepositoryAssociation.S3Property(
                    auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                        events=["NEW"]
                    ),
                ),
            )
            self.association.apply_removal_policy(removal)
        self.volume = FsxVolume(
            file_system_id=self.file_system.ref,
            dns_name=self.file_system.attr_dns_name,
            mount_name=self.file_system.attr_lustre_mount_name,
        )
        # What `make manifests` reads (infra/environment/fsx.py) to write 40-l2-volume.yaml for
        # kubectl/GitOps; the keys are fixed so DescribeStacks finds them by name.
        for name, value in (
            (ID_OUTPUT, self.volume.file_system_id),
            (DNS_OUTPUT, self.volume.dns_name),
            (MOUNT_OUTPUT, self.volume.mount_name),
        ):
            CfnOutput(self, name, value=value, key=name)


def l2_file_system(scope: Construct, config: AppConfig, network: Network | None) -> FsxLustreL2:
    """The file system where the HyperPod nodes are: the created network's HyperPod subnet and
    cluster security group, or the ids written in ``kvcache.fsx`` for an existing cluster."""
    fsx_config = config.kvcache.fsx
    retain = config.retain_stateful_resources
    if network is not None:
        vpc, subnet_id = network.vpc, network.hyperpod_subnet.subnet_id
        client: ec2.ISecurityGroup = network.cluster_security_group
    else:
        # Config rules guarantee the three ids in existing-cluster mode.
        assert fsx_config.vpc_id and fsx_config.hyperpod_subnet_id
        assert fsx_config.client_security_group_id
        vpc = ec2.Vpc.from_vpc_attributes(
            scope, "L2Vpc", vpc_id=fsx_config.vpc_id, availability_zones=Fn.get_azs()
        )
        subnet_id = fsx_config.hyperpod_subnet_id
        # The rule admitting the file servers is a resource of this stack (gone with it).
        client = ec2.SecurityGroup.from_security_group_id(
            scope, "HyperPodNodes", fsx_config.client_security_group_id, mutable=False
        )
    return FsxLustreL2(
        scope,
        "L2FileSystem",
        config=fsx_config,
        vpc=vpc,
        subnet_id=subnet_id,
        client_security_group=client,
        retain=retain,
        removal=removal_policy(config),
    )
