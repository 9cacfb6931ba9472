"""The YAML of a config file: read with PyYAML's safe loader, but a key given twice in one
mapping is an error (PyYAML keeps the last one and drops the first without a word: a second
``observability:`` block replaced the first); and a scalar can be quoted as it was written
(``1.30``, which the loaded value shows as ``1.3``)."""

from __future__ import annotations

from typing import Any

import yaml

_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKey(yaml.YAMLError):
    """A key given twice in one mapping; lines and columns count from 1."""

    def __init__(self, key: Any, first: yaml.Mark, second: yaml.Mark) -> None:
        super().__init__(f"{key!r} at line {second.line + 1} is already at line {first.line + 1}")
        self.key = key
        self.first_line = first.line + 1
        self.line, self.column = second.line + 1, second.column + 1


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:  # `<<: *base`: keys written next to it override the base
                continue
            key = self.construct_object(key_node, deep=deep)
            mark = key_node.start_mark
            try:
                first = seen.setdefault(key, mark)
            except TypeError:  # an unhashable key: PyYAML's own error reports it below
                continue
            if first is not mark:
                raise DuplicateKey(key, first, mark)
        return super().construct_mapping(node, deep=deep)


def unique_key_load(text: str) -> Any:
    """``yaml.safe_load``, refusing a duplicate key (``DuplicateKey``) at any depth."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: no arbitrary objects


def scalar_as_written(text: str, loc: tuple[int | str, ...]) -> str | None:
    """The scalar at ``loc`` (mapping keys and list indexes) as the file spells it, or None when
    the path does not lead to a scalar."""
    try:
        node = yaml.compose(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError:
        return None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            return None
    return node.value if isinstance(node, yaml.ScalarNode) else None
