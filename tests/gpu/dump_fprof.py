#!/usr/bin/env python3
"""Prints the collector-relevant contents of a .fprof (metadata, events, kernels) for reading a
GPU test run's log. Uses only Python's sqlite3, so it works on the GPU machine."""
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
s = dict(db.execute("select id, value from string"))
print("metadata:", dict(db.execute("select key, value from metadata")))
for row in db.execute("select severity, message from collector_event"):
    print("event:", row)
cols = ("name_id correlation_id stream_id launch_api grid_x block_x cluster_x registers_per_thread "
        "static_shared_bytes dynamic_shared_bytes local_bytes_per_thread local_bytes_total "
        "theoretical_blocks_per_sm occupancy_limiter graph_id graph_node_id nvtx_path_id").split()
for row in db.execute(f"select {', '.join(cols)} from kernel order by start_ns"):
    r = dict(zip(cols, row))
    r["name_id"] = s.get(r["name_id"], r["name_id"])
    r["nvtx_path_id"] = s.get(r["nvtx_path_id"], r["nvtx_path_id"])
    for key in ("launch_api", "occupancy_limiter"):
        if isinstance(r[key], int):
            r[key] = s.get(r[key], r[key])
    print(" ".join(f"{k}={v}" for k, v in r.items()))
