/*
 * json.c - the schedule file (cJSON) and the readable description.
 *
 * Every node is written by index and name, so a file read against another
 * model, or another version of the same model, fails with the stage and
 * the node that disagree instead of running something else.  The format
 * is described in docs/SCHEDULE.md.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/util.h"
#include "sched/sched_impl.h"

/* ---- writing --------------------------------------------------------------- */

static cJSON *node_ref(const opsched_graph *g, int i)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    const opsched_node *n = opsched_graph_node(g, i);
    cJSON_AddNumberToObject(o, "node", i);
    cJSON_AddStringToObject(o, "name", n ? n->name : "?");
    return o;
}

static cJSON *pair(int64_t a, int64_t b)
{
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)a));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)b));
    return arr;
}

static cJSON *stage_json(const opsched_graph *g, const opsched_stage *st)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "kind", st->kind == OPSCHED_STAGE_MERGE ? "merge" : "concurrent");
    if (st->ms >= 0) cJSON_AddNumberToObject(o, "ms", st->ms);
    if (st->kind == OPSCHED_STAGE_CONCURRENT) {
        cJSON *groups = cJSON_AddArrayToObject(o, "groups");
        for (int j = 0; j < st->n_groups; j++) {
            cJSON *gr = cJSON_CreateArray();
            for (int i = 0; i < st->groups[j].n_nodes; i++)
                cJSON_AddItemToArray(gr, node_ref(g, st->groups[j].nodes[i]));
            cJSON_AddItemToArray(groups, gr);
        }
        return o;
    }
    const opsched_merge *m = &st->merge;
    const opsched_tensor *in = opsched_graph_tensor(g, m->input);
    cJSON_AddStringToObject(o, "input", in ? in->name : "?");
    cJSON_AddItemToObject(o, "kernel", pair(m->kernel[0], m->kernel[1]));
    cJSON_AddItemToObject(o, "stride", pair(m->stride[0], m->stride[1]));
    cJSON *pads = cJSON_AddArrayToObject(o, "pads");
    for (int d = 0; d < 4; d++) cJSON_AddItemToArray(pads, cJSON_CreateNumber((double)m->pads[d]));
    cJSON_AddNumberToObject(o, "out_channels", (double)m->out_channels);
    cJSON *members = cJSON_AddArrayToObject(o, "members");
    for (int j = 0; j < m->n_members; j++) {
        const opsched_merge_member *mm = &m->members[j];
        cJSON *e = node_ref(g, mm->node);
        cJSON_AddItemToObject(e, "relu", mm->relu >= 0 ? node_ref(g, mm->relu) : cJSON_CreateNull());
        cJSON_AddNumberToObject(e, "channel_offset", (double)mm->channel_offset);
        cJSON_AddNumberToObject(e, "out_channels", (double)mm->out_channels);
        cJSON_AddItemToObject(e, "kernel_offset", pair(mm->kernel_offset[0], mm->kernel_offset[1]));
        cJSON_AddItemToArray(members, e);
    }
    return o;
}

