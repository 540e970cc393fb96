#!/usr/bin/env bash
# Faults a measurement database must survive, on the CPU backend, as
# docs/RELIABILITY.md promises:
#   - a full disk in the middle of a sweep (a file size limit, ulimit -f):
#     exit 1 naming the file and the space left, every committed row kept,
#     the file passes PRAGMA integrity_check, a re-run completes the rest;
#   - another application's SQLite file, an empty file, a file of a newer
#     schema, given to every command that takes a database: refused (exit 1
#     or 2, the file named) and not changed by a byte; an empty file given
#     to a command that writes is initialised;
#   - a file whose measurements fail to read on their last page: export
#     exits 1, to stdout after the rows before it, with -o leaving no file
#     (and no temporary) or the one that was there;
#   - an older schema: refused by readers, upgraded by a writer after a
#     copy PATH.bak-vN identical to the file as it was;
#   - a read-only file and a read-only directory: status, export and
#     predict work and change nothing (as root, they run as nobody);
#   - two sweeps writing one database at once: both finish, every row there.
#
# usage: store_faults.sh [path/to/opsched]   (default: $OPSCHED_BIN)
# Needs python3 (its sqlite3 module) for the checks.
set -u
bin=${1:-${OPSCHED_BIN:-}}
py=${OPSCHED_PYTHON:-python3}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched"; exit 2
fi
if ! "$bin" devices 2>/dev/null | grep -q '^cpu:0'; then
  echo "SKIP: no cpu device in this build"; echo "0 passed, 0 failed"; exit 0
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
tmp=$(mktemp -d /tmp/opsched_faults_XXXXXX)
chmod 755 "$tmp"
cleanup() { chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
pass=0
fail=0
tried=0
check() { # check NAME COMMAND...: passes when the command succeeds
  local name=$1; shift
  tried=$((tried+1))
  if "$@"; then pass=$((pass+1)); echo "ok   $name"; else fail=$((fail+1)); echo "FAIL $name"; fi
}

# sql DB QUERY: prints the first column of each row.
sql() {
  "$py" - "$1" "$2" <<'EOF'
import sqlite3, sys
con = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
for row in con.execute(sys.argv[2]):
    print(row[0])
EOF
}
sum_of() { cat "$1" "$1-wal" 2>/dev/null | cksum; }
intact() { [ "$(sql "$1" 'PRAGMA integrity_check')" = ok ]; }
rows() { sql "$1" 'SELECT count(*) FROM measurements'; }

# 200 small convolutions, measured quickly.
spec=$tmp/spec.yml
cat > "$spec" <<'EOF'
measure:
  warmup_ms: 1
  warmup_iters: 1
  iters: 1
  min_ms: 1
  sample_us: 0
op: conv2d
params:
  in_channels: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  out_channels: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  height: 4
  kernel: [1, 3]
EOF
total=200
spec2=$tmp/spec2.yml
sed 's/height: 4/height: 5/' "$spec" > "$spec2"

# ---- a full disk in the middle of a sweep ---------------------------------
db=$tmp/full.db
( ulimit -f 160; "$bin" sweep "$spec" --db "$db" >"$tmp/full.out" 2>"$tmp/full.err" )
rc=$?
check "full disk: sweep exits 1" test "$rc" = 1
check "full disk: the message names the database" grep -q "database $db" "$tmp/full.err"
check "full disk: the message gives the space left" grep -q "free on its file system" "$tmp/full.err"
check "full disk: the database passes integrity_check" intact "$db"
measured=$(sed -n 's/^\([0-9]*\) measured.*/\1/p' "$tmp/full.out")
check "full disk: every row reported measured is stored ($measured)" \
  test "$(rows "$db")" = "${measured:-x}"
check "full disk: some rows were committed before the disk filled" test "${measured:-0}" -gt 0
"$bin" sweep "$spec" --db "$db" >"$tmp/resume.out" 2>&1
check "full disk: the re-run with space completes" test $? = 0
check "full disk: $total rows after the re-run" test "$(rows "$db")" = "$total"
check "full disk: nothing measured twice" test "$(sql "$db" \
  'SELECT count(*) FROM (SELECT config_id FROM measurements GROUP BY config_id, settings_key
   HAVING count(*) > 1)')" = 0
check "full disk: the re-run measured only what was missing" \
  grep -q "^$((total - ${measured:-0})) measured" "$tmp/resume.out"
good=$db   # a complete opsched database for the cases below

