#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200-x2) after
#   make build && scripts/gpu-carry.sh build     (at c54bab4)
# GPU 0: ResNet-50 and ConvNeXt-Tiny planned and run four times each as the suite runs them,
# with the planner's verdicts logged (OPSCHED_LOG=debug), to find what varies from run to run;
# then torch.compile's kernels on regnet_y_8gf and densenet121 under ncu.
# GPU 1: per-layer profiles (--isolated) of the CNNs slower than torch.compile.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/variance $R/kernels $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
(
  export CUDA_VISIBLE_DEVICES=0
  for m in resnet50 convnext_tiny; do
    for i in 1 2 3 4; do
      OPSCHED_LOG=debug timeout 60 taskset -c 0-15 $bin run bench/networks/models/$m.onnx --shapes input:1x3x224x224 \
        --math tf32 --compare sequential,ios --db /tmp/db-$m-$i > $R/variance/$m-$i.out 2> $R/variance/$m-$i.err
      echo "$m $i rc=$? $(grep -iE '^ *ios|deployed' $R/variance/$m-$i.out | head -2 | tr '\n' ' ') $(el)s" >> $R/times.txt
    done
  done
  NCU="/usr/local/cuda/bin/ncu --profile-from-start off --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv"
  for m in regnet_y_8gf densenet121; do
    [ $(el) -gt 230 ] && break
    timeout 100 taskset -c 0-15 $NCU $py bench/profiling/kernels.py torch --model $m --batch 1 --math tf32 > $R/kernels/torch-$m.csv 2> $R/kernels/torch-$m.err
    $py bench/profiling/kernels.py summary $R/kernels/torch-$m.csv > $R/kernels/torch-$m.txt 2>&1
    echo "ncu torch $m $(head -1 $R/kernels/torch-$m.txt) $(el)s" >> $R/times.txt
  done
  xz -9 $R/kernels/*.csv 2>/dev/null
) &
export CUDA_VISIBLE_DEVICES=1
for ml in regnet_y_8gf:nhwc regnet_y_8gf:nchw densenet121:nhwc lraspp_mobilenet_v3_large:nhwc convnext_tiny:nhwc mobilenet_v3_small:nhwc; do
  m=${ml%:*} l=${ml#*:}
  [ $(el) -gt 260 ] && break
  mkdir -p $R/profile/$m-$l
  timeout 80 taskset -c 16-31 $bin profile bench/networks/models/$m.onnx --batch 1 --layout $l --isolated --check off \
    --min-ms 100 --out-dir $R/profile/$m-$l --force > $R/profile/$m-$l.log 2>&1
  echo "profile $m $l rc=$? $(el)s" >> $R/times.txt
done
wait
echo "done $(el)s" >> $R/times.txt
