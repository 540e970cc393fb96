/*
 * measure_args.c - the measurement settings that bench, sweep, profile,
 * run and schedule --cost measure share: their defaults ("auto" math and
 * layout, chosen by backend), recording the command line's measurement
 * options to apply them over a stage's or a spec's settings, and opening
 * the device they name.
 */
#include <string.h>

#include "args.h"

void tool_measure_args_init(tool_measure_args *a)
{
    memset(a, 0, sizeof(*a));
    opsched_measure_options_default(&a->opts);
    a->math_auto = 1;
    a->layout_auto = 1;
}

const char *tool_default_backend(opsched_ctx *ctx)
{
    /* The first backend with a device: cuda when a GPU is there, else cpu. */
    for (int b = 0; b < opsched_backend_count(); b++) {
        int n = 0;
        if (opsched_device_count(ctx, opsched_backend_name(b), &n) == OPSCHED_OK && n > 0)
            return opsched_backend_name(b);
        opsched_ctx_clear_error(ctx);
    }
    return opsched_backend_count() ? opsched_backend_name(0) : "none";
}

void tool_measure_resolve(opsched_ctx *ctx, tool_measure_args *a)
{
    if (!a->backend) a->backend = tool_default_backend(ctx);
    int cpu = strcmp(a->backend, "cpu") == 0;
    /* The fastest settings of the backend: tensor cores (tf32) and
     * channels-last on a GPU; strict fp32 and oneDNN's blocked nchw on
     * the CPU. */
    if (a->math_auto) a->opts.plan.math = cpu ? OPSCHED_MATH_FP32 : OPSCHED_MATH_TF32;
    if (a->layout_auto) a->opts.plan.layout = cpu ? OPSCHED_LAYOUT_NCHW : OPSCHED_LAYOUT_NHWC;
    a->math_auto = a->layout_auto = 0;
}

opsched_status tool_open_device(opsched_ctx *ctx, tool_measure_args *a, opsched_device **out)
{
    tool_measure_resolve(ctx, a);
    return opsched_device_open(ctx, a->backend, a->device, out);
}

int tool_measure_record_opt(void *dest, const char *cmd, const tool_opt *o, const char *value)
{
    tool_measure_record *r = dest;
    for (const char *const *no = r->refused; no && *no; no++)
        if (strcmp(*no, o->name) == 0)
            return tool_usage_error(cmd, "--%s applies to single operators, not to %s", o->name,
                                    cmd);
    int rc = tool_measure_opt(&r->scratch, cmd, o, value);
    if (rc != TOOL_EXIT_OK) return rc;
    if (r->n == TOOL_MAX_RECORDED) return tool_usage_error(cmd, "too many options");
    r->opts[r->n] = o;
    r->values[r->n] = value;
    r->n++;
    return TOOL_EXIT_OK;
}

void tool_measure_replay(const tool_measure_record *r, const char *cmd, tool_measure_args *a)
{
    for (int i = 0; i < r->n; i++)
        (void)tool_measure_opt(a, cmd, r->opts[i], r->values[i]);
}