# ---- a lock held past the wait ----------------------------------------------
# Another process holds an exclusive lock on a rollback-journal copy for 45 s;
# a reader waits its 30 s and gives up naming the file.  Checked at the end.
locked=$tmp/locked.db
cp "$good" "$locked"
"$py" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode = DELETE')" "$locked"
"$py" -c "import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN EXCLUSIVE')
c.execute('DELETE FROM measurements'); open(sys.argv[2], 'w').close(); time.sleep(45)
c.execute('ROLLBACK')" "$locked" "$tmp/locked.ready" &
holder=$!
for _ in $(seq 1 100); do [ -f "$tmp/locked.ready" ] && break; sleep 0.1; done
start=$(date +%s)
( "$bin" status --db "$locked" >/dev/null 2>"$tmp/locked.err"; echo $? > "$tmp/locked.rc";
  echo $(( $(date +%s) - start )) > "$tmp/locked.s" ) &
waiter=$!

# ---- files that are not opsched databases -------------------------------
foreign=$tmp/foreign.db
"$py" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE t (x)');
c.execute('INSERT INTO t VALUES (1)'); c.commit()" "$foreign"
appid=$tmp/appid.db
"$py" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA application_id = 7');
c.execute('PRAGMA user_version = 4'); c.execute('CREATE TABLE devices (x)'); c.commit()" "$appid"
newer=$tmp/newer.db
cp "$good" "$newer"
"$py" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 99');
c.commit(); c.execute('PRAGMA journal_mode = DELETE')" "$newer"
extra=$tmp/extra.db
cp "$good" "$extra"
"$py" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE mine (x)');
c.commit(); c.execute('PRAGMA journal_mode = DELETE')" "$extra"
: > "$tmp/empty.db"

# refused NAME FILE KIND ARGS...: the command (ARGS, FILE in place of @)
# exits 1 or 2, names FILE, and leaves it as it was.
refused() {
  local name=$1 file=$2 kind=$3; shift 3
  local args=() a before
  for a in "$@"; do [ "$a" = @ ] && args+=("$file") || args+=("$a"); done
  before=$(sum_of "$file")
  "$bin" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  check "$kind: $name refused (exit $rc)" test "$rc" = 1 -o "$rc" = 2
  check "$kind: $name names the file" grep -q -- "$file" "$tmp/err"
  check "$kind: $name leaves the file unchanged" test "$before" = "$(sum_of "$file")"
}

m=(--math fp32 --quiet)
# The writing commands, each as quick as it goes on the CPU (a refused file
# stops them before they measure anything).
prof=(profile squeezenet1_1 --backend cpu --input-size 32 --iters 2 --warmup-ms 0 --check off
      --layers off --cuda-graph off)
runc=(run squeezenet1_1 --backend cpu --input-size 32 --compare sequential --iters 1 --min-ms 0
      --warmup-ms 0 --check off)
calib=(devices --calibrate --backend cpu --math fp32)
smeas=(schedule squeezenet1_1 --cost measure --backend cpu --searcher sequential --input-size 32
       --quiet)
adapt=(sweep --adaptive --backend cpu --max-rounds 1 --per-round 2 --rounds 10 --folds 2
       --budget-s 5 --iters 1 --min-ms 1 --warmup-ms 0)
for kind in foreign appid newer extra empty; do
  f=$tmp/$kind.db
  refused "status" "$f" "$kind" status --db @
  refused "export" "$f" "$kind" export csv --db @ -o "$tmp/x.csv"
  refused "predict" "$f" "$kind" predict squeezenet1_1 --input-size 32 --db @ "${m[@]}"
  refused "validate" "$f" "$kind" validate --db @
  refused "train-model" "$f" "$kind" train-model --db @ "${m[@]}"
  refused "schedule --cost predict" "$f" "$kind" schedule squeezenet1_1 --cost predict --db @ \
    --math fp32
  refused "merge (source)" "$f" "$kind" merge @ -o "$tmp/merged-$kind.db"
  [ "$kind" = empty ] && continue
  refused "sweep" "$f" "$kind" sweep "$spec" --db @
  refused "merge (output)" "$f" "$kind" merge "$good" -o @
  refused "profile --db" "$f" "$kind" "${prof[@]}" --out-dir "$tmp/prof-$kind" --db @
  refused "run --db" "$f" "$kind" "${runc[@]}" --db @
  refused "devices --calibrate --db" "$f" "$kind" "${calib[@]}" --db @
  refused "schedule --cost measure" "$f" "$kind" "${smeas[@]}" --db @
  refused "sweep --adaptive" "$f" "$kind" "${adapt[@]}" --db @
