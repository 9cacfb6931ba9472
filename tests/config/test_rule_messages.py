"""The whole line a user sees for each config rule, word for word (pure parsing, no double).

A rule's message is its user interface: ``<file>: <field> = <value>: allowed: ...; fix: ...``.
Each test here pins that line for one rule, so a reworded or dropped part is a failing test.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from infra.config import ConfigError, load_config, parse_config
from infra.config.kvcache import GPU_INSTANCES, FsxLustreConfig, image_is_pinned
from infra.config.loader import CONFIG_DIR
from infra.config.observability import topic_name
from tests.config.unit_config import BASE, SOURCE, refusal, with_overrides

ADDON_LATEST = (
    "allowed: a pinned EKS add-on version like v1.18.2-eksbuild.2 (never latest); fix: run "
    "`aws eks describe-addon-versions --addon-name <name> --kubernetes-version <minor>` and pin one"
)


# --- add-on versions -----------------------------------------------------------------------------


@pytest.mark.parametrize(("addon", "version"), [
    ("cert_manager", "latest"),
    ("s3_csi", "v2.7.0"),
    ("metrics_server", "0.8.0-eksbuild.6"),
    ("inference_operator", "latest"),
])  # fmt: skip
def test_an_unpinned_addon_version_is_refused_with_the_command_that_lists_versions(
    addon: str, version: str
) -> None:
    field = f"addons.{addon}.version"
    assert refusal({field: version}) == f"{SOURCE}: {field} = {version!r}: {ADDON_LATEST}"


# --- images --------------------------------------------------------------------------------------

DIGEST = "@sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(("image", "pinned"), [
    ("busybox:1.36", True),
    ("busybox", False),
    ("busybox:latest", False),
    ("busybox:", False),
    ("registry.k8s.io/sig-storage/csi-provisioner:v3.6.0", True),
    ("registry.k8s.io/sig-storage/csi-provisioner:latest", False),
    # A registry with a port: its colon is not a tag.
    ("registry.example.com:5000/team/app", False),
    ("registry.example.com:5000/team/app:v1.2.3", True),
    ("registry.example.com:5000/team/app:latest", False),
    ("localhost:5000/app", False),
    # The tag belongs to the last path segment only.
    ("ghcr.io/team:v1/app", False),
    # A digest pins the image with or without a tag.
    (f"ghcr.io/team/app{DIGEST}", True),
    (f"registry.example.com:5000/app{DIGEST}", True),
    (f"ghcr.io/team/app:latest{DIGEST}", True),
    # Not a reference at all: pinned to nothing a node could pull.
    (f"ghcr.io/team/app{DIGEST[:-1]}", False),
    (f"ghcr.io/team/app{DIGEST.upper()}", False),
    ("ghcr.io/team/app@sha256:", False),
    ("ghcr.io/team/app:v1:v2", False),
    ("ghcr.io/team/app:latest:v1", False),
    ("ghcr.io/team/app:v 1", False),
    ("ghcr.io/team/app:v1\n", False),
    ("ghcr.io/team/app:-v1", False),
])  # fmt: skip
def test_an_image_is_pinned_by_a_tag_on_its_last_segment_or_a_digest(
    image: str, pinned: bool
) -> None:
    assert image_is_pinned(image) is pinned


@pytest.mark.parametrize("image", ["registry.example.com:5000/team/app", "ghcr.io/team/app:"])
def test_an_unpinned_endpoint_image_is_refused_with_the_fix(image: str) -> None:
    field = "kvcache.endpoints.0.image"
    raw = with_overrides({})
    raw["kvcache"]["endpoints"][0]["image"] = image
    with pytest.raises(ConfigError) as err:
        parse_config(raw, SOURCE, "unit")
    assert str(err.value) == (
        f"{SOURCE}: {field} = {image!r}: allowed: an image with an explicit tag other than "
        "latest (repo/name:v1.2.3) or a digest; fix: pin a released tag"
    )


# --- AWS ids of the FSx placement ----------------------------------------------------------------


@pytest.mark.parametrize(("key", "value", "kind"), [
    ("hyperpod_subnet_id", "subnet-1", "subnet"),
    ("vpc_id", "sg-0aaaa1111bbbb2222", "vpc"),
    ("client_security_group_id", "sg-0EEEE5555FFFF6666", "sg"),
])  # fmt: skip
def test_a_malformed_fsx_id_is_refused_with_its_shape(key: str, value: str, kind: str) -> None:
    field = f"kvcache.fsx.{key}"
    assert refusal({field: value}) == (
        f"{SOURCE}: {field} = {value!r}: allowed: an id like {kind}-0abc1234def567890; "
        f"fix: copy the id into {field}"
    )


def test_a_section_built_in_python_shows_the_same_allowed_and_fix() -> None:
    """pydantic's own error (a section built in code, not loaded) carries the rule's text too."""
    with pytest.raises(ValidationError) as err:
        FsxLustreConfig(vpc_id="vpc-1")
    (only,) = err.value.errors(include_url=False)
    assert only["msg"] == (
        "Value error, allowed: an id like vpc-0abc1234def567890; fix: copy the id into "
        "kvcache.fsx.vpc_id"
    )


# --- environments --------------------------------------------------------------------------------


def test_an_unknown_environment_lists_the_yaml_files_there(tmp_path: Path) -> None:
    for name in ("staging.yaml", "dev.yaml", "notes.txt", "old.yml", "schema.json"):
        (tmp_path / name).write_text("{}\n")
    with pytest.raises(ConfigError) as err:
        load_config("prod", tmp_path)
    assert str(err.value) == (
        "config: env = 'prod': allowed: dev, staging; fix: name one of them (--env <name>; "
        "app.py and cdk: -c env=<name>; make: ENV=<name>), or create config/prod.yaml"
    )


def test_an_unknown_environment_in_an_empty_directory_lists_none(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^config: env = 'dev': allowed: \(none\); fix: "):
        load_config("dev", tmp_path)


# --- derived values ------------------------------------------------------------------------------


@pytest.mark.parametrize(("retain", "explicit", "days"), [
    (True, None, 7),
    (False, None, 0),
    (True, 0, 0),
    (False, 3, 3),
    (True, 30, 30),
])  # fmt: skip
def test_fsx_backups_default_to_a_week_only_where_state_is_retained(
    retain: bool, explicit: int | None, days: int
) -> None:
    raw = with_overrides({"retain_stateful_resources": retain,
                 "kvcache.fsx.backup_retention_days": explicit})  # fmt: skip
    config = parse_config(raw, SOURCE, "unit")
    assert config.kvcache.fsx.backup_days(config.retain_stateful_resources) == days


@pytest.mark.parametrize(("name", "topic"), [
    (None, "hyperpod-kvcache-unit-kvcache-alerts"),
    ("team-alerts", "team-alerts"),
])  # fmt: skip
def test_the_alert_topic_is_named_after_the_stacks_unless_configured(
    name: str | None, topic: str
) -> None:
    config = parse_config(with_overrides({"observability.alert_topic_name": name}), SOURCE, "unit")
    assert topic_name(config) == topic


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("x" * 100, repr("x" * 100)),  # text is the user's own: shown whole, quoted
        (None, "(missing)"),
        (["x" * 76], repr(["x" * 76])),  # a repr of exactly 80 characters: whole
        (["x" * 77], repr(["x" * 77])[:77] + "..."),  # 81: cut to 80, the last three "..."
    ],
)
def test_a_value_is_shown_quoted_missing_or_cut_to_eighty_characters(
    value: Any, shown: str
) -> None:
    """A long list or mapping must not push the allowed values and the fix off the line."""
    assert len(repr(["x" * 76])) == 80
    error = ConfigError(SOURCE, "kvcache.x", value, "a", "b")
    assert str(error) == f"{SOURCE}: kvcache.x = {shown}: allowed: a; fix: b"


def test_the_one_line_is_also_what_repr_and_args_carry() -> None:
    """Loggers and test reports print an exception's args or repr, not only its str."""
    error = ConfigError(SOURCE, "region", "mars-1", "an AWS region", "pick one")
    line = f"{SOURCE}: region = 'mars-1': allowed: an AWS region; fix: pick one"
    assert error.args == (line,)
    assert repr(error) == f"ConfigError({line!r})"


