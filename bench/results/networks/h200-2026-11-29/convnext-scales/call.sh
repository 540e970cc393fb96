#!/usr/bin/env bash
# The device call (bash .carry/call.sh on nvidia-h200) after
#   make build && scripts/gpu-carry.sh build     (at 499aaea, which folds layer scales into
#   weights without payloads too)
# ConvNeXt-Tiny in strict fp32 NHWC against the CPU backend (layer scales folded, the residual
# in the second product's launch); the suite on ConvNeXt-Tiny and -Small, batch 1 TF32, with
# torch.compile; opsched alone with and without --ablate layer-scale and --ablate residual;
# per-layer profiles of ConvNeXt-Tiny and MobileNetV3-Small.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tar -C .carry -xJf .carry/carry.tar.xz
. bench/gpu_env.sh
R=/tmp/r; mkdir -p $R/fp32 $R/profile; gpu_env_write $R > /dev/null
trap 'tar -czf $OUT/r.tgz -C /tmp r' EXIT
m=convnext_tiny
OPSCHED_LOG=debug timeout 60 $bin profile bench/networks/models/$m.onnx --batch 1 --math fp32 --layout nhwc \
  --check on --layers off --host-layers off --cuda-graph off --min-ms 50 --out-dir $R/fp32 > $R/fp32/$m.log 2> $R/fp32/$m.err
echo "$m fp32 nhwc rc=$? $(grep -hE 'Numerics' $R/fp32/$m.log $R/fp32/$m.err) $(el)s" >> $R/times.txt
$py bench/networks/suite.py run --opsched $bin --out $R/suite --models convnext_tiny,convnext_small \
  --peers torch_compile --configs 1:tf32 --budget-s 100 > $R/suite.log 2>&1
$py bench/networks/suite.py report $R/suite >> $R/suite.log 2>&1
echo "suite $(el)s" >> $R/times.txt
$py bench/networks/suite.py run --opsched $bin --out $R/abl --models convnext_tiny,convnext_small \
  --peers "" --configs 1:tf32 --budget-s 40 > $R/abl.log 2>&1
for a in layer-scale residual; do
  $py bench/networks/suite.py run --opsched $bin --out $R/abl/no-$a --models convnext_tiny,convnext_small \
    --peers "" --opsched-args="--ablate $a" --configs 1:tf32 --budget-s 40 >> $R/abl.log 2>&1
done
$py bench/networks/suite.py ablation $R/abl $R/abl/no-layer-scale $R/abl/no-residual >> $R/abl.log 2>&1
echo "ablation $(el)s" >> $R/times.txt
for m in convnext_tiny mobilenet_v3_small; do
  timeout 60 $bin profile bench/networks/models/$m.onnx --batch 1 --layout nhwc --isolated --check off \
    --min-ms 100 --out-dir $R/profile/$m --force > $R/profile/$m.log 2>&1
  echo "profile $m rc=$? $(el)s" >> $R/times.txt
done
echo "done $(el)s" >> $R/times.txt
