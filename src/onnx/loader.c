/*
 * loader.c - ONNX files to graphs: unpacking, the table of names, the
 * topological order, and the pass that turns nodes into graph nodes.
 *
 * The file is untrusted.  Before protobuf-c sees it, a scan of the wire
 * format bounds the nesting of messages (a deep chain of subgraphs would
 * otherwise overflow the stack inside protobuf_c_message_unpack).  After
 * that every name is resolved, every node checked for undefined inputs and
 * the nodes ordered with Kahn's algorithm, preferring file order, so a
 * well-formed file keeps its own order and a cycle is reported by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "onnx/onnx_impl.h"

#define OS_ONNX_MAX_NESTING 64
/* ONNX IR versions this importer knows: 3 (opset imports) to 10. */
#define OS_ONNX_IR_MIN 3
#define OS_ONNX_OPSET_MIN 7
#define OS_ONNX_OPSET_MAX 28

/* ---- wire-format scan ------------------------------------------------- */

static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) return 0;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

static const ProtobufCFieldDescriptor *wire_field(const ProtobufCMessageDescriptor *d, uint64_t id)
{
    for (unsigned i = 0; i < d->n_fields; i++)
        if (d->fields[i].id == id) return &d->fields[i];
    return NULL;
}

/* 1 when buf is well-formed wire data for d nested at most max_depth deep;
 * *too_deep is set when the depth was the reason it is not. */
static int wire_scan(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                     int depth, int *too_deep)
{
    if (depth > OS_ONNX_MAX_NESTING) {
        *too_deep = 1;
        return 0;
    }
    while (p < end) {
        uint64_t tag, len;
        if (!wire_varint(&p, end, &tag)) return 0;
        if ((tag >> 3) == 0) return 0;
        switch (tag & 7) {
        case 0:
            if (!wire_varint(&p, end, &len)) return 0;
            break;
        case 1:
            if (end - p < 8) return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return 0;
            p += 4;
            break;
        case 2: {
            if (!wire_varint(&p, end, &len)) return 0;
            if (len > (uint64_t)(end - p)) return 0;
            const ProtobufCFieldDescriptor *f = d ? wire_field(d, tag >> 3) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                !wire_scan(p, p + len, f->descriptor, depth + 1, too_deep))
                return 0;
            p += len;
            break;
        }
        default:
            return 0; /* groups (3, 4) are not used by ONNX; 6, 7 do not exist */
        }
    }
    return 1;
}

/* ---- the name table --------------------------------------------------- */

static size_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

int os_onnx_find(const os_loader *L, const char *name)
{
    if (!name || !name[0] || !L->hcap) return -1;
    size_t mask = L->hcap - 1;
    for (size_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int v = L->htab[h];
        if (v < 0) return -1;
        if (strcmp(L->vals[v].name, name) == 0) return v;
    }
}

int os_onnx_root(const os_loader *L, int v)
{
    /* Aliases always point at values defined earlier, so this ends. */
    while (v >= 0 && L->vals[v].alias >= 0)
        v = L->vals[v].alias;
    return v;
}

/* Adds a value named name; a second definition of a name is an error. */
static opsched_status val_add(os_loader *L, const char *name, const char *what, int *out)
{
    if (!name || !name[0]) return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "%s has an empty name", what);
    if (os_onnx_find(L, name) >= 0)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "tensor '%s' is defined twice (again by %s)",
                       name, what);
    /* vals and htab were sized for every name up front. */
    int v = (int)L->n_vals++;
    os_val *x = &L->vals[v];
    memset(x, 0, sizeof(*x));
    x->name = name;
    x->id = -1;
    x->alias = -1;
    x->producer = -1;
    x->pad_src = -1;
    size_t mask = L->hcap - 1;
    size_t h = name_hash(name) & mask;
    while (L->htab[h] >= 0)
        h = (h + 1) & mask;
    L->htab[h] = v;
    *out = v;
    return OPSCHED_OK;
}

const char *os_onnx_node_label(const Onnx__NodeProto *node, int i, char *buf, size_t size)
{
    if (node->name && node->name[0]) return node->name;
    snprintf(buf, size, "%s_%d", node->op_type ? node->op_type : "node", i);
    return buf;
}

int os_onnx_num_in(const os_loader *L, int node)
{
    return L->in_off[node + 1] - L->in_off[node];
}

