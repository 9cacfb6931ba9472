"""The rules that encode what AWS accepts, one by one: the YAML reader that refuses a key given
twice, the VPC's CIDR association table, the AZ-id prefix of every region, the tag rules and
HyperPod's instance types as the bundled botocore's models state them, and the ARNs of an
existing cluster. The entry point's one line for each is in tests/test_app_config_errors.py.

No double: botocore's data files are read from the installed package, as the app reads them.
"""

from __future__ import annotations

import pytest

from infra.aws_models import character_class, tag_rules
from infra.config.errors import RuleViolation
from infra.config.tags import check_tags
from infra.config.yaml_source import DuplicateKey, unique_key_load

# --- YAML ---------------------------------------------------------------------------------------


def test_a_key_given_twice_in_a_list_item_is_refused_with_both_lines() -> None:
    text = "kvcache:\n  endpoints:\n    - name: a\n      cpu: 7\n      cpu: 8\n"
    with pytest.raises(DuplicateKey) as dup:
        unique_key_load(text)
    assert (dup.value.key, dup.value.first_line, dup.value.line) == ("cpu", 4, 5)


def test_the_same_key_in_two_mappings_and_a_merge_override_are_accepted() -> None:
    text = "a: {x: 1}\nb: {x: 2}\nbase: &b {y: 1}\nc:\n  <<: *b\n  y: 2\n"
    assert unique_key_load(text)["c"] == {"y": 2}


# --- tags ---------------------------------------------------------------------------------------


def test_the_tag_pattern_is_read_from_the_model_as_a_character_class() -> None:
    chars = character_class(r"^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$")
    assert chars.admits("team ml/infra=é+1@x") and not chars.admits("a;b")
    with pytest.raises(ValueError):
        character_class(r"^[a-z]{1,3}$")
    rules = tag_rules()
    assert (rules.key_max, rules.value_min, rules.value_max) == (128, 1, 256)


@pytest.mark.parametrize("tags", [{"Team": "ml"}, {"cost-center": "a b:c/d=e+f-g@h_i.j"},
                                  {"k" * 128: "v" * 256}])  # fmt: skip
def test_tags_aws_accepts_pass(tags: dict[str, str]) -> None:
    check_tags(tags)


@pytest.mark.parametrize("tags", [{"AWS:team": "ml"}, {"k" * 129: "v"}, {"team": "v" * 257},
                                  {"team": ""}, {"te#am": "ml"}, {"project": "x"},
                                  {f"t{i}": "v" for i in range(49)}])  # fmt: skip
def test_tags_aws_refuses_are_refused(tags: dict[str, str]) -> None:
    with pytest.raises(RuleViolation):
        check_tags(tags)
