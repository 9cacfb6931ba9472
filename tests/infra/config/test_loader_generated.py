"""Outcomes, not cases: for every field of the config model (walked, so a new field is covered
without an edit here), generated values of every kind either load or are refused in one line
that names the field, the value, what is allowed and the fix; never a traceback.

Hypothesis draws values per field (numbers of any size and sign, NaN and infinities, booleans
where numbers go, text with line breaks and control characters, lists, mappings, None, other
sections' mappings, unknown keys) into dev.yaml's mapping and parses it in this process
(``parse_config``, no double). Derandomized, without an example database: every run, here
and in CI, draws the same values. What the generator once found is kept as an ``@example``.

An accepted config is held to what the app passes on: numbers finite and 32-bit (Kubernetes and
CloudFormation), and no YAML boolean taken for a number.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from infra.config import AppConfig, ConfigError, parse_config
from infra.config.base import INT32_MAX
from tests.support.config import BASE, ENV, EXISTING_GROUPS, SOURCE, existing_cluster

GENERATED = settings(
    max_examples=4,
    deadline=None,  # the first parse of a worker imports the facts modules
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, annotation) of every field at any depth; a list of sections by its first
    entry."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        yield path, info.annotation
        sub = _model_in(info.annotation)
        if sub is not None:
            many = get_origin(info.annotation) in (tuple, list)
            yield from _fields(sub, f"{path}.0." if many else f"{path}.")


FIELDS = sorted(_fields(AppConfig))
SECTIONS = [
    (f"{path}.0" if get_origin(a) in (tuple, list) else path, _model_in(a))
    for path, a in FIELDS
    if _model_in(a) is not None
]

# Sections a path needs before its own value means anything.
_PARENTS = {
    "kvcache.endpoints.0.autoscaling.": {"kvcache.endpoints.0.autoscaling": {"max_replicas": 2}},
    "kvcache.fsx.data_repository.": {
        "kvcache.fsx.data_repository": {"bucket": "amzn-s3-demo-kv", "bucket_region": "us-west-2"}
    },
    "network.existing_vpc.": {
        "network.existing_vpc": {
            "vpc_id": "vpc-0abc1234def567890",
            "vpc_cidr": "10.192.0.0/16",
            "private_subnet_ids": ["subnet-0aaa1111bbb22222a", "subnet-0ccc3333ddd44444b"],
            "nat_gateway_id": "nat-0eee5555fff66666c",
        }
    },
}


def _put(raw: dict[str, Any], path: str, value: Any) -> None:
    node: Any = raw
    *parents, leaf = path.split(".")
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value


def base_for(path: str) -> dict[str, Any]:
    """dev.yaml's mapping with what ``path`` needs around it (an existing cluster for its
    section, a parent section the base leaves out)."""
    raw = copy.deepcopy(BASE)
    if path.startswith("existing_cluster"):
        raw.pop("network")
        raw["existing_cluster"] = existing_cluster()
        raw["hyperpod"] = {**raw["hyperpod"], **EXISTING_GROUPS}
    for prefix, parents in _PARENTS.items():
        if f"{path}.".startswith(prefix):
            for at, value in copy.deepcopy(parents).items():
                _put(raw, at, value)
    return raw


def raw_with(path: str, value: Any) -> dict[str, Any]:
    raw = base_for(path)
    _put(raw, path, value)
    return raw


# --- values ----------------------------------------------------------------------------------

LINE_BREAKS = ["\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"]
HOSTILE_TEXT = [
    "",
    " ",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "yes",
    "0x10",
    "1_000",
    "~",
    "null",
    "a\nb",
    "😀",
    "\x00",
    "x" * 300,
    "-",
    "A",
    "s3://bucket/key",
]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0, 0.5, INT32_MAX + 1]),
    st.text(max_size=20),
    st.sampled_from(HOSTILE_TEXT + LINE_BREAKS),
    st.dates(),
)
KEYS = st.one_of(st.text(max_size=8), st.integers(), st.sampled_from(LINE_BREAKS))
# Another section's mapping where a value belongs: keys written one level off.
SECTION_MAPPINGS = st.sampled_from([v for v in BASE.values() if isinstance(v, dict)])
ANY_VALUE = st.recursive(
    st.one_of(SCALARS, SECTION_MAPPINGS),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=6,
)


def _own_type(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of the field's own type (ints for an int, members or any text for a Literal...),
    which pass the type check and meet the field's rules."""
    origin = get_origin(annotation)
    if origin in (Union, type(int | None)):
        return st.one_of([_own_type(a) for a in get_args(annotation)])
    if origin is Literal:
        return st.sampled_from(get_args(annotation)) | st.text(max_size=12)
    if origin in (tuple, list):
        (item, *_) = get_args(annotation) or (Any,)
        return st.lists(_own_type(item), max_size=4)
    if origin is dict:
        return st.dictionaries(st.text(max_size=12), st.text(max_size=12) | SCALARS, max_size=4)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(min_value=-(2**40), max_value=2**40) | st.integers(-5, 300)
    if annotation is float:
        return st.floats() | st.floats(-10, 1000)
    if annotation is str:
        return st.text(max_size=70) | st.from_regex(r"[a-z][a-z0-9.-]{0,70}", fullmatch=True)
    if annotation is type(None):
        return st.none()
    model = _model_in(annotation)
    if model is not None:
        return st.dictionaries(st.sampled_from(sorted(model.model_fields)), SCALARS, max_size=2)
    return ANY_VALUE


