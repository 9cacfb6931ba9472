"""What AWS accepts, as the bundled botocore's data files say it (botocore is pinned in
requirements.txt): HyperPod's instance types, the tag rules of the services this app tags, and
the regions of every partition. Read from the installed package (no network, no credentials),
once per process."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import Any

import botocore
from botocore.loaders import Loader

BOTOCORE = f"botocore {botocore.__version__}"
# The model with the strictest tag pattern among the resources this app tags (SageMaker's; FSx,
# CloudWatch Logs, AMP and Lambda have the same one); EC2 and EKS only bound the lengths.
# CloudFormation's stack tags (every tag here is one) also refuse an empty value.
TAG_MODEL = "sagemaker"
STACK_TAG_MODEL = "cloudformation"


@cache
def _shapes(service: str) -> dict[str, Any]:
    shapes: dict[str, Any] = Loader().load_service_model(service, "service-2")["shapes"]
    return shapes


@cache
def cluster_instance_types() -> tuple[str, ...]:
    """``ClusterInstanceType``: the instance types a HyperPod instance group accepts."""
    return tuple(_shapes("sagemaker")["ClusterInstanceType"]["enum"])


@dataclass(frozen=True)
class CharacterClass:
    """A regex class of Unicode general categories and literal characters, as the models write
    it (``[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]``): Python's ``re`` has no ``\\p{..}``."""

    categories: tuple[str, ...]
    characters: str

    def admits(self, text: str) -> bool:
        return all(
            c in self.characters or unicodedata.category(c)[0] in self.categories for c in text
        )

    def describe(self) -> str:
        names = {"L": "letters", "Z": "spaces", "N": "digits"}
        words = [names.get(c, f"\\p{{{c}}}") for c in self.categories]
        return f"{', '.join(words)} and {' '.join(self.characters)}"


def character_class(pattern: str) -> CharacterClass:
    """``^([\\p{L}...@]*)$`` (anchors and group optional) -> CharacterClass; ValueError for any
    other shape, so a model that changes its pattern fails loudly rather than being misread."""
    m = re.fullmatch(r"\^?\(?\[((?:\\p\{[A-Z]\}|\\-|[^\\\]])*)\][*+]\)?\$?", pattern)
    if m is None:
        raise ValueError(f"not a character-class pattern: {pattern!r}")
    body = m.group(1)
    categories = tuple(re.findall(r"\\p\{([A-Z])\}", body))
    characters = re.sub(r"\\p\{[A-Z]\}", "", body).replace("\\-", "-")
    return CharacterClass(categories, characters)


@dataclass(frozen=True)
class TagRules:
    key_max: int
    value_min: int
    value_max: int
    key_chars: CharacterClass
    value_chars: CharacterClass
    per_resource: int


@cache
def tag_rules() -> TagRules:
    shapes, stack = _shapes(TAG_MODEL), _shapes(STACK_TAG_MODEL)
    key, value = shapes["TagKey"], shapes["TagValue"]
    return TagRules(
        key_max=min(key["max"], stack["TagKey"]["max"]),
        value_min=max(value.get("min", 0), stack["TagValue"].get("min", 0)),
        value_max=min(value["max"], stack["TagValue"]["max"]),
        key_chars=character_class(key["pattern"]),
        value_chars=character_class(value["pattern"]),
        per_resource=min(shapes["TagList"]["max"], stack["Tags"]["max"]),
    )


@cache
def regions() -> dict[str, str]:
    """Every region botocore knows -> its partition (aws, aws-cn, aws-us-gov, ...)."""
    endpoints = Loader().load_data("endpoints")
    return {
        region: partition["partition"]
        for partition in endpoints["partitions"]
        for region in partition["regions"]
    }