int os_onnx_in(const os_loader *L, int node, int k)
{
    if (k < 0 || k >= os_onnx_num_in(L, node)) return -1;
    return L->in_val[L->in_off[node] + k];
}

int os_onnx_num_out(const os_loader *L, int node)
{
    return L->out_off[node + 1] - L->out_off[node];
}

int os_onnx_out(const os_loader *L, int node, int k)
{
    if (k < 0 || k >= os_onnx_num_out(L, node)) return -1;
    return L->out_val[L->out_off[node] + k];
}

int os_onnx_num_uses(const os_loader *L, int v)
{
    return L->use_off[v + 1] - L->use_off[v];
}

int os_onnx_num_file_in(const os_loader *L, int node)
{
    int n = (int)L->gp->node[node]->n_input, all = os_onnx_num_in(L, node);
    return n < all ? n : all;
}

/* ---- the names a subgraph reads from outside ---------------------------- */

/* A set of borrowed names that remembers the order they came in. */
typedef struct name_set {
    const char **list;
    size_t n, cap_list;
    int *tab; /* indexes into list, -1 empty */
    size_t cap_tab;
} name_set;

static void set_free(name_set *s)
{
    free(s->list);
    free(s->tab);
    memset(s, 0, sizeof(*s));
}

static int set_has(const name_set *s, const char *name)
{
    if (!s->cap_tab) return 0;
    size_t mask = s->cap_tab - 1;
    for (size_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int i = s->tab[h];
        if (i < 0) return 0;
        if (strcmp(s->list[i], name) == 0) return 1;
    }
}

static opsched_status set_add(opsched_ctx *ctx, name_set *s, const char *name)
{
    if (!name || !name[0] || set_has(s, name)) return OPSCHED_OK;
    OS_TRY(os_grow(ctx, (void **)&s->list, &s->cap_list, s->n + 1, sizeof(*s->list)));
    s->list[s->n++] = name;
    if (2 * s->n > s->cap_tab) {
        size_t cap = s->cap_tab ? 2 * s->cap_tab : 16;
        while (cap < 2 * s->n)
            cap *= 2;
        int *tab = malloc(cap * sizeof(int));
        if (!tab) return OS_NOMEM(ctx);
        memset(tab, 0xff, cap * sizeof(int));
        for (size_t i = 0; i < s->n; i++) {
            size_t h = name_hash(s->list[i]) & (cap - 1);
            while (tab[h] >= 0)
                h = (h + 1) & (cap - 1);
            tab[h] = (int)i;
        }
        free(s->tab);
        s->tab = tab;
        s->cap_tab = cap;
        return OPSCHED_OK;
    }
    size_t h = name_hash(name) & (s->cap_tab - 1);
    while (s->tab[h] >= 0)
        h = (h + 1) & (s->cap_tab - 1);
    s->tab[h] = (int)(s->n - 1);
    return OPSCHED_OK;
}

/* Adds to out the names the nodes of gp (and of the subgraphs inside
 * them) read that gp does not define.  depth is bounded by the wire scan. */
static opsched_status free_names(opsched_ctx *ctx, const Onnx__GraphProto *gp, name_set *out)
{
    opsched_status st = OPSCHED_OK;
    name_set def = {0}, sub = {0};
    for (size_t i = 0; i < gp->n_initializer; i++)
        OS_TRY_GOTO(st, set_add(ctx, &def, gp->initializer[i]->name), done);
    for (size_t i = 0; i < gp->n_input; i++)
        OS_TRY_GOTO(st, set_add(ctx, &def, gp->input[i]->name), done);
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t j = 0; j < gp->node[i]->n_output; j++)
            OS_TRY_GOTO(st, set_add(ctx, &def, gp->node[i]->output[j]), done);
    /* An output may be an outer value passed through unchanged. */
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && !set_has(&def, gp->output[i]->name))
            OS_TRY_GOTO(st, set_add(ctx, out, gp->output[i]->name), done);
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t j = 0; j < n->n_input; j++)
            if (n->input[j] && !set_has(&def, n->input[j]))
                OS_TRY_GOTO(st, set_add(ctx, out, n->input[j]), done);
        for (size_t a = 0; a < n->n_attribute; a++) {
            const Onnx__AttributeProto *at = n->attribute[a];
            size_t ng = (at->g ? 1 : 0) + at->n_graphs;
            for (size_t k = 0; k < ng; k++) {
                const Onnx__GraphProto *g =
                    at->g && k == 0 ? at->g : at->graphs[k - (at->g ? 1 : 0)];
                if (!g) continue;
                OS_TRY_GOTO(st, free_names(ctx, g, &sub), done);
                for (size_t m = 0; m < sub.n; m++)
                    if (!set_has(&def, sub.list[m]))
                        OS_TRY_GOTO(st, set_add(ctx, out, sub.list[m]), done);
                set_free(&sub);
            }
        }
    }