done
check "newer schema: the message says so" sh -c "'$bin' status --db '$newer' 2>&1 |
  grep -q 'written by a newer opsched'"

# An empty file given to a command that writes becomes an opsched database.
"$bin" merge "$good" -o "$tmp/empty.db" >/dev/null 2>&1
check "empty: merge -o initialises it" test $? = 0
check "empty: it then holds the rows" test "$(rows "$tmp/empty.db")" = "$total"
check "empty: it carries opsched's application_id" \
  test "$(sql "$tmp/empty.db" 'PRAGMA application_id')" = 1330664259
# ... also for the other writing commands (sql: the query's answer).
initialised() { # initialised NAME QUERY ARGS... (@: a new empty file)
  local name=$1 query=$2; shift 2
  local f=$tmp/empty-$name.db args=() a
  : > "$f"
  for a in "$@"; do [ "$a" = @ ] && args+=("$f") || args+=("$a"); done
  "$bin" "${args[@]}" >/dev/null 2>"$tmp/init.err"
  local rc=$?
  check "empty: $name initialises it (exit $rc)" test "$rc" = 0
  check "empty: $name leaves opsched's application_id" \
    test "$(sql "$f" 'PRAGMA application_id')" = 1330664259
  check "empty: $name stores its rows" test "$(sql "$f" "$query")" -gt 0
}
initialised profile 'SELECT count(*) FROM network_runs' "${prof[@]}" --out-dir "$tmp/prof-empty" --db @
initialised run 'SELECT count(*) FROM stages' "${runc[@]}" --db @
initialised "schedule --cost measure" 'SELECT count(*) FROM stages' "${smeas[@]}" --db @
initialised "devices --calibrate" 'SELECT count(*) FROM calibrations' "${calib[@]}" --db @
# An adaptive sweep learns from the measurements there are: none.
: > "$tmp/empty-adaptive.db"
"$bin" "${adapt[@]}" --db "$tmp/empty-adaptive.db" >/dev/null 2>"$tmp/adapt.err"
check "empty: sweep --adaptive has nothing to learn from (exit 1)" test $? = 1
check "empty: sweep --adaptive names the file" grep -q -- "$tmp/empty-adaptive.db" "$tmp/adapt.err"

# ---- a database corrupt past its header: export fails mid-way -----------------
# The last leaf page of the measurements table gets an invalid page type: the
# file opens and passes opsched's checks (application_id, schema, tables), the
# rows of every other page read, and the cursor fails on that page.
corrupt=$tmp/corrupt.db
cp "$good" "$corrupt"
off=$("$py" - "$corrupt" <<'EOF'
import sqlite3, struct, sys
db = sys.argv[1]
c = sqlite3.connect("file:" + db + "?mode=ro", uri=True)
size = c.execute("PRAGMA page_size").fetchone()[0]
page = c.execute("SELECT rootpage FROM sqlite_master WHERE name = 'measurements'").fetchone()[0]
c.close()
data = open(db, "rb").read()
at = lambda p: (p - 1) * size + (100 if p == 1 else 0)
if data[at(page)] != 5:
    sys.exit("the measurements table is one page")
while data[at(page)] == 5:          # interior table page: follow its right-most child
    page = struct.unpack(">I", data[at(page) + 8:at(page) + 12])[0]
print(at(page))
EOF
)
check "corrupt: the last leaf page of the measurements found (offset ${off:-none})" test -n "$off"
printf '\377\377\377\377\377\377\377\377' | dd of="$corrupt" bs=1 seek="${off:-0}" conv=notrunc 2>/dev/null
before=$(sum_of "$corrupt")
exp=$tmp/exp
mkdir "$exp"
# To stdout: what was read is already written when the failure comes; the
# exit status is the only sign the CSV is short, so a consumer reading
# opsched's stdout (a pipe, a redirection) must check it.
"$bin" export --db "$corrupt" >"$exp/stdout.csv" 2>"$tmp/corrupt.err"
check "corrupt: export to stdout exits 1" test $? = 1
check "corrupt: ... names the file" grep -q -- "$corrupt" "$tmp/corrupt.err"
check "corrupt: ... after the header" grep -q '^Batch size,' "$exp/stdout.csv"
lines=$(wc -l < "$exp/stdout.csv")
check "corrupt: ... and some rows ($((lines - 1)) of $total): it failed mid-way" \
  test "$lines" -gt 1 -a "$lines" -le "$total"
