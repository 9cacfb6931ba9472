"""Runs inside a runtime virtualenv: LMCache's own env loader judges an environment.

stdin: {"env": {name: value}}. stdout: one JSON object with what LMCache made of it: the values of
the configuration (``LMCacheEngineConfig.from_env``), whether ``validate()`` passed, the
``LMCACHE_*`` names LMCache knows, and the parse of the remote URL by the function its connectors
use (``parse_remote_url``; refused URLs give the assertion LMCache raises). Imports only LMCache.
"""

import json
import os
import re
import sys
from pathlib import Path

request = json.load(sys.stdin)
# The answer is the only thing on stdout: the engines' own logging goes to stderr.
answer_to, sys.stdout = sys.stdout, sys.stderr
for name in [n for n in os.environ if n.startswith("LMCACHE_")]:
    del os.environ[name]
os.environ.update(request["env"])
os.environ.setdefault("LMCACHE_TRACK_USAGE", "false")  # never call home from a test

from lmcache.v1 import config as lmcache_config  # noqa: E402
from lmcache.v1.storage_backend.connector import parse_remote_url  # noqa: E402

cfg = lmcache_config.LMCacheEngineConfig.from_env()
try:
    cfg.validate()
    valid = None
except Exception as exc:  # what LMCache itself refuses
    valid = f"{type(exc).__name__}: {exc}"

# The names the loader reads, and those LMCache's other modules read themselves (logging, usage
# tracking): found in its source, so a version that adds or drops one is judged as it is.
READ = re.compile(r"""(?:getenv|environ\.get|environ\[)\(?\s*["'](LMCACHE_[A-Z0-9_]+)""")
package = Path(lmcache_config.__file__).resolve().parents[1]
elsewhere = {m for f in package.rglob("*.py") for m in READ.findall(f.read_text(errors="ignore"))}
known = sorted({"LMCACHE_" + n.upper() for n in lmcache_config._CONFIG_DEFINITIONS} | elsewhere)
remote: dict[str, object] = {}
if cfg.remote_url is not None:
    if cfg.remote_url.startswith("fs://"):
        try:
            parsed = parse_remote_url(cfg.remote_url)
            remote = {"host": parsed.host, "port": parsed.port, "path": parsed.path}
        except (AssertionError, ValueError) as exc:
            remote = {"error": str(exc)}
    else:  # the sagemaker-hyperpod adapter strips its prefix itself
        remote = {"scheme": cfg.remote_url.split("://", 1)[0]}

values = {
    name: getattr(cfg, name)
    for name in (
        "remote_url",
        "remote_serde",
        "local_cpu",
        "max_local_cpu_size",
        "chunk_size",
        "extra_config",
        "save_unfull_chunk",
        "pre_caching_hash_algorithm",
    )
}
answer_to.write(json.dumps({"config": values, "validate": valid, "known": known, "remote": remote}))
