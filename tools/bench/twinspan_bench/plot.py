"""`--plot out.png`: tokens per round and tok/s per cell, one bar per head variant."""


def cell_name(cell: dict) -> str:
    return f"{cell['prompt']}/{cell['mode']}/c{cell['level']}"


def plot_cells(cells: list, path: str, title: str = "twinspan-bench") -> None:
    """Writes a PNG with two panels (tokens per round; per-stream and aggregate tok/s)."""
    import matplotlib  # imported here so the rest of the bench runs without matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(cell_name(c) for c in cells))
    variants = list(dict.fromkeys(c.get("variant") or "default" for c in cells))
    index = {(cell_name(c), c.get("variant") or "default"): c for c in cells}
    width = 0.8 / len(variants)
    fig, axes = plt.subplots(3, 1, figsize=(max(8, 0.9 * len(names) + 3), 11), sharex=True)
    panels = (("tokens_per_round", "tokens per round"), ("decode_tok_s", "tok/s per stream"),
              ("aggregate_tok_s", "aggregate tok/s"))
    for ax, (field, ylabel) in zip(axes, panels):
        for v, variant in enumerate(variants):
            xs, ys = [], []
            for i, name in enumerate(names):
                cell = index.get((name, variant))
                if cell is not None and cell.get(field) is not None:
                    xs.append(i - 0.4 + width * (v + 0.5))
                    ys.append(cell[field])
            bars = ax.bar(xs, ys, width=width, label=variant)
            ax.bar_label(bars, fmt="%.2f" if field == "tokens_per_round" else "%.0f", fontsize=7)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_title(title)
    axes[0].legend(title="head variant", fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[-1].set_xticks(range(len(names)))
    axes[-1].set_xticklabels(names, rotation=45, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
