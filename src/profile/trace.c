/*
 * trace.c - profiles as a Chrome trace-event file (the JSON object form:
 * {"traceEvents": [...]}), which Perfetto and chrome://tracing open.
 *
 * Layout: one process per device (pid), named after it; thread 0 is the
 * stream the layer-timed runs used, with one complete event ("ph": "X")
 * per layer that ran; thread 1 holds one event per profile naming it and
 * its end-to-end numbers; a counter ("ph": "C") named "power" holds the
 * samples of the energy window.  Times are microseconds.  The layer events
 * are the layer timers of one run laid end to end in node order: the gaps
 * between layers are not measured, so they are not shown, and each event
 * says so.  The power samples come from the energy window, a separate
 * stretch of back-to-back inferences, drawn from the start of the
 * profile's slot.  A traced run of a schedule adds one thread per
 * stream (ids from 100), its launches at the times the device recorded.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "opsched/profile.h"

#define MAX_DEVICES 64
#define STREAM_TID 0
#define PROFILE_TID 1

struct opsched_trace {
    opsched_ctx *ctx;
    cJSON *root;
    cJSON *events;  /* borrowed from root */
    double next_us; /* where the next profile starts */
    int n_devices;
    char devices[MAX_DEVICES][64];
    int sched_tracks[MAX_DEVICES]; /* schedule stream tracks named so far */
};

static const char timing_note[] =
    "layer timer of the layer-timed run whose total is the median; layers laid end to end in "
    "node order (gaps between layers not measured, not shown)";

opsched_status opsched_trace_create(opsched_ctx *ctx, opsched_trace **out)
{
    if (!out) return OPSCHED_ERR_INVALID_ARG;
    *out = NULL;
    opsched_trace *t = calloc(1, sizeof(*t));
    if (!t) return OS_NOMEM(ctx);
    t->ctx = ctx;
    t->root = cJSON_CreateObject();
    t->events = t->root ? cJSON_AddArrayToObject(t->root, "traceEvents") : NULL;
    if (!t->events || !cJSON_AddStringToObject(t->root, "displayTimeUnit", "ms")) {
        opsched_trace_free(t);
        return OS_NOMEM(ctx);
    }
    *out = t;
    return OPSCHED_OK;
}

void opsched_trace_free(opsched_trace *t)
{
    if (!t) return;
    cJSON_Delete(t->root);
    free(t);
}

