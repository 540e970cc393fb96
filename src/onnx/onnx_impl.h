/*
 * onnx_impl.h - the ONNX importer's internal state, shared by its files.
 *
 * Loading runs in passes over the unpacked ModelProto: every name becomes a
 * value (loader.c), nodes are sorted topologically, graph inputs are split
 * into real inputs and weights (inputs.c), then each node in order is either
 * evaluated on the host (fold.c: shape arithmetic with known operands),
 * turned into an alias (Identity of a weight), or added to the graph
 * (ops.c, views.c).  tensor.c decodes TensorProtos; attr.c reads attributes.
 *
 * Values never own proto memory: names and TensorProto pointers are borrowed
 * from the unpacked model, which lives until the load returns.
 */
#ifndef OS_ONNX_IMPL_H
#define OS_ONNX_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"
#include "opsched/onnx.h"

/* Largest dimension accepted from a file, and the element cap of any tensor
 * whose size the importer computes: keeps every product in int64 range. */
#define OS_ONNX_MAX_DIM ((int64_t)1 << 31)
#define OS_ONNX_MAX_NUMEL ((int64_t)1 << 40)
/* Host-side constants: the biggest one kept, and all of them together.
 * Shape arithmetic needs a few elements; a hostile file must not be able to
 * make the importer allocate gigabytes by chaining ConstantOfShape nodes. */
#define OS_ONNX_FOLD_MAX_ELEMS ((int64_t)1 << 16)
#define OS_ONNX_FOLD_BUDGET ((int64_t)1 << 22)
#define OS_ONNX_FOLD_SMALL ((int64_t)64) /* elements; outside the budget */

/* ONNX TensorProto.DataType values used by name. */
enum {
    OS_ONNX_UNDEFINED = 0,
    OS_ONNX_FLOAT = 1,
    OS_ONNX_UINT8 = 2,
    OS_ONNX_INT8 = 3,
    OS_ONNX_UINT16 = 4,
    OS_ONNX_INT16 = 5,
    OS_ONNX_INT32 = 6,
    OS_ONNX_INT64 = 7,
    OS_ONNX_STRING = 8,
    OS_ONNX_BOOL = 9,
    OS_ONNX_FLOAT16 = 10,
    OS_ONNX_DOUBLE = 11,
    OS_ONNX_UINT32 = 12,
    OS_ONNX_UINT64 = 13,
    OS_ONNX_BFLOAT16 = 16
};

/* A tensor whose values are known at load time.  Integers (and booleans)
 * are held as int64, floating types as double rounded to their own
 * precision. */
typedef struct os_cval {
    int32_t elem;        /* ONNX element type */
    opsched_shape shape; /* ndim 0 is a scalar */
    int64_t n;           /* element count */
    int is_float;
    int64_t *i; /* n values when !is_float */
    double *f;  /* n values when is_float */
} os_cval;

typedef enum os_role {
    OS_ROLE_NONE = 0, /* declared but not yet defined */
    OS_ROLE_INPUT,    /* a real input of the model */
    OS_ROLE_WEIGHT,   /* a learned parameter: initializer or weight input */
    OS_ROLE_CONST,    /* a Constant node, integer initializer or folded value */
    OS_ROLE_ACT,      /* produced by a graph node */
    OS_ROLE_UNUSED    /* a graph input nothing reads */
} os_role;

typedef struct os_val {
    const char *name; /* borrowed from the model */
    os_role role;
    int32_t elem; /* ONNX element type; 0 when unknown */
    int has_shape;
    opsched_shape shape;
    int id;                        /* graph tensor, -1 until it is needed */
    os_cval *cv;                   /* known value (owned by the loader), or NULL */
    const Onnx__TensorProto *init; /* payload of a weight, or NULL */
    int alias;                     /* the value this is another name for, or -1 */
    int producer;                  /* index of the producing ONNX node, or -1 */
    int is_graph_input;
    int given; /* 1 + index of its value in opts.values; 0 when none was given */
    /* A zero Pad merged into the AveragePool that reads it: the value to
     * pool instead, and the spatial pads (top, left, bottom, right). */
    int pad_src;
    int64_t pad[4];
} os_val;

