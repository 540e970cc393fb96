#!/usr/bin/env bash
# The recorded fuzz run: every fuzzer of `make fuzz` for SECONDS each (600
# for the record), one after the other, with the sanitizers of the fuzz
# build, and what each did written to OUTDIR/fuzz.md (and the raw logs
# beside it):
#   scripts/fuzz-record.sh FUZZ_BUILD SECONDS OUTDIR [NAME...]
# NAME: onnx, onnx_run, sweep_spec and the parsers of FUZZ_PARSERS (default: all).
# Exit 1 when any fuzzer found a crash, a leak or undefined behaviour (the
# input is kept in tests/fuzz/regressions/ as in `make fuzz`).
set -uo pipefail
build=${1:?usage: fuzz-record.sh FUZZ_BUILD SECONDS OUTDIR [NAME...]}
secs=${2:?seconds}
out=${3:?outdir}
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(onnx onnx_run sweep_spec sched_json shipped_sql npy predict_meta)
mkdir -p "$out"
md=$out/fuzz.md
{
  echo "# Fuzzing record"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(uname -srm); $(nproc) cores"
  echo "- compiler: $(clang --version | head -1); libFuzzer with AddressSanitizer and"
  echo "  UndefinedBehaviorSanitizer (halt on error); $secs s per fuzzer, seed 1"
  echo "- opsched commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "- command: scripts/fuzz-record.sh $build $secs $out ${names[*]}"
  echo
  echo "| fuzzer | seconds | inputs executed | execs/s | coverage (edges) | corpus | crashes |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
} > "$md.tmp"
bad=0
for n in "${names[@]}"; do
  bin=$build/bin/fuzz_$n
  log=$out/fuzz_$n.log
  case $n in
    onnx) seeds=$root/tests/fuzz/corpus regs=$root/tests/fuzz/regressions ;;
    onnx_run) seeds=$root/tests/fuzz/corpus regs=$root/tests/fuzz/regressions/onnx_run ;;
    sweep_spec)
      seeds=$(mktemp -d)
      cp "$root"/examples/sweeps/*.yml "$root"/bench/specs/*.yml "$root"/tests/fuzz/sweep_corpus/*.yml "$seeds"/
      regs=$root/tests/fuzz/regressions ;;
    *) seeds=$root/tests/fuzz/corpus/$n regs=$root/tests/fuzz/regressions/$n ;;
  esac
  start=$(date +%s)
  "$root/scripts/run-fuzz.sh" "$bin" "$secs" "$seeds" "$regs" > "$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  crashes=0
  if [ $rc != 0 ]; then crashes=1; bad=1; fi
  echo "| fuzz_$n | $took | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${corp:-?} | $crashes |" >> "$md.tmp"
  echo "fuzz_$n: $took s, ${execs:-?} inputs, exit $rc" >&2
done
mv "$md.tmp" "$md"
exit $bad
