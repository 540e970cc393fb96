/*
 * run_io.c - the user's tensors in and out of `opsched run`: --input
 * NAME=FILE.npy gives a graph input's value from a NumPy file (to the
 * loader, which uses it as a constant or weight where the model needs one
 * and binds symbolic dimensions with its shape; the rest are fed at run
 * time), --output-dir DIR receives every graph
 * output as DIR/<name>.npy, so that opsched's answers can be compared with
 * any framework's.
 */
#include "run_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opsched/npy.h"

int run_io_add(run_io *io, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1])
        return tool_usage_error("run", "--input wants NAME=FILE.npy, got '%s'", spec);
    if (io->n == RUN_IO_MAX)
        return tool_usage_error("run", "more than %d --input files", RUN_IO_MAX);
    run_io_input *in = &io->in[io->n];
    size_t len = (size_t)(eq - spec);
    if (len >= sizeof(in->name))
        return tool_usage_error("run", "--input: the name '%.*s' is too long", (int)len, spec);
    memcpy(in->name, spec, len);
    in->name[len] = '\0';
    for (int i = 0; i < io->n; i++)
        if (strcmp(io->in[i].name, in->name) == 0)
            return tool_usage_error("run", "--input %s is given twice", in->name);
    in->path = eq + 1;
    io->n++;
    return TOOL_EXIT_OK;
}

int run_io_read(opsched_ctx *ctx, run_io *io)
{
    for (int i = 0; i < io->n; i++) {
        opsched_status st = opsched_npy_read_file(ctx, io->in[i].path, &io->in[i].a);
        if (st != OPSCHED_OK) return tool_fail(ctx, st, io->in[i].path);
    }
    return TOOL_EXIT_OK;
}

void run_io_clear(run_io *io)
{
    for (int i = 0; i < io->n; i++) opsched_npy_array_clear(&io->in[i].a);
}

int run_io_values(run_io *io, opsched_onnx_value *out)
{
    int n = 0;
    for (int i = 0; i < io->n; i++) {
        run_io_input *in = &io->in[i];
        opsched_dtype dt;
        in->given = 0;
        if (opsched_npy_dtype_to_dtype(in->a.dtype, &dt) != OPSCHED_OK ||
            in->a.ndim > OPSCHED_MAX_DIMS)
            continue; /* run_io_match says why, if the graph reads it */
        opsched_onnx_value *v = &out[n++];
        memset(v, 0, sizeof(*v));
        v->name = in->name;
        v->dtype = dt;
        v->shape.ndim = in->a.ndim;
        for (int d = 0; d < in->a.ndim; d++) v->shape.d[d] = in->a.dims[d];
        v->data = in->a.data;
        in->given = 1;
    }
    return n;
}

int run_io_load_fail(opsched_ctx *ctx, const run_io *io, opsched_status st)
{
    const char *msg = opsched_ctx_last_error(ctx);
    if (!msg || (st != OPSCHED_ERR_NOT_FOUND && st != OPSCHED_ERR_SHAPE)) return -1;
    const char *at = strstr(msg, "a value is given for '");
    if (st == OPSCHED_ERR_NOT_FOUND && at) {
        const char *q = at + strlen("a value is given for '");
        const char *e = strchr(q, '\'');
        const char *has = strstr(msg, "(it has: ");
        if (!e || !has) return -1;
        return tool_usage_error("run", "--input %.*s: the model has no input of that name %s",
                                (int)(e - q), q, has);
    }
    if (st != OPSCHED_ERR_SHAPE) return -1;
    /* The loader's message is "input NAME is ..." or "input NAME holds ...". */
    for (int i = 0; i < io->n; i++) {
        char key[300];
        snprintf(key, sizeof(key), "input %s ", io->in[i].name);
        const char *k = io->in[i].given ? strstr(msg, key) : NULL;
        if (!k) continue;
        fprintf(stderr, "opsched run: %s: %s\n", io->in[i].path, k);
        return TOOL_EXIT_FAIL;
    }
    return -1;
}

