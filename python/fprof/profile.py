"""One profile (a .fprof file) with its tables as DataFrames, computed by fprof's C++ analysis."""

from __future__ import annotations

import html
import re
from functools import cached_property

import pandas as pd
import pyarrow as pa

from . import _core
from ._tables import to_arrow, to_pandas

_NOTEBOOK_SCOPE = "fprof-nb"


def open(path) -> "Profile":  # noqa: A001 - fprof.open reads like the builtin, on purpose
    """Reads a .fprof database. Raises FprofError (a ValueError) with one sentence when it cannot."""
    return Profile(_core.load(str(path)))


class Profile:
    """A loaded profile. Each table is computed once, on first use, and kept.

    The DataFrames are Arrow-backed (``pandas.ArrowDtype``); an absent value is ``<NA>``, never 0.
    ``fprof.docs(df)`` lists a table's columns with their doc strings.
    """

    def __init__(self, core_profile):
        self._core = core_profile
        self._arrow: dict[str, pa.Table] = {}

    @property
    def path(self) -> str:
        return self._core.path

    @property
    def warnings(self) -> list[str]:
        """What the reader found damaged in the file and how it read it anyway, one sentence each."""
        return list(self._core.warnings)

    @property
    def table_names(self) -> list[str]:
        return list(self._core.table_names)

    def arrow(self, name: str) -> pa.Table:
        """A table as a pyarrow.Table (field metadata ``doc`` holds each column's doc string)."""
        if name not in self._arrow:
            if name not in self._core.table_names:
                raise KeyError(f"no table {name!r}; the tables are {', '.join(self._core.table_names)}")
            self._arrow[name] = to_arrow(self._core.table(name))
        return self._arrow[name]

    def table(self, name: str) -> pd.DataFrame:
        """A table as a DataFrame, by name (``table_names``)."""
        return to_pandas(self.arrow(name))

    @cached_property
    def kernels(self) -> pd.DataFrame:
        """One row per kernel execution, in start order (schema table ``kernel``)."""
        return self.table("kernels")

    @cached_property
    def kernel_groups(self) -> pd.DataFrame:
        """Kernels by name and launch shape with their roofline placement (fprof report's kernel table)."""
        return self.table("kernel_groups")

    @cached_property
    def ops(self) -> pd.DataFrame:
        """Kernel time by op (NVTX and framework ops)."""
        return self.table("ops")

    @cached_property
    def fusion(self) -> pd.DataFrame:
        """Fusion candidates with the predicted (and, where measured, the measured) saving."""
        return self.table("fusion")

    @cached_property
    def counters(self) -> pd.DataFrame:
        """Hardware counters per kernel with their provenance (schema table ``kernel_counter``)."""
        return self.table("counters")

    @cached_property
    def counters_missing(self) -> pd.DataFrame:
        """Kernels of a metrics run without counters, and why."""
        return self.table("counters_missing")

    @cached_property
    def ranks(self) -> pd.DataFrame:
        """One row per rank of a merged profile (empty for one process)."""
        return self.table("ranks")

    @cached_property
    def roofs(self) -> pd.DataFrame:
        """The ceilings kernels are placed against, measured or datasheet, with how each was obtained."""
        return self.table("roofs")

    @cached_property
    def processes(self) -> pd.DataFrame:
        return self.table("processes")

    @cached_property
    def devices(self) -> pd.DataFrame:
        return self.table("devices")

    @cached_property
    def nvtx_ranges(self) -> pd.DataFrame:
        return self.table("nvtx_ranges")

    @cached_property
    def summary(self) -> dict:
        """The report's header: program, mode, devices, kernel count and time, coverage, findings."""
        return self._core.summary()

    @property
    def findings(self) -> list[str]:
        return list(self.summary["findings"])

    def report_html(self) -> str:
        """The HTML report, as ``fprof report`` writes it."""
        return self._core.report_html()

    def roofline_svg(self) -> str:
        """The report's roofline chart as SVG (or a short HTML note saying why there is none)."""
        return self._core.roofline_svg()

    def __repr__(self) -> str:
        s = self.summary
        return (f"<fprof.Profile {s['file']!r}: {s['mode']}, {s['kernel_count']} kernels, "
                f"{_core.format_duration_ns(float(s['total_kernel_ns']))} kernel time>")

    def _repr_html_(self) -> str:
        """Jupyter: the summary and the roofline, drawn by the report's own SVG and stylesheet."""
        s = self.summary
        rows = [
            ("file", s["file"]),
            ("program", s["program"]),
            ("mode", f"{s['mode']} (schema {s['schema_version']}, recorded by fprof {s['fprof_version']})"),
            ("devices", "; ".join(s["devices"]) or "none recorded"),
            ("kernels", f"{s['kernel_count']} launches in {s['kernel_groups']} groups, "
                        f"{_core.format_duration_ns(float(s['total_kernel_ns']))} kernel time"),
        ]
        if s["timeline_known"]:
            rows.append(("GPU busy", f"{_core.format_duration_ns(float(s['gpu_busy_ns']))} of a "
                                     f"{_core.format_duration_ns(float(s['span_ns']))} span"))
        if s["counter_coverage"]:
            rows.append(("counters", s["counter_coverage"]))
        meta = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in rows)
        findings = "".join(f"<li>{html.escape(f)}</li>" for f in s["findings"])
        warnings = "".join(f"<li class=\"warn\">{html.escape(w)}</li>" for w in s["warnings"])
        return (f"<div class=\"{_NOTEBOOK_SCOPE}\"><style>{notebook_style()}</style>"
                f"<dl class=\"meta\">{meta}</dl><ul class=\"findings\">{findings}{warnings}</ul>"
                f"<div class=\"chartbox\">{self.roofline_svg()}</div></div>")


def notebook_style() -> str:
    """The report's stylesheet rules a notebook needs (the chart, the summary), scoped to fprof's
    output so that they restyle nothing else on the page."""
    css = _core.report_style()
    out = []
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        selectors = selectors.strip()
        if selectors == ":root":
            out.append(f".{_NOTEBOOK_SCOPE}{{{body}}}")
            continue
        wanted = ("svg", ".legend", ".nochart", ".meta", ".findings", ".warn", ".chartbox")
        if not any(w in selectors for w in wanted):
            continue
        scoped = ",".join(f".{_NOTEBOOK_SCOPE} {sel.strip()}" for sel in selectors.split(","))
        out.append(f"{scoped}{{{body}}}")
    return "\n".join(out)