rm "$exp/stdout.csv"
"$bin" export --db "$corrupt" -o "$exp/out.csv" >/dev/null 2>"$tmp/corrupt.err"
check "corrupt: export -o exits 1" test $? = 1
check "corrupt: export -o names the file" grep -q -- "$corrupt" "$tmp/corrupt.err"
check "corrupt: export -o leaves no file under the name" test ! -e "$exp/out.csv"
check "corrupt: export -o leaves no temporary" test -z "$(ls -A "$exp")"
echo "the export of yesterday" > "$exp/out.csv"
sum=$(cksum < "$exp/out.csv")
"$bin" export --db "$corrupt" -o "$exp/out.csv" >/dev/null 2>"$tmp/corrupt.err"
check "corrupt: export -o over an existing file exits 1" test $? = 1
check "corrupt: ... the file kept byte for byte" test "$sum" = "$(cksum < "$exp/out.csv")"
check "corrupt: ... and no temporary left" test "$(ls -A "$exp")" = out.csv
check "corrupt: the database is unchanged" test "$before" = "$(sum_of "$corrupt")"

# ---- an older schema ----------------------------------------------------------
old=$tmp/old.db
cp "$good" "$old"
"$py" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('DROP TABLE stages'); c.execute('DROP TABLE collectives');
c.execute('PRAGMA user_version = 3'); c.execute('PRAGMA application_id = 0'); c.commit();
c.execute('PRAGMA journal_mode = DELETE')" "$old"
refused "status" "$old" "older schema" status --db @
cp "$old" "$tmp/old-as-it-was.db"
"$bin" sweep "$spec" --db "$old" >"$tmp/old.out" 2>&1
check "older schema: a sweep upgrades it" test $? = 0
check "older schema: the copy is kept as .bak-v3" test -f "$old.bak-v3"
# dump DB: the database as SQL text (its schema and every row).
dump() {
  "$py" -c "import sqlite3, sys; c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)
print(c.execute('PRAGMA user_version').fetchone()[0]); print('\n'.join(c.iterdump()))" "$1"
}
check "older schema: the copy holds the file as it was" \
  test "$(dump "$old.bak-v3")" = "$(dump "$tmp/old-as-it-was.db")"
check "older schema: now schema 5" test "$(sql "$old" 'PRAGMA user_version')" = 5
check "older schema: the rows are kept" test "$(rows "$old")" = "$total"

# ---- read-only files and directories ------------------------------------------
# As root, permissions do not bind; the readers run as nobody.
as_reader() {
  if [ "$(id -u)" = 0 ]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
  else
    "$@"
  fi
}
if [ "$(id -u)" = 0 ] && ! setpriv --reuid=65534 --regid=65534 --clear-groups -- true 2>/dev/null
then
  echo "SKIP read-only cases: cannot drop root with setpriv"
else
  ro=$tmp/ro
  mkdir "$ro"
  cp "$good" "$ro/m.db"
  "$bin" train-model --db "$ro/m.db" "${m[@]}" >/dev/null 2>&1   # models for predict
  "$py" -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" "$ro/m.db"
  rm -f "$ro/m.db-wal" "$ro/m.db-shm"
  chmod -R a+rX "$ro"
  for where in file directory; do
    chmod 444 "$ro/m.db"
    [ "$where" = directory ] && chmod 555 "$ro" "$ro/m.db.models"
    before=$(sum_of "$ro/m.db")
    as_reader "$bin" status --db "$ro/m.db" >"$tmp/s.out" 2>"$tmp/s.err"
    check "read-only $where: status works" test $? = 0
    check "read-only $where: status counts the rows" \
      grep -q "^  measurements *$total\$" "$tmp/s.out"
    as_reader "$bin" export csv --db "$ro/m.db" >"$tmp/e.csv" 2>"$tmp/e.err"
    check "read-only $where: export works" test $? = 0
    check "read-only $where: export writes every row" test "$(($(wc -l < "$tmp/e.csv") - 1))" = "$total"
    as_reader "$bin" predict squeezenet1_1 --input-size 32 --db "$ro/m.db" "${m[@]}" \
      >"$tmp/p.out" 2>"$tmp/p.err"
    prc=$?
    # The spec measured other layers than squeezenet's: predict reads the
    # database and either answers or says what it holds (exit 1), never
    # "not writable".
    check "read-only $where: predict reads it" eval \
      '[ $prc = 0 ] || { [ $prc = 1 ] && grep -q "holds (measurements" "$tmp/p.err"; }'
    check "read-only $where: the file is unchanged" test "$before" = "$(sum_of "$ro/m.db")"
    [ -s "$tmp/s.err" ] && cat "$tmp/s.err"
    [ -s "$tmp/p.err" ] && cat "$tmp/p.err"
  done
  # A reader must not be able to write through the store either.
  as_reader "$bin" sweep "$spec" --db "$ro/m.db" >/dev/null 2>"$tmp/w.err"
  check "read-only directory: a sweep fails cleanly (exit 1)" test $? = 1
  check "read-only directory: ... naming the file" grep -q "$ro/m.db" "$tmp/w.err"
  chmod 755 "$ro" "$ro/m.db.models"
  chmod 644 "$ro/m.db"
