#!/usr/bin/env python3
"""Export an opsched measurement database as the SQL text opsched ships.

usage: scripts/export-data.py DB OUTDIR [--device PART]...

Writes OUTDIR/{devices,runs,configs,measurements,network_runs,calibrations}.sql,
and collectives.sql when the database holds measured collectives:
one file per table, a header line that the loader checks
("-- opsched data: table=T schema=N rows=N"), then INSERTs with an
explicit column list, one row per line (a line break inside a text is
written as || char(10) ||, so a row never spans lines; the loader names
the line of a row it cannot insert); a new INSERT starts at rows chosen by
a hash of their text, about every 32 rows.  Foreign keys are written as
lookups by key - a run by its uuid, a device by (backend, uuid), a
configuration by its signature - so the text does not depend on row ids,
and rows are ordered by those keys, so exporting again after more
measurements changes only the lines of the new rows.  Values are written
exactly (floats as the shortest text that reads back to the same double).

The files are what `opsched predict --device NAME` builds its database
from when OUTDIR is data/NAME (src/store/shipped.c).

--device PART keeps only devices whose name or uuid contains PART (case
insensitive), and the runs, configurations and rows that belong to them.
"""
import argparse
import hashlib
import math
import os
import sqlite3
import sys

TABLES = ["devices", "runs", "configs", "measurements", "network_runs", "calibrations",
          "collectives"]
# Tables written only when they hold rows (data sets from before them lack the file).
OPTIONAL = {"collectives"}
# Rows per INSERT statement, on average.
CHUNK = 32
# The newest schema this script knows; a newer database is refused.  Schema
# 4's stages table (measured schedule stages, a per-device cache) is not
# exported.
SCHEMA = 5

# Each table's foreign keys: column -> (how the lookup is written, the
# source columns it is made of).
DEVICE_KEY = ("(SELECT id FROM devices WHERE backend = {} AND uuid = {})", "d.backend", "d.uuid")
RUN_KEY = ("(SELECT id FROM runs WHERE uuid = {})", "r.uuid")
CONFIG_KEY = ("(SELECT id FROM configs WHERE signature = {})", "c.signature")

JOINS = {
    "measurements": (
        {"run_id": RUN_KEY, "device_id": DEVICE_KEY, "config_id": CONFIG_KEY},
        "x JOIN runs r ON r.id = x.run_id JOIN devices d ON d.id = x.device_id"
        " JOIN configs c ON c.id = x.config_id",
        "d.backend, d.uuid, c.signature, x.settings_key, x.created_at, r.uuid, x.id",
    ),
    "network_runs": (
        {"run_id": RUN_KEY, "device_id": DEVICE_KEY},
        "x JOIN runs r ON r.id = x.run_id JOIN devices d ON d.id = x.device_id",
        "d.backend, d.uuid, x.model, x.batch, x.input_size, x.input_width, x.algo_policy,"
        " x.math, x.layout, x.mode, x.created_at, r.uuid, x.id",
    ),
    "calibrations": (
        {"device_id": DEVICE_KEY},
        "x JOIN devices d ON d.id = x.device_id",
        "d.backend, d.uuid, x.math",
    ),
    "collectives": (
        {"run_id": RUN_KEY, "device_id": DEVICE_KEY},
        "x JOIN runs r ON r.id = x.run_id JOIN devices d ON d.id = x.device_id",
        "d.backend, d.uuid, x.collective, x.dtype, x.ranks, x.nodes, x.bytes, x.created_at,"
        " r.uuid, x.id",
    ),
    "devices": ({}, "x", "x.backend, x.uuid"),
    "runs": ({}, "x", "x.started_at, x.uuid"),
    "configs": ({}, "x", "x.signature"),
}


_READER = sqlite3.connect(":memory:")
# Whether the database has schema 5's collectives table (set by main).
HAS_COLLECTIVES = False


def float_literal(v):
    """The shortest decimal text that SQLite itself reads back as exactly v.

    Python's repr is the shortest text that reads back exactly under correct
    rounding, but SQLite's own text-to-double conversion (3.40) is not
    correctly rounded: about one value in twenty thousand comes back one unit
    in the last place away. More digits settle it; the reader is asked."""
    for text in [repr(v)] + ["%.*g" % (d, v) for d in (17, 18, 19, 20, 21, 25)]:
        if _READER.execute("SELECT " + text).fetchone()[0] == v:
            return text
    raise ValueError("no decimal text that SQLite reads back as %r" % v)


