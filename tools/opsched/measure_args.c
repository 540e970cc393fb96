/*
 * measure_args.c - the measurement options that bench, sweep and profile
 * share (--algo, --math, --layout, --cache, --warmup-ms, ...), and opening
 * the device they name.
 */
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const char *const value_flags[] = {
    "algo", "math", "dtype", "layout", "cache", "warmup-ms", "warmup-iters", "iters", "min-ms",
    "energy-window-ms", "idle-ms", "cooldown-ms", "backend", "device", "seed", "sample-us"};

void tool_measure_args_init(tool_measure_args *a)
{
    memset(a, 0, sizeof(*a));
    opsched_measure_options_default(&a->opts);
    a->device = 0;
}

int tool_measure_flag_takes_value(const char *name)
{
    for (size_t i = 0; i < sizeof(value_flags) / sizeof(value_flags[0]); i++)
        if (strcmp(name, value_flags[i]) == 0) return 1;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) return 0;
    *out = v;
    return 1;
}

int tool_measure_flag(const char *cmd, const char *name, const char *val, tool_measure_args *a)
{
    opsched_measure_options *o = &a->opts;
    int64_t iv;
    if (strcmp(name, "energy") == 0) {
        o->energy = 1;
        return 1;
    }
    if (!tool_measure_flag_takes_value(name)) return 0;
    if (!val) return tool_usage_error(cmd, "--%s needs a value", name) ? -1 : -1;
    if (strcmp(name, "algo") == 0) {
        a->algo = val;
    } else if (strcmp(name, "math") == 0) {
        if (opsched_math_from_name(val, &o->plan.math) != OPSCHED_OK) {
            tool_usage_error(cmd, "--math wants fp32, tf32, fp16 or bf16, got '%s'", val);
            return -1;
        }
    } else if (strcmp(name, "dtype") == 0) {
        opsched_dtype dt;
        if (opsched_dtype_from_name(val, &dt) != OPSCHED_OK ||
            (dt != OPSCHED_F32 && dt != OPSCHED_F16 && dt != OPSCHED_BF16)) {
            tool_usage_error(cmd, "--dtype wants f32, f16 or bf16, got '%s'", val);
            return -1;
        }
        if (dt == OPSCHED_F16) o->plan.math = OPSCHED_MATH_FP16;
        else if (dt == OPSCHED_BF16) o->plan.math = OPSCHED_MATH_BF16;
        else if (o->plan.math != OPSCHED_MATH_TF32) o->plan.math = OPSCHED_MATH_FP32;
    } else if (strcmp(name, "layout") == 0) {
        if (strcmp(val, "nchw") == 0 || strcmp(val, "NCHW") == 0) o->plan.layout = OPSCHED_LAYOUT_NCHW;
        else if (strcmp(val, "nhwc") == 0 || strcmp(val, "NHWC") == 0) o->plan.layout = OPSCHED_LAYOUT_NHWC;
        else {
            tool_usage_error(cmd, "--layout wants nchw or nhwc, got '%s'", val);
            return -1;
        }
    } else if (strcmp(name, "cache") == 0) {
        if (strcmp(val, "hot") == 0) o->cache = OPSCHED_CACHE_HOT;
        else if (strcmp(val, "cold") == 0) o->cache = OPSCHED_CACHE_COLD;
        else {
            tool_usage_error(cmd, "--cache wants hot or cold, got '%s'", val);
            return -1;
        }
    } else if (strcmp(name, "backend") == 0) {
        a->backend = val;
    } else if (strcmp(name, "device") == 0) {
        if (!tool_parse_int(val, 0, 1024, &iv)) {
            tool_usage_error(cmd, "--device wants an index, got '%s'", val);
            return -1;
        }
        a->device = (int)iv;
    } else if (strcmp(name, "iters") == 0 || strcmp(name, "warmup-iters") == 0) {
        if (!tool_parse_int(val, 1, 10000000, &iv)) {
            tool_usage_error(cmd, "--%s wants a positive count, got '%s'", name, val);
            return -1;
        }
        if (name[0] == 'i') {
            o->iters = (int)iv;
            o->min_ms = 0;
            if (o->max_iters < o->iters) o->max_iters = o->iters;
        } else {
            o->warmup_iters = (int)iv;
        }
    } else if (strcmp(name, "seed") == 0) {
        if (!tool_parse_int(val, 0, INT64_MAX, &iv)) {
            tool_usage_error(cmd, "--seed wants a number, got '%s'", val);
            return -1;
        }
        o->seed = (uint64_t)iv;
    } else {
        double v;
        if (!parse_double(val, 0, 3.6e6, &v)) {
            tool_usage_error(cmd, "--%s wants milliseconds (or microseconds), got '%s'", name, val);
            return -1;
        }
        if (strcmp(name, "warmup-ms") == 0) o->warmup_ms = v;
        else if (strcmp(name, "min-ms") == 0) o->min_ms = v;
        else if (strcmp(name, "energy-window-ms") == 0) o->energy_window_ms = v;
        else if (strcmp(name, "idle-ms") == 0) o->idle_ms = v;
        else if (strcmp(name, "cooldown-ms") == 0) o->cooldown_ms = v;
        else o->sample_min_us = v;
    }
    return 1;
}

opsched_status tool_open_device(opsched_ctx *ctx, tool_measure_args *a, opsched_device **out)
{
    if (!a->backend) {
        /* The first backend with a device: cuda when a GPU is there, else cpu. */
        for (int b = 0; b < opsched_backend_count(); b++) {
            int n = 0;
            if (opsched_device_count(ctx, opsched_backend_name(b), &n) == OPSCHED_OK && n > 0) {
                a->backend = opsched_backend_name(b);
                break;
            }
            opsched_ctx_clear_error(ctx);
        }
        if (!a->backend) a->backend = opsched_backend_count() ? opsched_backend_name(0) : "none";
    }
    return opsched_device_open(ctx, a->backend, a->device, out);
}

const char *tool_measure_help =
    "measurement options:\n"
    "  --backend cuda|cpu     backend (default: cuda when a GPU is present, else cpu)\n"
    "  --device N             device index within the backend (default 0)\n"
    "  --algo POLICY          heuristic (default), find, all, or an algorithm name\n"
    "  --math M               fp32 (strict), tf32, fp16 or bf16 (default fp32)\n"
    "  --dtype T              f32, f16 or bf16 (sets --math accordingly)\n"
    "  --layout L             nchw (default) or nhwc\n"
    "  --cache hot|cold       reuse one input (hot) or rotate inputs larger than L2\n"
    "  --warmup-ms MS         warm up at least this long (default 200)\n"
    "  --iters N              exactly N timed samples (default: >= 50 and >= --min-ms)\n"
    "  --min-ms MS            sample for at least this long (default 500)\n"
    "  --sample-us US         batch launches until a sample lasts this long (default 200)\n"
    "  --energy               also measure energy (window >= 1 s, NVML counter)\n"
    "  --energy-window-ms MS  energy window (default 1000, never less)\n"
    "  --idle-ms MS           idle-power window before it (default 300)\n"
    "  --cooldown-ms MS       sleep before each configuration (default 0)\n";
