"""NVTX op ranges in the fprof convention (docs/nvtx-convention.md) from Python.

torch.cuda.nvtx writes to NVTX's default domain and has no payload; fprof's analyzer reads op
ranges from the `fprof` domain and, for Python users, from the default domain when the message
starts with `op=`. Repeats of one op are told apart by time order (payload 0).
"""
import contextlib

import torch


def _message(op, **tags):
    parts = [f"op={op}"]
    for key in ("variant", "pair", "reads", "writes", "layer"):
        value = tags.get(key)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(value)
        value = str(value)
        if not value or any(c.isspace() for c in value):
            raise ValueError(f"NVTX tag {key}={value!r}: values are non-empty and have no spaces")
        parts.append(f"{key}={value}")
    return " ".join(parts)


# Ranges inside a torch.compile'd module would break its graph (and its fusions): the driver turns
# them off and marks whole steps instead.
enabled = True


@contextlib.contextmanager
def op_range(op, **tags):
    """`with op_range("matmul_bias_gelu", variant="unfused", pair="l0.fc1", reads=["x", "w"]):`"""
    if not enabled:
        yield
        return
    torch.cuda.nvtx.range_push(_message(op, **tags))
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()
