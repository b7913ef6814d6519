"""Reading the tables the command line and the audit take: CSV or JSON Lines rows."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["read_rows"]


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a ``.csv`` or JSON Lines (``.jsonl``/``.ndjson``/``.json``) file as dicts.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: unknown suffix, unparsable line (with its number), or no rows.
    """
    file_path = Path(path)
    if not file_path.is_file():
        raise FileNotFoundError(f"no such file: {file_path}")
    suffix = file_path.suffix.lower()
    if suffix == ".csv":
        with file_path.open(newline="", encoding="utf-8") as handle:
            rows = [dict(row) for row in csv.DictReader(handle)]
    elif suffix in {".jsonl", ".ndjson", ".json"}:
        text = file_path.read_text(encoding="utf-8").strip()
        if text.startswith("["):
            loaded = json.loads(text)
            rows = [dict(item) for item in loaded]
        else:
            rows = []
            for number, line in enumerate(text.splitlines(), start=1):
                if line.strip():
                    try:
                        rows.append(dict(json.loads(line)))
                    except (json.JSONDecodeError, TypeError, ValueError) as error:
                        raise ValueError(f"{file_path} line {number}: {error}") from error
    else:
        raise ValueError(f"unsupported file type {suffix!r}: use .csv, .jsonl, .ndjson or .json")
    if not rows:
        raise ValueError(f"{file_path} has no rows")
    return rows