done:
    set_free(&def);
    set_free(&sub);
    return st;
}

static int is_if(const Onnx__NodeProto *n)
{
    const char *dom = n->domain ? n->domain : "";
    return n->op_type && strcmp(n->op_type, "If") == 0 &&
           (dom[0] == '\0' || strcmp(dom, "ai.onnx") == 0);
}

/* The outer names the branches of If node n read, into out. */
static opsched_status if_captures(os_loader *L, const Onnx__NodeProto *n, name_set *out)
{
    for (size_t a = 0; a < n->n_attribute; a++) {
        const Onnx__AttributeProto *at = n->attribute[a];
        if (at->g) OS_TRY(free_names(L->ctx, at->g, out));
    }
    return OPSCHED_OK;
}

/* ---- building the tables ---------------------------------------------- */

static int is_float_elem(int32_t elem)
{
    return elem == OS_ONNX_FLOAT || elem == OS_ONNX_FLOAT16 || elem == OS_ONNX_BFLOAT16 ||
           elem == OS_ONNX_DOUBLE;
}

static opsched_status add_initializers(os_loader *L)
{
    const Onnx__GraphProto *gp = L->gp;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        char what[64];
        snprintf(what, sizeof(what), "initializer #%zu", i);
        int v;
        OS_TRY(val_add(L, t->name, what, &v));
        os_val *x = &L->vals[v];
        x->elem = t->data_type;
        x->init = t;
        /* Learned parameters are floating point; integer initializers are
         * shapes, indices and axes written by constant folding. */
        x->role = is_float_elem(t->data_type) ? OS_ROLE_WEIGHT : OS_ROLE_CONST;
        OS_TRY(os_onnx_tensor_check(L, t, t->name));
        OS_TRY(os_onnx_tensor_shape(L->ctx, t, t->name, &x->shape));
        x->has_shape = 1;
        /* Learned weights stay out of the host table but for scalars and short
         * vectors, which exporters also use as constants. */
        int64_t keep = x->role == OS_ROLE_WEIGHT ? 64 : OS_ONNX_FOLD_MAX_ELEMS;
        OS_TRY(os_onnx_tensor_cval(L, t, t->name, keep, &x->cv));
    }
    return OPSCHED_OK;
}

static opsched_status add_graph_inputs(os_loader *L)
{
    const Onnx__GraphProto *gp = L->gp;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        /* Old exporters list initializers as inputs too: those are weights. */
        int v = os_onnx_find(L, vi->name);
        if (v >= 0 && L->vals[v].init) continue;
        char what[64];
        snprintf(what, sizeof(what), "graph input #%zu", i);
        OS_TRY(val_add(L, vi->name, what, &v));
        L->vals[v].role = OS_ROLE_INPUT;
        L->vals[v].is_graph_input = 1;
    }
    return OPSCHED_OK;
}

static opsched_status add_node_outputs(os_loader *L)
{
    const Onnx__GraphProto *gp = L->gp;
    size_t n_out = 0;
    for (int i = 0; i < L->n_nodes; i++)
        n_out += gp->node[i]->n_output;
    if (n_out > INT32_MAX / 2) return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "too many node outputs");
    L->out_off = malloc(sizeof(int) * ((size_t)L->n_nodes + 1));
    L->out_val = malloc(sizeof(int) * (n_out + 1));
    if (!L->out_off || !L->out_val) return OS_NOMEM(L->ctx);
    int k = 0;
    for (int i = 0; i < L->n_nodes; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        if (!n->op_type || !n->op_type[0])
            return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "node #%d has no op_type", i);
        L->out_off[i] = k;
        for (size_t j = 0; j < n->n_output; j++) {
            int v = -1;
            if (n->output[j] && n->output[j][0]) {
                char buf[96], what[160];
                snprintf(what, sizeof(what), "node '%s'",
                         os_onnx_node_label(n, i, buf, sizeof(buf)));
                OS_TRY(val_add(L, n->output[j], what, &v));
                L->vals[v].producer = i;
            }
            L->out_val[k++] = v;
        }
    }
    L->out_off[L->n_nodes] = k;
    return OPSCHED_OK;
}

