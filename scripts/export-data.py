#!/usr/bin/env python3
"""Export an opsched measurement database as the SQL text opsched ships.

usage: scripts/export-data.py DB OUTDIR [--device PART]...

Writes OUTDIR/{devices,runs,configs,measurements,network_runs,calibrations}.sql:
one file per table, a header line that the loader checks
("-- opsched data: table=T schema=N rows=N"), then one INSERT per row, one
row per line, with an explicit column list.  Foreign keys are written as
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
import math
import os
import sqlite3
import sys

TABLES = ["devices", "runs", "configs", "measurements", "network_runs", "calibrations"]
# The newest schema this script knows; a newer database is refused.  Schema
# 4's stages table (measured schedule stages, a per-device cache) is not
# exported.
SCHEMA = 4

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
    "devices": ({}, "x", "x.backend, x.uuid"),
    "runs": ({}, "x", "x.started_at, x.uuid"),
    "configs": ({}, "x", "x.signature"),
}


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
        return repr(v)
    if isinstance(v, bytes):
        return "X'" + v.hex() + "'"
    return "'" + str(v).replace("'", "''") + "'"


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
    if table in ("measurements", "network_runs", "calibrations"):
        return f" WHERE x.device_id IN ({marks})", ids
    if table == "runs":
        return (
            f" WHERE x.id IN (SELECT run_id FROM measurements WHERE device_id IN ({marks}))"
            f" OR x.id IN (SELECT run_id FROM network_runs WHERE device_id IN ({marks}))",
            ids + ids,
        )
    if table == "configs":
        return (
            f" WHERE x.id IN (SELECT config_id FROM measurements WHERE device_id IN ({marks}))",
            ids,
        )
    raise ValueError(table)


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
    head = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ("
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"-- opsched data: table={table} schema={version} rows={len(rows)}\n")
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
            f.write(head + ", ".join(values) + ");\n")
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
    keep = device_filter(db, args.device)
    os.makedirs(args.outdir, exist_ok=True)
    for table in TABLES:
        path = os.path.join(args.outdir, table + ".sql")
        if table not in present:  # schema 2: no calibrations yet
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(f"-- opsched data: table={table} schema={version} rows=0\n")
            print(f"{path}: 0 rows (no {table} table in {args.db})")
            continue
        n = export_table(db, table, keep, path, version)
        print(f"{path}: {n} rows")
    db.close()


if __name__ == "__main__":
    main()
