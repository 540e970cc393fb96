#!/usr/bin/env bash
# opsched run with the user's tensors: --input NAME=FILE.npy in, every
# output out as DIR/<name>.npy, checked against NumPy on the CPU backend:
# two inputs, symbolic dimensions bound by the files' shapes, weights read
# from the file, a Conv weight and a Reshape's shape given as inputs (the
# loader takes them), and the errors (an unknown name, a shape or a type that
# differs, a missing file).
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(cd "$(dirname "$0")" && pwd)/support/check.sh"
py=${OPSCHED_PYTHON:-python3}
small=${OPSCHED_TESTDATA:?}/onnx/small
cd "$tmp" || exit 1
run() { "$bin" run "$@" --backend cpu --iters 0 >out.txt 2>err.txt; }

"$py" - <<'PY'
import numpy as np
r = np.random.default_rng(3)
np.save("a.npy", r.standard_normal((2, 3)).astype(np.float32))
np.save("b.npy", r.standard_normal((2, 3)).astype(np.float32))
np.save("x.npy", r.standard_normal((2, 3, 5, 7)).astype(np.float32))
np.save("tokens.npy", r.standard_normal((2, 4, 8)).astype(np.float32))
np.save("mask.npy", r.standard_normal((1, 4, 1)).astype(np.float32))
np.save("a64.npy", np.ones((2, 3), np.int64))
np.save("a_wrong.npy", np.ones((3, 2), np.float32))
np.save("cx.npy", r.standard_normal((1, 3, 6, 6)).astype(np.float32))
np.save("cw.npy", r.standard_normal((4, 3, 3, 3)).astype(np.float32))
np.save("cb.npy", r.standard_normal((4,)).astype(np.float32))
np.save("rx.npy", r.standard_normal((2, 3, 4)).astype(np.float32))
np.save("rshape.npy", np.array([4, 6], np.int64))
PY

run "$small/two_inputs_add.onnx" --input a=a.npy --input b=b.npy --output-dir o1
check "two inputs: exit 0" test $? = 0
check "two inputs: y = a + b exactly" "$py" -c "
import numpy as np, sys
y = np.load('o1/y.npy'); sys.exit(0 if y.dtype == np.float32 and (y == np.load('a.npy') + np.load('b.npy')).all() else 1)"

run "$small/dim_param.onnx" --input x=x.npy --output-dir o2
check "symbolic dims bound by the file: exit 0" test $? = 0
check "symbolic dims: y = relu(x), shape 2x3x5x7" "$py" -c "
import numpy as np, sys
y = np.load('o2/y.npy'); x = np.load('x.npy'); sys.exit(0 if y.shape == x.shape and (y == np.maximum(x, 0)).all() else 1)"

run "$small/multi_input.onnx" --input tokens=tokens.npy --input mask=mask.npy --output-dir o3
check "weights from the file: exit 0" test $? = 0
check "weights from the file: y = tokens @ w + mask" "$py" -c "
import numpy as np, onnx, sys
from onnx import numpy_helper
m = onnx.load('$small/multi_input.onnx')
w = numpy_helper.to_array([i for i in m.graph.initializer if i.name == 'w'][0])
want = np.load('tokens.npy') @ w + np.load('mask.npy')
y = np.load('o3/y.npy'); sys.exit(0 if y.shape == want.shape and np.allclose(y, want, rtol=1e-5, atol=1e-6) else 1)"

run "$small/given_conv.onnx" --input x=cx.npy --input w=cw.npy --input b=cb.npy --output-dir o7
check "a Conv weight given as an input: exit 0" test $? = 0
check "a Conv weight given as an input: y = conv(x, w) + b (NumPy)" "$py" -c "
import numpy as np, sys
x, w, b = np.load('cx.npy'), np.load('cw.npy'), np.load('cb.npy')
xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
want = np.zeros((1, 4, 6, 6), np.float64)
for i in range(3):
    for j in range(3):
        want += np.einsum('nchw,oc->nohw', xp[:, :, i:i + 6, j:j + 6], w[:, :, i, j])
want += b.reshape(1, 4, 1, 1)
y = np.load('o7/y.npy'); sys.exit(0 if y.shape == want.shape and np.allclose(y, want, rtol=1e-4, atol=1e-4) else 1)"

run "$small/given_reshape.onnx" --input x=rx.npy --input shape=rshape.npy --output-dir o8
check "a Reshape's shape given as an input: exit 0" test $? = 0
check "a Reshape's shape given as an input: y = x.reshape(4, 6)" "$py" -c "
import numpy as np, sys
y = np.load('o8/y.npy'); sys.exit(0 if y.shape == (4, 6) and (y == np.load('rx.npy').reshape(4, 6)).all() else 1)"