# --- where L2 is mounted in the vLLM container ---------------------------------------------------

MOUNT_ALLOWED = (
    "allowed: an absolute path like /mnt/curvine/l2cache: no trailing '/', no '.', '..' or "
    "empty segments, not / and not under /dev, /proc or /sys; fix: use a directory of its own "
    "under /mnt"
)


@pytest.mark.parametrize(
    "path", ["mnt/l2", "/", "/mnt/l2/", "/mnt//l2", "/mnt/./l2", "/mnt/../l2", "/dev/shm/l2",
             "/proc/l2", "/sys"],
)  # fmt: skip
def test_an_l2_mount_path_that_is_not_a_clean_absolute_path_of_its_own_is_refused(
    path: str,
) -> None:
    """LMCACHE_REMOTE_URL is fs://localhost:0<path>/, built from the path as written."""
    field = "kvcache.l2_mount_path"
    assert refusal({field: path}) == f"{SOURCE}: {field} = {path!r}: {MOUNT_ALLOWED}"


@pytest.mark.parametrize("path", ["/l2", "/mnt/curvine/l2cache", "/devices/l2", "/srv/sys"])
def test_a_clean_absolute_l2_mount_path_is_accepted_and_makes_the_url(path: str) -> None:
    from k8s.policy import l2_url

    config = parse_config(with_overrides({"kvcache.l2_mount_path": path}), SOURCE, "unit")
    assert l2_url(config) == f"fs://localhost:0{path}/"