/* An If node also reads what its branches read from outside: those values
 * come after its own input, so that they are ordered before it and counted
 * as used. */
static opsched_status resolve_node_inputs(os_loader *L)
{
    opsched_status st = OPSCHED_OK;
    const Onnx__GraphProto *gp = L->gp;
    size_t n_in = 0;
    name_set *caps = calloc((size_t)L->n_nodes + 1, sizeof(name_set));
    if (!caps) return OS_NOMEM(L->ctx);
    for (int i = 0; i < L->n_nodes; i++) {
        n_in += gp->node[i]->n_input;
        if (is_if(gp->node[i])) {
            OS_TRY_GOTO(st, if_captures(L, gp->node[i], &caps[i]), done);
            n_in += caps[i].n;
        }
    }
    if (n_in > INT32_MAX / 2) {
        st = OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "too many node inputs");
        goto done;
    }
    L->in_off = malloc(sizeof(int) * ((size_t)L->n_nodes + 1));
    L->in_val = malloc(sizeof(int) * (n_in + 1));
    L->use_off = calloc(L->n_vals + 2, sizeof(int));
    L->use_node = malloc(sizeof(int) * (n_in + 1));
    L->use_pos = malloc(sizeof(int) * (n_in + 1));
    if (!L->in_off || !L->in_val || !L->use_off || !L->use_node || !L->use_pos) {
        st = OS_NOMEM(L->ctx);
        goto done;
    }
    int k = 0;
    for (int i = 0; i < L->n_nodes; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        L->in_off[i] = k;
        for (size_t j = 0; j < n->n_input + caps[i].n; j++) {
            const char *nm = j < n->n_input ? n->input[j] : caps[i].list[j - n->n_input];
            int v = -1;
            if (nm && nm[0]) {
                v = os_onnx_find(L, nm);
                if (v < 0) {
                    char buf[96];
                    st = OS_FAIL(L->ctx, OPSCHED_ERR_PARSE,
                                 "node '%s' (%s) reads '%s'%s, which no node, input or "
                                 "initializer defines",
                                 os_onnx_node_label(n, i, buf, sizeof(buf)),
                                 n->op_type ? n->op_type : "?", nm,
                                 j < n->n_input ? "" : " in a branch");
                    goto done;
                }
                L->use_off[v + 1]++;
            }
            L->in_val[k++] = v;
        }
    }
    L->in_off[L->n_nodes] = k;
    /* Counting sort of the uses by value. */
    for (size_t v = 0; v < L->n_vals; v++)
        L->use_off[v + 1] += L->use_off[v];
    int *fill = calloc(L->n_vals + 1, sizeof(int));
    if (!fill) {
        st = OS_NOMEM(L->ctx);
        goto done;
    }
    for (int i = 0; i < L->n_nodes; i++)
        for (int j = L->in_off[i]; j < L->in_off[i + 1]; j++) {
            int v = L->in_val[j];
            if (v < 0) continue;
            int at = L->use_off[v] + fill[v]++;
            L->use_node[at] = i;
            L->use_pos[at] = j - L->in_off[i];
        }
    free(fill);
done:
    for (int i = 0; i < L->n_nodes; i++)
        set_free(&caps[i]);
    free(caps);
    return st;
}

/* ---- topological order ------------------------------------------------ */

static void heap_push(int *h, int *n, int x)
{
    int i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > x) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static int heap_pop(int *h, int *n)
{
    int top = h[0], x = h[--*n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= x) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = x;
    return top;
}

