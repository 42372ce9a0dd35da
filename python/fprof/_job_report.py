"""The job report: one self-contained HTML page over a job folder's tables, in the look of
`fprof report` (its stylesheet and its roofline chart come from the C++ reports through the
binding). Every figure is formatted as fprof info formats it; nothing is computed here but the
layout and the heat map's colour scale.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from . import _core

EXTRA_STYLE = """
.heat{background:#fff;border:1px solid var(--line);border-radius:6px;max-width:100%;height:auto}
.heat text{font-size:11px;fill:#1d2330}.heat .na{fill:#eef0f3}
.steps{background:#fff;border:1px solid var(--line);border-radius:6px;max-width:100%;height:auto}
.steps .med{fill:#2f6fdf}.steps .rng{stroke:#8d95a3;stroke-width:1}.steps text{font-size:11px;fill:#5b6475}
.problems li{margin:3px 0}.apart td{background:#fff5f2}
"""


def e(text) -> str:
    return html.escape("" if text is None or (isinstance(text, float) and math.isnan(text)) else str(text))


def ns(value) -> str:
    return "n/a" if value is None or pd.isna(value) else _core.format_duration_ns(float(value))


def pct(value) -> str:
    return _core.format_percent(None if value is None or pd.isna(value) else float(value))


def cell(text, value=None, cls="num") -> str:
    key = "" if value is None or pd.isna(value) else f' data-v="{float(value):.6g}"'
    return f'<td class="{cls}"{key}>{e(text)}</td>'


def table(head: list[tuple[str, bool]], rows: list[str], tid: str) -> str:
    th = "".join(f'<th class="num">{e(h)}</th>' if num else f"<th>{e(h)}</th>" for h, num in head)
    return f'<div class="tablewrap"><table id="{tid}"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>\n'


def header_section(job, info: dict) -> str:
    ranks = job.ranks
    total = int(ranks["total_kernel_ns"].sum())
    mode, model = job.job_class
    items = [
        ("job", info["output"]),
        ("inputs", f"{info['files']} rank files ({info['inputs']})"),
        ("ranks", f"{len(ranks)} ranks, {int(ranks['kernel_count'].sum())} kernel launches, {ns(total)} kernel time"),
        ("ranks in the job's sums", f"{int((ranks['apart'] == '').sum())}: {mode} mode on {model or 'no recorded GPU'}"),
        ("program", "; ".join(sorted(set(ranks["command_line"])))[:600]),
        ("hosts", ", ".join(sorted(set(h for hs in ranks["host"] for h in hs.split(", "))))[:600]),
        ("computed", f"by fprof {_core.version} on {info['cluster']}, {info['seconds']:.1f} s "
                     f"({info['summarised']} summarised, {info['cached']} from the cache)"),
    ]
    dl = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items)
    return f'<dl class="meta">{dl}</dl>\n'


def problems_section(job) -> str:
    if not job.problems and not job.notes:
        return ""
    lines = [f"<li class=\"warn\">{e(p.message)}</li>" for p in job.problems]
    lines += [f"<li>{e(n)}</li>" for n in job.notes]
    return f'<h2 id="problems-h">Inputs that need a look</h2>\n<ul class="problems" id="problems">{"".join(lines)}</ul>\n'


def findings(job) -> list[str]:
    out = []
    ranks = job.ranks
    computing = ranks[ranks["compute_ns"] > 0]
    if len(computing) >= 2:
        most = computing.loc[computing["compute_ns"].idxmax()]
        least = computing.loc[computing["compute_ns"].idxmin()]
        if most["label"] != least["label"]:
            ratio = most["compute_ns"] / least["compute_ns"]
            out.append(f"Straggler: {most['label']} spends {ratio:.2f}x the kernel time outside NCCL of {least['label']} "
                       f"({ns(most['compute_ns'])} against {ns(least['compute_ns'])}): the other ranks wait for it at "
                       "every collective.")
    if len(job.groups):
        g = job.groups.iloc[0]
        out.append(f"Top kernel: {g['short_name']} ({g['grid']} / {g['block']}) takes {pct(g['share'])} of the job's "
                   f"kernel time ({ns(g['total_ns'])} over {g['calls']} calls on {g['ranks']} ranks).")
        spread = job.groups.head(20)
        spread = spread[spread["max_over_median"].notna()]
        if len(spread):
            w = spread.loc[spread["max_over_median"].idxmax()]
            if w["max_over_median"] >= 1.1:
                out.append(f"Widest spread among the top kernels: {w['short_name']} takes {w['max_over_median']:.2f}x "
                           f"its median time on {w['rank_of_max']} ({ns(w['rank_max_ns'])} against "
                           f"{ns(w['rank_median_ns'])}).")
    steps = ranks[ranks["step_count"] > 0]
    if len(steps) >= 2:
        slow = steps.loc[steps["step_median_ns"].idxmax()]
        out.append(f"Steps: median step time from {ns(steps['step_median_ns'].min())} to {ns(slow['step_median_ns'])} "
                   f"({slow['label']}) over {len(steps)} ranks.")
    fusable = job.fusion[job.fusion["payoff_ns"].notna()] if len(job.fusion) else job.fusion
    if len(fusable):
        f = fusable.iloc[0]
        out.append(f"Best fusion over the job: {f['label']} would save {ns(f['payoff_ns'])} summed over {f['ranks']} ranks "
                   f"({f['instances']} runs), {pct(f['payoff_share'])} of the job's kernel time (predicted).")
    if not job.has_counters:
        out.append("Trace-mode ranks: no hardware counters, so no arithmetic intensity or % of roof. Record them with "
                   "`fprof run --metrics roofline`.")
    return out


def ranks_section(job) -> str:
    head = [("rank", True), ("host", False), ("device", False), ("mode", False), ("kernels", True),
            ("kernel time", True), ("share", True), ("NCCL", True), ("outside NCCL", True), ("steps", True),
            ("median step", True), ("top kernel", False), ("apart", False)]
    rows = []
    for r in job.ranks.itertuples():
        mark = " (straggler)" if r.straggler else ""
        rows.append(f'<tr{" class=apart" if r.apart else ""}>'
                    + cell("-" if pd.isna(r.rank) else int(r.rank), None if pd.isna(r.rank) else r.rank)
                    + cell(r.host, cls="") + cell(r.devices, cls="") + cell(r.mode, cls="")
                    + cell(r.kernel_count, r.kernel_count) + cell(ns(r.total_kernel_ns), r.total_kernel_ns)
                    + cell(pct(r.share), r.share) + cell(pct(r.nccl_share), r.nccl_share)
                    + cell(ns(r.compute_ns) + mark, r.compute_ns) + cell(r.step_count, r.step_count)
                    + cell(ns(r.step_median_ns), r.step_median_ns)
                    + f'<td class="name" title="{e(r.top_kernel)}">{e(r.top_kernel_short)}</td>' + cell(r.apart, cls="")
                    + "</tr>")
    return ('<h2 id="ranks-h">Ranks</h2>\n<p class="src">Kernel time per rank and its NCCL share, as <code>fprof info</code> '
            'shows a merged file; the straggler is the rank with the most kernel time outside NCCL (the others wait '
            'for it inside their collectives). Table <code>ranks.parquet</code>.</p>\n' + table(head, rows, "ranks"))


def groups_section(job, top: int) -> str:
    head = [("#", True), ("time", True), ("share", True), ("calls", True), ("mean", True), ("grid", False),
            ("block", False), ("ranks", True), ("min / rank", True), ("median / rank", True), ("max / rank", True),
            ("rank of max", False), ("max / median", True), ("% of roof", True), ("bound", False), ("kernel", False)]
    rows = []
    for i, g in enumerate(job.groups.head(top).itertuples(), 1):
        roof = "n/a" if pd.isna(g.roof_fraction) else f"{pct(g.roof_fraction)} ({g.binding_roof})"
        rows.append("<tr>" + cell(i, i) + cell(ns(g.total_ns), g.total_ns) + cell(pct(g.share), g.share)
                    + cell(g.calls, g.calls) + cell(ns(g.mean_ns), g.mean_ns) + cell(g.grid, cls="")
                    + cell(g.block, cls="") + cell(g.ranks, g.ranks) + cell(ns(g.rank_min_ns), g.rank_min_ns)
                    + cell(ns(g.rank_median_ns), g.rank_median_ns) + cell(ns(g.rank_max_ns), g.rank_max_ns)
                    + cell(g.rank_of_max, cls="")
                    + cell("n/a" if pd.isna(g.max_over_median) else f"{g.max_over_median:.2f}x", g.max_over_median)
                    + cell(roof, g.roof_fraction) + cell(g.bound or "n/a", cls="")
                    + f'<td class="name" title="{e(g.name)}">{e(g.short_name)}</td></tr>')
    more = len(job.groups) - min(top, len(job.groups))
    note = f"<p class=\"src\">{more} more groups in <code>kernel_groups.parquet</code>.</p>\n" if more > 0 else ""
    return ('<h2 id="groups-h">Kernel groups across ranks</h2>\n<p class="src">Kernels by name and launch shape, summed '
            'over the ranks in the job\'s sums (the figures of <code>fprof info</code>\'s top kernels on a merged '
            'file), and each group\'s kernel time per rank: least, median and most, and which rank had the most. '
            'Placement on the roofline from the summed counters. Table <code>kernel_groups.parquet</code>; per rank '
            '<code>rank_kernel_groups.parquet</code>.</p>\n' + table(head, rows, "groups") + note)


def roofline_section(job) -> str:
    cols = ["name", "short_name", "grid", "block", "op", "calls", "total_ns", "share", "intensity_dram",
            "intensity_l2", "intensity_l1", "flops_per_s", "roof_fraction", "binding_roof", "bound", "precision"]
    groups = []
    for rec in job.groups.head(2000)[cols].to_dict("records"):
        groups.append({k: (None if not isinstance(v, str) and pd.isna(v) else v) for k, v in rec.items()})
    ops = [(r.op, int(r.total_ns)) for r in job.ops.itertuples()]
    svg = _core.roofline_svg(groups, job.roofs, ops, job.has_counters)
    legend = ""
    if job.has_counters:
        legend = '<div class="legend"><b>op</b>\n' + "".join(
            f'<div><span class="sw" style="background:{c}"></span>{e(op)}</div>\n' for op, c in _core.op_colours(ops))
        legend += "</div>\n"
    return ('<h2 id="roofline-h">Roofline of the job</h2>\n<p class="src">Each point is a kernel group summed over the '
            'ranks (FLOPs of all precisions over DRAM bytes), sized by its share of the job\'s kernel time and coloured '
            'by op, placed against the roofs of the job\'s GPU model (<code>rank_roofs.parquet</code>).</p>\n'
            f'<div class="chartbox">{svg}{legend}</div>\n')


def steps_section(job) -> str:
    ranks = job.ranks[job.ranks["step_count"] > 0]
    if not len(ranks):
        return ('<h2 id="steps-h">Step time per rank</h2>\n<p class="src">No step ranges: mark each training step with '
                'an NVTX range <code>op=step</code> (docs/python.md) to see step time per rank here.</p>\n')
    width, height, left, bottom, top = 920, 260, 70, 30, 12
    top_ns = float(ranks["step_max_ns"].max()) or 1.0
    n = len(ranks)
    step = (width - left - 10) / max(n, 1)
    parts = [f'<svg class="steps" id="steps" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" role="img">'
             '<title>Step time per rank: median (dot) and slowest step (line top)</title>']
    y = lambda v: top + (height - top - bottom) * (1 - float(v) / top_ns)  # noqa: E731
    for k in range(5):
        v = top_ns * k / 4
        parts.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e6e9ee"/>'
                     f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{e(ns(v))}</text>')
    for i, r in enumerate(ranks.itertuples()):
        x = left + step * (i + 0.5)
        parts.append(f'<line class="rng" x1="{x:.1f}" x2="{x:.1f}" y1="{y(r.step_median_ns):.1f}" y2="{y(r.step_max_ns):.1f}"/>'
                     f'<circle class="med" cx="{x:.1f}" cy="{y(r.step_median_ns):.1f}" r="{max(1.0, min(3.0, step / 2)):.1f}">'
                     f'<title>{e(r.label)}: {r.step_count} steps, median {e(ns(r.step_median_ns))}, slowest '
                     f'{e(ns(r.step_max_ns))}</title></circle>')
    parts.append(f'<text x="{left + (width - left) / 2:.0f}" y="{height - 8}" text-anchor="middle">ranks, in rank order</text></svg>')
    return ('<h2 id="steps-h">Step time per rank</h2>\n<p class="src">Host time of each NVTX step range (the outermost '
            'whose message matches the step pattern): each rank\'s median step and its slowest one. Table '
            '<code>steps.parquet</code>.</p>\n' + "".join(parts) + "\n")


def fusion_section(job, top: int) -> str:
    if not len(job.fusion):
        return '<h2 id="fusion-h">Fusion over the job</h2>\n<p class="src">No pair worth fusing was found on any rank.</p>\n'
    head = [("#", True), ("payoff", True), ("share", True), ("ranks", True), ("runs", True), ("unfused", True),
            ("saving / run", True), ("pair", False), ("stages on the roofline", False), ("evidence", False)]
    rows = []
    for i, f in enumerate(job.fusion.head(top).itertuples(), 1):
        rows.append("<tr>" + cell(i, i) + cell(ns(f.payoff_ns), f.payoff_ns) + cell(pct(f.payoff_share), f.payoff_share)
                    + cell(f.ranks, f.ranks) + cell(f.instances, f.instances) + cell(ns(f.unfused_ns), f.unfused_ns)
                    + cell(ns(f.predicted_saving_ns), f.predicted_saving_ns)
                    + f'<td class="name" title="{e(f.stages)}">{e(f.stage_labels)}</td>' + cell(f.stage_placement, cls="")
                    + cell(f.evidence, cls="") + "</tr>")
    return ('<h2 id="fusion-h">Fusion over the job</h2>\n<p class="src">Each rank\'s fusion candidates (fprof report\'s '
            'analysis) summed over the ranks: the predicted saving of all their runs, and where each stage\'s kernels '
            'sit on the job\'s roofline. Table <code>fusion.parquet</code>; per rank <code>rank_fusion.parquet</code>.'
            '</p>\n' + table(head, rows, "fusion"))


def heat_colour(ratio: float) -> str:
    """Blue below the group's median time on a rank, white at it, red above (log scale, 2x saturates)."""
    t = max(-1.0, min(1.0, math.log2(ratio)))
    if t >= 0:
        return f"rgb(255,{int(255 - 170 * t)},{int(255 - 190 * t)})"
    t = -t
    return f"rgb({int(255 - 190 * t)},{int(255 - 120 * t)},255)"


def heat_map_section(job) -> str:
    matrix = job.heat_map
    if matrix.size == 0:
        return ""
    groups = job.groups.head(matrix.shape[1])
    order = list(job.ranks.index)  # display order: by rank
    n, m = len(order), matrix.shape[1]
    cw, ch = 26, max(1.0, min(14.0, 720.0 / n))
    left, top = 90 if n <= 96 else 20, 160
    width, height = left + cw * m + 10, top + ch * n + 10
    medians = []
    for j in range(m):
        col = matrix[:, j]
        ran = col[col > 0]
        medians.append(float(np.median(ran)) if len(ran) else 0.0)
    parts = [f'<svg class="heat" id="heatmap" width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" xmlns="http://www.w3.org/2000/svg" '
             'role="img"><title>Kernel time of each rank in each of the top kernel groups, against the group\'s median '
             'over the ranks</title>']
    for j, g in enumerate(groups.itertuples()):
        x = left + cw * j + cw / 2
        parts.append(f'<text transform="translate({x:.1f} {top - 6}) rotate(-60)"><title>{e(g.name)}</title>'
                     f'{e(g.short_name[:28])}</text>')
    with_titles = n <= 128
    for row, rank_pos in enumerate(order):
        r = job.ranks.loc[rank_pos]
        i = int(r["rank_index"])  # the heat map's row of this rank
        y = top + ch * row
        if n <= 96:
            parts.append(f'<text x="{left - 6}" y="{y + ch - 3:.1f}" text-anchor="end">{e(r["label"])}</text>')
        for j in range(m):
            v = matrix[i, j]
            x = left + cw * j
            if v <= 0 or medians[j] <= 0:
                parts.append(f'<rect class="na" x="{x}" y="{y:.2f}" width="{cw}" height="{ch:.2f}"/>')
                continue
            ratio = v / medians[j]
            title = f"<title>{e(r['label'])}: {e(ns(v))}, {ratio:.2f}x the median</title>" if with_titles else ""
            parts.append(f'<rect x="{x}" y="{y:.2f}" width="{cw}" height="{ch:.2f}" fill="{heat_colour(ratio)}">{title}</rect>')
    parts.append("</svg>")
    return ('<h2 id="heatmap-h">Rank x kernel group</h2>\n<p class="src">Each cell is a rank\'s kernel time in one of the '
            f'top {m} kernel groups against that group\'s median over the ranks: white at the median, red up to 2x and '
            'beyond, blue down to half; grey where the rank did not run the group.</p>\n' + "".join(parts) + "\n")


def render(job, info: dict, top: int = 30) -> str:
    style = _core.report_style() + EXTRA_STYLE
    body = [
        "<h1>fprof job report</h1>\n<p class=\"muted\">A whole training job, rank by rank: who is slow, which kernels "
        "differ across ranks, what fusing would pay over the job.</p>\n",
        header_section(job, info),
        problems_section(job),
        '<h2 id="findings-h">Top findings</h2>\n<ul class="findings" id="findings">'
        + "".join(f"<li>{e(f)}</li>" for f in findings(job)) + "</ul>\n",
        ranks_section(job),
        groups_section(job, top),
        steps_section(job),
        fusion_section(job, top),
        roofline_section(job),
        heat_map_section(job),
        f"<footer>Generated by fprof {e(_core.version)} (Python package, C++ analysis). Sources: <b>measured</b> = "
        "recorded on the GPUs (trace timings, hardware counters); <b>predicted</b> = the fusion model. The job "
        "folder's Parquet tables hold every figure here; <code>job.json</code> says how they were made.</footer>\n",
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:; base-uri 'none'; form-action 'none'\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>fprof job report: {e(info['output'])}</title>\n<style>{style}</style>\n</head>\n<body>\n"
            + "".join(body) + "</body>\n</html>\n")