fi

# ---- a WAL with content beside a file in a read-only directory ----------------
if [ "$(id -u)" != 0 ] || setpriv --reuid=65534 --regid=65534 --clear-groups -- true 2>/dev/null
then
  pend=$tmp/pending
  mkdir "$pend"
  cp "$good" "$pend/m.db"
  "$py" -c "import sqlite3, sys, shutil
c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_autocheckpoint = 0')
c.execute('DELETE FROM measurements WHERE id % 2 = 0'); c.commit()
for x in ('', '-wal'): shutil.copy(sys.argv[1] + x, sys.argv[2] + x)
c.close()" "$pend/m.db" "$pend/copy.db"
  rm -f "$pend/m.db"*
  chmod 555 "$pend"; chmod 444 "$pend"/*
  before=$(sum_of "$pend/copy.db")
  as_reader "$bin" status --db "$pend/copy.db" >/dev/null 2>"$tmp/pend.err"
  check "pending WAL, read-only directory: status refuses (exit 1)" test $? = 1
  check "pending WAL, read-only directory: ... saying why" grep -q "copy.db-wal" "$tmp/pend.err"
  check "pending WAL, read-only directory: the file is unchanged" \
    test "$before" = "$(sum_of "$pend/copy.db")"
  chmod 755 "$pend"
fi

# ---- a write interrupted in rollback-journal mode (a hot journal) -------------
hot=$tmp/hot.db
cp "$good" "$hot"
"$py" -c "import sqlite3, sys, os
c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode = DELETE'); c.close()
if os.fork() == 0:
    c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA cache_size = 1'); c.execute('BEGIN')
    c.execute('DELETE FROM measurements'); os._exit(0)
os.wait()" "$hot"
check "hot journal: there is one" test -s "$hot-journal"
before=$(sum_of "$hot")
"$bin" status --db "$hot" >/dev/null 2>"$tmp/hot.err"
check "hot journal: status refuses (exit 1)" test $? = 1
check "hot journal: ... saying why" grep -q "hot.db-journal must be rolled back" "$tmp/hot.err"
check "hot journal: ... and leaves the file as it was" test "$before" = "$(sum_of "$hot")"
"$bin" sweep "$spec" --db "$hot" >/dev/null 2>&1
check "hot journal: a sweep rolls it back and goes on" test $? = 0
check "hot journal: every committed row is there" test "$(rows "$hot")" = "$total"
check "hot journal: the file passes integrity_check" intact "$hot"

# ---- two sweeps on one database at once ----------------------------------------
both=$tmp/both.db
"$bin" sweep "$spec" --db "$both" >"$tmp/a.out" 2>&1 &
pa=$!
"$bin" sweep "$spec2" --db "$both" >"$tmp/b.out" 2>&1 &
pb=$!
wait "$pa"; ra=$?
wait "$pb"; rb=$?
check "two sweeps: the first finishes" test "$ra" = 0
check "two sweeps: the second finishes" test "$rb" = 0
check "two sweeps: the database passes integrity_check" intact "$both"
check "two sweeps: every row of both is there" test "$(rows "$both")" = $((2 * total))
check "two sweeps: two runs, both done" test "$(sql "$both" \
  "SELECT count(*) FROM runs WHERE status = 'done'")" = 2

wait "$waiter"
wait "$holder"
check "locked: a reader gives up (exit 1)" test "$(cat "$tmp/locked.rc")" = 1
check "locked: ... after waiting about 30 s" test "$(cat "$tmp/locked.s")" -ge 29
check "locked: ... saying so and naming the file" \
  grep -q "database $locked is locked by another process; gave up after waiting 30 s" \
  "$tmp/locked.err"

echo "$tried cases tried"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