static opsched_status topo_sort(os_loader *L)
{
    opsched_status st = OPSCHED_OK;
    int n = L->n_nodes, n_heap = 0, n_done = 0;
    int *indeg = calloc((size_t)n + 1, sizeof(int));
    int *heap = malloc(sizeof(int) * ((size_t)n + 1));
    L->order = malloc(sizeof(int) * ((size_t)n + 1));
    if (!indeg || !heap || !L->order) {
        st = OS_NOMEM(L->ctx);
        goto done;
    }
    for (int i = 0; i < n; i++)
        for (int j = L->in_off[i]; j < L->in_off[i + 1]; j++)
            if (L->in_val[j] >= 0 && L->vals[L->in_val[j]].producer >= 0) indeg[i]++;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0) heap_push(heap, &n_heap, i);
    while (n_heap > 0) {
        int i = heap_pop(heap, &n_heap);
        L->order[n_done++] = i;
        for (int j = L->out_off[i]; j < L->out_off[i + 1]; j++) {
            int v = L->out_val[j];
            if (v < 0) continue;
            for (int u = L->use_off[v]; u < L->use_off[v + 1]; u++)
                if (--indeg[L->use_node[u]] == 0) heap_push(heap, &n_heap, L->use_node[u]);
        }
    }
    if (n_done < n) {
        int bad = 0;
        while (bad < n && indeg[bad] == 0)
            bad++;
        char buf[96];
        const Onnx__NodeProto *node = L->gp->node[bad];
        st = OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "the graph has a cycle through node '%s' (%s)",
                     os_onnx_node_label(node, bad, buf, sizeof(buf)),
                     node->op_type ? node->op_type : "?");
    }
done:
    free(indeg);
    free(heap);
    return st;
}

/* Integer initializers are shapes and indices, but quantised weights are
 * weights: those read as the data of DequantizeLinear. */
static void quantized_weights(os_loader *L)
{
    for (size_t v = 0; v < L->n_vals; v++) {
        os_val *x = &L->vals[v];
        if (!x->init || x->role != OS_ROLE_CONST) continue;
        if (x->elem != OS_ONNX_INT8 && x->elem != OS_ONNX_UINT8 && x->elem != OS_ONNX_INT32)
            continue;
        for (int u = L->use_off[v]; u < L->use_off[v + 1]; u++) {
            const char *op = L->gp->node[L->use_node[u]]->op_type;
            if (L->use_pos[u] == 0 && op && strcmp(op, "DequantizeLinear") == 0)
                x->role = OS_ROLE_WEIGHT;
        }
    }
}

/* ---- model checks ----------------------------------------------------- */

static opsched_status check_model(os_loader *L, const Onnx__ModelProto *m)
{
    if (!m->has_ir_version || !m->graph)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE,
                       "not an ONNX model (no %s); is this a .onnx file?",
                       !m->has_ir_version ? "ir_version" : "graph");
    if (m->ir_version < OS_ONNX_IR_MIN)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "ONNX IR version %lld is too old (opsched reads %d and later)",
                       (long long)m->ir_version, OS_ONNX_IR_MIN);
    L->opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *d = o->domain ? o->domain : "";
        if ((d[0] == '\0' || strcmp(d, "ai.onnx") == 0) && o->has_version) L->opset = o->version;
    }
    if (L->opset < 0)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "the model imports no ai.onnx opset");
    if (L->opset < OS_ONNX_OPSET_MIN || L->opset > OS_ONNX_OPSET_MAX)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "opset %lld is not supported (opsched reads opsets %d to %d)",
                       (long long)L->opset, OS_ONNX_OPSET_MIN, OS_ONNX_OPSET_MAX);
    const Onnx__GraphProto *gp = m->graph;
    if (gp->n_node > (size_t)INT32_MAX / 4)
        return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "too many nodes (%zu)", gp->n_node);
    if (gp->n_output == 0) return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "the graph has no outputs");
    if (gp->n_sparse_initializer > 0)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED, "sparse initializers are not supported");
    return OPSCHED_OK;
}

/* Sizes the name table for the graph's names and extra more. */
static opsched_status alloc_tables(os_loader *L, size_t extra)
{
    const Onnx__GraphProto *gp = L->gp;
    size_t n = gp->n_input + gp->n_initializer + extra;
    for (size_t i = 0; i < gp->n_node; i++)
        n += gp->node[i]->n_output;
    if (n > (size_t)INT32_MAX / 4) return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "too many tensors");
    L->cap_vals = n + 1;
    L->vals = calloc(L->cap_vals, sizeof(os_val));
    L->hcap = 16;
    while (L->hcap < 2 * L->cap_vals)
        L->hcap *= 2;
    L->htab = malloc(L->hcap * sizeof(int));
    if (!L->vals || !L->htab) return OS_NOMEM(L->ctx);
    memset(L->htab, 0xff, L->hcap * sizeof(int));
    L->n_nodes = (int)gp->n_node;
    return OPSCHED_OK;
}