# --- the file itself: YAML syntax, shape, and the environment it names ---------------------------


def _load_error(tmp_path: Path, env: str, text: str) -> str:
    (tmp_path / f"{env}.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(env, tmp_path)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_a_yaml_syntax_error_is_one_line_naming_the_line_as_written_and_what_was_expected(
    tmp_path: Path,
) -> None:
    text = 'environment: bad\nregion: [us-west-2\naccount: "1"\n'
    assert _load_error(tmp_path, "bad", text) == (
        "config/bad.yaml: line 3, column 8 = 'account: \"1\"': allowed: valid YAML; fix: fix the "
        "YAML syntax: expected ',' or ']', but got ':' (while parsing a flow sequence at line 2)"
    )


def test_a_character_yaml_refuses_is_one_line_too(tmp_path: Path) -> None:
    assert _load_error(tmp_path, "ctl", "a: 1\nb: \x07\n") == (
        "config/ctl.yaml: file = (missing): allowed: valid YAML; fix: fix the YAML syntax: "
        'unacceptable character #x0007: special characters are not allowed in "<unicode '
        'string>", position 8'
    )


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    assert _load_error(tmp_path, "list", "- a\n- b\n") == (
        "config/list.yaml: (top level) = ['a', 'b']: allowed: a mapping of keys; "
        "fix: see config/dev.yaml"
    )


def test_an_empty_file_asks_for_the_first_required_key(tmp_path: Path) -> None:
    assert _load_error(tmp_path, "empty", "") == (
        "config/empty.yaml: account = (missing): allowed: a value (required); "
        "fix: add account to config/empty.yaml"
    )


def test_a_file_is_the_environment_it_is_named_after(tmp_path: Path) -> None:
    """The file's name is the environment: stack names and the lock follow it."""
    dev = (CONFIG_DIR / "dev.yaml").read_text()
    assert _load_error(tmp_path, "staging", dev) == (
        "config/staging.yaml: environment = 'dev': allowed: 'staging' (the file's name); "
        "fix: set environment: staging"
    )
    (tmp_path / "qa.yaml").write_text(dev.replace("environment: dev\n", ""))
    assert load_config("qa", tmp_path).environment == "qa"


# --- network sizes and log retention -------------------------------------------------------------


@pytest.mark.parametrize(("field", "lo", "hi"), [
    ("network.vpc_cidr", 16, 24),
    ("network.hyperpod_subnet.cidr", 16, 24),
])  # fmt: skip
@pytest.mark.parametrize("value", ["10.192.0.1/16", "ten.0.0.0/16", "10.192.0.0/33", "fd00::/16"])
def test_a_cidr_that_is_not_an_ipv4_network_is_refused_with_an_example(
    field: str, lo: int, hi: int, value: str
) -> None:
    """Host bits set (10.192.0.1/16) are refused too: the address must be the network's own."""
    assert refusal({field: value}) == (
        f"{SOURCE}: {field} = {value!r}: allowed: an IPv4 network in CIDR form, /{lo} to /{hi}; "
        f"fix: set {field} to e.g. 10.0.0.0/16"
    )


