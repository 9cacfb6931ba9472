"""Shared base for every config section: unknown keys are errors, values are immutable, numbers
are finite, 32-bit and never a YAML boolean."""

from __future__ import annotations

import math
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from infra.config.errors import RuleViolation

# The largest integer the app passes on: Kubernetes (KEDA's periods, replica counts) and
# CloudFormation (sizes, counts) take 32-bit integers, and jsii carries numbers as doubles.
INT32_MAX = 2**31 - 1


def _numeric(annotation: Any) -> bool:
    """A field that takes a number (int, float, an optional one, or a Literal of ints)."""
    if annotation is bool:
        return False
    if annotation in (int, float):
        return True
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return any(_numeric(a) for a in get_args(annotation) if a is not type(None))
    if origin is Literal:
        return all(isinstance(a, int) and not isinstance(a, bool) for a in get_args(annotation))
    return False


class Section(BaseModel):
    # allow_inf_nan: YAML reads .nan and .inf (and pydantic the strings "nan" and "inf") as
    # floats, which no bound catches (nan compares false) and jsii cannot serialize.
    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )

    @field_validator("*", mode="before")
    @classmethod
    def _plain_number(cls, v: Any, info: ValidationInfo) -> Any:
        """pydantic reads true as 1 where a number belongs, and takes any size of integer."""
        field = cls.model_fields.get(info.field_name or "")
        if field is None or not _numeric(field.annotation):
            return v
        if isinstance(v, bool):
            raise RuleViolation(
                "a number (YAML reads an unquoted true, false, yes, no, on or off as a boolean)",
                f"write a number for {info.field_name}",
            )
        if isinstance(v, float) and not math.isfinite(v):
            raise RuleViolation(
                "a finite number (YAML reads .inf, .nan and the like as floats)",
                f"write a number for {info.field_name}",
            )
        if isinstance(v, int | float) and abs(v) > INT32_MAX:
            raise RuleViolation(
                f"at most {INT32_MAX} (Kubernetes and CloudFormation take 32-bit integers; a "
                "value this large is a slip of units or digits)",
                f"check the unit of {info.field_name} in docs/configuration.md",
            )
        return v