# --- the outcome -------------------------------------------------------------------------------


def _numeric(annotation: Any) -> bool:
    text = str(annotation)
    return annotation in (int, float) or (
        ("int" in text or "float" in text) and "tuple" not in text
    )


def _structurally_wrong(annotation: Any, value: Any) -> bool:
    """A value no coercion turns into the field's type: a mapping or list where a scalar goes,
    a scalar where a list or section goes, None where nothing optional is."""
    optional = type(None) in get_args(annotation)
    if value is None:
        return not optional
    if _model_in(annotation) is not None and get_origin(annotation) not in (tuple, list):
        return not isinstance(value, dict)
    if get_origin(annotation) in (tuple, list):
        return isinstance(value, dict) or not isinstance(value, list | tuple | str)
    if get_origin(annotation) is dict:
        return not isinstance(value, dict)
    return isinstance(value, dict | list)


def _numbers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield value


def assert_loaded_or_refused_in_one_line(path: str, annotation: Any, value: Any) -> None:
    try:
        config = parse_config(raw_with(path, value), SOURCE, ENV)
    except ConfigError as error:
        line = str(error)
        assert len(line.splitlines()) == 1, line
        assert error.field and error.allowed and error.fix, line
        assert line.startswith(f"{SOURCE}: "), line
        if _structurally_wrong(annotation, value):
            named = str(error.field)
            related = named == path or named.startswith(f"{path}.") or path.startswith(named)
            assert related, f"{path} = {value!r} was refused naming {named}: {line}"
        return
    if isinstance(value, bool):
        assert not _numeric(annotation) or "bool" in str(annotation), (
            f"{path} took the boolean {value} as a number"
        )
    for number in _numbers(config.model_dump()):
        assert math.isfinite(number) and abs(number) <= INT32_MAX, (
            f"{path} = {value!r} loaded with the number {number}"
        )


@pytest.mark.parametrize(("path", "annotation"), FIELDS, ids=[p for p, _ in FIELDS])
@GENERATED
@given(value=ANY_VALUE)
# Found by the generator before each was handled (the closing note of the change lists them):
@example(value=True)  # read as 1 by int and float fields (replicas, threads_per_core)
@example(value=math.inf)  # an autoscaling target of inf loaded, then failed in jsii
@example(value=2**80)  # loaded by fields bounded below only (FUSE limits, KEDA periods)
@example(value={"\x0b": 1})  # an unknown key with a line break broke the one line
@example(value="\r")  # a list field's fix quoted the value's line break
def test_any_value_for_any_field_loads_or_is_refused_in_one_line(
    path: str, annotation: Any, value: Any
) -> None:
    assert_loaded_or_refused_in_one_line(path, annotation, value)


@pytest.mark.parametrize(("path", "annotation"), FIELDS, ids=[p for p, _ in FIELDS])
@GENERATED
@given(data=st.data())
def test_values_of_the_fields_own_type_load_or_are_refused_in_one_line(
    path: str, annotation: Any, data: st.DataObject
) -> None:
    value = data.draw(_own_type(annotation), label=path)
    assert_loaded_or_refused_in_one_line(path, annotation, value)


@pytest.mark.parametrize(("path", "model"), SECTIONS, ids=[p for p, _ in SECTIONS])
@GENERATED
@given(key=st.text(min_size=1, max_size=12))
def test_an_unknown_key_is_refused_where_it_is_written(
    path: str, model: type[BaseModel], key: str
) -> None:
    known = set(model.model_fields) | {"enabled", "enable_l2_cache"}  # replaced keys, named so
    if key in known:
        return
    node: Any = base_for(path)
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node.get(part, {})
    with pytest.raises(ConfigError) as refused:
        parse_config(raw_with(path, {**node, key: 1}), SOURCE, ENV)
    assert refused.value.field == f"{path}.{key}", str(refused.value)
    assert len(str(refused.value).splitlines()) == 1


def test_the_walk_reaches_every_section_and_leaf() -> None:
    paths = {p for p, _ in FIELDS}
    assert {
        "kvcache.endpoints.0.autoscaling.target",
        "existing_cluster.vpc_id",
        "kvcache.curvine.fuse.memory_limit_mib",
        "bench.chat.rounds",
    } <= paths
    assert len(FIELDS) > 150
