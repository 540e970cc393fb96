#!/usr/bin/env bash
# Runs one of the fuzzers for a while:
#   scripts/run-fuzz.sh BIN SECONDS [SEEDS [REGRESSIONS]]
# BIN is a build-fuzz/bin/fuzz_<name> (see `make fuzz`); SEEDS its committed
# seed corpus (default tests/fuzz/corpus, the ONNX importer's: its files,
# not its sub-folders, which hold the other targets' seeds) and REGRESSIONS
# where inputs that crashed it are kept (default tests/fuzz/regressions).
# The seeds are copied to a temporary folder, so the run never changes the
# repository, except that an input that crashes is kept in REGRESSIONS
# (commit it with the fix).  Every input kept there is replayed first, as
# part of the corpus.
set -euo pipefail

bin=${1:?usage: run-fuzz.sh FUZZER_BINARY SECONDS [SEEDS [REGRESSIONS]]}
secs=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
seeds=${3:-$root/tests/fuzz/corpus}
regressions=${4:-$root/tests/fuzz/regressions}

[ -x "$bin" ] || { echo "run-fuzz.sh: $bin is not an executable" >&2; exit 2; }
[ -d "$seeds" ] || { echo "run-fuzz.sh: no seed folder $seeds" >&2; exit 2; }
mkdir -p "$regressions"
work=$(mktemp -d "${TMPDIR:-/tmp}/opsched-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus" "$work/replay"
find "$seeds" -maxdepth 1 -type f -exec cp {} "$work/corpus/" \;
# libFuzzer reads corpus folders recursively: the regressions are replayed
# from a flat copy, so another target's sub-folder is not fed to this one.
find "$regressions" -maxdepth 1 -type f -exec cp {} "$work/replay/" \;

# The fuzz build compiles UBSan in recover mode: make undefined behaviour
# stop the run (and keep the input) like a crash does.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# New inputs go to the first folder (the copy); crashes, leaks and timeouts
# to REGRESSIONS.
# A fixed seed (FUZZ_SEED, default 1) makes the run repeatable: the inputs
# CI tries in its minute are the first ones a longer run with this seed tried.
"$bin" -seed="${FUZZ_SEED:-1}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=25 \
       -artifact_prefix="$regressions/" -print_final_stats=1 \
       "$work/corpus" "$work/replay"
