/*
 * resize.c - Resize (opsets 10, 11, 13, 18, 19) and Upsample (7 to 9) to
 * OPSCHED_OP_RESIZE with everything resolved per dimension.
 *
 * Output extents follow ONNX: with scales, out = floor(in * scale); with
 * sizes, the scale is out / in ("stretch"), or one scale for the given axes
 * (keep_aspect_ratio_policy not_larger: the smallest, not_smaller: the
 * largest) with out = round(in * scale) (halves up).  Axes not named by
 * `axes` keep their extent and scale 1.  roi is kept, starts then ends
 * (roi[d] and roi[rank + d]), for tf_crop_and_resize.  Resize-10 and
 * Upsample transform coordinates as "asymmetric" with nearest "floor".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

static opsched_status bad(os_loader *L, int node, const char *what)
{
    return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "%s", what);
}

/* Input k as a known vector of floats; *n = -1 when it is omitted, 0 when
 * empty. */
static opsched_status known_floats(os_loader *L, int node, int k, const char *what, double *out,
                                   int max, int *n)
{
    *n = -1;
    int v = os_onnx_in(L, node, k);
    if (v < 0) return OPSCHED_OK;
    const os_cval *c = os_onnx_in_cval(L, node, k);
    if (!c)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "'%s' ('%s') must be known when the model is loaded, but it is "
                                 "computed at run time",
                                 what, L->vals[v].name);
    if (c->n > max)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "'%s' has %lld values", what,
                                 (long long)c->n);
    for (int64_t i = 0; i < c->n; i++)
        out[i] = os_onnx_cval_float(c, i);
    *n = (int)c->n;
    return OPSCHED_OK;
}

static opsched_status pick(os_loader *L, int node, const char *attr, const char *value,
                           const char *const *names, int count, int *out)
{
    for (int i = 0; i < count; i++)
        if (strcmp(value, names[i]) == 0) {
            *out = i;
            return OPSCHED_OK;
        }
    return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "%s '%s' is not supported", attr,
                             value);
}