opsched_status opsched_schedule_to_json(const opsched_schedule *s, const opsched_graph *g,
                                        char **out)
{
    *out = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root) return OS_NOMEM(s->ctx);
    cJSON_AddStringToObject(root, "format", OPSCHED_SCHEDULE_FORMAT);
    cJSON_AddNumberToObject(root, "version", OPSCHED_SCHEDULE_VERSION);
    cJSON_AddStringToObject(root, "model", s->model);
    cJSON_AddNumberToObject(root, "graph_nodes", s->n_graph_nodes);
    cJSON_AddNumberToObject(root, "batch", (double)s->batch);
    cJSON_AddItemToObject(root, "input_size", pair(s->input_h, s->input_w));
    cJSON_AddStringToObject(root, "device", s->device);
    cJSON_AddStringToObject(root, "searcher", s->searcher);
    cJSON_AddStringToObject(root, "cost", s->cost);
    cJSON_AddNumberToObject(root, "r", s->r);
    cJSON_AddNumberToObject(root, "s", s->s);
    if (s->predicted_ms >= 0) cJSON_AddNumberToObject(root, "predicted_ms", s->predicted_ms);
    else cJSON_AddNullToObject(root, "predicted_ms");
    cJSON *stages = cJSON_AddArrayToObject(root, "stages");
    for (int k = 0; stages && k < s->n_stages; k++)
        cJSON_AddItemToArray(stages, stage_json(g, &s->stages[k]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return OS_NOMEM(s->ctx);
    /* Give the caller memory it frees with free(), whatever cJSON's hooks. */
    *out = strdup(text);
    cJSON_free(text);
    return *out ? OPSCHED_OK : OS_NOMEM(s->ctx);
}

opsched_status opsched_schedule_write(const opsched_schedule *s, const opsched_graph *g,
                                      const char *path)
{
    return opsched_schedule_write_flags(s, g, path, 0);
}

opsched_status opsched_schedule_write_flags(const opsched_schedule *s, const opsched_graph *g,
                                            const char *path, int flags)
{
    char *text;
    OS_TRY(opsched_schedule_to_json(s, g, &text));
    size_t n = strlen(text);
    text[n] = '\n'; /* written as n + 1 bytes: the text and its last line's end */
    opsched_status st = opsched_out_write(s->ctx, path, "schedule", flags, text, n + 1);
    free(text);
    return st;
}

/* ---- reading --------------------------------------------------------------- */

typedef struct reader {
    opsched_ctx *ctx;
    const opsched_graph *g;
    char where[96];  /* "stage 3 group 2" */
} reader;

static opsched_status bad(reader *r, opsched_status st, const char *fmt, ...) OS_PRINTF(3, 4);

static opsched_status bad(reader *r, opsched_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (r->where[0]) return OS_FAIL(r->ctx, st, "schedule: %s: %s", r->where, msg);
    return OS_FAIL(r->ctx, st, "schedule: %s", msg);
}

static int is_int(const cJSON *v, int64_t lo, int64_t hi)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && v->valuedouble >= (double)lo &&
           v->valuedouble <= (double)hi;
}

static opsched_status get_int(reader *r, const cJSON *o, const char *key, int64_t lo, int64_t hi,
                              int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!is_int(v, lo, hi))
        return bad(r, OPSCHED_ERR_PARSE, "'%s' must be an integer from %lld to %lld", key,
                   (long long)lo, (long long)hi);
    *out = (int64_t)v->valuedouble;
    return OPSCHED_OK;
}

static opsched_status get_pair(reader *r, const cJSON *o, const char *key, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 || !is_int(cJSON_GetArrayItem(v, 0), 0, INT32_MAX) ||
        !is_int(cJSON_GetArrayItem(v, 1), 0, INT32_MAX))
        return bad(r, OPSCHED_ERR_PARSE, "'%s' must be two non-negative integers", key);
    out[0] = (int64_t)cJSON_GetArrayItem(v, 0)->valuedouble;
    out[1] = (int64_t)cJSON_GetArrayItem(v, 1)->valuedouble;
    return OPSCHED_OK;
}

/* A {"node": i, "name": s} reference, checked against the graph. */
static opsched_status get_node(reader *r, const cJSON *ref, int *out)
{
    int n = opsched_graph_num_nodes(r->g);
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(ref, "node");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(ref, "name");
    if (!cJSON_IsObject(ref) || !cJSON_IsNumber(idx) || !cJSON_IsString(name))
        return bad(r, OPSCHED_ERR_PARSE, "a node must be {\"node\": index, \"name\": \"...\"}");
    if (!is_int(idx, 0, n - 1))
        return bad(r, OPSCHED_ERR_INVALID_ARG,
                   "node %g ('%s') is out of range: '%s' has %d nodes (a schedule of another "
                   "model?)",
                   idx->valuedouble, name->valuestring, opsched_graph_name(r->g), n);
    int i = (int)idx->valuedouble;
    const char *have = opsched_graph_node(r->g, i)->name;
    if (strcmp(have, name->valuestring) != 0)
        return bad(r, OPSCHED_ERR_INVALID_ARG,
                   "node %d is '%s' in '%s' but '%s' in the schedule (a schedule of another "
                   "model?)",
                   i, have, opsched_graph_name(r->g), name->valuestring);
    *out = i;
    return OPSCHED_OK;
}

