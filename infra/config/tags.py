"""The ``tags`` of a config: every one goes on every stack and every resource that takes tags
(stacks/composition.py), so each must pass the strictest rule among them, as the bundled
botocore's models state it (infra/facts/aws_models.py): CloudFormation's stack tags refuse an empty
value, SageMaker's cluster and FSx refuse characters outside their pattern, and every service
refuses a key under ``aws:`` (reserved for AWS, in any case) and more than 50 tags."""

from __future__ import annotations

from infra.config.errors import RuleViolation
from infra.facts.aws_models import BOTOCORE, tag_rules

# Tags the app adds itself, after the configured ones (a configured one would be replaced).
APP_TAGS = ("project", "environment")


def check_tags(tags: dict[str, str]) -> None:
    rules = tag_rules()
    room = rules.per_resource - len(APP_TAGS)
    if len(tags) > room:
        raise RuleViolation(
            f"at most {room} tags ({rules.per_resource} per resource, {len(APP_TAGS)} of them "
            f"the app's own: {', '.join(APP_TAGS)})",
            "drop the tags you need least",
            field="tags",
            value=sorted(tags),
        )
    for key, value in tags.items():
        _check_key(key)
        _check_value(key, value)


def _check_key(key: str) -> None:
    rules = tag_rules()
    field = "tags"  # the key is the value shown
    if key in APP_TAGS:
        raise RuleViolation(
            f"a key other than {' and '.join(APP_TAGS)} (the app sets those itself, from project "
            "and the environment's name)",
            f"remove tags.{key}, or rename the key (e.g. team-{key})",
            field=field,
            value=key,
        )
    if key.lower().startswith("aws:"):
        raise RuleViolation(
            "a key that does not start with aws: (reserved for AWS's own tags, in any case)",
            f"rename the key without the aws: prefix (e.g. {key[4:] or 'team'})",
            field=field,
            value=key,
        )
    if not 1 <= len(key) <= rules.key_max or not rules.key_chars.admits(key):
        raise RuleViolation(
            f"a key of 1-{rules.key_max} {rules.key_chars.describe()} (the tag rule of the "
            f"SageMaker API in {BOTOCORE})",
            "rename the key",
            field=field,
            value=key,
        )


def _check_value(key: str, value: str) -> None:
    rules = tag_rules()
    if rules.value_min <= len(value) <= rules.value_max and rules.value_chars.admits(value):
        return
    raise RuleViolation(
        f"a value of {rules.value_min}-{rules.value_max} {rules.value_chars.describe()} "
        f"(CloudFormation's stack tags and the SageMaker API in {BOTOCORE})",
        f"change tags.{key}" + ("" if value else ", or remove the tag"),
        field=f"tags.{key}",
        value=value,
    )
