"""The dialect of a CSV file, and what is wrong with one DuckDB cannot read.

Every CSV file is read by DuckDB in one way (:mod:`dpsense.data.source`): the header row is
the first line, the delimiter is the one of ``,``, ``;``, tab and ``|`` that the header row
uses most (``,`` when it uses none), quotes are ``"`` (doubled inside a quoted field), and
every row has as many fields as the header row. This module reads the first line to find
the delimiter and to refuse a file without a header row, and, when DuckDB refuses a file,
reads it again line by line with the standard library's :mod:`csv` module to say what is
wrong. It never returns values.

Messages name the file, never a value, a line number or a count of rows (under add-remove
neighbours the number of records is private).
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from dpsense.errors import InputError

__all__ = ["csv_delimiter", "csv_problem"]

_DELIMITERS = (",", ";", "\t", "|")


def _open_text(path: Path) -> IO[str]:
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return path.open("r", encoding="utf-8-sig", newline="")


def _guess_delimiter(header_line: str) -> str:
    counts = {d: header_line.count(d) for d in _DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _unreadable(where: str, exc: BaseException) -> InputError:
    """The InputError for a file Python cannot decode or open (no contents quoted)."""
    if isinstance(exc, UnicodeDecodeError):
        return InputError(f"cannot read {where}: it is not a UTF-8 text file (is it a CSV file?).")
    if isinstance(exc, gzip.BadGzipFile | EOFError):
        return InputError(f"cannot read {where}: it is not a valid gzip file.")
    if isinstance(exc, csv.Error):
        # csv's messages can name a line number, i.e. a position in the data
        return InputError(
            f"cannot read {where}: it is not a valid CSV file (check its quoting and delimiters)."
        )
    reason = getattr(exc, "strerror", None) or type(exc).__name__
    return InputError(f"cannot read {where}: {reason}.")


def _rows(handle: IO[str], where: str) -> Iterator[list[str]]:
    """The header row then the data rows; an InputError for a file without a header row."""
    first = handle.readline()
    if not first.strip():
        # an empty first line means an empty file or a file without a header row
        rest = handle.read(1)
        if not first or not rest:
            raise InputError(f"file is empty: {where} needs at least a header row of names.")
        raise InputError(f"cannot read {where}: the first line must be a header row of names.")
    delimiter = _guess_delimiter(first)
    header = next(csv.reader([first], delimiter=delimiter))
    # a file of bare numbers would silently lose its first value if read as a header
    if all(_is_number(cell.strip()) for cell in header):
        raise InputError(
            f"the first line of {where} looks like data, not a header row; add a first "
            "line with the column names."
        )
    yield header
    yield from csv.reader(handle, delimiter=delimiter)


def csv_delimiter(path: Path, where: str) -> str:
    """The delimiter of the CSV file ``path`` (module docstring); an InputError when the
    file cannot be decoded or has no header row. ``where`` names the file in messages."""
    try:
        with _open_text(path) as handle:
            next(_rows(handle, where))
            handle.seek(0)
            return _guess_delimiter(handle.readline())
    except InputError:
        raise
    except (UnicodeDecodeError, OSError, EOFError, csv.Error) as exc:
        raise _unreadable(where, exc) from None


def csv_problem(path: Path, where: str) -> InputError | None:
    """Why DuckDB could not read the CSV file ``path``, found line by line: an undecodable
    file, broken quoting, or rows with more or fewer fields than the header row. None when
    the standard library's reader finds nothing wrong."""
    try:
        with _open_text(path) as handle:
            rows = _rows(handle, where)
            width = len(next(rows))
            for row in rows:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # a blank line is no row
                if len(row) != width:
                    return InputError(
                        f"cannot read {where}: some rows have more or fewer fields than the "
                        "header row; quote the fields that contain the delimiter, and give "
                        "every row all the columns (an empty field is a missing value)."
                    )
    except InputError as exc:
        return exc
    except (UnicodeDecodeError, OSError, EOFError, csv.Error) as exc:
        return _unreadable(where, exc)
    return None
