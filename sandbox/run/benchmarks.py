"""A script's benchmarks as the playground runs them: triton.testing.do_bench in the interpreter, and
triton.testing.perf_report's tables and plots (`result.benchmarks`, docs/result.md)."""
import math
import re
import time

import torch

from sandbox.run.launch_record import MAX_TEXT

MAX_CHARTS, MAX_CHART_POINTS = 8, 200  # perf_report plots kept for the page, and points of each


def interpreter_do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """triton.testing.do_bench in the interpreter: `fn` once, by the wall clock (the interpreter's
    time says nothing of a GPU's; timing it a hundred times would only spend the run's time)."""
    start = time.perf_counter()
    fn()
    ms = (time.perf_counter() - start) * 1e3
    if quantiles is not None:
        return [ms for _ in quantiles]
    return [ms] if return_mode == "all" else ms


class Benchmarks:
    """triton.testing.perf_report's benchmarks, run by the playground: each at its first point only
    unless every point is asked for, its table printed without pandas or matplotlib, and the plot it
    would draw kept for the page (`charts`: result.benchmarks, docs/result.md)."""

    def __init__(self, every_point, notes, clock):
        self.every_point, self.notes, self.clock = every_point, notes, clock
        self.charts = []

    @property
    def run(self):
        benchmarks = self

        def run(mark, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
            tables = [benchmarks.run_one(mark, bench, print_data, kwargs)
                      for bench in (mark.benchmarks if isinstance(mark.benchmarks, list) else [mark.benchmarks])]
            if return_df:
                return tables if isinstance(mark.benchmarks, list) else tables[0]
            return None

        return run

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def run_one(self, mark, bench, print_data, kwargs):
        x_names = list(bench.x_names)
        points = list(bench.x_vals)
        if not self.every_point and len(points) > 1:
            self.note(f"The perf_report benchmark '{bench.plot_name}' ran at its first point only ({len(points)} points; "
                      f"options.benchmarks \"all\" runs every one), its times {self.clock}.")
            points = points[:1]
        header = x_names + [f"{name} ({bench.ylabel})" for name in bench.line_names]
        rows = []
        for x in points:
            x = list(x) if isinstance(x, (list, tuple)) else [x] * len(x_names)
            row = list(x)
            for y in bench.line_vals:
                value = mark.fn(**dict(zip(x_names, x)), **{bench.line_arg: y}, **bench.args, **kwargs)
                row.append(value[0] if isinstance(value, (list, tuple)) else value)
            rows.append(row)
        if print_data:
            print(f"{bench.plot_name}:")
            print(table_text(header, rows))
        if len(self.charts) < MAX_CHARTS:
            self.charts.append(chart(bench, x_names, rows, len(bench.x_vals)))
        return {"header": header, "rows": rows}


def chart(bench, x_names, rows, points):
    """A benchmark's plot as data (result.benchmarks): its first x against each line's value, as
    perf_report draws it. A value that is no finite number is null."""
    def number(value):
        value = value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None

    width = len(x_names)
    return {"name": str(bench.plot_name)[:MAX_TEXT], "x": str(bench.xlabel or x_names[0])[:MAX_TEXT],
            "y": str(bench.ylabel)[:MAX_TEXT], "x_log": bool(bench.x_log), "y_log": bool(bench.y_log),
            "lines": [str(name)[:MAX_TEXT] for name in bench.line_names], "styles": styles(bench.styles, len(bench.line_names)),
            "points": [[number(row[0]), [number(v) for v in row[width:]]] for row in rows[:MAX_CHART_POINTS]],
            "points_total": points}


# matplotlib's colours that CSS does not name: its one-letter base colours and its default cycle.
TABLEAU = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MATPLOTLIB_COLORS = {"b": "#0000ff", "g": "#008000", "r": "#ff0000", "c": "#00bfbf", "m": "#bf00bf", "y": "#bfbf00",
                     "k": "#000000", "w": "#ffffff",
                     **{f"C{i}": hex for i, hex in enumerate(TABLEAU)},
                     **{f"tab:{name}": hex for name, hex in zip(("blue", "orange", "green", "red", "purple", "brown",
                                                                 "pink", "gray", "olive", "cyan"), TABLEAU)}}
# matplotlib's line styles, as plotly names them.
DASHES = {"-": "solid", "solid": "solid", "--": "dash", "dashed": "dash", "-.": "dashdot", "dashdot": "dashdot",
          ":": "dot", "dotted": "dot"}
CSS_COLOR = re.compile(r"#[0-9a-f]{3}(?:[0-9a-f]{3})?|[a-z]{3,24}")


def styles(given, lines):
    """A Benchmark's `styles` ([(colour, line style), ...], one per line, as matplotlib takes them)
    as the page draws them: [[a CSS colour or None, a plotly dash or None], ...] for its first
    `lines`; None where it gave none."""
    if not isinstance(given, (list, tuple)) or not given:
        return None
    return [[css_color(style[0]), DASHES.get(style[1]) if isinstance(style[1], str) else None]
            if isinstance(style, (list, tuple)) and len(style) == 2 else [None, None] for style in given[:lines]]


def css_color(color):
    """A matplotlib colour as CSS writes it: its name or #hex, an RGB tuple of 0–1 as #hex; None
    for anything else (the page draws that line in its own colour)."""
    if isinstance(color, (list, tuple)) and len(color) in (3, 4) and all(
            isinstance(c, (int, float)) and not isinstance(c, bool) and 0 <= c <= 1 for c in color):
        return "#" + "".join(f"{round(c * 255):02x}" for c in color[:3])
    if not isinstance(color, str):
        return None
    color = MATPLOTLIB_COLORS.get(color, color).lower()
    return color if CSS_COLOR.fullmatch(color) else None


def table_text(header, rows):
    """Columns right-aligned under their headers, as pandas prints a DataFrame."""
    cells = [[""] + header] + [[str(i)] + [f"{v:.6f}" if isinstance(v, float) else str(v) for v in row]
                               for i, row in enumerate(rows)]
    widths = [max(len(row[c]) for row in cells) for c in range(len(cells[0]))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in cells)
