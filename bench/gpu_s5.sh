#!/usr/bin/env bash
# Session 5's H100 call (issue 5):
#  1. the GPU tests of the carried build and the fp32/NHWC numerics
#     (bench/gpu_s3_tests.sh) into OUTDIR/tests,
#  2. the large 3x3 convolutions the operator grid left out
#     (bench/specs/s5_conv_large.yml) into OUTDIR/conv/h100.db, its device
#     row renamed to data/h100's (as gpu_s4_eager.sh did), for
#     bench/s5_merge.sh;
#  3. (step reprofile) googlenet, inception_v3 and squeezenet1_1 profiled
#     again as bench/gpu_issue5_data.sh did (layers alone, CUDA graph, free
#     runs, energy), and the zoo's operators at size 256 measured again
#     (bench/specs/issue5_networks.yml), into OUTDIR/reprofile/h100.db:
#     data/h100's profiles of those three networks and that sweep were
#     measured on 2026-11-22 before commit 43aced7 replaced the Concat
#     kernel (densenet121 was profiled again in session 4 for the same
#     reason).
#  4. (step fused) convolutions with their Relu fused
#     (bench/specs/s5_conv_fused.yml) into OUTDIR/fused/h100.db.
#  5. (step odd) 1x1 convolutions on odd-sized maps, fused and not
#     (bench/specs/s5_conv_odd.yml) into OUTDIR/odd/h100.db.
#   STEPS="tests conv" (default) or any of tests, conv, reprofile, fused, odd;
#   bash bench/gpu_s5.sh OUTDIR    (after tar -C .carry -xJf .carry/carry.tar.xz)
set -uo pipefail
out=${1:-/tmp/s5}
steps=" ${STEPS:-tests conv} "
mkdir -p "$out/tests" "$out/conv" "$out/reprofile" "$out/fused" "$out/odd"
. "$(dirname "$0")/gpu_env.sh"
gpu_env_write "$out"
t0=$SECONDS
case "$steps" in *" tests "*)
  bash bench/gpu_s3_tests.sh "$out/tests" > "$out/tests.log" 2>&1
  echo "tests: $((SECONDS - t0)) s"; grep -E "rc=" "$out/tests.log" ;;
esac
# sweep_step NAME SPEC: when NAME is a step, SPEC swept into OUTDIR/NAME/h100.db
# (at most SWEEP_S seconds), its device row renamed.
sweep_step() {
  case "$steps" in *" $1 "*) ;; *) return 0 ;; esac
  local t0=$SECONDS
  timeout -k 10 ${SWEEP_S:-330} $bin sweep "$2" --db "$out/$1/h100.db" > "$out/$1/sweep.log" 2>&1
  echo "$1 sweep: rc=$? $((SECONDS - t0)) s: $(tail -n 1 "$out/$1/sweep.log" | cut -c1-160)"
  gpu_rename_device "$out/$1/h100.db"
}
sweep_step conv bench/specs/s5_conv_large.yml
t0=$SECONDS
case "$steps" in *" reprofile "*)
  for m in squeezenet1_1 googlenet inception_v3; do
    timeout -k 10 ${PROFILE_S:-200} $bin profile $m --batch 1,8,32 --input-size 224,299,320 --math tf32 \
        --isolated --layers off --energy --check off --warmup-ms 50 --min-ms 300 \
        --db "$out/reprofile/h100.db" --out-dir "$out/reprofile/profile" \
        > "$out/reprofile/profile_$m.log" 2>&1
    echo "$m: rc=$? $((SECONDS - t0)) s: $(tail -n 1 "$out/reprofile/profile_$m.log" | cut -c1-120)"
  done
  timeout -k 10 ${NETWORKS_S:-120} $bin sweep bench/specs/issue5_networks.yml --db "$out/reprofile/h100.db" \
      > "$out/reprofile/sweep_networks.log" 2>&1
  echo "networks sweep: rc=$? $((SECONDS - t0)) s: $(tail -n 1 "$out/reprofile/sweep_networks.log" | cut -c1-160)"
  gpu_rename_device "$out/reprofile/h100.db"
  ;;
esac
sweep_step fused bench/specs/s5_conv_fused.yml
sweep_step odd bench/specs/s5_conv_odd.yml