typedef struct os_loader os_loader;

struct os_loader {
    opsched_ctx *ctx;
    opsched_onnx_options opts;
    const char *base_dir; /* NULL: no external data can be read */
    /* 1 once a missing external data file was reported: a model exported
     * without its weights runs on deterministic random ones. */
    int missing_external;
    const Onnx__GraphProto *gp;
    int64_t opset; /* of the default domain */
    opsched_graph *g;

    os_val *vals;
    size_t n_vals, cap_vals;
    int *htab; /* open addressing: value index or -1 */
    size_t hcap;

    os_cval **cvs; /* every host constant, freed at the end */
    size_t n_cvs, cap_cvs;
    int64_t fold_used; /* elements held by all of them */
    int fold_too_big;  /* the last fold failed only for size */

    int n_nodes;
    int *in_off, *in_val;   /* node i reads in_val[in_off[i]..in_off[i+1]) (-1: omitted) */
    int *out_off, *out_val; /* and writes out_val[out_off[i]..out_off[i+1]) (-1: omitted) */
    int *use_off, *use_node, *use_pos; /* value v is read by (use_node, use_pos)[use_off[v]..] */
    int *order;                        /* topological order of the nodes */

    /* With given input values: need[v], v's value is read while loading
     * (directly or through foldable nodes); taint[v], v is known only
     * because a value was given.  A tainted value is known only where it
     * is needed (os_onnx_in_cval), so run-time data paths are not folded.
     * NULL when no value was given. */
    unsigned char *need, *taint;

    /* An If branch being inlined: the loader of the graph holding the If,
     * and how deep branches are nested. */
    os_loader *parent;
    int depth;
};

/* ---- loader.c -------------------------------------------------------- */

/* The value index for name, or -1. */
int os_onnx_find(const os_loader *L, const char *name);
/* Follows Identity aliases to the value that carries the data. */
int os_onnx_root(const os_loader *L, int v);
/* "name" of node i, or "<op_type>_<i>" when the file gives none. */
const char *os_onnx_node_label(const Onnx__NodeProto *node, int i, char *buf, size_t size);
/* Number of node inputs and the value index of input k (-1 when omitted or absent). */
int os_onnx_num_in(const os_loader *L, int node);
int os_onnx_in(const os_loader *L, int node, int k);
int os_onnx_num_out(const os_loader *L, int node);
int os_onnx_out(const os_loader *L, int node, int k);
/* Number of nodes reading value v (through any of its names). */
int os_onnx_num_uses(const os_loader *L, int v);
/* Number of inputs node i has in the file (os_onnx_num_in also counts the
 * outer values an If branch reads, after these). */
int os_onnx_num_file_in(const os_loader *L, int node);
/* An If whose condition is known: its branch is converted in place. */
opsched_status os_onnx_inline_if(os_loader *L, int node);

/* ---- inputs.c -------------------------------------------------------- */

/* Decides which graph inputs are weights (export_params=False) and adds the
 * real inputs to the graph with their final shapes. */
opsched_status os_onnx_inputs(os_loader *L);

/* 1 when input pos of op is read while loading (a Reshape's shape, Slice's
 * starts, TopK's k, ...). */
int os_onnx_load_slot(const char *op, int pos);
/* 1 when an output of node i is needed at load time (L->need). */
int os_onnx_node_needed(const os_loader *L, int node);
/* The payload of graph input value v from its given value, converted to
 * dt (malloc'd). */
opsched_status os_onnx_given_payload(os_loader *L, int v, opsched_dtype dt, void **out,
                                     size_t *bytes);

/* ---- tensor.c -------------------------------------------------------- */

const char *os_onnx_elem_name(int32_t elem);
/* Maps an ONNX element type; OPSCHED_ERR_UNSUPPORTED (naming what) if the
 * graph cannot hold it. */
