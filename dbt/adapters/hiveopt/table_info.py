"""What the catalog says of a relation (DESCRIBE TABLE EXTENDED): its columns and types, whether
it is a view (and its text), its bucketing and partitioning, and the fingerprint that tells when
its data changed.

>>> rows = [("k", "int", None), ("", "", ""), ("# Detailed Table Information", "", ""), ("Type", "MANAGED", ""),
...     ("Created Time", "Mon Jan 01 00:00:00 UTC 2024", ""), ("Statistics", "1024 bytes", "")]
>>> info = parse_describe("db.t", rows)
>>> info.columns, info.is_view, info.fingerprint
({'k': 'int'}, False, 'Mon Jan 01 00:00:00 UTC 2024|1024')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TableInfo:
    name: str  # db.table, lowercase
    columns: dict[str, str]  # name as the catalog spells it -> type
    kind: str  # MANAGED / EXTERNAL / VIEW
    created: str = ""
    size_bytes: int | None = None
    partition_columns: list[str] = field(default_factory=list)
    bucket_columns: list[str] = field(default_factory=list)
    # Views: the SQL they stand for, and the database their bare table names are read in.
    view_text: str = ""
    view_db: str = ""

    @property
    def is_view(self) -> bool:
        return self.kind.upper() == "VIEW"

    @property
    def fingerprint(self) -> str:
        return f"{self.created}|{self.size_bytes}"


# A seed's statistics are counted from the rows of its file: their fingerprint also names the
# checksum dbt keeps of that file. Every `dbt build` loads a seed again (a new creation time, the
# same rows): such statistics hold while the table has their size and dbt's graph names that file.
SEED_FILE = "|seed file "


def describes(stored: str | None, info: TableInfo, seed_file: str | None = None) -> bool:
    """Whether statistics stored under fingerprint `stored` describe the table as the catalog says
    it is now (`info`): the same fingerprint; or, for a seed's, the same size and the file that
    dbt's graph names for the seed now (`seed_file`).

    >>> info = TableInfo("a.n", {}, "MANAGED", created="Tue", size_bytes=10)
    >>> describes("Tue|10", info), describes("Mon|10", info)
    (True, False)
    >>> [describes(f, info, "ab") for f in ("Mon|10|seed file ab", "Mon|10|seed file cd", "Mon|11|seed file ab")]
    [True, False, False]
    """
    if str(stored or "").partition(SEED_FILE)[0] == info.fingerprint:
        return True
    if not seed_file or info.size_bytes is None or not counted_from_seed(stored):
        return False
    return data_version(stored) == data_version(seed_fingerprint(info.fingerprint, seed_file))


def counted_from_seed(fingerprint: str | None) -> bool:
    """Whether statistics stored under `fingerprint` were counted from a seed's file.

    >>> counted_from_seed("Tue|10|seed file ab"), counted_from_seed("Tue|10"), counted_from_seed(None)
    (True, False, False)
    """
    return SEED_FILE in str(fingerprint or "")


def counted_from_file(fingerprint: str | None, seed_file: str | None) -> bool:
    """Whether statistics stored under `fingerprint` were counted from the seed file whose
    checksum is `seed_file` (whatever the table's creation time and size).

    >>> counted_from_file("Tue|10|seed file ab", "ab"), counted_from_file("Tue|10|seed file ab", "cd")
    (True, False)
    >>> counted_from_file("Tue|10", "ab"), counted_from_file("Tue|10|seed file ab", None)
    (False, False)
    """
    return bool(seed_file) and str(fingerprint or "").partition(SEED_FILE)[2] == seed_file


def seed_fingerprint(fingerprint: str, seed_file: str | None) -> str:
    """The fingerprint of statistics counted from a seed's file (`seed_file`: dbt's checksum of it).

    >>> seed_fingerprint("Tue|10", "ab"), seed_fingerprint("Tue|10", None)
    ('Tue|10|seed file ab', 'Tue|10')
    """
    return f"{fingerprint}{SEED_FILE}{seed_file}" if seed_file else fingerprint


def data_version(fingerprint: str | None) -> str:
    """What in a fingerprint says which data statistics stand for: all of it; of a seed's, its size
    and its file, not its creation time.

    >>> data_version("Tue|10"), data_version("Tue|10|seed file ab")
    ('Tue|10', '10|seed file ab')
    """
    base, sep, file = str(fingerprint or "").partition(SEED_FILE)
    return f"{base.rpartition('|')[2]}{sep}{file}" if sep else base


def parse_describe(name: str, rows: Sequence[tuple[Any, ...]]) -> TableInfo:
    """Read columns, kind, creation time and size from DESCRIBE TABLE EXTENDED rows."""
    columns: dict[str, str] = {}
    partitions: list[str] = []
    details: dict[str, str] = {}
    section = "columns"
    for row in rows:
        key = str(row[0] or "").strip()
        value = str(row[1] or "").strip() if len(row) > 1 else ""
        if key.startswith("# Partition Information"):
            section = "partitions"
            continue
        if key.startswith("# Detailed Table Information"):
            section = "details"
            continue
        if not key or key.startswith("#"):
            continue
        if section == "columns":
            columns[key] = value
        elif section == "partitions":
            partitions.append(key)
        else:
            details[key] = value
    return _table_info(name, columns, details, partitions)


def _table_info(name: str, columns: dict[str, str], details: dict[str, str], partitions: list[str]) -> TableInfo:
    """A TableInfo from the catalog's details (the key: value lines both commands print)."""
    size = None
    statistics = details.get("Statistics", "")
    if "bytes" in statistics:
        try:
            size = int(statistics.split("bytes")[0].strip())
        except ValueError:
            size = None
    buckets = [c.strip(" `") for c in details.get("Bucket Columns", "").strip("[]").split(",") if c.strip(" `")]
    namespace = details.get("View Catalog and Namespace", "")
    return TableInfo(
        name=name.lower(),
        columns=columns,
        kind=details.get("Type", "MANAGED"),
        created=details.get("Created Time", ""),
        size_bytes=size,
        partition_columns=partitions,
        bucket_columns=buckets,
        view_text=details.get("View Text", "").rstrip("\n"),
        view_db=namespace.rsplit(".", 1)[-1].strip("`") if namespace else "",
    )


