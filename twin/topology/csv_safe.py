"""Read a CSV a user gives twin (a clone's cable list): rows of text cells, each with its line.

Bytes and text as twin.topology.files takes them (size, UTF-8, control characters); at
most the format's number of rows and MAX_CELL_CHARS per cell: a row the csv module
cannot read (a cell longer than its field limit) is a problem at that row's line,
reading goes on with the next.
"""

from __future__ import annotations

import csv
import io

from twin.base.errors import Problem
from twin.topology.files import Format

MAX_CELL_CHARS = 1000  # a device or port name is a few dozen characters


def rows(text: str, source: str, fmt: Format) -> tuple[list[tuple[int, list[str]]], list[Problem]]:
    """(line, cells) of every row, and the problems of the rows that are not rows."""
    out: list[tuple[int, list[str]]] = []
    problems: list[Problem] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    line = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            problems.append(Problem(source, "", f"not a CSV row: {e}", line))
            line = reader.line_num + 1
            continue
        if len(out) >= fmt.max_values:
            problems.append(
                Problem(source, "", f"more than {fmt.max_values} rows: {fmt.values_hint}; the rest was not read", line)
            )
            break
        long = next((c for c in row if len(c) > MAX_CELL_CHARS), None)
        if long is not None:
            problems.append(
                Problem(source, "", f"a cell of {len(long)} characters: a cell holds at most {MAX_CELL_CHARS}", line)
            )
        else:
            out.append((line, row))
        line = reader.line_num + 1
    return out, problems
