#!/usr/bin/env bash
# Merges new H100 measurements into the shipped data (data/h100).  Runs
# anywhere (no GPU); from the repository root:
#
#   bash bench/prediction/merge.sh WORKDIR DB...
#
# Each DB is a measurement database written on an H100 (bench/prediction/
# collect.sh's h100.db, bench/prediction/host_rows.sh's host.db, or an
# `opsched sweep` of a bench/specs/prediction_*.yml spec), its CUDA device
# row renamed to data/h100's (gpu_rename_device in bench/gpu_env.sh: the
# device tool lends another H100 unit from call to call).  The shipped data
# are built into WORKDIR/merged.db (bench/prediction/shipped_db.sh), the
# DBs merged into it (`opsched merge`: rows matched by key, the device by
# its uuid, configurations by signature, runs by uuid; idempotent, no row
# copied twice) and the result exported as text into DATA_OUT (default
# data/h100: `git diff --stat data/h100` then shows only added lines).
# Rows to drop (measurements that a new run replaces) are dropped from
# WORKDIR/merged.db between the two steps: MERGE_SQL=FILE is run on it
# (sqlite3 syntax) before the merge.  Then validate: bench/prediction/validate.sh.
set -euo pipefail
work=${1:?usage: bench/prediction/merge.sh WORKDIR DB...}
shift
[ $# -gt 0 ] || { echo "no database to merge" >&2; exit 2; }
data_out=${DATA_OUT:-data/h100}
bin=${OPSCHED_BIN:-build/bin/opsched}
for db in "$@"; do [ -f "$db" ] || { echo "no $db" >&2; exit 2; }; done
mkdir -p "$work"
OPSCHED_BIN=$bin bash bench/prediction/shipped_db.sh "$work/merged.db"
if [ -n "${MERGE_SQL:-}" ]; then
  python3 - "$work/merged.db" "$MERGE_SQL" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
before = c.total_changes
c.executescript(open(sys.argv[2]).read())
c.commit()
print("%s: %d rows changed" % (sys.argv[2], c.total_changes - before))
PY
fi
"$bin" merge "$@" -o "$work/merged.db"
python3 scripts/export-data.py "$work/merged.db" "$data_out"
head -n 1 "$data_out"/*.sql
