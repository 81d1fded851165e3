"""The table every benchmark prints: a header row, a rule, then rows; columns padded."""

from collections.abc import Sequence


def print_table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)))
        if n == 0:
            print("-+-".join("-" * w for w in widths))
