"""Typed configuration: ``load_config(env)`` returns an ``AppConfig`` or raises ``ConfigError``."""

from infra.config.errors import ConfigError, RuleViolation
from infra.config.loader import load_config, parse_config
from infra.config.model import AppConfig

__all__ = ["AppConfig", "ConfigError", "RuleViolation", "load_config", "parse_config"]