/* An event with the fields every kind has; NULL when out of memory. */
static cJSON *event(opsched_trace *t, const char *ph, const char *name, int pid, int tid, double ts)
{
    cJSON *e = cJSON_CreateObject();
    if (!e) return NULL;
    if (!cJSON_AddStringToObject(e, "ph", ph) || !cJSON_AddStringToObject(e, "name", name) ||
        !cJSON_AddNumberToObject(e, "pid", pid) || !cJSON_AddNumberToObject(e, "tid", tid) ||
        !cJSON_AddNumberToObject(e, "ts", ts) || !cJSON_AddItemToArray(t->events, e)) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

static opsched_status metadata(opsched_trace *t, const char *what, int pid, int tid,
                               const char *name)
{
    cJSON *e = event(t, "M", what, pid, tid, 0);
    cJSON *args = e ? cJSON_AddObjectToObject(e, "args") : NULL;
    if (!args || !cJSON_AddStringToObject(args, "name", name)) return OS_NOMEM(t->ctx);
    return OPSCHED_OK;
}

/* The pid of a device, naming its process and tracks the first time. */
static opsched_status device_pid(opsched_trace *t, const opsched_device_info *dev, int *pid)
{
    char key[64], name[200];
    snprintf(key, sizeof(key), "%s:%d", dev->backend, dev->index);
    for (int i = 0; i < t->n_devices; i++) {
        if (strcmp(t->devices[i], key) == 0) {
            *pid = i + 1;
            return OPSCHED_OK;
        }
    }
    if (t->n_devices == MAX_DEVICES)
        return OS_FAIL(t->ctx, OPSCHED_ERR_INVALID_ARG, "trace: more than %d devices", MAX_DEVICES);
    snprintf(t->devices[t->n_devices], sizeof(t->devices[0]), "%s", key);
    *pid = ++t->n_devices;
    snprintf(name, sizeof(name), "%s (%s)", key, dev->name);
    OS_TRY(metadata(t, "process_name", *pid, STREAM_TID, name));
    OS_TRY(metadata(t, "thread_name", *pid, STREAM_TID, "stream 0: layer-timed run"));
    return metadata(t, "thread_name", *pid, PROFILE_TID, "profiles");
}

static cJSON *shape_text(const opsched_shape *s)
{
    char buf[160];
    return cJSON_CreateString(opsched_shape_format(s, buf, sizeof(buf)));
}

static opsched_status layer_event(opsched_trace *t, const opsched_graph *g,
                                  const opsched_layer_profile *l, int pid, double ts)
{
    const opsched_node *n = opsched_graph_node(g, l->node);
    cJSON *e = n ? event(t, "X", n->name, pid, STREAM_TID, ts) : NULL;
    cJSON *args = e ? cJSON_AddObjectToObject(e, "args") : NULL;
    cJSON *ins = args ? cJSON_AddArrayToObject(args, "input_shapes") : NULL;
    if (!ins || !cJSON_AddStringToObject(e, "cat", "layer") ||
        !cJSON_AddNumberToObject(e, "dur", l->run_ms * 1000.0))
        return OS_NOMEM(t->ctx);
    for (int i = 0; i < n->n_inputs; i++) {
        const opsched_tensor *x = n->inputs[i] >= 0 ? opsched_graph_tensor(g, n->inputs[i]) : NULL;
        if (x && !cJSON_AddItemToArray(ins, shape_text(&x->shape))) return OS_NOMEM(t->ctx);
    }
    const opsched_tensor *y = n->n_outputs > 0 ? opsched_graph_tensor(g, n->outputs[0]) : NULL;
    if (!cJSON_AddStringToObject(args, "op", opsched_node_op_name(n)) ||
        (y && !cJSON_AddItemToObject(args, "output_shape", shape_text(&y->shape))) ||
        !cJSON_AddNumberToObject(args, "flops", (double)n->cost.flops) ||
        !cJSON_AddStringToObject(args, "algorithm", l->algo) ||
        !cJSON_AddBoolToObject(args, "fallback", l->fallback) ||
        !cJSON_AddNumberToObject(args, "median_ms", l->median_ms) ||
        !cJSON_AddStringToObject(args, "timing", timing_note))
        return OS_NOMEM(t->ctx);
    if (!isnan(l->energy_j) && !cJSON_AddNumberToObject(args, "energy_j", l->energy_j))
        return OS_NOMEM(t->ctx);
    return OPSCHED_OK;
}

/* The profile's own event on its track, with the end-to-end numbers. */
static opsched_status profile_event(opsched_trace *t, const opsched_profile_result *r,
                                    const char *label, int pid, double ts, double dur)
{
    cJSON *e = event(t, "X", label, pid, PROFILE_TID, ts);
    cJSON *args = e ? cJSON_AddObjectToObject(e, "args") : NULL;
    if (!args || !cJSON_AddStringToObject(e, "cat", "profile") ||
        !cJSON_AddNumberToObject(e, "dur", dur) ||
        !cJSON_AddNumberToObject(args, "e2e_median_ms", r->e2e.median) ||
        !cJSON_AddNumberToObject(args, "layered_median_ms", r->e2e_layered.median) ||
        !cJSON_AddNumberToObject(args, "layer_sum_ms",
                                 isnan(r->layer_sum_ms) ? 0 : r->layer_sum_ms))
        return OS_NOMEM(t->ctx);
    if (r->e2e_graph.n > 0 &&
        !cJSON_AddNumberToObject(args, "graph_median_ms", r->e2e_graph.median))
        return OS_NOMEM(t->ctx);
    if (r->energy.valid &&
        !cJSON_AddNumberToObject(args, "energy_per_inference_j", r->energy.energy_j))
        return OS_NOMEM(t->ctx);
    return OPSCHED_OK;
}

/* The power samples from the slot's start; returns the span in us. */
static opsched_status power_events(opsched_trace *t, const opsched_profile_result *r, int pid,
                                   double base_us, double *span_us)
{
    *span_us = 0;
    for (int i = 0; i < r->n_power; i++) {
        double ts = base_us + (r->power_t_ms[i] - r->power_t_ms[0]) * 1000.0;
        cJSON *e = event(t, "C", "power", pid, STREAM_TID, ts);
        cJSON *args = e ? cJSON_AddObjectToObject(e, "args") : NULL;
        if (!args || !cJSON_AddNumberToObject(args, "W", r->power_w[i])) return OS_NOMEM(t->ctx);
        *span_us = ts - base_us;
    }
    return OPSCHED_OK;
}

opsched_status opsched_trace_add_profile(opsched_trace *t, const opsched_device_info *dev,
                                         const opsched_graph *g, const opsched_profile_result *r,
                                         const char *label)
{
    if (!t) return OPSCHED_ERR_INVALID_ARG;
    if (!dev || !g || !r || !label)
        return OS_FAIL(t->ctx, OPSCHED_ERR_INVALID_ARG, "trace: NULL argument");
    if (r->n_layers != opsched_graph_num_nodes(g))
        return OS_FAIL(t->ctx, OPSCHED_ERR_INVALID_ARG,
                       "trace: the profile has %d layers, the graph %d nodes", r->n_layers,
                       opsched_graph_num_nodes(g));
    int pid = 0;
    OS_TRY(device_pid(t, dev, &pid));
    double base = t->next_us, ts = base, power_span = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const opsched_layer_profile *l = &r->layers[i];
        if (!l->timed || l->stats.n == 0) continue;
        OS_TRY(layer_event(t, g, l, pid, ts));
        ts += l->run_ms * 1000.0;
    }
    OS_TRY(power_events(t, r, pid, base, &power_span));
    double span = fmax(fmax(ts - base, power_span), 1.0);
    OS_TRY(profile_event(t, r, label, pid, base, span));
    /* A gap, so one profile's end does not touch the next one's start. */
    t->next_us = base + span + fmax(0.1 * span, 100.0);
    return OPSCHED_OK;
}

