"""The network HyperPod needs: VPC, a HyperPod subnet pinned by AZ id, the EFA security group."""

from __future__ import annotations

from aws_cdk import Annotations, RemovalPolicy, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.cdk.deps import needs
from infra.cdk.removal import retention
from infra.config.network import NetworkConfig

INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
PUBLIC_ELB_TAG = "kubernetes.io/role/elb"


class Network(Construct):
    """VPC (or an existing one), HyperPod subnet, S3 gateway endpoint, flow logs, cluster SG.

    Public subnets hold the NAT gateway(s), which ``Egress`` (the egress stack) builds with the
    private subnets' default routes: the EKS control plane needs the subnets, not the NAT, so it
    does not wait for them. The private subnets in two AZs are the EKS control-plane subnets. The
    HyperPod subnet is a secondary CIDR placed by AZ *id*, so the same config lands in the same
    physical zone in every account. Private subnets carry the internal-elb tag so the inference
    operator's load balancer controller can place internal ALBs.

    With an existing VPC nothing is built for egress: the HyperPod subnet's default route to the
    VPC's own NAT gateway stays here.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: NetworkConfig,
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, id)
        self.vpc = self._vpc(config)
        flow_log_group = logs.LogGroup(
            self,
            "FlowLogs",
            retention=retention(config.flow_logs_retention_days),
            removal_policy=removal_policy,
        )
        self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )

        self.hyperpod_subnet = self._hyperpod_subnet(config)
        if config.existing_vpc is not None:
            # An existing VPC keeps its own routing: the endpoint serves only the subnet added
            # here. A created VPC's S3 endpoint is the egress stack's (Egress below).
            self.vpc.add_gateway_endpoint(
                "S3",
                service=ec2.GatewayVpcEndpointAwsService.S3,
                subnets=[ec2.SubnetSelection(subnets=[self.hyperpod_subnet])],
            )
        self.cluster_security_group = self._cluster_security_group(config)

    def _vpc(self, config: NetworkConfig) -> ec2.IVpc:
        existing = config.existing_vpc
        if existing is not None:
            # The existing subnets' route tables belong to the VPC's owner; nothing here reads
            # or changes them, so their ids are not asked for.
            Annotations.of(self).acknowledge_warning(
                "@aws-cdk/aws-ec2:noSubnetRouteTableId",
                "the existing VPC's route tables are left to its owner",
            )
            # Attributes, not Vpc.from_lookup: synth stays offline and deterministic.
            return ec2.Vpc.from_vpc_attributes(
                self,
                "Vpc",
                vpc_id=existing.vpc_id,
                vpc_cidr_block=existing.vpc_cidr,
                availability_zones=list(config.availability_zones),
                private_subnet_ids=list(existing.private_subnet_ids),
            )
        # The AZs are pinned in config (by name here, by AZ id for the HyperPod subnet) so that
        # synth needs no lookup and every deploy lands in the same zones (cfn-lint's W3010,
        # ignored in infra/cdk/validation.py).
        vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(config.vpc_cidr),
            availability_zones=list(config.availability_zones),
            # The NAT gateways and the private subnets' default routes are the egress stack's
            # (Egress below); the subnets stay PRIVATE_WITH_EGRESS, the egress being custom.
            nat_gateways=0,
            restrict_default_security_group=True,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name="eks", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20
                ),
            ],
        )
        for subnet in vpc.private_subnets:
            Tags.of(subnet).add(INTERNAL_ELB_TAG, "1")
        for subnet in vpc.public_subnets:
            Tags.of(subnet).add(PUBLIC_ELB_TAG, "1")
        return vpc

    def _hyperpod_subnet(self, config: NetworkConfig) -> ec2.ISubnet:
        cidr = ec2.CfnVPCCidrBlock(
            self, "HyperPodCidr", vpc_id=self.vpc.vpc_id, cidr_block=config.hyperpod_subnet.cidr
        )
        subnet = ec2.CfnSubnet(
            self,
            "HyperPodSubnet",
            vpc_id=self.vpc.vpc_id,
            cidr_block=config.hyperpod_subnet.cidr,
            availability_zone_id=config.hyperpod_subnet.az_id,
            map_public_ip_on_launch=False,
            tags=[{"key": INTERNAL_ELB_TAG, "value": "1"}, {"key": "Name", "value": "hyperpod"}],
        )
        subnet.node.add_dependency(cidr)
        route_table = ec2.CfnRouteTable(self, "HyperPodRoutes", vpc_id=self.vpc.vpc_id)
        self.hyperpod_route_table_id = route_table.ref
        if config.existing_vpc is not None:
            # The VPC's own NAT gateway (a created VPC's routes are the egress stack's).
            ec2.CfnRoute(
                self,
                "HyperPodDefaultRoute",
                route_table_id=route_table.ref,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=config.existing_vpc.nat_gateway_id,
            )
        ec2.CfnSubnetRouteTableAssociation(
            self, "HyperPodRouteAssociation", subnet_id=subnet.ref, route_table_id=route_table.ref
        )
        return ec2.Subnet.from_subnet_attributes(
            self,
            "HyperPodSubnetRef",
            subnet_id=subnet.ref,
            route_table_id=route_table.ref,
            availability_zone=subnet.attr_availability_zone,
            ipv4_cidr_block=config.hyperpod_subnet.cidr,
        )

    def _cluster_security_group(self, config: NetworkConfig) -> ec2.SecurityGroup:
        sg = ec2.SecurityGroup(
            self,
            "ClusterSecurityGroup",
            vpc=self.vpc,
            allow_all_outbound=False,
            description="EKS control plane and HyperPod node ENIs (EFA: all traffic to itself)",
        )
        # EFA: all traffic in and out between members of this group.
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "EFA and node-to-node, within the group")
        sg.add_egress_rule(sg, ec2.Port.all_traffic(), "EFA and node-to-node, within the group")
        # EFA wants the explicit self-referencing egress rule above, so allowAllOutbound stays
        # off and the internet egress is its own rule (the L2 refuses an all-traffic egress).
        ec2.CfnSecurityGroupEgress(
            self,
            "InternetEgress",
            group_id=sg.security_group_id,
            ip_protocol="-1",
            cidr_ip="0.0.0.0/0",
            description="Egress to the internet (images, AWS APIs, Hugging Face)",
        )
        for cidr in (config.primary_cidr, config.hyperpod_subnet.cidr):
            sg.add_ingress_rule(ec2.Peer.ipv4(cidr), ec2.Port.tcp(443), "HTTPS from the VPC")
        return sg


class Egress(Construct):
    """Egress of a created VPC's private subnets: NAT gateways (and their EIPs) in the first
    ``nat_gateways`` public subnets, each private subnet's default route to the NAT gateway in its
    AZ (round robin where its AZ has none, as ``ec2.Vpc`` does), the HyperPod subnet's default
    route to the first one, and the S3 gateway endpoint on all their route tables.

    Built apart from the VPC so that the EKS control plane (which needs the subnets, not egress)
    is created while the NAT gateways are; what needs the internet from the private subnets at
    deploy time (HyperPod nodes, the kubectl handler) waits for this instead.
    """

    def __init__(self, scope: Construct, id: str, *, network: Network, nat_gateways: int) -> None:
        super().__init__(scope, id)
        vpc = network.vpc
        publics = vpc.public_subnets[: max(1, min(nat_gateways, len(vpc.public_subnets)))]
        self.nat_gateways: list[ec2.CfnNatGateway] = []
        for i, subnet in enumerate(publics, start=1):
            eip = ec2.CfnEIP(self, f"Eip{i}", domain="vpc")
            nat = ec2.CfnNatGateway(
                self,
                f"NatGateway{i}",
                subnet_id=subnet.subnet_id,
                allocation_id=eip.attr_allocation_id,
            )
            # Tagged as ec2.Vpc tags the NAT gateways of its public subnets.
            for resource in (eip, nat):
                Tags.of(resource).add("Name", subnet.node.path)
                Tags.of(resource).add(PUBLIC_ELB_TAG, "1")
            # A NAT gateway needs its subnet's route to the internet gateway (as ec2.Vpc's do).
            needs(
                nat,
                subnet.node.find_child("DefaultRoute"),
                subnet.node.find_child("RouteTableAssociation"),
            )
            self.nat_gateways.append(nat)
        by_az = {s.availability_zone: n for s, n in zip(publics, self.nat_gateways, strict=True)}
        self.routes: list[ec2.CfnRoute] = []
        spare = 0  # round robin over the gateways for a subnet whose AZ has none, as ec2.Vpc does
        for i, subnet in enumerate(vpc.private_subnets, start=1):
            gateway = by_az.get(subnet.availability_zone)
            if gateway is None:
                gateway, spare = self.nat_gateways[spare % len(self.nat_gateways)], spare + 1
            self.routes.append(
                self._default_route(
                    f"PrivateSubnet{i}DefaultRoute", subnet.route_table.route_table_id, gateway
                )
            )
        # The HyperPod subnet egresses through the first AZ's NAT gateway.
        self.routes.append(
            self._default_route(
                "HyperPodDefaultRoute", network.hyperpod_route_table_id, self.nat_gateways[0]
            )
        )
        # S3 (lifecycle scripts, images' layers, the L2 bucket) without the NAT gateways.
        self.s3_endpoint = ec2.GatewayVpcEndpoint(
            self,
            "S3",
            vpc=vpc,
            service=ec2.GatewayVpcEndpointAwsService.S3,
            subnets=[ec2.SubnetSelection(subnets=[network.hyperpod_subnet, *vpc.private_subnets])],
        )
        Tags.of(self.s3_endpoint).add("Name", vpc.node.path)  # as in the network stack before

    def _default_route(self, id: str, route_table_id: str, nat: ec2.CfnNatGateway) -> ec2.CfnRoute:
        return ec2.CfnRoute(
            self,
            id,
            route_table_id=route_table_id,
            destination_cidr_block="0.0.0.0/0",
            nat_gateway_id=nat.ref,
        )