opsched_status os_onnx_dtype(opsched_ctx *ctx, int32_t elem, const char *what, opsched_dtype *out);
int32_t os_onnx_elem_of(opsched_dtype dt);
int os_onnx_elem_is_float(int32_t elem);
/* Size in bytes of one element in a file, 0 for strings and unknown types. */
size_t os_onnx_elem_size(int32_t elem);
/* Checks dims (0 <= d <= 2^31, rank <= 8, product in range). */
opsched_status os_onnx_tensor_shape(opsched_ctx *ctx, const Onnx__TensorProto *t, const char *what,
                                    opsched_shape *out);
/* Checks dims and that raw_data holds exactly what they need (cheap: no
 * payload is copied). */
opsched_status os_onnx_tensor_check(os_loader *L, const Onnx__TensorProto *t, const char *what);
/* Decodes a TensorProto into a host constant.  *out stays NULL (status OK)
 * when the tensor has more than max_elems elements, has no data in the
 * file, or keeps it in an external file that may not be read now. */
opsched_status os_onnx_tensor_cval(os_loader *L, const Onnx__TensorProto *t, const char *what,
                                   int64_t max_elems, os_cval **out);
/* The payload of an initializer in the layout of its graph dtype (malloc'd). */
opsched_status os_onnx_tensor_payload(os_loader *L, const Onnx__TensorProto *t, const char *what,
                                      opsched_dtype dt, void **out, size_t *bytes);
/* The payload of a host constant converted to dt (malloc'd). */
opsched_status os_onnx_cval_payload(opsched_ctx *ctx, const os_cval *cv, opsched_dtype dt,
                                    void **out, size_t *bytes);

/* x rounded to the precision of a floating type / wrapped to an integer
 * type, as a Cast to elem would. */
double os_onnx_round_to(int32_t elem, double x);
int64_t os_onnx_wrap_int(int32_t elem, int64_t x);
/* Saturating, NaN-safe conversion (C leaves out-of-range casts undefined). */
int64_t os_onnx_float_to_int(double x);

/* ---- fold.c ---------------------------------------------------------- */

/* A new host constant of the given type and shape, zero-filled, owned by L. */
opsched_status os_onnx_cval_new(os_loader *L, int32_t elem, const opsched_shape *shape,
                                os_cval **out);
/* Element k as int64 / double, whatever the storage. */
int64_t os_onnx_cval_int(const os_cval *cv, int64_t k);
double os_onnx_cval_float(const os_cval *cv, int64_t k);
/* Evaluates node i on the host when its operands are known and it is cheap;
 * *done says whether it was (its outputs then carry constants). */
opsched_status os_onnx_fold(os_loader *L, int node, int *done);

/* ---- attr.c ---------------------------------------------------------- */

const Onnx__AttributeProto *os_onnx_attr(const Onnx__NodeProto *n, const char *name);
/* Each getter leaves *out at its default when the attribute is absent and
 * fails with OPSCHED_ERR_PARSE when it has another type. */
opsched_status os_onnx_attr_int(os_loader *L, int node, const char *name, int64_t *out);
opsched_status os_onnx_attr_float(os_loader *L, int node, const char *name, float *out);
/* Copies at most max ints; *n is set to the count (left alone when absent).
 * More than max: OPSCHED_ERR_UNSUPPORTED. */
opsched_status os_onnx_attr_ints(os_loader *L, int node, const char *name, int64_t *out, int max,
                                 int *n);
/* A borrowed, NUL-terminated copy in buf; *out stays as given when absent. */
opsched_status os_onnx_attr_string(os_loader *L, int node, const char *name, char *buf, size_t size,
                                   const char **out);

