"""One botocore loader for the whole test process.

Every botocore Session makes its own loader and parses each AWS service model it uses again
(EC2's alone takes about 0.3 s); the CLI's and the handlers' tests create a session per test and
per ``Clients``, hundreds in all. The models are read-only, so sessions can share the loader that
caches them: the requests and answers are the same, only the parsing happens once.
"""

from __future__ import annotations

from typing import Any

import botocore.loaders
import botocore.session

_loaders: dict[str | None, Any] = {}


def _shared_loader(search_path_string: str | None = None) -> Any:
    if search_path_string not in _loaders:
        _loaders[search_path_string] = botocore.loaders.create_loader(search_path_string)
    return _loaders[search_path_string]


def share_service_models() -> None:
    """Make every botocore Session created from now on use the shared loader."""
    botocore.session.create_loader = _shared_loader  # type: ignore[attr-defined]