def test_a_cidr_outside_the_prefix_range_is_refused_with_the_range() -> None:
    field = "network.hyperpod_subnet.cidr"
    assert refusal({field: "10.1.0.0/25"}) == (
        f"{SOURCE}: {field} = '10.1.0.0/25': allowed: a prefix length from /16 to /24; "
        f"fix: resize {field}"
    )


def test_a_retention_cloudwatch_does_not_offer_is_refused_with_the_values_it_does() -> None:
    field = "network.flow_logs_retention_days"
    assert refusal({field: 31}) == (
        f"{SOURCE}: {field} = 31: allowed: one of CloudWatch's retention values 1, 3, 5, 7, 14, "
        "30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, "
        f"3653; fix: set {field} to the nearest of them"
    )


# --- where the FSx file system goes, and the bucket it exports to --------------------------------

PLACEMENT = {
    "hyperpod_subnet_id": "subnet-0aaaa1111bbbb2222",
    "vpc_id": "vpc-0aaaa1111bbbb2222",
    "client_security_group_id": "sg-0eeee5555ffff6666",
}
EXISTING_CLUSTER = {
    "eks_cluster_name": "team-eks",
    "hyperpod_cluster_name": "team-hyperpod",
    "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
    "oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2."
    "amazonaws.com/id/EXAMPLE",
}


@pytest.mark.parametrize("key", list(PLACEMENT))
def test_an_fsx_placement_id_with_a_cluster_the_app_creates_is_refused(key: str) -> None:
    """Each id on its own: the app places the file system in the cluster it creates."""
    field = f"kvcache.fsx.{key}"
    value = PLACEMENT[key]
    assert refusal({"kvcache.l2_backend": "fsx_lustre", field: value}) == (
        f"{SOURCE}: {field} = {value!r}: allowed: null with a cluster the app creates: the file "
        "system goes into its HyperPod subnet (network.hyperpod_subnet) and admits its cluster "
        f"security group; fix: remove {field}"
    )


@pytest.mark.parametrize(("key", "command"), [
    ("hyperpod_subnet_id",
     "aws sagemaker describe-cluster --cluster-name team-hyperpod --query 'VpcConfig.Subnets[0]'"),
    ("vpc_id",
     "aws ec2 describe-subnets --subnet-ids subnet-0aaaa1111bbbb2222 --query 'Subnets[0].VpcId'"),
    ("client_security_group_id",
     "aws sagemaker describe-cluster --cluster-name team-hyperpod "
     "--query 'VpcConfig.SecurityGroupIds[0]'"),
])  # fmt: skip
def test_a_missing_fsx_placement_id_on_an_existing_cluster_names_the_command_that_prints_it(
    key: str, command: str
) -> None:
    """The ids are asked for in order (the ones before ``key`` written), so the VPC's command
    names the subnet the user has just written."""
    given = dict(itertools.takewhile(lambda item: item[0] != key, PLACEMENT.items()))
    overrides = {"existing_cluster": EXISTING_CLUSTER, "kvcache.l2_backend": "fsx_lustre"}
    overrides.update({f"kvcache.fsx.{k}": v for k, v in given.items()})
    field = f"kvcache.fsx.{key}"
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = (missing): allowed: set with existing_cluster and l2_backend "
        "fsx_lustre: the file system is placed in the HyperPod subnet (the GPU nodes' AZ) and "
        f"admits only the nodes' security group; fix: run `{command} --output text` and write "
        f"the id to {field}"
    )


def test_an_export_bucket_in_another_region_is_refused_with_the_environments_region() -> None:
    field = "kvcache.fsx.data_repository.bucket_region"
    repo = {"bucket": "amzn-s3-demo-kv", "bucket_region": "eu-west-1"}
    overrides = {"kvcache.l2_backend": "fsx_lustre", "kvcache.fsx.data_repository": repo}
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = 'eu-west-1': allowed: us-west-2 (the environment's region: the "
        "association links a bucket in the file system's region); fix: use a bucket in "
        "us-west-2, or remove kvcache.fsx.data_repository"
    )