/* ---- outputs ---------------------------------------------------------- */

static opsched_status mark_outputs(os_loader *L)
{
    const Onnx__GraphProto *gp = L->gp;
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name;
        int v = os_onnx_root(L, os_onnx_find(L, name));
        if (v < 0)
            return OS_FAIL(L->ctx, OPSCHED_ERR_PARSE, "graph output '%s' is not defined",
                           name ? name : "");
        int id, other;
        OS_TRY(os_onnx_tensor_id(L, v, &id));
        /* A decomposition's last tensor, or an inlined If branch's, takes
         * the name the model gives its output (unless another tensor has
         * it: then the output keeps the name it has). */
        const opsched_tensor *t = opsched_graph_tensor(L->g, id);
        if (name && *name && strcmp(t->name, name) != 0 &&
            opsched_graph_find_tensor(L->g, name, &other) == OPSCHED_ERR_NOT_FOUND) {
            /* An output that is a graph input under another name (a no-op
             * reduction, an Identity folded away) is a copy: the input
             * keeps the name its data is fed by. */
            if (t->kind == OPSCHED_TENSOR_INPUT) {
                const char *out_name = name;
                OS_TRY(opsched_graph_add_node(L->g, name, OPSCHED_OP_IDENTITY, NULL, &id, 1, 1,
                                              &out_name, &id));
            } else {
                OS_TRY(opsched_graph_rename_tensor(L->g, id, name));
            }
        }
        OS_TRY(opsched_graph_mark_output(L->g, id)); /* marking twice is harmless */
    }
    return OPSCHED_OK;
}

/* ---- the passes ------------------------------------------------------- */

static opsched_status convert_nodes(os_loader *L)
{
    for (int k = 0; k < L->n_nodes; k++) {
        int i = L->order[k];
        const Onnx__NodeProto *n = L->gp->node[i];
        const char *dom = n->domain ? n->domain : "";
        if (dom[0] && strcmp(dom, "ai.onnx") != 0) return os_onnx_unsupported_op(L, i);
        int done = 0;
        OS_TRY(os_onnx_fold(L, i, &done));
        if (!done) OS_TRY(os_onnx_convert(L, i));
        if (done && L->taint && strcmp(n->op_type, "Shape") != 0 && strcmp(n->op_type, "Size") != 0) {
            /* What was computed from given values is known only because of
             * them (a Shape reads no values). */
            int t = 0;
            for (int j = 0; j < os_onnx_num_in(L, i); j++) {
                int v = os_onnx_root(L, os_onnx_in(L, i, j));
                if (v >= 0 && L->taint[v]) t = 1;
            }
            for (int j = 0; t && j < os_onnx_num_out(L, i); j++) {
                int v = os_onnx_out(L, i, j);
                if (v >= 0) L->taint[v] = L->taint[os_onnx_root(L, v)] = 1;
            }
        }
    }
    return OPSCHED_OK;
}

static void loader_free_tables(os_loader *L)
{
    free(L->vals);
    free(L->htab);
    free(L->in_off);
    free(L->in_val);
    free(L->out_off);
    free(L->out_val);
    free(L->use_off);
    free(L->use_node);
    free(L->use_pos);
    free(L->order);
    free(L->need);
    free(L->taint);
}

static void loader_free(os_loader *L)
{
    for (size_t i = 0; i < L->n_cvs; i++) {
        free(L->cvs[i]->i);
        free(L->cvs[i]->f);
        free(L->cvs[i]);
    }
    free(L->cvs);
    loader_free_tables(L);
}

/* ---- If with a known condition ------------------------------------------ */

/* Converts the nodes of branch b of If node `node` with a loader of their
 * own (N), whose first values are copies of the outer values the branch
 * reads; then the If's outputs become the branch's. */
