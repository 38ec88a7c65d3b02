"""Tables that never cut a number: printed whole when they fit the terminal, else stacked.

    console.print(fit(table))

Convention: a right-justified column holds numbers, and a `no_wrap` column names (a recipe).
`fit` gives each such column the width of its longest cell, so rich never shortens a number to
`12…`; other columns wrap. When even that
does not fit the width the console offers (COLUMNS=80 with nine concurrencies), the table is
printed stacked instead: one block per row, a `column  value` line per cell, every value whole.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

FOLD_AT = 12  # a text column's word longer than this folds rather than widen the table


class FittedTable:
    """A table that chooses its layout at render time, from the width it is given."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.table if fits(self.table, console, options) else stacked(self.table, console)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


def fits(table: Table, console: Console, options: ConsoleOptions) -> bool:
    """Whether `table` prints whole, every number at full width, in `options.max_width`."""
    _size_number_columns(table, console)
    return _min_total(table, console) <= options.max_width


def fit(table: Table) -> FittedTable:
    """`table`, printed whole or stacked (see the module docstring)."""
    return FittedTable(table)


def _cells(table: Table, index: int, console: Console) -> list[Text]:
    column = table.columns[index]
    texts = [console.render_str(c) if isinstance(c, str) else c for c in column._cells]
    return [t if isinstance(t, Text) else Text(str(t)) for t in texts]


def _header(column: Column, console: Console) -> Text:
    header = column.header
    return console.render_str(header) if isinstance(header, str) else Text(str(header))


def _whole(column: Column) -> bool:
    return column.justify == "right" or column.no_wrap


def _size_number_columns(table: Table, console: Console) -> None:
    for index, column in enumerate(table.columns):
        if _whole(column):
            widths = [t.cell_len for t in _cells(table, index, console)]
            widths.append(_header(column, console).cell_len)
            column.min_width = max(widths)
            column.no_wrap = True
        else:
            column.overflow = "fold"


def _min_total(table: Table, console: Console) -> int:
    """The narrowest the table can be with every number whole: number columns at full width,
    text columns at their longest word (header included; a longer word folds at FOLD_AT),
    plus the table's own padding, separators and edges."""
    total = table._extra_width  # separators and edges, as rich counts them
    for index, column in enumerate(table.columns):
        if _whole(column):
            total += column.min_width or 1
        else:
            cells = [*_cells(table, index, console), _header(column, console)]
            words = [len(w) for t in cells for w in t.plain.split()]
            total += min(max(words, default=1), column.max_width or FOLD_AT)
        total += table._get_padding_width(index)
    return total


def stacked(table: Table, console: Console) -> Group:
    """The table as one block per row: its first cell as the heading, then `column  value`."""
    headers = [_header(c, console) for c in table.columns]
    columns = [_cells(table, i, console) for i in range(len(table.columns))]
    parts: list[Text | Table] = []
    if table.title:
        title = table.title
        parts.append(console.render_str(title) if isinstance(title, str) else Text(str(title)))
    for row in range(table.row_count):
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        for header, cells in zip(headers[1:], columns[1:], strict=True):
            if cells[row].plain.strip():
                grid.add_row(header, cells[row])
        heading = columns[0][row].copy()
        heading.stylize("bold")
        parts += [Text(""), heading, grid]
    if table.caption:
        caption = table.caption
        text = console.render_str(caption) if isinstance(caption, str) else Text(str(caption))
        parts += [Text(""), text]
    return Group(*parts)