def test_a_yaml_error_at_the_end_of_the_file_shows_no_line_text(tmp_path: Path) -> None:
    assert _load_error(tmp_path, "cut", "region: [us-west-2\n") == (
        "config/cut.yaml: line 2, column 1 = (missing): allowed: valid YAML; fix: fix the YAML "
        "syntax: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at "
        "line 1)"
    )


def test_a_yaml_error_without_a_problem_or_a_context_mark_still_reads_as_one_line() -> None:
    """PyYAML always sets both when it raises; the line must not break if one is missing."""
    from infra.config.loader import _yaml_error

    mark = yaml.Mark("x", 0, 0, 4, None, None)
    bare = yaml.MarkedYAMLError(context="while parsing", problem_mark=mark)
    assert str(_yaml_error("config/x.yaml", "a: b\n", bare)) == (
        "config/x.yaml: line 1, column 5 = 'a: b': allowed: valid YAML; "
        "fix: fix the YAML syntax: a syntax error"
    )


# --- add-on modes on a cluster this app creates -------------------------------------------------


@pytest.mark.parametrize("key", ["cert_manager", "ebs_csi", "inference_operator"])
@pytest.mark.parametrize("mode", ["adopt", "skip"])
def test_adopting_or_skipping_an_add_on_of_a_cluster_this_app_creates_is_refused(
    key: str, mode: str
) -> None:
    field = f"addons.{key}.mode"
    assert refusal({field: mode}) == (
        f"{SOURCE}: {field} = {mode!r}: allowed: create (adopt and skip are for an existing "
        "cluster: a cluster this app creates has no add-ons installed yet); fix: set "
        f"{field} to create, or configure existing_cluster"
    )


def test_the_add_on_rules_do_not_apply_when_the_app_installs_no_add_ons() -> None:
    assert refusal({"addons.enabled": False, "addons.cert_manager.mode": "skip"}) is None


@pytest.mark.parametrize(("name", "value"), [
    ("adopted_role_arn", "arn:aws:iam::111122223333:role/theirs"),
    ("adopted_configuration", '{"controller":{"replicaCount":1}}'),
])  # fmt: skip
@pytest.mark.parametrize("mode", ["create", "skip"])
def test_what_describes_an_adopted_add_on_is_refused_unless_it_is_adopted(
    name: str, value: Any, mode: str
) -> None:
    field = f"addons.ebs_csi.{name}"
    overrides = {"existing_cluster": EXISTING_CLUSTER, "addons.ebs_csi.mode": mode, field: value}
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = {value!r}: allowed: null unless mode is adopt (the values describe "
        "an installed add-on taken over as it is; create makes its own roles, skip touches "
        f"nothing); fix: remove {field}, or set addons.ebs_csi.mode to adopt"
    )
    assert refusal({**overrides, "addons.ebs_csi.mode": "adopt"}) is None


OPERATOR = "addons.inference_operator"


def test_an_adopted_operator_needs_its_configuration_and_says_what_prints_it() -> None:
    """An update with no configurationValues would reset the owner's operator settings."""
    overrides = {"existing_cluster": EXISTING_CLUSTER, f"{OPERATOR}.mode": "adopt"}
    assert refusal(overrides) == (
        f"{SOURCE}: {OPERATOR}.adopted_configuration = (missing): allowed: the installed add-on's "
        "configurationValues (it always has some: its execution role and TLS bucket); without "
        "them an update would reset the owner's operator; fix: run `python -m scripts preflight "
        "--env <env>` and paste the adopted_configuration it prints, or set "
        f"{OPERATOR}.mode to skip"
    )
    adopted = {**overrides, f"{OPERATOR}.adopted_configuration": '{"executionRoleArn":"x"}'}
    assert refusal(adopted) is None


@pytest.mark.parametrize(("key", "why"), [
    ("cert_manager", "the operator's webhooks need the cert-manager CRDs"),
    ("s3_csi", "the operator's init container refuses to start without CSIDriver s3.csi.aws.com"),
    ("fsx_csi", "the operator's init container refuses to start without CSIDriver "
                "fsx.csi.aws.com"),
    ("metrics_server", "the AWS setup guide lists it as required; the install fails without it"),
])  # fmt: skip
def test_the_operator_needs_each_of_its_dependencies_enabled(key: str, why: str) -> None:
    field = f"addons.{key}.enabled"
    assert refusal({field: False}) == (
        f"{SOURCE}: {field} = False: allowed: true while {OPERATOR}.enabled is true ({why}); "
        f"fix: set {field} to true (mode: skip if it is already installed), or "
        f"{OPERATOR}.enabled to false"
    )
    assert refusal({field: False, f"{OPERATOR}.enabled": False}) is None


