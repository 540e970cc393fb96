#!/usr/bin/env bash
# Merges what bench/gpu_s5.sh measured into the shipped H100 data.  Runs
# anywhere (no GPU); from the repository root:
#
#   bash bench/s5_merge.sh WORKDIR DB...
#
# Each DB is a gpu_s5.sh database (device row already renamed to
# data/h100's): OUTDIR/conv/h100.db (step conv: the large 3x3 convolutions
# of bench/specs/s5_conv_large.yml) or OUTDIR/reprofile/h100.db (step
# reprofile: googlenet, inception_v3 and squeezenet1_1 profiled again and
# the zoo's operators at size 256 measured again on today's build).  With a
# reprofile database, the network runs of data/h100's profiles of those
# three networks of 2026-11-22 (runs 98abcb05..., 69c594b7..., cdb10fdb...,
# measured before commit 43aced7 replaced the Concat kernel) go, as
# densenet121's went in session 4; their layers measured alone stay, and the
# new profiles', measured later, are the ones the predictor takes (the
# latest per configuration).  Merging is idempotent (opsched merge copies
# no row twice).  Writes WORKDIR/merged.db and DATA_OUT (default
# data/h100).
set -euo pipefail
work=${1:?usage: bench/s5_merge.sh WORKDIR DB...}
shift
[ $# -gt 0 ] || { echo "no database to merge" >&2; exit 2; }
data_out=${DATA_OUT:-data/h100}
bin=${OPSCHED_BIN:-build/bin/opsched}
for db in "$@"; do [ -f "$db" ] || { echo "no $db" >&2; exit 2; }; done
mkdir -p "$work"
OPSCHED_BIN=$bin bash bench/shipped_db.sh "$work/merged.db"
reprofile=0
for db in "$@"; do
  case "$db" in */reprofile/*) reprofile=1 ;; esac
done
python3 - "$work/merged.db" "$reprofile" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
if sys.argv[2] == "1":
    n = c.execute("DELETE FROM network_runs WHERE model IN ('googlenet', 'inception_v3',"
                  " 'squeezenet1_1') AND run_id IN (SELECT id FROM runs WHERE uuid IN"
                  " ('98abcb05d81b20c85f506604df91e63f', '69c594b76eb2fe589ae4a5c1bcfd9020',"
                  " 'cdb10fdb0b9338b315ac215fd2e7d339'))").rowcount
    print("network runs of the old Concat removed: %d" % n)
c.commit()
PY
"$bin" merge "$@" -o "$work/merged.db"
python3 scripts/export-data.py "$work/merged.db" "$data_out"
head -n 1 "$data_out"/*.sql