static opsched_status read_concurrent(reader *r, const cJSON *stage, opsched_schedule *s, int k)
{
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(stage, "groups");
    if (!cJSON_IsArray(groups) || cJSON_GetArraySize(groups) < 1)
        return bad(r, OPSCHED_ERR_PARSE, "'groups' must be a non-empty array");
    int idx;
    OS_TRY(opsched_schedule_add_stage(s, &idx));
    int j = 0;
    const cJSON *gr;
    cJSON_ArrayForEach(gr, groups)
    {
        j++;
        snprintf(r->where, sizeof(r->where), "stage %d group %d", k + 1, j);
        int n = cJSON_GetArraySize(gr);
        if (!cJSON_IsArray(gr) || n < 1)
            return bad(r, OPSCHED_ERR_PARSE, "a group must be a non-empty array of nodes");
        int *nodes = malloc((size_t)n * sizeof(int));
        if (!nodes) return OS_NOMEM(r->ctx);
        int i = 0;
        const cJSON *ref;
        opsched_status st = OPSCHED_OK;
        cJSON_ArrayForEach(ref, gr)
        {
            st = get_node(r, ref, &nodes[i++]);
            if (st != OPSCHED_OK) break;
        }
        if (st == OPSCHED_OK) st = opsched_schedule_add_group(s, idx, nodes, n);
        free(nodes);
        OS_TRY(st);
    }
    return OPSCHED_OK;
}