static opsched_status resize(os_loader *L, int node, int upsample)
{
    int x;
    OS_TRY(os_onnx_in_id(L, node, 0, &x));
    const opsched_shape xs = os_onnx_t(L, x)->shape;
    int r = xs.ndim;
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    opsched_resize_attr *z = &a.resize;
    int legacy = upsample || L->opset < 11;
    char mbuf[32], cbuf[32], nbuf[32], kbuf[32];
    const char *mode = "nearest", *coord = legacy ? "asymmetric" : "half_pixel";
    const char *nearest = legacy ? "floor" : "round_prefer_floor", *keep = "stretch";
    OS_TRY(os_onnx_attr_string(L, node, "mode", mbuf, sizeof(mbuf), &mode));
    if (legacy && strcmp(mode, "bilinear") == 0) mode = "linear";
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    int m = 0;
    OS_TRY(pick(L, node, "mode", mode, modes, legacy ? 2 : 3, &m));
    z->mode = (opsched_resize_mode)m;
    z->cubic_coeff_a = -0.75f;
    if (!legacy) {
        int64_t excl = 0, anti = 0;
        OS_TRY(os_onnx_attr_string(L, node, "coordinate_transformation_mode", cbuf, sizeof(cbuf),
                                   &coord));
        OS_TRY(os_onnx_attr_string(L, node, "nearest_mode", nbuf, sizeof(nbuf), &nearest));
        OS_TRY(os_onnx_attr_float(L, node, "cubic_coeff_a", &z->cubic_coeff_a));
        OS_TRY(os_onnx_attr_int(L, node, "exclude_outside", &excl));
        OS_TRY(os_onnx_attr_float(L, node, "extrapolation_value", &z->extrapolation_value));
        if (L->opset >= 18) {
            OS_TRY(os_onnx_attr_int(L, node, "antialias", &anti));
            OS_TRY(os_onnx_attr_string(L, node, "keep_aspect_ratio_policy", kbuf, sizeof(kbuf),
                                       &keep));
        }
        z->exclude_outside = excl != 0;
        z->antialias = anti != 0;
    }
    static const char *const coords[] = {"half_pixel",         "half_pixel_symmetric",
                                         "pytorch_half_pixel", "align_corners",
                                         "asymmetric",         "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    int c = 0, nm = 0;
    OS_TRY(pick(L, node, "coordinate_transformation_mode", coord, coords, 6, &c));
    if (c == OPSCHED_COORD_HALF_PIXEL_SYMMETRIC && L->opset < 19)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "half_pixel_symmetric needs opset 19 (the model has %lld)",
                                 (long long)L->opset);
    OS_TRY(pick(L, node, "nearest_mode", nearest, nearests, 4, &nm));
    z->coord = (opsched_resize_coord)c;
    z->nearest = (opsched_resize_nearest)nm;
    if (z->antialias && z->mode == OPSCHED_RESIZE_NEAREST)
        return bad(L, node, "antialias is for linear and cubic modes");

    /* The axes the scales, sizes and roi speak of. */
    int64_t axes[OPSCHED_MAX_DIMS];
    int na = -1, used[OPSCHED_MAX_DIMS] = {0};
    if (!legacy && L->opset >= 18)
        OS_TRY(os_onnx_attr_ints(L, node, "axes", axes, OPSCHED_MAX_DIMS, &na));
    if (na < 0) {
        na = r;
        for (int d = 0; d < r; d++)
            axes[d] = d;
    }
    for (int i = 0; i < na; i++) {
        OS_TRY(os_onnx_axis(L, node, axes[i], r, &axes[i]));
        if (used[axes[i]]++) return bad(L, node, "an axis is named twice");
    }

    double scales[OPSCHED_MAX_DIMS], roi[2 * OPSCHED_MAX_DIMS];
    int64_t sizes[OPSCHED_MAX_DIMS];
    int ns = -1, nz = -1, nr = -1;
    if (upsample && L->opset < 9) {
        const Onnx__AttributeProto *at = os_onnx_attr(L->gp->node[node], "scales");
        if (!at || at->n_floats < 1 || at->n_floats > OPSCHED_MAX_DIMS)
            return bad(L, node, "attribute 'scales' must be a list of floats, one per axis");
        ns = (int)at->n_floats;
        for (int i = 0; i < ns; i++)
            scales[i] = at->floats[i];
    } else if (legacy) {
        OS_TRY(known_floats(L, node, 1, "scales", scales, OPSCHED_MAX_DIMS, &ns));
    } else {
        OS_TRY(known_floats(L, node, 1, "roi", roi, 2 * OPSCHED_MAX_DIMS, &nr));
        OS_TRY(known_floats(L, node, 2, "scales", scales, OPSCHED_MAX_DIMS, &ns));
        OS_TRY(os_onnx_in_ints(L, node, 3, "sizes", sizes, OPSCHED_MAX_DIMS, &nz));
    }
    if (ns == 0) ns = -1; /* an empty tensor stands for "not given" */
    if (nz == 0) nz = -1;
    if ((ns < 0) == (nz < 0)) return bad(L, node, "exactly one of scales and sizes must be given");
    if ((ns >= 0 && ns != na) || (nz >= 0 && nz != na)) {
        char msg[96];
        snprintf(msg, sizeof(msg), "scales or sizes must hold %d values", na);
        return bad(L, node, msg);
    }
    for (int d = 0; d < r; d++) {
        z->sizes[d] = xs.d[d];
        z->scales[d] = 1.0f;
        z->roi[d] = 0.0f;
        z->roi[r + d] = 1.0f;
    }
    if (z->coord == OPSCHED_COORD_TF_CROP_AND_RESIZE) {
        if (nr != 2 * na) return bad(L, node, "tf_crop_and_resize needs a roi of starts and ends");
        for (int i = 0; i < 2 * na; i++)
            if (!isfinite((float)roi[i])) return bad(L, node, "roi values must be finite");
        for (int i = 0; i < na; i++) {
            z->roi[axes[i]] = (float)roi[i];
            z->roi[r + axes[i]] = (float)roi[na + i];
        }
    }
    if (ns >= 0) {
        for (int i = 0; i < na; i++) {
            double s = (double)(float)scales[i];
            if (!(s > 0) || s > (double)OS_ONNX_MAX_DIM)
                return bad(L, node, "scales must be positive");
            double o = floor((double)xs.d[axes[i]] * s);
            if (o < 1 || o > (double)OS_ONNX_MAX_DIM)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                         "axis %lld would have %g elements", (long long)axes[i], o);
            z->scales[axes[i]] = (float)s;
            z->sizes[axes[i]] = (int64_t)o;
        }
    } else {
        int policy = 0;
        static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
        OS_TRY(pick(L, node, "keep_aspect_ratio_policy", keep, policies, 3, &policy));
        double common = policy == 1 ? INFINITY : 0;
        for (int i = 0; i < na; i++) {
            int64_t in = xs.d[axes[i]];
            if (sizes[i] < 1 || sizes[i] > OS_ONNX_MAX_DIM || in < 1)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE,
                                         "invalid size %lld on axis %lld", (long long)sizes[i],
                                         (long long)axes[i]);
            double s = (double)sizes[i] / (double)in;
            z->scales[axes[i]] = (float)s;
            z->sizes[axes[i]] = sizes[i];
            if (policy == 1) common = fmin(common, s);
            if (policy == 2) common = fmax(common, s);
        }
        for (int i = 0; policy && i < na; i++) {
            double o = floor(common * (double)xs.d[axes[i]] + 0.5);
            if (o < 1 || o > (double)OS_ONNX_MAX_DIM)
                return os_onnx_node_fail(L, node, OPSCHED_ERR_SHAPE, "axis %lld would be empty",
                                         (long long)axes[i]);
            z->scales[axes[i]] = (float)common;
            z->sizes[axes[i]] = (int64_t)o;
        }
    }
    opsched_shape o = xs;
    for (int d = 0; d < r; d++)
        o.d[d] = z->sizes[d];
    OS_TRY(os_onnx_check_dims(L, node, &o));
    return os_onnx_step(L, node, "resize", 0, OPSCHED_OP_RESIZE, &a, &x, 1, 1, NULL);
}

opsched_status os_onnx_convert_resize(os_loader *L, int node, const char *op, int *done)
{
    *done = 1;
    if (strcmp(op, "Resize") == 0) return resize(L, node, 0);
    if (strcmp(op, "Upsample") == 0) return resize(L, node, 1);
    *done = 0;
    return OPSCHED_OK;
}
