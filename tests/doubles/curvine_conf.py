"""How CurvineIO/curvine v0.4.1 (commit 709f24781f35a0ea8dda01b12212ede007712498) reads
``curvine-cluster.toml``: the keys its config structs define, per table, as serde takes them
(``crates/common/curvine-config/src/{cluster,master,journal,worker,client,fuse}_conf.rs``; every
struct is ``#[serde(default)]`` and none denies unknown fields, so a key it does not define is
dropped without a word). Only the tables the app writes are modelled; a table not listed is
refused, since the double cannot say what Curvine makes of it.
"""

from __future__ import annotations

import tomllib
from typing import Any

# Field names of each struct at v0.4.1, plus their serde aliases (fuse: mnt_per_task;
# client: ttl_ms, ttl_action for ttl_ms_str, ttl_action_str). Nested tables are listed as keys.
KEYS: dict[str, set[str]] = {
    "": {
        "format_master",
        "format_worker",
        "testing",
        "cluster_id",
        "net_interface",
        "master",
        "journal",
        "worker",
        "fault_injection",
        "log",
        "client",
        "fuse",
        "job",
        "transfer",
        "cli",
    },
    "master": {
        "hostname",
        "rpc_port",
        "web_port",
        "io_threads",
        "worker_threads",
        "actor_threads",
        "io_timeout",
        "io_close_idle",
        "meta_request_concurrent",
        "meta_dir",
        "min_block_size",
        "max_block_size",
        "min_replication",
        "max_replication",
        "worker_policy",
        "heartbeat_interval",
        "worker_check_interval",
        "worker_blacklist_interval",
        "worker_lost_interval",
        "audit_logging_enabled",
        "block_replication_enabled",
        "log",
        "conn_limit",
        "global_limit",
        "rocksdb",
    },
    "journal": {
        "enable",
        "group_name",
        "hostname",
        "rpc_port",
        "io_threads",
        "worker_threads",
        "message_size",
        "journal_addrs",
        "journal_dir",
        "snapshot_interval",
        "snapshot_entries",
        "rocksdb",
    },
    "worker": {
        "hostname",
        "weight",
        "rpc_port",
        "web_port",
        "dir_reserved",
        "data_dir",
        "io_slow_threshold",
        "io_threads",
        "worker_threads",
        "io_timeout",
        "io_close_idle",
        "log",
        "enable_splice",
        "enable_send_file",
    },
    "client": {
        "master_addrs",
        "hostname",
        "io_threads",
        "worker_threads",
        "replicas",
        "block_size",
        "ttl_ms",
        "ttl_ms_str",
        "ttl_action",
        "ttl_action_str",
        "failed_worker_ttl",
        "failed_worker_ttl_ms",
        "mount_update_ttl",
        "mount_update_ttl_ms",
    },
    "fuse": {
        "debug",
        "audit_logging_enabled",
        "metrics_enabled",
        "io_threads",
        "worker_threads",
        "mnt_path",
        "fs_path",
        "mnt_number",
        "tasks_per_mnt",
        "mnt_per_task",
        "clone_fd",
        "fuse_channel_size",
        "stream_channel_size",
        "fuse_opts",
        "readonly",
        "umask",
        "uid",
        "gid",
        "web_port",
        "read_dir_fill_ino",
        "entry_timeout_ms",
        "negative_timeout_ms",
        "attr_timeout_ms",
        "remember",
        "max_background",
        "congestion_threshold",
        "enable_meta_cache",
        "meta_cache_timeout",
        "node_cache_timeout",
        "direct_io",
        "write_back_cache",
        "cache_readdir",
        "non_seekable",
        "check_permission",
        "state_dir",
        "max_readahead_kb",
        "list_limit",
        "enable_splice",
        "path_lock_stripes",
        "log",
    },
}
# The master, journal, worker and client structs define more fields than listed (tuning knobs
# the app never writes); a key missing here is refused rather than assumed to be read.


def ignored_keys(text: str) -> list[str]:
    """The ``<table>.<key>`` names of ``text`` that v0.4.1 would not read."""
    doc: dict[str, Any] = tomllib.loads(text)
    out = [k for k in doc if k not in KEYS[""]]
    for table, body in doc.items():
        if isinstance(body, dict):
            known = KEYS.get(table)
            if known is None:
                raise ValueError(f"[{table}] is not modelled")
            out += [f"{table}.{k}" for k in body if k not in known]
    return out
