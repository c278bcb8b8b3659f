"""Outputs: one JSON line per cell, the full report with per-request evidence, and a table for people."""

import json

from . import exactness


def fmt(value, digits=1, scale=1.0) -> str:
    """A number for the table, or '-' when absent."""
    return "-" if value is None else f"{value * scale:.{digits}f}"


def fmt_tally(tally: dict) -> str:
    """'equal/unequal/failed', or '-' when the check did not run."""
    if not any(tally.values()):
        return "-"
    return f"{tally['equal']}/{tally['unequal']}/{tally['failed']}"


TABLE_HEADER = ("cell", "tok/s/stream", "agg tok/s", "TTFT ms", "tok/round", "accept %",
                "drafted", "accepted", "of them copied", "round gap ms", "alone =/≠/✗",
                "serial =/≠/✗", "repeat =/≠/✗")


def table_row(r: dict) -> tuple:
    e = r["exact"]
    return (r["cell"], fmt(r["decode_tok_s"]), fmt(r["aggregate_tok_s"]),
            fmt(r["ttft_s"], 1, 1e3), fmt(r["tokens_per_round"], 2),
            fmt(r["acceptance_rate"], 1, 100.0), str(r["drafted"]), str(r["accepted"]),
            str(r.get("copy_accepted", 0)), fmt(r["round_gap_s"], 2, 1e3), fmt_tally(e["alone"]), fmt_tally(e["serial"]),
            fmt_tally(e["repeat"]))


def markdown_table(header, rows) -> str:
    """A Markdown table (readable as plain text too): first column left-aligned, others right."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]

    def line(cells):
        padded = [str(c).ljust(w) if i == 0 else str(c).rjust(w)
                  for i, (c, w) in enumerate(zip(cells, widths))]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i else (":" + "-" * (w + 1))
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), rule] + [line(r) for r in rows])


def cells_table(records) -> str:
    """The table for people: one row per cell."""
    return markdown_table(TABLE_HEADER, [table_row(r) for r in records])


def totals(records) -> dict:
    """Exactness counts summed over all cells, and the failed-request count."""
    out = {check: exactness.Tally() for check in exactness.CHECKS}
    for r in records:
        for check in exactness.CHECKS:
            out[check].add(exactness.Tally(**r["exact"][check]))
    result = {check: t.as_dict() for check, t in out.items()}
    result["failed_requests"] = sum(r["failed"] for r in records)
    return result


def json_line(record: dict) -> str:
    return json.dumps(record, sort_keys=True)


def write_report(path: str, meta: dict, cells: list, references: list) -> None:
    """The full report: meta, each cell's record, every request's evidence and every finding."""
    report = {
        "meta": meta,
        "cells": [c["record"] for c in cells],
        "totals": totals([c["record"] for c in cells]),
        "findings": [f | {"cell": c["record"]["cell"]} for c in cells for f in c["findings"]],
        "requests": [e for c in cells for e in c["evidence"]],
        "references": references,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")


def load_cells(path: str) -> list:
    """Cell records from a full report (JSON object with 'cells') or a JSON-lines file of cells."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("cells"), list):
        cells = whole["cells"]
    elif isinstance(whole, dict) and "cell" in whole:
        cells = [whole]
    else:
        cells = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                cells.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: neither a report nor JSON lines ({e.msg})") from None
    for i, c in enumerate(cells):
        if not isinstance(c, dict) or not {"prompt", "mode", "level"} <= set(c):
            raise ValueError(f"{path}: cell {i} lacks 'prompt', 'mode' or 'level'; "
                             "not a twinspan-bench output")
    if not cells:
        raise ValueError(f"{path}: no cells")
    return cells
