#!/usr/bin/env bash
# Writes the database the shipped H100 data (data/h100, or $OPSCHED_DATA_DIR's
# h100) builds into OUT.db, replacing it: the base bench/prediction/merge.sh
# merges new measurements into.  From the repository root:
#   bash bench/prediction/shipped_db.sh OUT.db
set -euo pipefail
dst=${1:?usage: bench/prediction/shipped_db.sh OUT.db}
bin=${OPSCHED_BIN:-build/bin/opsched}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
OPSCHED_CACHE_DIR=$cache "$bin" predict alexnet --data h100 --no-fit > /dev/null 2>&1
rm -f "$dst"
cp "$cache"/h100-*.db "$dst"