def test_a_mapping_parsed_without_a_file_name_must_name_its_environment() -> None:
    """parse_config without ``env`` (a config built in Python) takes the environment from the
    mapping only: none there is a missing key, not an environment called None."""
    raw = {k: v for k, v in BASE.items() if k != "environment"}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, SOURCE)
    assert str(err.value) == (
        f"{SOURCE}: environment = (missing): allowed: a value (required); "
        f"fix: add environment to {SOURCE}"
    )


# --- endpoints on the GPU group (dev: 2 x ml.g6e.4xlarge, one GPU each) --------------------------


def _endpoints(*overrides: dict[str, Any]) -> dict[str, Any]:
    base = BASE["kvcache"]["endpoints"][0]
    return {"kvcache.endpoints": [{**base, **o} for o in overrides]}


def test_endpoints_share_the_gpu_group_so_their_replicas_add_up() -> None:
    """Each endpoint fits alone; together they need three GPUs of two."""
    field = "kvcache.endpoints.1.replicas"
    assert refusal(_endpoints({"replicas": 2}, {"name": "other", "replicas": 1})) == (
        f"{SOURCE}: {field} = 1: allowed: replicas that fit the GPU group: 3 GPUs > 2 GPUs "
        "(2 nodes x 1); fix: lower replicas, add GPU nodes, or set rollout: scale_down_first"
    )


def test_a_surge_rollout_needs_a_free_gpu_for_its_extra_pod() -> None:
    field = "kvcache.endpoints.0.replicas"
    assert refusal(_endpoints({"replicas": 2, "rollout": "surge"})) == (
        f"{SOURCE}: {field} = 2: allowed: replicas that fit the GPU group: 2 GPUs for replicas + "
        "1 for the rollout's surge Pod > 2 GPUs (2 nodes x 1): the surge Pod would stay Pending "
        "and the rollout would deadlock; fix: lower replicas, add GPU nodes, or set rollout: "
        "scale_down_first"
    )
    assert refusal(_endpoints({"replicas": 1, "rollout": "surge"})) is None


def test_replicas_beyond_the_gpus_are_refused_as_such_whatever_the_rollout() -> None:
    field = "kvcache.endpoints.0.replicas"
    assert refusal(_endpoints({"replicas": 3, "rollout": "surge"})) == (
        f"{SOURCE}: {field} = 3: allowed: replicas that fit the GPU group: 3 GPUs > 2 GPUs "
        "(2 nodes x 1); fix: lower replicas, add GPU nodes, or set rollout: scale_down_first"
    )


def test_an_endpoint_on_a_type_without_local_nvme_is_refused_with_the_types_that_have_it() -> None:
    from infra.instances import GPU_INSTANCES

    field = "kvcache.endpoints.0.instance_type"
    assert refusal(_endpoints({"instance_type": "ml.g5.4xlarge"})) == (
        f"{SOURCE}: {field} = 'ml.g5.4xlarge': allowed: a GPU type with local NVMe "
        f"({', '.join(GPU_INSTANCES)}); fix: use a G6e or P5 type"
    )


def test_an_endpoint_runs_only_on_the_gpu_groups_type() -> None:
    field = "kvcache.endpoints.0.instance_type"
    assert refusal(_endpoints({"instance_type": "ml.g6e.8xlarge"})) == (
        f"{SOURCE}: {field} = 'ml.g6e.8xlarge': allowed: ml.g6e.4xlarge "
        "(hyperpod.gpu_group.instance_type: the only GPU nodes); fix: remove instance_type or "
        "make it match the GPU group"
    )


def test_tensor_parallelism_beyond_the_instances_gpus_is_refused() -> None:
    field = "kvcache.endpoints.0.tensor_parallel_size"
    assert refusal(_endpoints({"tensor_parallel_size": 2})) == (
        f"{SOURCE}: {field} = 2: allowed: at most 1 (GPUs of one ml.g6e.4xlarge); "
        "fix: lower tensor_parallel_size or pick a larger instance"
    )