static opsched_status read_merge(reader *r, const cJSON *stage, opsched_schedule *s, int k)
{
    snprintf(r->where, sizeof(r->where), "stage %d (merge)", k + 1);
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(stage, "members");
    int n = cJSON_GetArraySize(members);
    if (!cJSON_IsArray(members) || n < 2 || n > OS_SCHED_MAX_PART)
        return bad(r, OPSCHED_ERR_PARSE, "'members' must be an array of 2 to %d convolutions",
                   OS_SCHED_MAX_PART);
    int convs[OS_SCHED_MAX_PART], relus[OS_SCHED_MAX_PART];
    int64_t ch[OS_SCHED_MAX_PART], oc[OS_SCHED_MAX_PART], ko[OS_SCHED_MAX_PART][2];
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, members)
    {
        OS_TRY(get_node(r, m, &convs[i]));
        const cJSON *relu = cJSON_GetObjectItemCaseSensitive(m, "relu");
        relus[i] = -1;
        if (relu && !cJSON_IsNull(relu)) OS_TRY(get_node(r, relu, &relus[i]));
        OS_TRY(get_int(r, m, "channel_offset", 0, INT32_MAX, &ch[i]));
        OS_TRY(get_int(r, m, "out_channels", 1, INT32_MAX, &oc[i]));
        OS_TRY(get_pair(r, m, "kernel_offset", ko[i]));
        i++;
    }
    int64_t kernel[2], stride[2], out_ch;
    OS_TRY(get_pair(r, stage, "kernel", kernel));
    OS_TRY(get_pair(r, stage, "stride", stride));
    OS_TRY(get_int(r, stage, "out_channels", 1, INT32_MAX, &out_ch));
    const cJSON *pads = cJSON_GetObjectItemCaseSensitive(stage, "pads");
    if (!cJSON_IsArray(pads) || cJSON_GetArraySize(pads) != 4)
        return bad(r, OPSCHED_ERR_PARSE, "'pads' must be four integers");
    int64_t p[4];
    for (int d = 0; d < 4; d++) {
        const cJSON *v = cJSON_GetArrayItem(pads, d);
        if (!is_int(v, 0, INT32_MAX)) return bad(r, OPSCHED_ERR_PARSE, "'pads' must be four integers");
        p[d] = (int64_t)v->valuedouble;
    }
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(stage, "input");
    if (!cJSON_IsString(input)) return bad(r, OPSCHED_ERR_PARSE, "'input' must be a tensor name");
    /* The geometry follows from the graph; what the file says must agree. */
    int idx;
    opsched_status st = opsched_schedule_add_merge(s, r->g, convs, relus, n, &idx);
    if (st != OPSCHED_OK) {
        char why[512];
        snprintf(why, sizeof(why), "%s", opsched_ctx_last_error(r->ctx));
        return bad(r, st, "%s", why);
    }
    const opsched_merge *mg = &s->stages[idx].merge;
    const opsched_tensor *in = opsched_graph_tensor(r->g, mg->input);
    int same = strcmp(in->name, input->valuestring) == 0 && mg->kernel[0] == kernel[0] &&
               mg->kernel[1] == kernel[1] && mg->stride[0] == stride[0] &&
               mg->stride[1] == stride[1] && mg->out_channels == out_ch;
    for (int d = 0; d < 4; d++) same = same && mg->pads[d] == p[d];
    for (int j = 0; j < n; j++)
        same = same && mg->members[j].channel_offset == ch[j] && mg->members[j].out_channels == oc[j] &&
               mg->members[j].kernel_offset[0] == ko[j][0] &&
               mg->members[j].kernel_offset[1] == ko[j][1];
    if (!same)
        return bad(r, OPSCHED_ERR_INVALID_ARG,
                   "the merge recorded in the file (input '%s', kernel %lldx%lld, %lld channels) "
                   "differs from what '%s' gives (input '%s', kernel %lldx%lld, %lld channels)",
                   input->valuestring, (long long)kernel[0], (long long)kernel[1],
                   (long long)out_ch, opsched_graph_name(r->g), in->name,
                   (long long)mg->kernel[0], (long long)mg->kernel[1],
                   (long long)mg->out_channels);
    return OPSCHED_OK;
}

static opsched_status get_string(reader *r, const cJSON *root, const char *key, int required,
                                 const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = "";
    if (!v && !required) return OPSCHED_OK;
    if (!cJSON_IsString(v)) return bad(r, OPSCHED_ERR_PARSE, "'%s' must be a string", key);
    *out = v->valuestring;
    return OPSCHED_OK;
}

