"""Tags that let an environment's leftovers be found: on every resource that takes tags.

``Tags.of(scope)`` reaches resources with a tag manager. Some CDK internals are raw
CfnResources, which the tag aspect skips: CustomResourceProvider's role and function (CfnJson,
auto-delete-objects) and the EKS kubectl-ready barrier parameter. This aspect tags those too.
"""

from __future__ import annotations

import jsii
from aws_cdk import Aspects, CfnResource, IAspect, Tags
from constructs import Construct, IConstruct

# Resource type -> how its Tags property is shaped.
RAW_TAGGABLE = {
    "AWS::IAM::Role": "list",
    "AWS::Lambda::Function": "list",
    "AWS::SSM::Parameter": "map",
}


@jsii.implements(IAspect)
class _TagRawResources:
    def __init__(self, tags: dict[str, str]) -> None:
        self._tags = tags

    def visit(self, node: IConstruct) -> None:
        if (
            isinstance(node, CfnResource)
            and node.cfn_resource_type in RAW_TAGGABLE
            and type(node) is CfnResource  # L1 classes have a tag manager already
        ):
            shape = RAW_TAGGABLE[node.cfn_resource_type]
            tags = sorted(self._tags.items())
            value = dict(tags) if shape == "map" else [{"Key": k, "Value": v} for k, v in tags]
            node.add_property_override("Tags", value)


def tag_everything(scope: Construct, tags: dict[str, str]) -> None:
    for key, value in tags.items():
        Tags.of(scope).add(key, value)
    Aspects.of(scope).add(_TagRawResources(tags))
