#!/usr/bin/env bash
# Session 4's H100 call for eager (free-running) prediction, issue 5:
#  1. the GPU tests of the carried build (bench/gpu_s3_tests.sh's list),
#  2. the zoo at batch 1, 8, 32 x 224, 299, 320, free-running with the
#     layers' host times read in the timed free runs (bench/gpu_s3_host.sh,
#     BUDGET_S 300) into OUTDIR/host,
#  3. batch 1 again, minutes later, into OUTDIR/repeat (BUDGET_S 120): how
#     far the host's time repeats, and how well rows of one pass predict the
#     free runs of the other (bench/s4_eager_repeat.py, no GPU).
#   bash bench/gpu_s4_eager.sh OUTDIR    (after tar -C .carry -xJf .carry/carry.tar.xz)
set -uo pipefail
out=${1:-/tmp/s4_eager}
mkdir -p "$out"
. "$(dirname "$0")/gpu_env.sh"
gpu_env_write "$out"
lscpu | grep -E "Model name|^CPU\(s\)|MHz" >> "$out/env.txt"
# STEPS: which of tests, main, repeat to run (default all three, in that order).
steps=${STEPS:-tests main repeat}
case " $steps " in *" tests "*) tests=${TESTS:-test_cuda_gpu test_exec_gpu test_sched_exec_gpu test_conformance test_measure} ;; *) tests= ;; esac
for t in $tests; do
  [ -x .carry/tests/$t ] || continue
  timeout ${TEST_S:-120} ./.carry/tests/$t > "$out/$t.log" 2>&1
  echo "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/$t.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] test' "$out/$t.log" | head -5
done
t0=$SECONDS
case " $steps " in *" main "*)
  BUDGET_S=${MAIN_S:-300} bash bench/gpu_s3_host.sh "$out/host" > "$out/host.log" 2>&1
  echo "main pass: $((SECONDS - t0)) s"; tail -n 4 "$out/host.log" ;;
esac
t0=$SECONDS
case " $steps " in *" repeat "*)
  BATCHES=1 BUDGET_S=${REPEAT_S:-120} bash bench/gpu_s3_host.sh "$out/repeat" > "$out/repeat.log" 2>&1
  echo "repeat pass: $((SECONDS - t0)) s"; tail -n 4 "$out/repeat.log" ;;
esac