# Type names as Spark's schema tree prints them, where DESCRIBE prints their SQL names.
_TREE_TYPES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}


def parse_show_extended(name: str, information: str) -> TableInfo:
    """What SHOW TABLE EXTENDED says of one relation (its `information` text): the same facts as
    DESCRIBE TABLE EXTENDED, for several relations in one statement. The columns come from its
    schema tree (top-level fields; Spark's type names turned into their SQL names).

    >>> info = parse_show_extended("db.v", "Type: VIEW\\nView Text: select k\\nfrom db.t\\nView Original Text: "
    ...     "select k\\nfrom db.t\\nView Catalog and Namespace: spark_catalog.db\\nStatistics: 10 bytes\\n"
    ...     "Schema: root\\n |-- k: long (nullable = true)\\n |-- s: struct (nullable = true)\\n"
    ...     " |    |-- x: integer (nullable = true)\\n")
    >>> info.columns, info.is_view, info.view_text, info.view_db, info.size_bytes
    ({'k': 'bigint', 's': 'struct'}, True, 'select k\\nfrom db.t', 'db', 10)
    """
    details: dict[str, str] = {}
    columns: dict[str, str] = {}
    lines = information.split("\n")
    key = None
    in_schema = False
    for line in lines:
        if in_schema:
            if line.startswith(" |-- "):
                field_name, _, rest = line[5:].rpartition(": ")
                type_name = rest.split(" (")[0].strip()
                columns[field_name] = _TREE_TYPES.get(type_name, type_name)
            continue
        head, sep, value = line.partition(": ")
        if sep and head and head[0].isupper() and "  " not in head and len(head) < 40 and not head.startswith(" "):
            if head == "Schema":
                in_schema = True
                continue
            key = head
            details[key] = value
        elif key is not None:  # a value over several lines (a view's text)
            details[key] += "\n" + line
    partitions = [c.strip(" `") for c in details.get("Partition Columns", "").strip("[]").split(",") if c.strip(" `")]
    return _table_info(name, columns, details, partitions)