/* The names of the graph's inputs, for a message. */
static void input_names(const opsched_graph *g, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < opsched_graph_num_inputs(g) && used + 1 < size; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, i));
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", t->name);
        if (n < 0) break;
        used += (size_t)n < size - used ? (size_t)n : size - used - 1;
    }
}

int run_io_match(opsched_ctx *ctx, run_io *io, const opsched_graph *g)
{
    (void)ctx;
    for (int k = 0; k < io->n; k++) {
        run_io_input *in = &io->in[k];
        in->graph_input = -1;
        for (int i = 0; i < opsched_graph_num_inputs(g); i++) {
            const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, i));
            if (strcmp(t->name, in->name) == 0) in->graph_input = i;
        }
        if (in->graph_input < 0 && in->given) continue; /* a constant or weight now */
        if (in->graph_input < 0) {
            char names[1024];
            input_names(g, names, sizeof(names));
            return tool_usage_error("run", "--input %s: the model has no input of that name (it "
                                           "has: %s)",
                                    in->name, names[0] ? names : "none");
        }
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_input(g, in->graph_input));
        opsched_shape s = {.ndim = in->a.ndim};
        for (int d = 0; d < in->a.ndim && d < OPSCHED_MAX_DIMS; d++) s.d[d] = in->a.dims[d];
        if (in->a.ndim > OPSCHED_MAX_DIMS || !opsched_shape_equal(&s, &t->shape)) {
            char want[128], got[128];
            opsched_shape_format(&t->shape, want, sizeof(want));
            opsched_shape_format(&s, got, sizeof(got));
            fprintf(stderr, "opsched run: %s: input %s is %s, the model's is %s\n", in->path,
                    in->name, got, want);
            return TOOL_EXIT_FAIL;
        }
        opsched_dtype dt;
        int ok = opsched_npy_dtype_to_dtype(in->a.dtype, &dt) == OPSCHED_OK;
        /* float32 data feeds a bfloat16 input (NumPy has no bfloat16). */
        if (!(ok && dt == t->dtype) && !(t->dtype == OPSCHED_BF16 && ok && dt == OPSCHED_F32)) {
            fprintf(stderr, "opsched run: %s: input %s holds %s, the model's is %s\n", in->path,
                    in->name, opsched_npy_dtype_name(in->a.dtype), opsched_dtype_name(t->dtype));
            return TOOL_EXIT_FAIL;
        }
        in->dtype = ok ? dt : t->dtype;
    }
    return TOOL_EXIT_OK;
}

/* The file name of output `name`: characters other than letters, digits,
 * '.', '_' and '-' become '_' (so "logits/0" is "logits_0.npy"). */
void run_io_file_name(const char *name, char *buf, size_t size)
{
    size_t i = 0;
    for (; name[i] && i + 1 < size; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        buf[i] = ok ? c : '_';
    }
    buf[i] = '\0';
    if (i == 0 || strcmp(buf, ".") == 0 || strcmp(buf, "..") == 0) snprintf(buf, size, "_");
}

static int make_dir(const char *dir)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf)) return -1;
    for (char *c = buf + 1; *c; c++) {
        if (*c != '/') continue;
        *c = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *c = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* The file names (without .npy) of g's outputs, two names that map to one
 * file told apart by a suffix; malloc'd, NULL when out of memory. */
static char (*output_names(const opsched_graph *g))[256]
{
    int n_out = opsched_graph_num_outputs(g);
    char (*names)[256] = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof(*names));
    if (!names) return NULL;
    for (int i = 0; i < n_out; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_output(g, i));
        char base[200];
        run_io_file_name(t->name, base, sizeof(base));
        snprintf(names[i], sizeof(names[i]), "%s", base);
        for (int k = 2, j = 0; j < i; j++)
            if (strcmp(names[j], names[i]) == 0) {
                snprintf(names[i], sizeof(names[i]), "%s_%d", base, k++);
                j = -1;
            }
    }
    return names;
}

