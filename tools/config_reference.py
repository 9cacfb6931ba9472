"""Write the configuration reference (docs/configuration.md) from the config model's docstrings.

Usage: python -m tools.config_reference [--check]
The section between the markers is generated; a test fails when it is out of date. A meaning
shared by several keys (an add-on's ``mode``, an instance group's fields) is written out once, at
its first key; the others point there.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from infra.config.model import AppConfig

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
START = "<!-- config-reference:start -->"
END = "<!-- config-reference:end -->"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``X``, ``X | None``, ``tuple[X, ...]`` or ``list[X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, tuple, list):
        for arg in typing.get_args(annotation):
            model = _model_in(arg)
            if model is not None:
                return model
    return None


_NO_VALUE = object()


def _default(field: FieldInfo, inherited: Any = _NO_VALUE) -> str:
    """The default as users see it: a nested section's own default wins over the class's."""
    if inherited is not _NO_VALUE:
        value = inherited
    elif field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    else:
        value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return ""
    if isinstance(value, tuple | list) and value and isinstance(value[0], BaseModel):
        return f"{len(value)} item(s), see config/dev.yaml"
    text = json.dumps(value, default=str)
    return f"`{text}`" if len(text) <= 60 else "see config/dev.yaml"


def rows(
    model: type[BaseModel], prefix: str = "", instance: BaseModel | None = None
) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        nested = _model_in(field.annotation)
        doc = " ".join((field.description or "").split())
        value = getattr(instance, name) if instance is not None else _NO_VALUE
        if nested is not None:
            is_list = typing.get_origin(field.annotation) in (tuple, list)
            if doc or field.default is None:
                out.append((key, _default(field, value), doc))
            if value is _NO_VALUE and field.default is not PydanticUndefined:
                value = field.get_default(call_default_factory=True)
            inner = value if isinstance(value, BaseModel) else None
            out.extend(rows(nested, f"{key}[]." if is_list else f"{key}.", inner))
        else:
            out.append((key, _default(field, value), doc))
    return out


def render() -> str:
    lines = ["| key | default | meaning |", "| --- | --- | --- |"]
    first_key: dict[str, str] = {}
    for key, default, doc in rows(AppConfig):
        if doc and doc in first_key:
            meaning = f"as `{first_key[doc]}`"
        else:
            first_key[doc] = key
            meaning = doc.replace("|", "/")
        lines.append(f"| `{key}` | {default} | {meaning} |")
    return "\n".join(lines)


def updated_reference(text: str) -> str:
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{render()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the reference is stale")
    args = parser.parse_args(argv)
    text = REFERENCE.read_text()
    if START not in text or END not in text:
        print(f"docs/configuration.md lacks the markers {START} / {END}", file=sys.stderr)
        return 1
    new = updated_reference(text)
    if args.check:
        if new != text:
            print("docs/configuration.md is stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    REFERENCE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