run "$small/two_inputs_add.onnx" --input nope=a.npy --output-dir o4
check "an unknown input: exit 2" test $? = 2
check "an unknown input: the message lists the model's" grep -q "it has: a, b" err.txt
run "$small/two_inputs_add.onnx" --input a=a_wrong.npy --output-dir o5
check "a shape that differs: exit 1" test $? = 1
check "a shape that differs: the message names the file and both shapes" grep -q "a_wrong.npy: input a is 3x2, the model's is 2x3" err.txt
run "$small/two_inputs_add.onnx" --input a=a64.npy --output-dir o6
check "a type that differs: exit 1" test $? = 1
check "a type that differs: the message says both" grep -q "holds int64, the model's is f32" err.txt
run "$small/two_inputs_add.onnx" --input a=missing.npy
check "a missing file: exit 1" test $? = 1
check "a missing file: named" grep -q "missing.npy" err.txt
run "$small/two_inputs_add.onnx" --input a
check "--input without =FILE: exit 2" test $? = 2
check "no output directory left by the failures" test ! -e o4 -a ! -e o5 -a ! -e o6

# --output-dir names no file: an existing one is kept unless --force, a
# symbolic link is not written through unless --follow-symlinks, and an
# output that is one of the inputs is a usage error (all before the run).
sum_o1=$(cksum < o1/y.npy)
run "$small/two_inputs_add.onnx" --input a=a.npy --input b=b.npy --output-dir o1
check "an existing output file: exit 1" test $? = 1
check "an existing output file: named, --force suggested" grep -q "o1/y.npy: a file of that name exists" err.txt
check "an existing output file: --force suggested" grep -q -- "--force" err.txt
check "an existing output file: kept byte for byte" test "$(cksum < o1/y.npy)" = "$sum_o1"
run "$small/two_inputs_add.onnx" --input a=b.npy --input b=b.npy --output-dir o1 --force
check "--force: exit 0" test $? = 0
check "--force: the file replaced" "$py" -c "
import numpy as np, sys
sys.exit(0 if (np.load('o1/y.npy') == 2 * np.load('b.npy')).all() else 1)"
mkdir o9 && echo precious > precious.txt && ln -s ../precious.txt o9/y.npy
run "$small/two_inputs_add.onnx" --input a=a.npy --input b=b.npy --output-dir o9
check "a symbolic link in --output-dir: exit 1" test $? = 1
check "a symbolic link in --output-dir: named, --follow-symlinks suggested" \
    grep -q -- "--follow-symlinks" err.txt
check "a symbolic link in --output-dir: its target untouched" test "$(cat precious.txt)" = precious
run "$small/two_inputs_add.onnx" --input a=a.npy --input b=b.npy --output-dir o9 --follow-symlinks
check "a link to an existing file, followed but not forced: exit 1" test $? = 1
check "a link to an existing file, followed but not forced: untouched" test "$(cat precious.txt)" = precious
run "$small/two_inputs_add.onnx" --input a=a.npy --input b=b.npy --output-dir o9 --follow-symlinks --force
check "--follow-symlinks --force: exit 0, written through the link" \
    "$py" -c "import numpy, sys; numpy.load('precious.txt'); sys.exit(0)"
mkdir o10 && cp a.npy o10/y.npy && sum_in=$(cksum < o10/y.npy)
run "$small/two_inputs_add.onnx" --input a=o10/y.npy --input b=b.npy --output-dir o10 --force
check "an output that is an --input file: exit 2" test $? = 2
check "an output that is an --input file: both named" grep -q "o10/y.npy" err.txt
check "an output that is an --input file: kept" test "$(cksum < o10/y.npy)" = "$sum_in"
ln -s o10/y.npy alias.npy
run "$small/two_inputs_add.onnx" --input a=alias.npy --input b=b.npy --output-dir o10 --force
check "an output that is an --input file through a link: exit 2" test $? = 2
check "an output that is an --input file through a link: kept" test "$(cksum < o10/y.npy)" = "$sum_in"
mkdir -p s1 && run "$small/two_inputs_add.onnx" --input a=a.npy --input b=b.npy --compare sequential --save-schedules s1
check "--save-schedules: exit 0" test $? = 0
sum_s=$(cat s1/*.json | cksum)
mkdir -p s1 && run "$small/two_inputs_add.onnx" --input a=a.npy --input b=b.npy --compare sequential --save-schedules s1
check "--save-schedules over an existing schedule: exit 1, kept" \
    test $? = 1 -a "$(cat s1/*.json | cksum)" = "$sum_s"
run "$small/two_inputs_add.onnx" --input a=a.npy --input b=b.npy --compare sequential --save-schedules s1 --force
check "--save-schedules --force: exit 0" test $? = 0
echo "$pass passed, $fail failed"
[ $fail = 0 ]