static opsched_status read_root(reader *r, const cJSON *root, opsched_schedule **out)
{
    if (!cJSON_IsObject(root)) return bad(r, OPSCHED_ERR_PARSE, "not a JSON object");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(format) || strcmp(format->valuestring, OPSCHED_SCHEDULE_FORMAT) != 0)
        return bad(r, OPSCHED_ERR_PARSE, "not a schedule file (\"format\" is not \"%s\")",
                   OPSCHED_SCHEDULE_FORMAT);
    int64_t version, nodes, batch = 0, r_lim = 0, s_lim = 0;
    OS_TRY(get_int(r, root, "version", 1, INT32_MAX, &version));
    if (version > OPSCHED_SCHEDULE_VERSION)
        return bad(r, OPSCHED_ERR_VERSION,
                   "version %lld was written by a newer opsched (this one reads version %d)",
                   (long long)version, OPSCHED_SCHEDULE_VERSION);
    const char *model, *device, *searcher, *cost;
    OS_TRY(get_string(r, root, "model", 1, &model));
    OS_TRY(get_int(r, root, "graph_nodes", 0, INT32_MAX, &nodes));
    if (strcmp(model, opsched_graph_name(r->g)) != 0 || nodes != opsched_graph_num_nodes(r->g))
        return bad(r, OPSCHED_ERR_INVALID_ARG,
                   "the schedule is for model '%s' (%lld nodes), not '%s' (%d nodes)", model,
                   (long long)nodes, opsched_graph_name(r->g), opsched_graph_num_nodes(r->g));
    OS_TRY(get_string(r, root, "device", 0, &device));
    OS_TRY(get_string(r, root, "searcher", 0, &searcher));
    OS_TRY(get_string(r, root, "cost", 0, &cost));
    if (cJSON_GetObjectItemCaseSensitive(root, "batch"))
        OS_TRY(get_int(r, root, "batch", 0, INT32_MAX, &batch));
    if (cJSON_GetObjectItemCaseSensitive(root, "r")) OS_TRY(get_int(r, root, "r", 0, 1 << 20, &r_lim));
    if (cJSON_GetObjectItemCaseSensitive(root, "s")) OS_TRY(get_int(r, root, "s", 0, 1 << 20, &s_lim));
    const cJSON *stages = cJSON_GetObjectItemCaseSensitive(root, "stages");
    if (!cJSON_IsArray(stages)) return bad(r, OPSCHED_ERR_PARSE, "'stages' must be an array");

    opsched_schedule *s;
    OS_TRY(opsched_schedule_create(r->g, &s));
    opsched_status st;
    if (batch && s->batch && batch != s->batch)
        os_log(r->ctx, OPSCHED_LOG_WARN, "schedule: made for batch %lld, the graph has batch %lld",
               (long long)batch, (long long)s->batch);
    s->r = (int)r_lim;
    s->s = (int)s_lim;
    OS_TRY_GOTO(st, opsched_schedule_set_string(s, "device", device), fail);
    OS_TRY_GOTO(st, opsched_schedule_set_string(s, "searcher", searcher), fail);
    OS_TRY_GOTO(st, opsched_schedule_set_string(s, "cost", cost), fail);
    const cJSON *pm = cJSON_GetObjectItemCaseSensitive(root, "predicted_ms");
    if (cJSON_IsNumber(pm) && pm->valuedouble >= 0) s->predicted_ms = pm->valuedouble;
    int k = 0;
    const cJSON *stage;
    cJSON_ArrayForEach(stage, stages)
    {
        snprintf(r->where, sizeof(r->where), "stage %d", k + 1);
        const char *kind;
        if (!cJSON_IsObject(stage)) {
            st = bad(r, OPSCHED_ERR_PARSE, "a stage must be an object");
            goto fail;
        }
        OS_TRY_GOTO(st, get_string(r, stage, "kind", 1, &kind), fail);
        if (strcmp(kind, "concurrent") == 0)
            OS_TRY_GOTO(st, read_concurrent(r, stage, s, k), fail);
        else if (strcmp(kind, "merge") == 0)
            OS_TRY_GOTO(st, read_merge(r, stage, s, k), fail);
        else {
            st = bad(r, OPSCHED_ERR_PARSE, "'kind' must be \"concurrent\" or \"merge\", not \"%s\"",
                     kind);
            goto fail;
        }
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(stage, "ms");
        if (cJSON_IsNumber(ms) && ms->valuedouble >= 0) s->stages[s->n_stages - 1].ms = ms->valuedouble;
        k++;
    }
    r->where[0] = '\0';
    OS_TRY_GOTO(st, opsched_schedule_validate(r->g, s), fail);
    *out = s;
    return OPSCHED_OK;
fail:
    opsched_schedule_free(s);
    return st;
}

opsched_status opsched_schedule_from_json(opsched_ctx *ctx, const opsched_graph *g,
                                          const char *text, opsched_schedule **out)
{
    *out = NULL;
    reader r = {ctx, g, ""};
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "schedule: not valid JSON (near '%.20s')",
                       at ? at : "?");
    }
    opsched_status st = read_root(&r, root, out);
    cJSON_Delete(root);
    return st;
}

