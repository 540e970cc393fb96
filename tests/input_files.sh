#!/usr/bin/env bash
# Inputs that are not regular files: a FIFO given as the model to `info`,
# as the `run --schedule` file, as a sweep spec and as an ONNX model's
# external data, a directory and a character device given as the model.
# Each must fail at once (exit 1 or 2) with a message naming the path and
# what it is; every call runs under `timeout 10`, so a regression that
# waits on the FIFO fails instead of hanging.  A symbolic link to a regular
# model still loads.
#
# usage: input_files.sh [path/to/opsched]   (default: $OPSCHED_BIN)
# The external-data case needs $OPSCHED_TESTDATA (tests/onnx/make_models.py).
set -u
bin=${1:-${OPSCHED_BIN:-}}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 path/to/opsched"; exit 2
fi
tmp=$(mktemp -d /tmp/opsched_inputs_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
skip=0

# refused NAME PHRASE PATH -- ARGS...: opsched ARGS exits 1 or 2 within 10 s
# and stderr names PATH and holds PHRASE.
refused() {
  local name=$1 phrase=$2 path=$3
  shift 4
  timeout 10 "$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local code=$? ok=1
  if [ $code = 124 ]; then
    echo "FAIL $name: still running after 10 s"; ok=0
  elif [ $code != 1 ] && [ $code != 2 ]; then
    echo "FAIL $name: exit code $code, expected 1 or 2"; ok=0
  fi
  if ! grep -qF -- "$path" "$tmp/err"; then
    echo "FAIL $name: stderr does not name $path:"; head -5 "$tmp/err"; ok=0
  fi
  if ! grep -qF -- "$phrase" "$tmp/err"; then
    echo "FAIL $name: stderr lacks '$phrase':"; head -5 "$tmp/err"; ok=0
  fi
  if grep -qE "AddressSanitizer|runtime error:|LeakSanitizer" "$tmp/err"; then
    echo "FAIL $name: sanitizer report"; head -20 "$tmp/err"; ok=0
  fi
  if [ $ok = 1 ]; then pass=$((pass+1)); echo "ok   $name"; else fail=$((fail+1)); fi
}

mkfifo "$tmp/model.onnx" "$tmp/sched.json" "$tmp/spec.yml"
mkdir "$tmp/dir.onnx"

refused "FIFO as the model" "is a FIFO, not a regular file" "$tmp/model.onnx" -- \
  info "$tmp/model.onnx"
refused "directory as the model" "is a directory" "$tmp/dir.onnx" -- info "$tmp/dir.onnx"
refused "character device as the model" "is a character device" /dev/zero -- info /dev/zero
refused "FIFO as the sweep spec" "is a FIFO, not a regular file" "$tmp/spec.yml" -- \
  sweep "$tmp/spec.yml" --db "$tmp/s.db"
refused "directory as the sweep spec" "is a directory" "$tmp/dir.onnx" -- \
  sweep "$tmp/dir.onnx" --db "$tmp/s.db"

if "$bin" devices 2>/dev/null | grep -q '^cpu:0'; then
  refused "FIFO as run --schedule" "is a FIFO, not a regular file" "$tmp/sched.json" -- \
    run squeezenet1_1 --schedule "$tmp/sched.json" --backend cpu
else
  echo "SKIP FIFO as run --schedule: no cpu device in this build"; skip=$((skip+1))
fi

data=${OPSCHED_TESTDATA:-}/onnx
if [ -f "$data/ext_fifo/model.onnx" ] && [ -f "$data/small/conv_basic.onnx" ]; then
  mkdir "$tmp/ext"
  cp "$data/ext_fifo/model.onnx" "$tmp/ext/model.onnx"
  mkfifo "$tmp/ext/weights.bin"
  # profile loads the weights (info reads shapes only).
  refused "FIFO as ONNX external data" "is a FIFO, not a regular file" "$tmp/ext/weights.bin" -- \
    profile "$tmp/ext/model.onnx" --backend cpu --iters 1 --warmup-ms 1 --min-ms 0 \
    --check off --cuda-graph off --out-dir "$tmp/profile"

  ln -s "$data/small/conv_basic.onnx" "$tmp/link.onnx"
  if timeout 10 "$bin" info "$tmp/link.onnx" >"$tmp/out" 2>"$tmp/err" && [ -s "$tmp/out" ]; then
    pass=$((pass+1)); echo "ok   symbolic link to a model"
  else
    fail=$((fail+1)); echo "FAIL symbolic link to a model:"; head -5 "$tmp/err"
  fi
else
  echo "SKIP external data and link cases: no test data in '$data'"; skip=$((skip+2))
fi

[ $skip = 0 ] || echo "$skip skipped"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