/* Schedule streams get thread ids from here on, named on first use. */
#define SCHED_TID 100

opsched_status opsched_trace_add_schedule(opsched_trace *t, const opsched_device_info *dev,
                                          const opsched_exec_span *spans, int n_spans,
                                          double total_ms, const char *label)
{
    if (!t) return OPSCHED_ERR_INVALID_ARG;
    if (!dev || (!spans && n_spans) || n_spans < 0 || !label)
        return OS_FAIL(t->ctx, OPSCHED_ERR_INVALID_ARG, "trace: NULL argument");
    int pid = 0, streams = 0;
    OS_TRY(device_pid(t, dev, &pid));
    double base = t->next_us, span = fmax(total_ms * 1000.0, 1.0);
    for (int i = 0; i < n_spans; i++)
        streams = spans[i].stream + 1 > streams ? spans[i].stream + 1 : streams;
    for (int k = t->sched_tracks[pid - 1]; k < streams; k++) {
        char name[64];
        snprintf(name, sizeof(name), "schedule stream %d", k);
        OS_TRY(metadata(t, "thread_name", pid, SCHED_TID + k, name));
        t->sched_tracks[pid - 1] = k + 1;
    }
    for (int i = 0; i < n_spans; i++) {
        const opsched_exec_span *sp = &spans[i];
        cJSON *e = event(t, "X", sp->label, pid, SCHED_TID + sp->stream,
                         base + sp->start_ms * 1000.0);
        cJSON *args = e ? cJSON_AddObjectToObject(e, "args") : NULL;
        if (!args || !cJSON_AddStringToObject(e, "cat", "launch") ||
            !cJSON_AddNumberToObject(e, "dur", sp->dur_ms * 1000.0) ||
            !cJSON_AddNumberToObject(args, "stage", sp->stage + 1) ||
            !cJSON_AddNumberToObject(args, "stream", sp->stream) ||
            !cJSON_AddNumberToObject(args, "node", sp->node) ||
            !cJSON_AddStringToObject(args, "timing",
                                     "one traced run: a timestamp pair around every launch on "
                                     "its stream, from the run's start on stream 0"))
            return OS_NOMEM(t->ctx);
    }
    cJSON *e = event(t, "X", label, pid, PROFILE_TID, base);
    cJSON *args = e ? cJSON_AddObjectToObject(e, "args") : NULL;
    if (!args || !cJSON_AddStringToObject(e, "cat", "schedule") ||
        !cJSON_AddNumberToObject(e, "dur", span) ||
        !cJSON_AddNumberToObject(args, "traced_run_ms", total_ms) ||
        !cJSON_AddNumberToObject(args, "launches", n_spans) ||
        !cJSON_AddNumberToObject(args, "streams", streams))
        return OS_NOMEM(t->ctx);
    t->next_us = base + span + fmax(0.1 * span, 100.0);
    return OPSCHED_OK;
}

opsched_status opsched_trace_write(const opsched_trace *t, const char *path)
{
    if (!t) return OPSCHED_ERR_INVALID_ARG;
    if (!path || !*path) return OS_FAIL(t->ctx, OPSCHED_ERR_INVALID_ARG, "trace: no file name");
    char *text = cJSON_PrintUnformatted(t->root);
    if (!text) return OS_NOMEM(t->ctx);
    size_t len = strlen(text);
    text[len] = '\n'; /* the NUL becomes the last line's end; len + 1 bytes written */
    opsched_status st = opsched_out_write(t->ctx, path, "trace", 0, text, len + 1);
    cJSON_free(text);
    return st;
}
