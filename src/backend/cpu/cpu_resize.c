/*
 * cpu_resize.c - Resize on any axes: nearest (every nearest mode), linear
 * and cubic (cubic_coeff_a, exclude_outside), with or without antialias,
 * under every coordinate transformation mode, tf_crop_and_resize with its
 * roi and extrapolation value.
 *
 * Resize is separable: every axis maps each output coordinate to a few
 * input coordinates ("taps") with weights, computed once per plan launch
 * as ONNX's reference implementation defines them, and an output element
 * is the sum over every combination of its axes' taps of the product of
 * their weights times the input there, in double.  Taps of weight 0 are
 * dropped, so an axis that is not resized costs one tap.
 *
 * The attribute's roi holds the starts of every axis, then the ends:
 * roi[d] and roi[rank + d], as ONNX's roi input and Pad's pads are laid out.
 * Integer tensors are rounded half to even and saturated, as ONNX's
 * reference does.
 */
#include <stdlib.h>

#include "backend/cpu/cpu_impl.h"
#include "graph/resize_taps.h"

opsched_status cpu_loop_resize(opsched_ctx *ctx, const cpu_node *n, void *const *in,
                               void *const *out)
{
    opsched_status st = OPSCHED_OK;
    const opsched_resize_attr *a = &n->attr.resize;
    const opsched_shape *x = &n->in[0], *o = &n->out[0];
    opsched_dtype dt = n->in_dt[0];
    int nd = x->ndim;
    os_resize_taps taps[OPSCHED_MAX_DIMS];
    int64_t xs[OPSCHED_MAX_DIMS];
    memset(taps, 0, sizeof(taps));
    cpu_row_strides(x, xs);
    for (int d = 0; d < nd; d++)
        OS_TRY_GOTO(st, os_resize_taps_make(ctx, a, d, nd, x->d[d], o->d[d], &taps[d]), done);
    cpu_walk w;
    cpu_walk_init(&w, o);
    int64_t total = opsched_shape_numel(o);
    for (int64_t i = 0; i < total; i++, cpu_walk_step(&w, nd)) {
        const int64_t *ix[OPSCHED_MAX_DIMS];
        const double *wt[OPSCHED_MAX_DIMS];
        int cnt[OPSCHED_MAX_DIMS], t[OPSCHED_MAX_DIMS] = {0}, outside = 0, empty = 0;
        for (int d = 0; d < nd; d++) {
            int64_t k = w.idx[d];
            outside |= taps[d].outside[k];
            ix[d] = taps[d].index + k * taps[d].width;
            wt[d] = taps[d].weight + k * taps[d].width;
            cnt[d] = taps[d].count[k];
            empty |= cnt[d] == 0;
        }
        double acc = 0.0;
        if (outside) {
            acc = a->extrapolation_value;
        } else if (!empty) {
            for (;;) { /* every combination of the axes' taps */
                double weight = 1.0;
                int64_t off = 0;
                for (int d = 0; d < nd; d++) {
                    weight *= wt[d][t[d]];
                    off += ix[d][t[d]] * xs[d];
                }
                acc += weight * cpu_load_f(in[0], dt, off);
                int d = nd - 1;
                while (d >= 0 && ++t[d] == cnt[d])
                    t[d--] = 0;
                if (d < 0) break;
            }
        }
        if (cpu_is_float(dt))
            ((float *)out[0])[i] = (float)acc;
        else
            cpu_store_f(out[0], dt, i, cpu_round_half_even(acc));
    }
done:
    for (int d = 0; d < nd; d++)
        os_resize_taps_free(&taps[d]);
    return st;
}