/* Records a failure that names node i and its op type. */
opsched_status os_onnx_node_fail(os_loader *L, int node, opsched_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Unsupported-operator error: "unsupported operator 'X' (node 'n', opset 17)". */
opsched_status os_onnx_unsupported_op(os_loader *L, int node);

/* ---- build.c: the nodes of decompositions ----------------------------- */

/* The graph tensor of input k of node i (made on first use); an omitted
 * input is an error naming it. */
opsched_status os_onnx_in_id(os_loader *L, int node, int k, int *out);
const opsched_tensor *os_onnx_t(const os_loader *L, int id);
/* Adds one graph node for ONNX node i reading graph tensors ids.  With
 * out_k >= 0 its outputs become the node's outputs out_k.. and take their
 * names; otherwise (OS_TMP) they get new names "<output>/<tag>".  The ids
 * of the n_out outputs go to out (may be NULL). */
#define OS_TMP (-1)
opsched_status os_onnx_step(os_loader *L, int node, const char *tag, int out_k, opsched_op_kind op,
                            const opsched_op_attr *attr, const int *ids, int n_in, int n_out,
                            int *out);
/* Makes output k of node i the graph tensor id. */
void os_onnx_bind(os_loader *L, int node, int k, int id);
/* A CONSTANT tensor of type dt and the given shape holding the values f
 * (or i when f is NULL), converted to dt. */
opsched_status os_onnx_const(os_loader *L, int node, const char *tag, opsched_dtype dt,
                             const opsched_shape *shape, const double *f, const int64_t *i,
                             int *out);
/* A constant of shape [] (rank 0). */
opsched_status os_onnx_scalar(os_loader *L, int node, const char *tag, opsched_dtype dt, double v,
                              int *out);
/* Single steps.  Each returns x itself (bound to output out_k when asked)
 * when the step would change nothing. */
opsched_status os_onnx_reshape(os_loader *L, int node, const char *tag, int x,
                               const opsched_shape *to, int out_k, int *out);
opsched_status os_onnx_transpose(os_loader *L, int node, const char *tag, int x,
                                 const int64_t *perm, int out_k, int *out);
opsched_status os_onnx_cast(os_loader *L, int node, const char *tag, int x, opsched_dtype to,
                            int out_k, int *out);
/* Input k of node i as type dt: a constant converted here when its value
 * is known, else a Cast node. */
opsched_status os_onnx_in_id_as(os_loader *L, int node, int k, const char *tag, opsched_dtype dt,
                                int *out);
opsched_status os_onnx_binop(os_loader *L, int node, const char *tag, opsched_op_kind op, int a,
                             int b, int out_k, int *out);
opsched_status os_onnx_binfn(os_loader *L, int node, const char *tag, opsched_binary_fn fn, int a,
                             int b, int out_k, int *out);
opsched_status os_onnx_unfn(os_loader *L, int node, const char *tag, opsched_unary_fn fn,
                            float alpha, float beta, int x, int out_k, int *out);
/* A reduction over axes (n of them; 0: all) keeping or dropping them;
 * OPSCHED_REDUCE_MEAN makes a REDUCEMEAN node. */
opsched_status os_onnx_reduce(os_loader *L, int node, const char *tag, opsched_reduce_fn fn, int x,
                              const int64_t *axes, int n, int keepdims, int out_k, int *out);
opsched_status os_onnx_slice(os_loader *L, int node, const char *tag, int x, int axis,
                             int64_t start, int64_t end, int64_t step, int out_k, int *out);

/* ---- ops.c, views.c and the operator files --------------------------- */

/* Adds node i to the graph (or aliases/merges it away). */
opsched_status os_onnx_convert(os_loader *L, int node);
/* The graph tensor for value v, created on first use for weights and
 * constants. */
opsched_status os_onnx_tensor_id(os_loader *L, int v, int *out);
/* The static shape of value v; OPSCHED_ERR_PARSE when it has none. */
opsched_status os_onnx_shape_of(os_loader *L, int node, int v, opsched_shape *out);
/* The known value of input k of node i; NULL when absent or not known. */
const os_cval *os_onnx_in_cval(const os_loader *L, int node, int k);
/* Input k must be a known integer vector (or absent when optional): its
 * values (at most max) and count; *n = -1 when absent. */
opsched_status os_onnx_in_ints(os_loader *L, int node, int k, const char *what, int64_t *out,
                               int max, int *n);
/* Adds a graph node for ONNX node i reading the given values; records its
 * first n_out outputs. */
opsched_status os_onnx_emit(os_loader *L, int node, opsched_op_kind op, const opsched_op_attr *attr,
                            const int *in_vals, int n_in, int n_out);
/* Makes output k of node i another name for value v. */
void os_onnx_alias(os_loader *L, int node, int k, int v);
/* Normalises axis against rank (negative counts from the end). */
opsched_status os_onnx_axis(os_loader *L, int node, int64_t axis, int rank, int64_t *out);

/* Converters by family, each for the ops its file lists; *done is 0 when
 * op is none of them. */
opsched_status os_onnx_convert_view(os_loader *L, int node, const char *op, int *done);
opsched_status os_onnx_convert_math(os_loader *L, int node, const char *op, int *done);
opsched_status os_onnx_convert_norm(os_loader *L, int node, const char *op, int *done);
opsched_status os_onnx_convert_window(os_loader *L, int node, const char *op, int *done);
opsched_status os_onnx_convert_resize(os_loader *L, int node, const char *op, int *done);
opsched_status os_onnx_convert_attention(os_loader *L, int node, const char *op, int *done);
opsched_status os_onnx_convert_einsum(os_loader *L, int node, const char *op, int *done);
opsched_status os_onnx_convert_lstm(os_loader *L, int node, const char *op, int *done);

/* Evaluates an element-wise function on the host, as the graph defines it
 * (fold.c uses it; activations and math). */
double os_onnx_eval_unary(opsched_unary_fn fn, double x, float alpha, float beta, float gamma);
/* Reads the attributes of a unary function node (alpha, beta, gamma with
 * their defaults); *fn is -1 when op is not one of them. */
opsched_status os_onnx_unary_attrs(os_loader *L, int node, const char *op, int *fn,
                                   opsched_unary_attr *out);
/* The function of a binary op (Mod reads fmod, BitShift direction); -1
 * when op is not one of them. */
opsched_status os_onnx_binary_fn(os_loader *L, int node, const char *op, int *fn);
/* Reads keepdims, noop_with_empty_axes and the axes (attribute or input,
 * as the op's opset says) of a Reduce* node. */
opsched_status os_onnx_reduce_attrs(os_loader *L, int node, const char *op,
                                    opsched_reduce_attr *out, int *n_axes_given);

/* Output shapes of the shape-changing ops for an input of shape in, shared
 * by folding and conversion.  They read the node's attributes and its
 * constant inputs as the opset says. */
opsched_status os_onnx_reshape_to(os_loader *L, int node, const opsched_shape *in,
                                  opsched_shape *out);
opsched_status os_onnx_squeeze_to(os_loader *L, int node, const opsched_shape *in,
                                  opsched_shape *out);
opsched_status os_onnx_unsqueeze_to(os_loader *L, int node, const opsched_shape *in,
                                    opsched_shape *out);
opsched_status os_onnx_flatten_to(os_loader *L, int node, const opsched_shape *in,
                                  opsched_shape *out, int64_t *axis);
opsched_status os_onnx_expand_to(os_loader *L, int node, const opsched_shape *in,
                                 opsched_shape *out);
opsched_status os_onnx_slice_to(os_loader *L, int node, const opsched_shape *in,
                                opsched_slice_attr *attr, opsched_shape *out);
opsched_status os_onnx_split_sizes(os_loader *L, int node, const opsched_shape *in,
                                   opsched_split_attr *out);
/* Checks a computed shape: every dim in 0..2^31 and at most 2^40 elements
 * (so that byte and FLOP counts of any op stay in int64). */
opsched_status os_onnx_check_dims(os_loader *L, int node, const opsched_shape *s);
/* numpy broadcasting of two shapes; OPSCHED_ERR_SHAPE naming the node. */
opsched_status os_onnx_broadcast(os_loader *L, int node, const opsched_shape *a,
                                 const opsched_shape *b, opsched_shape *out);

#endif /* OS_ONNX_IMPL_H */