# 25.769803776e9 parameters x 2 bytes is 48 GiB exactly: an L40S's memory.
EXACTLY_48_GIB = 25.769803776


def test_weights_of_exactly_one_gpus_memory_fit_and_a_byte_more_does_not() -> None:
    model = {**BASE["kvcache"]["endpoints"][0]["model"], "bytes_per_parameter": 2}
    assert refusal(_endpoints({"model": {**model, "parameters_billion": EXACTLY_48_GIB}})) is None
    field = "kvcache.endpoints.0.model.parameters_billion"
    over = EXACTLY_48_GIB + 1e-9
    assert refusal(_endpoints({"model": {**model, "parameters_billion": over}})) == (
        f"{SOURCE}: {field} = {over!r}: allowed: weights that fit one GPU: {over}e9 params x 2.0 "
        "bytes / tensor-parallel 1 = 48.0 GiB > 48 GiB per GPU of ml.g6e.4xlarge; fix: raise "
        "tensor_parallel_size, quantize (bytes_per_parameter 1) or use a larger GPU"
    )


def test_tensor_parallelism_divides_the_weights_across_gpus() -> None:
    """40e9 x 2 bytes is 74.5 GiB: too much for one 48 GiB GPU, 37.3 GiB on each of two."""
    model = {**BASE["kvcache"]["endpoints"][0]["model"], "parameters_billion": 40}
    four_gpus = {"hyperpod.gpu_group.instance_type": "ml.g6e.12xlarge"}
    split = _endpoints({"model": model, "tensor_parallel_size": 2, "replicas": 1})
    assert refusal({**four_gpus, **split}) is None
    whole = _endpoints({"model": model, "tensor_parallel_size": 1, "replicas": 1})
    assert "= 74.5 GiB > 48 GiB per GPU" in str(refusal({**four_gpus, **whole}))


def test_an_s3_model_needs_its_bucket() -> None:
    model = {**BASE["kvcache"]["endpoints"][0]["model"], "source": "s3", "s3_bucket": None}
    field = "kvcache.endpoints.0.model.s3_bucket"
    assert refusal(_endpoints({"model": model})) == (
        f"{SOURCE}: {field} = (missing): allowed: a bucket name when model.source is s3; "
        "fix: set model.s3_bucket"
    )


def test_l2_needs_tiered_storage() -> None:
    field = "kvcache.endpoints.0.enable_l2_cache"
    assert refusal({"tiered_storage.mode": "Disable"}) == (
        f"{SOURCE}: {field} = True: allowed: false while tiered_storage.mode is Disable (L2 "
        "rides on HyperPod Tiered Storage); fix: set tiered_storage.mode to Enable, or "
        "enable_l2_cache to false"
    )
    assert (
        refusal({"tiered_storage.mode": "Disable", **_endpoints({"enable_l2_cache": False})})
        is None
    )


def test_l2_needs_its_store() -> None:
    field = "kvcache.endpoints.0.enable_l2_cache"
    assert refusal({"kvcache.curvine.enabled": False}) == (
        f"{SOURCE}: {field} = True: allowed: false while kvcache.curvine.enabled is false (Curvine "
        "is the L2 store); fix: set kvcache.curvine.enabled to true, or enable_l2_cache to false"
    )


# --- rules across the kvcache section ------------------------------------------------------------


def test_two_endpoints_with_the_same_namespace_and_name_are_refused_listing_the_pairs() -> None:
    assert refusal(_endpoints({"replicas": 1}, {"replicas": 1})) == (
        f"{SOURCE}: kvcache.endpoints = ['inference/qwen3-8b', 'inference/qwen3-8b']: allowed: "
        "unique namespace/name pairs; fix: rename one endpoint"
    )


@pytest.mark.parametrize(("low", "high"), [(90, 90), (95, 90)])
def test_the_evictors_low_mark_must_stay_below_its_high_mark(low: int, high: int) -> None:
    field = "kvcache.curvine.evictor.low_water_percent"
    assert refusal({field: low, "kvcache.curvine.evictor.high_water_percent": high}) == (
        f"{SOURCE}: {field} = {low}: allowed: less than high_water_percent ({high}); "
        "fix: lower low_water_percent"
    )


