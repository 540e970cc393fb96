#!/usr/bin/env bash
# Session 5's H100 call (issue 5):
#  1. the GPU tests of the carried build and the fp32/NHWC numerics
#     (bench/gpu_s3_tests.sh) into OUTDIR/tests,
#  2. the large 3x3 convolutions the operator grid left out
#     (bench/specs/s5_conv_large.yml) into OUTDIR/conv/h100.db, its device
#     row renamed to data/h100's (as gpu_s4_eager.sh did), for
#     bench/s5_merge.sh.
#   bash bench/gpu_s5.sh OUTDIR    (after tar -C .carry -xJf .carry/carry.tar.xz)
set -uo pipefail
out=${1:-/tmp/s5}
mkdir -p "$out/tests" "$out/conv"
. "$(dirname "$0")/gpu_env.sh"
gpu_env_write "$out"
t0=$SECONDS
case " ${STEPS:-tests conv} " in *" tests "*)
  bash bench/gpu_s3_tests.sh "$out/tests" > "$out/tests.log" 2>&1
  echo "tests: $((SECONDS - t0)) s"; grep -E "rc=" "$out/tests.log" ;;
esac
t0=$SECONDS
case " ${STEPS:-tests conv} " in *" conv "*)
  timeout -k 10 ${CONV_S:-330} $bin sweep bench/specs/s5_conv_large.yml --db "$out/conv/h100.db" \
      > "$out/conv/sweep.log" 2>&1
  echo "conv sweep: rc=$? $((SECONDS - t0)) s: $(tail -n 1 "$out/conv/sweep.log" | cut -c1-160)"
  python3 - "$out/conv/h100.db" data/h100/devices.sql <<'PY'
import re, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
want = re.search(r"\('cuda', '([^']+)'", open(sys.argv[2]).read()).group(1)
for i, uuid, name in c.execute("SELECT id, uuid, name FROM devices WHERE backend = 'cuda'").fetchall():
    print("conv measured on %s %s" % (name, uuid))
    if uuid != want:
        c.execute("UPDATE devices SET uuid = ? WHERE id = ?", (want, i))
        print("device row renamed to data/h100's %s" % want)
print("measurements: %d ok of %d" % (
    c.execute("SELECT count(*) FROM measurements WHERE status = 'ok'").fetchone()[0],
    c.execute("SELECT count(*) FROM measurements").fetchone()[0]))
c.commit()
PY
  ;;
esac
