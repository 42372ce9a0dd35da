"""Readers of the logs the GPU benchmarks write, shared by the summaries of bench/decode_overhead.sh
(imported with bench/ on PYTHONPATH)."""
import json


def text(path):
    """The file's text, "" when it cannot be read (a run that wrote no log)."""
    try:
        return open(path, errors="replace").read()
    except OSError:
        return ""


def model_times(log):
    """{(variant, phase): ms} from the reference model's transformer table (fp16 rows)."""
    out = {}
    for line in text(log).splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) >= 8 and cells[1] in ("unfused", "fused") and cells[2] == "fp16":
            try:
                out[(cells[1], "prefill")] = float(cells[4])
                out[(cells[1], "decode")] = float(cells[6])
            except ValueError:
                pass
    return out


def torch_result(log):
    """The last JSON line bench/torch_loop.py printed, None without one."""
    for line in reversed(text(log).splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None