def literal(v):
    """An SQL literal that reads back as exactly v."""
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NULL"
        if math.isinf(v):
            return "9e999" if v > 0 else "-9e999"
        return float_literal(v)
    if isinstance(v, bytes):
        return "X'" + v.hex() + "'"
    text = str(v).replace("'", "''")
    if "\n" not in text and "\r" not in text:
        return "'" + text + "'"
    # One row per line: line breaks become char() calls.
    parts, piece = [], ""
    for ch in text:
        if ch in "\r\n":
            parts.append("'" + piece + "'")
            parts.append("char(13)" if ch == "\r" else "char(10)")
            piece = ""
        else:
            piece += ch
    parts.append("'" + piece + "'")
    return "(" + " || ".join(parts) + ")"


def columns(db, table):
    """The table's columns in schema order, without id."""
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})") if row[1] != "id"]


def device_filter(db, parts):
    """Ids of the devices to keep (None: all)."""
    if not parts:
        return None
    keep = set()
    for did, name, uuid in db.execute("SELECT id, name, uuid FROM devices"):
        text = f"{name} {uuid}".lower()
        if any(p.lower() in text for p in parts):
            keep.add(did)
    if not keep:
        sys.exit(f"export-data: no device matches {', '.join(parts)}")
    return keep


def where_clause(table, keep):
    """Restricts rows to the kept devices (and what their rows refer to)."""
    if keep is None:
        return "", []
    ids = sorted(keep)
    marks = ", ".join("?" * len(ids))
    if table == "devices":
        return f" WHERE x.id IN ({marks})", ids
    if table in ("measurements", "network_runs", "calibrations", "collectives"):
        return f" WHERE x.device_id IN ({marks})", ids
    if table == "runs":
        sources = ["measurements", "network_runs"] + (["collectives"] if HAS_COLLECTIVES else [])
        return (
            " WHERE " + " OR ".join(
                f"x.id IN (SELECT run_id FROM {t} WHERE device_id IN ({marks}))" for t in sources),
            ids * len(sources),
        )
    if table == "configs":
        return (
            f" WHERE x.id IN (SELECT config_id FROM measurements WHERE device_id IN ({marks}))",
            ids,
        )
    raise ValueError(table)


def starts_statement(line):
    """Whether a row begins a new INSERT: by a hash of its own text, so the
    statements hold about CHUNK rows each and a row added or removed moves
    no boundary but its own (SQLite prepares a statement of thousands of
    rows with subqueries in quadratic time, so one INSERT per table would
    not do)."""
    return hashlib.blake2b(line.encode(), digest_size=4).digest()[0] % CHUNK == 0


def export_table(db, table, keep, out_path, version):
    fks, source, order = JOINS[table]
    cols = columns(db, table)
    select = []
    for col in cols:
        if col in fks:
            select.extend(fks[col][1:])
        else:
            select.append("x." + col)
    where, params = where_clause(table, keep)
    sql = f"SELECT {', '.join(select)} FROM {table} {source}{where} ORDER BY {order}"
    rows = db.execute(sql, params).fetchall()
    lines = []
    for row in rows:
        values, i = [], 0
        for col in cols:
            if col in fks:
                pattern, *keys = fks[col]
                values.append(pattern.format(*(literal(row[i + k]) for k in range(len(keys)))))
                i += len(keys)
            else:
                values.append(literal(row[i]))
                i += 1
        lines.append("(" + ", ".join(values) + ")")
    head = f"INSERT INTO {table} ({', '.join(cols)}) VALUES\n"
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"-- opsched data: table={table} schema={version} rows={len(rows)}\n")
        for n, line in enumerate(lines):
            if n == 0 or starts_statement(line):
                f.write(head)
            last = n == len(lines) - 1 or starts_statement(lines[n + 1])
            f.write(line + (";\n" if last else ",\n"))
    os.replace(tmp, out_path)
    return len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db", help="opsched measurement database")
    ap.add_argument("outdir", help="folder for the .sql files (e.g. data/h100)")
    ap.add_argument("--device", action="append", default=[],
                    help="keep only devices whose name or uuid contains this (repeatable)")
    args = ap.parse_args()
    if not os.path.isfile(args.db):
        sys.exit(f"export-data: {args.db}: no such file")
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version < 2 or version > SCHEMA:
        sys.exit(f"export-data: {args.db} has schema {version}; this script reads 2 to {SCHEMA}"
                 " (open it once with opsched to upgrade it)")
    present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    global HAS_COLLECTIVES
    HAS_COLLECTIVES = "collectives" in present
    keep = device_filter(db, args.device)
    os.makedirs(args.outdir, exist_ok=True)
    for table in TABLES:
        path = os.path.join(args.outdir, table + ".sql")
        if table in OPTIONAL and table not in present:
            continue
        if table not in present:  # schema 2: no calibrations yet
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(f"-- opsched data: table={table} schema={version} rows=0\n")
            print(f"{path}: 0 rows (no {table} table in {args.db})")
            continue
        n = export_table(db, table, keep, path, version)
        if n == 0 and table in OPTIONAL:
            os.remove(path)
            continue
        print(f"{path}: {n} rows")
    db.close()


if __name__ == "__main__":
    main()