void run_io_refusal_hint(opsched_ctx *ctx)
{
    const char *e = opsched_ctx_last_error(ctx);
    if (strstr(e, "unless forced"))
        fprintf(stderr, "opsched run: --force replaces existing files, or choose another "
                        "folder\n");
    else if (strstr(e, "symbolic link"))
        fprintf(stderr, "opsched run: --follow-symlinks writes through the links\n");
}

int run_io_check(opsched_ctx *ctx, const run_io *io, const opsched_graph *g,
                 const char *const *inputs, int n)
{
    if (make_dir(io->out_dir) != 0) {
        fprintf(stderr, "opsched run: cannot create %s: %s\n", io->out_dir, strerror(errno));
        return TOOL_EXIT_FAIL;
    }
    char (*names)[256] = output_names(g);
    if (!names) return tool_fail(ctx, OPSCHED_ERR_NOMEM, "run");
    int rc = TOOL_EXIT_OK;
    for (int i = 0; i < opsched_graph_num_outputs(g) && rc == TOOL_EXIT_OK; i++) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s.npy", io->out_dir, names[i]);
        rc = tool_check_output("run", path, inputs, n);
        if (rc != TOOL_EXIT_OK) break;
        /* The same checks the write makes, before the run: a temporary
         * opened beside the name and removed. */
        opsched_out o;
        opsched_status st = opsched_out_open(ctx, path, "npy file", io->out_flags, &o);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, "run");
            run_io_refusal_hint(ctx);
            break;
        }
        opsched_out_abort(&o);
    }
    free(names);
    return rc;
}

int run_io_write(opsched_ctx *ctx, const run_io *io, const opsched_graph *g, run_io_get_fn get,
                 void *user)
{
    if (make_dir(io->out_dir) != 0) {
        fprintf(stderr, "opsched run: cannot create %s: %s\n", io->out_dir, strerror(errno));
        return TOOL_EXIT_FAIL;
    }
    int n_out = opsched_graph_num_outputs(g);
    char (*names)[256] = output_names(g);
    if (!names) return tool_fail(ctx, OPSCHED_ERR_NOMEM, "run");
    int rc = TOOL_EXIT_OK;
    for (int i = 0; i < n_out && rc == TOOL_EXIT_OK; i++) {
        const opsched_tensor *t = opsched_graph_tensor(g, opsched_graph_output(g, i));
        /* bfloat16 is written as float32: NumPy has no bfloat16. */
        opsched_dtype dt = t->dtype == OPSCHED_BF16 ? OPSCHED_F32 : t->dtype;
        opsched_npy_dtype nd;
        if (opsched_npy_dtype_from_dtype(dt, &nd) != OPSCHED_OK) {
            fprintf(stderr, "opsched run: output %s is %s, which .npy files do not hold\n",
                    t->name, opsched_dtype_name(t->dtype));
            rc = TOOL_EXIT_FAIL;
            break;
        }
        size_t numel = (size_t)opsched_shape_numel(&t->shape);
        void *buf = malloc(numel ? numel * opsched_dtype_size(dt) : 1);
        if (!buf) {
            rc = tool_fail(ctx, OPSCHED_ERR_NOMEM, "run");
            break;
        }
        opsched_status st = get(user, i, dt, buf, numel);
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s.npy", io->out_dir, names[i]);
        if (st == OPSCHED_OK)
            st = opsched_npy_write_file_flags(ctx, path, io->out_flags, nd, t->shape.ndim,
                                              t->shape.d, buf);
        free(buf);
        if (st != OPSCHED_OK) {
            rc = tool_fail(ctx, st, t->name);
            run_io_refusal_hint(ctx);
        }
    }
    free(names);
    return rc;
}