@pytest.mark.parametrize(("limit", "requested", "unit"), [
    ("memory_limit_mib", "memory_request_mib", 1024),
    ("cpu_limit_millicores", "cpu_request_millicores", 500),
])  # fmt: skip
def test_fuses_limit_must_be_at_least_its_request(limit: str, requested: str, unit: int) -> None:
    field = f"kvcache.curvine.fuse.{limit}"
    overrides = {field: 2 * unit - 1, f"kvcache.curvine.fuse.{requested}": 2 * unit}
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = {2 * unit - 1}: allowed: at least {requested} ({2 * unit}); "
        f"fix: raise {limit}"
    )
    assert refusal({**overrides, field: 2 * unit}) is None


NVME_GIB = int(GPU_INSTANCES["ml.g6e.4xlarge"].nvme_gb * 1e9 / 2**30)


def test_curvines_pool_and_reserve_must_fit_the_gpu_nodes_nvme() -> None:
    field = "kvcache.curvine.worker.capacity_gib"
    overrides = {field: NVME_GIB - 9, "kvcache.curvine.worker.reserved_gib": 10}
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = {NVME_GIB - 9}: allowed: capacity + reserved <= {NVME_GIB} GiB "
        "(local NVMe of ml.g6e.4xlarge); fix: lower kvcache.curvine.worker.capacity_gib"
    )


def test_with_the_l2_on_fsx_curvines_pool_size_is_not_checked_against_the_nvme() -> None:
    """Curvine is off then; its worker settings size nothing."""
    overrides = {"kvcache.l2_backend": "fsx_lustre", "kvcache.curvine.worker.capacity_gib": 10**5}
    assert refusal(overrides) is None


@pytest.mark.parametrize("shared", ["inference", "kyverno"], ids=["endpoints'", "kyverno's"])
def test_curvine_gets_a_namespace_of_its_own(shared: str) -> None:
    """Curvine's namespace is the only privileged one (its FUSE and CSI Pods)."""
    field = "kvcache.curvine.namespace"
    assert refusal({field: shared}) == (
        f"{SOURCE}: {field} = {shared!r}: allowed: a namespace of its own (the only privileged "
        "one); fix: use different namespaces for Curvine, Kyverno and the endpoints"
    )


def test_kyverno_is_installed_on_a_cluster_this_app_creates() -> None:
    field = "kvcache.kyverno.install"
    assert refusal({field: False}) == (
        f"{SOURCE}: {field} = False: allowed: true on a cluster this app creates (no Kyverno is "
        "installed there); fix: remove kvcache.kyverno.install, or set existing_cluster to use "
        "an installed Kyverno"
    )
    assert refusal({field: False, "existing_cluster": EXISTING_CLUSTER}) is None


@pytest.mark.parametrize("field", ["kvcache.endpoints.0.name", "kvcache.endpoints.0.namespace"])
def test_an_endpoint_name_or_namespace_that_is_no_dns_label_is_refused(field: str) -> None:
    assert refusal({field: "Qwen_8B"}) == (
        f"{SOURCE}: {field} = 'Qwen_8B': allowed: a DNS-1123 label: 1-63 lower-case letters, "
        "digits and '-'; fix: rename"
    )


def test_the_static_l2_volume_is_refused_for_endpoints_in_two_namespaces() -> None:
    """One PersistentVolume binds one claim; every endpoint namespace has its own curvine-pvc."""
    base = {**BASE["kvcache"]["endpoints"][0], "replicas": 1, "rollout": "scale_down_first"}
    two = {"kvcache.endpoints": [base, {**base, "name": "b", "namespace": "other"}]}
    field = "kvcache.curvine.static_pv.enabled"
    assert refusal({**two, field: True}) == (
        f"{SOURCE}: {field} = True: allowed: false while the endpoints use more than one "
        "namespace (inference, other): the static PersistentVolume binds one claim; fix: put the "
        "endpoints in one namespace, or set static_pv.enabled: false (dynamic provisioning gives "
        "each namespace its own volume on curvine-sc)"
    )
    assert refusal({**two, field: False}) is None
    assert refusal({field: True}) is None
