#!/usr/bin/env bash
# Runs the ONNX importer's fuzzer for a while:
#   scripts/run-fuzz.sh BIN SECONDS
# BIN is build-fuzz/bin/fuzz_onnx (see `make fuzz`).  The committed seed
# corpus is copied to a temporary folder, so the run never changes the
# repository, except that an input that crashes is kept in
# tests/fuzz/regressions/ (commit it with the fix).  Every input kept there
# is replayed first, as part of the corpus.
set -euo pipefail

bin=${1:?usage: run-fuzz.sh FUZZER_BINARY SECONDS}
secs=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
seeds="$root/tests/fuzz/corpus"
regressions="$root/tests/fuzz/regressions"

[ -x "$bin" ] || { echo "run-fuzz.sh: $bin is not an executable" >&2; exit 2; }
mkdir -p "$regressions"
work=$(mktemp -d "${TMPDIR:-/tmp}/opsched-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
cp "$seeds"/* "$work/corpus/"

# The fuzz build compiles UBSan in recover mode: make undefined behaviour
# stop the run (and keep the input) like a crash does.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# New inputs go to the first folder (the copy); crashes, leaks and timeouts
# to regressions/.
# A fixed seed (FUZZ_SEED, default 1) makes the run repeatable: the inputs
# CI tries in its minute are the first ones a longer run with this seed tried.
"$bin" -seed="${FUZZ_SEED:-1}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=25 \
       -artifact_prefix="$regressions/" -print_final_stats=1 \
       "$work/corpus" "$seeds" "$regressions"