static opsched_status inline_branch(os_loader *L, int node, const Onnx__GraphProto *b, os_loader *N)
{
    const Onnx__NodeProto *n = L->gp->node[node];
    int n_file = os_onnx_num_file_in(L, node), n_all = os_onnx_num_in(L, node);
    N->ctx = L->ctx;
    N->opts = L->opts;
    N->base_dir = L->base_dir;
    N->gp = b;
    N->opset = L->opset;
    N->g = L->g;
    N->parent = L;
    N->depth = L->depth + 1;
    N->fold_used = L->fold_used;
    if (b->n_input > 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                 "a branch takes no inputs, this one %zu", b->n_input);
    if (b->n_sparse_initializer > 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "sparse initializers are not supported");
    if (b->n_output != n->n_output)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                 "the branch has %zu outputs, the node %zu", b->n_output,
                                 n->n_output);
    OS_TRY(alloc_tables(N, (size_t)(n_all - n_file)));
    for (int k = n_file; k < n_all; k++) {
        int v = os_onnx_in(L, node, k), w;
        OS_TRY(val_add(N, L->vals[v].name, "an If branch", &w));
        os_val *d = &N->vals[w];
        *d = L->vals[os_onnx_root(L, v)];
        d->name = L->vals[v].name;
        d->alias = -1;
        d->producer = -1;
        d->is_graph_input = 0;
        d->pad_src = -1;
    }
    OS_TRY(add_initializers(N));
    OS_TRY(add_node_outputs(N));
    OS_TRY(resolve_node_inputs(N));
    OS_TRY(topo_sort(N));
    quantized_weights(N);
    OS_TRY(convert_nodes(N));
    /* Outer weights and constants the branch made graph tensors of. */
    for (int k = n_file; k < n_all; k++) {
        os_val *outer = &L->vals[os_onnx_root(L, os_onnx_in(L, node, k))];
        if (outer->id < 0) outer->id = N->vals[k - n_file].id;
    }
    for (size_t k = 0; k < b->n_output; k++) {
        int ov = os_onnx_out(L, node, (int)k);
        if (ov < 0) continue;
        int w = os_onnx_root(N, os_onnx_find(N, b->output[k]->name));
        if (w < 0)
            return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                     "branch output '%s' is not defined",
                                     b->output[k]->name ? b->output[k]->name : "");
        os_val *d = &L->vals[ov];
        if (w < n_all - n_file) {
            d->alias = os_onnx_root(L, os_onnx_in(L, node, n_file + w));
            continue;
        }
        const os_val *sv = &N->vals[w];
        d->role = sv->role;
        d->elem = sv->elem;
        d->has_shape = sv->has_shape;
        d->shape = sv->shape;
        d->id = sv->id;
        d->cv = sv->cv;
        d->init = sv->init;
    }
    return OPSCHED_OK;
}

opsched_status os_onnx_inline_if(os_loader *L, int node)
{
    const Onnx__NodeProto *n = L->gp->node[node];
    if (os_onnx_in(L, node, 0) < 0)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "the condition is missing");
    const os_cval *c = os_onnx_in_cval(L, node, 0);
    if (!c)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "the condition '%s' is computed at run time; only an If whose "
                                 "condition is known when the model is loaded is supported",
                                 L->vals[os_onnx_in(L, node, 0)].name);
    if (c->n != 1)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE,
                                 "the condition has %lld values, not one", (long long)c->n);
    const char *which = os_onnx_cval_float(c, 0) != 0 ? "then_branch" : "else_branch";
    const Onnx__AttributeProto *a = os_onnx_attr(n, which);
    if (!a || !a->g)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "attribute '%s' is missing", which);
    if (L->depth >= OS_ONNX_MAX_NESTING)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED, "If nested too deep");
    os_loader N;
    memset(&N, 0, sizeof(N));
    opsched_status st = inline_branch(L, node, a->g, &N);
    /* The branch's host constants live as long as the model's. */
    if (N.n_cvs > 0) {
        opsched_status g =
            os_grow(L->ctx, (void **)&L->cvs, &L->cap_cvs, L->n_cvs + N.n_cvs, sizeof(*L->cvs));
        if (g == OPSCHED_OK) {
            memcpy(L->cvs + L->n_cvs, N.cvs, N.n_cvs * sizeof(*N.cvs));
            L->n_cvs += N.n_cvs;
            N.n_cvs = 0;
        } else if (st == OPSCHED_OK) {
            st = g;
        }
    }
    L->fold_used = N.fold_used > L->fold_used ? N.fold_used : L->fold_used;
    loader_free(&N);
    return st;
}