opsched_status opsched_schedule_read(opsched_ctx *ctx, const opsched_graph *g, const char *path,
                                     opsched_schedule **out)
{
    char *text;
    size_t size;
    *out = NULL;
    OS_TRY(os_file_read(ctx, path, "schedule", OS_FILE_MAX_SCHEDULE, &text, &size));
    opsched_status st = opsched_schedule_from_json(ctx, g, text, out);
    free(text);
    if (st != OPSCHED_OK) {
        char why[512];
        snprintf(why, sizeof(why), "%s", opsched_ctx_last_error(ctx));
        return OS_FAIL(ctx, st, "%s: %s", path, why);
    }
    return OPSCHED_OK;
}

/* ---- the readable description ------------------------------------------------ */

typedef struct liner {
    opsched_line_fn fn;
    void *user;
    char buf[1024];
    size_t used;
} liner;

static void add(liner *l, const char *fmt, ...) OS_PRINTF(2, 3);

static void add(liner *l, const char *fmt, ...)
{
    if (l->used >= sizeof(l->buf) - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->used, sizeof(l->buf) - l->used, fmt, ap);
    va_end(ap);
    if (n > 0) l->used = OS_MIN(l->used + (size_t)n, sizeof(l->buf) - 1);
}

static void flush(liner *l)
{
    l->fn(l->buf, l->user);
    l->used = 0;
    l->buf[0] = '\0';
}

opsched_status opsched_schedule_describe(const opsched_schedule *s, const opsched_graph *g,
                                         opsched_line_fn fn, void *user)
{
    liner l = {fn, user, "", 0};
    int groups = 0, merges = 0;
    for (int k = 0; k < s->n_stages; k++) {
        if (s->stages[k].kind == OPSCHED_STAGE_MERGE) merges++;
        else groups += s->stages[k].n_groups;
    }
    add(&l, "schedule of %s (batch %lld", s->model, (long long)s->batch);
    if (s->input_h) add(&l, ", %lldx%lld", (long long)s->input_h, (long long)s->input_w);
    add(&l, "): %s", s->searcher[0] ? s->searcher : "hand-made");
    if (s->r) add(&l, " r=%d s=%d", s->r, s->s);
    if (s->cost[0]) add(&l, ", cost %s", s->cost);
    if (s->device[0]) add(&l, " on %s", s->device);
    flush(&l);
    add(&l, "%d stages (%d merged), %d groups", s->n_stages, merges, groups);
    if (s->predicted_ms >= 0) add(&l, ", predicted %.4f ms", s->predicted_ms);
    flush(&l);
    for (int k = 0; k < s->n_stages; k++) {
        const opsched_stage *st = &s->stages[k];
        add(&l, "stage %d", k + 1);
        if (st->ms >= 0) add(&l, "  %.4f ms", st->ms);
        if (st->kind == OPSCHED_STAGE_CONCURRENT) {
            add(&l, "  %d group%s", st->n_groups, st->n_groups == 1 ? "" : "s");
            flush(&l);
            for (int j = 0; j < st->n_groups; j++) {
                add(&l, "  [%d]", j + 1);
                for (int i = 0; i < st->groups[j].n_nodes; i++)
                    add(&l, "%s %s", i ? " >" : "", opsched_graph_node(g, st->groups[j].nodes[i])->name);
                flush(&l);
            }
            continue;
        }
        const opsched_merge *m = &st->merge;
        add(&l, "  merged convolution: %d convs, kernel %lldx%lld, stride %lldx%lld, %lld channels",
            m->n_members, (long long)m->kernel[0], (long long)m->kernel[1],
            (long long)m->stride[0], (long long)m->stride[1], (long long)m->out_channels);
        flush(&l);
        for (int j = 0; j < m->n_members; j++) {
            const opsched_merge_member *mm = &m->members[j];
            add(&l, "  channels %lld..%lld  %s", (long long)mm->channel_offset,
                (long long)(mm->channel_offset + mm->out_channels - 1),
                opsched_graph_node(g, mm->node)->name);
            if (mm->relu >= 0) add(&l, " > %s", opsched_graph_node(g, mm->relu)->name);
            flush(&l);
        }
    }
    return OPSCHED_OK;
}
