"""Markdown rendering of comparison summaries, shared by the reproduction scripts."""

from __future__ import annotations

import pandas as pd


def markdown(table: pd.DataFrame, cols: list[str]) -> str:
    """The columns ``cols`` of ``table`` as a Markdown table (``within_*`` as percentages)."""
    t = table.loc[:, [c for c in cols if c in table.columns]]
    head = "| " + " | ".join(t.columns) + " |\n|" + "---|" * len(t.columns) + "\n"
    lines = []
    for _, row in t.iterrows():
        cells = []
        for col, value in row.items():
            if col.startswith("within"):
                cells.append(f"{100 * value:.1f}%")
            elif col == "lambda":
                cells.append(f"{value:g}")
            elif isinstance(value, float):
                cells.append(f"{value:.2f}")
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(lines)