static opsched_status load_model(os_loader *L, const Onnx__ModelProto *m, const char *name)
{
    OS_TRY(check_model(L, m));
    L->gp = m->graph;
    OS_TRY(alloc_tables(L, 0));
    OS_TRY(add_initializers(L));
    OS_TRY(add_graph_inputs(L));
    OS_TRY(add_node_outputs(L));
    OS_TRY(resolve_node_inputs(L));
    OS_TRY(topo_sort(L));
    quantized_weights(L);
    if (!name || !name[0]) name = (L->gp->name && L->gp->name[0]) ? L->gp->name : "onnx";
    OS_TRY(opsched_graph_create(L->ctx, name, &L->g));
    OS_TRY(os_onnx_inputs(L));
    OS_TRY(convert_nodes(L));
    OS_TRY(mark_outputs(L));
    if (L->opts.no_rewrite) return OPSCHED_OK;
    int n = 0;
    unsigned flags = (L->opts.keep_attention ? OPSCHED_REWRITE_KEEP_ATTENTION : 0u) |
                     (L->opts.keep_projections ? OPSCHED_REWRITE_KEEP_PROJECTIONS : 0u) |
                     (L->opts.keep_scales ? OPSCHED_REWRITE_KEEP_SCALES : 0u);
    OS_TRY(opsched_graph_rewrite_patterns(&L->g, flags, &n));
    if (n) os_log(L->ctx, OPSCHED_LOG_DEBUG, "%s: %d operator pattern(s) rewritten", name, n);
    return OPSCHED_OK;
}

opsched_status opsched_onnx_load_buffer(opsched_ctx *ctx, const void *data, size_t size,
                                        const char *base_dir, const opsched_onnx_options *opts,
                                        const char *name, opsched_graph **out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_onnx_load_buffer: out is NULL");
    *out = NULL;
    if (!data && size > 0)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_onnx_load_buffer: data is NULL");
    if (size == 0) return OS_FAIL(ctx, OPSCHED_ERR_PARSE, "not an ONNX model: the file is empty");
    int too_deep = 0;
    const uint8_t *p = data;
    if (!wire_scan(p, p + size, &onnx__model_proto__descriptor, 0, &too_deep)) {
        if (too_deep)
            return OS_FAIL(ctx, OPSCHED_ERR_UNSUPPORTED, "messages nested more than %d deep",
                           OS_ONNX_MAX_NESTING);
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "not an ONNX model: truncated or corrupt protobuf data (%zu bytes)", size);
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, p);
    if (!m)
        return OS_FAIL(ctx, OPSCHED_ERR_PARSE,
                       "not an ONNX model: truncated or corrupt protobuf data (%zu bytes)", size);
    os_loader L;
    memset(&L, 0, sizeof(L));
    L.ctx = ctx;
    if (opts) L.opts = *opts;
    L.base_dir = base_dir;
    opsched_status st = load_model(&L, m, name);
    if (st == OPSCHED_OK) {
        *out = L.g;
        L.g = NULL;
    }
    opsched_graph_free(L.g);
    loader_free(&L);
    onnx__model_proto__free_unpacked(m, NULL);
    return st;
}

opsched_status opsched_onnx_load_file(opsched_ctx *ctx, const char *path,
                                      const opsched_onnx_options *opts, opsched_graph **out)
{
    if (!out) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_onnx_load_file: out is NULL");
    *out = NULL;
    if (!path) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "opsched_onnx_load_file: path is NULL");
    opsched_status st = OPSCHED_OK;
    char *buf = NULL, *dir = NULL, *name = NULL;
    size_t size = 0;
    OS_TRY_GOTO(st, os_file_read(ctx, path, "model", OS_FILE_MAX_MODEL, &buf, &size), done);
    /* The folder holding the model, where external data must live. */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 1;
    dir = malloc(dlen + 2);
    name = malloc(strlen(base) + 1);
    if (!dir || !name) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    if (slash) {
        memcpy(dir, path, dlen);
        dir[dlen] = '\0';
        if (dlen == 0) strcpy(dir, "/");
    } else {
        strcpy(dir, ".");
    }
    strcpy(name, base);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    st = opsched_onnx_load_buffer(ctx, buf, size, dir, opts, name, out);
    if (st != OPSCHED_OK) {
        /* Say which file; the message already says what is wrong with it. */
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s", opsched_ctx_last_error(ctx));
        st = OS_FAIL(ctx, st, "%s: %s", path, msg);
    }
done:
    free(buf);
    free(dir);
    free(name);
    return st;
}
