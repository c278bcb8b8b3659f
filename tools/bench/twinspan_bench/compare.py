"""`--compare A B`: two runs side by side with the per-cell change in percent."""

from . import exactness
from .report import fmt, markdown_table

METRICS = (  # (field, column title, digits, scale)
    ("decode_tok_s", "tok/s/stream", 1, 1.0),
    ("aggregate_tok_s", "agg tok/s", 1, 1.0),
    ("ttft_s", "TTFT ms", 1, 1e3),
    ("tokens_per_round", "tok/round", 2, 1.0),
)


def change_percent(a, b):
    """(b - a) / a in percent, or None when either is missing or a is zero."""
    if a is None or b is None or a == 0:
        return None
    return (b - a) / a * 100.0


def fmt_change(value) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def cell_key(cell: dict, with_variant: bool) -> tuple:
    prompt = cell["prompt"] if cell.get("context_copy", True) else cell["prompt"] + "/nocopy"
    key = (prompt, cell["mode"], int(cell["level"]))
    return key + (cell.get("variant", ""),) if with_variant else key


def keys_with_variant(a: list, b: list) -> bool:
    """Variant against variant: when each run holds one variant and they differ, match without it."""
    va = {c.get("variant", "") for c in a}
    vb = {c.get("variant", "") for c in b}
    return not (len(va) == 1 and len(vb) == 1 and va != vb)


def exact_ok(cell: dict) -> str:
    exact = cell.get("exact")
    if not exact:
        return "-"
    return "✗" if exactness.any_unequal_or_failed(exact) else "ok"


def compare_table(a: list, b: list, name_a: str = "A", name_b: str = "B") -> str:
    """A Markdown table: each metric for A, for B and the change; cells in only one run say so."""
    with_variant = keys_with_variant(a, b)
    index_a = {cell_key(c, with_variant): c for c in a}
    index_b = {cell_key(c, with_variant): c for c in b}
    keys = list(index_a) + [k for k in index_b if k not in index_a]
    header = ["cell"]
    for _, title, _, _ in METRICS:
        header += [f"{title} {name_a}", f"{title} {name_b}", "Δ"]
    header += [f"exact {name_a}", f"exact {name_b}"]
    rows = []
    for key in keys:
        ca, cb = index_a.get(key), index_b.get(key)
        label = "/".join([key[0], key[1], f"c{key[2]}"] + ([key[3]] if len(key) > 3 and key[3] else []))
        row = [label]
        for field, _, digits, scale in METRICS:
            va = ca.get(field) if ca else None
            vb = cb.get(field) if cb else None
            row += [fmt(va, digits, scale) if ca else "(absent)",
                    fmt(vb, digits, scale) if cb else "(absent)", fmt_change(change_percent(va, vb))]
        row += [exact_ok(ca) if ca else "(absent)", exact_ok(cb) if cb else "(absent)"]
        rows.append(row)
    return markdown_table(header, rows)
