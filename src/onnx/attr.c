/*
 * attr.c - reading node attributes with type checks, and error messages
 * that name the node.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "onnx/onnx_impl.h"

const Onnx__AttributeProto *os_onnx_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        if (a->name && strcmp(a->name, name) == 0) return a;
    }
    return NULL;
}

static int attr_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t)
{
    /* IR version 1 files carry no type: judge by the field that is set. */
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return a->type == t;
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        return a->has_i;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        return a->has_f;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        return a->has_s;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        return a->n_ints > 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        return a->t != NULL;
    default:
        return 0;
    }
}

opsched_status os_onnx_node_fail(os_loader *L, int node, opsched_status st, const char *fmt, ...)
{
    char msg[768], buf[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const Onnx__NodeProto *n = L->gp->node[node];
    return OS_FAIL(L->ctx, st, "node '%s' (%s): %s", os_onnx_node_label(n, node, buf, sizeof(buf)),
                   n->op_type ? n->op_type : "?", msg);
}

/* Why an operator of the default domain is not imported, when it belongs
 * to a family the graph cannot express. */
static const char *unsupported_why(const char *op)
{
    static const struct {
        const char *prefix;
        const char *why;
    } why[] = {
        {"Sequence", "sequence values are not supported"},
        {"SplitToSequence", "sequence values are not supported"},
        {"ConcatFromSequence", "sequence values are not supported"},
        {"Optional", "optional values are not supported"},
        {"String", "string values are not supported"},
        {"RegexFullMatch", "string values are not supported"},
        {"TfIdfVectorizer", "string and map values are not supported"},
        {"ImageDecoder", "encoded images are not supported"},
        {"Random", "random generators are not supported"},
        {"Multinomial", "random generators are not supported"},
        {"Bernoulli", "random generators are not supported"},
        {"SoftmaxCrossEntropyLoss", "training operators are not supported"},
        {"NegativeLogLikelihoodLoss", "training operators are not supported"},
        {"Gradient", "training operators are not supported"},
        {"NonZero", "its output shape depends on the data"},
        {"NonMaxSuppression", "its output shape depends on the data"},
        {"Unique", "its output shape depends on the data"},
        {"Compress", "its output shape depends on the data"},
        {"Loop", "control flow is not supported (If only with a condition known at load time)"},
        {"Scan", "control flow is not supported (If only with a condition known at load time)"},
        {"RNN", "recurrent layers are not supported"},
        {"GRU", "recurrent layers are not supported"},
    };
    for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
        size_t n = strlen(why[i].prefix);
        if (strncmp(op, why[i].prefix, n) == 0) return why[i].why;
    }
    return NULL;
}

opsched_status os_onnx_unsupported_op(os_loader *L, int node)
{
    const Onnx__NodeProto *n = L->gp->node[node];
    char buf[96];
    const char *dom = n->domain ? n->domain : "";
    const char *op = n->op_type ? n->op_type : "";
    if (dom[0] && strcmp(dom, "ai.onnx") != 0)
        return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED,
                       "unsupported operator '%s' of domain '%s' (node '%s')", op, dom,
                       os_onnx_node_label(n, node, buf, sizeof(buf)));
    const char *why = unsupported_why(op);
    return OS_FAIL(L->ctx, OPSCHED_ERR_UNSUPPORTED,
                   "unsupported operator '%s' (node '%s', opset %lld)%s%s", op,
                   os_onnx_node_label(n, node, buf, sizeof(buf)), (long long)L->opset,
                   why ? ": " : "", why ? why : "");
}

static opsched_status wrong_type(os_loader *L, int node, const char *name, const char *want)
{
    return os_onnx_node_fail(L, node, OPSCHED_ERR_PARSE, "attribute '%s' should be %s", name, want);
}

opsched_status os_onnx_attr_int(os_loader *L, int node, const char *name, int64_t *out)
{
    const Onnx__AttributeProto *a = os_onnx_attr(L->gp->node[node], name);
    if (!a) return OPSCHED_OK;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))
        return wrong_type(L, node, name, "an integer");
    *out = a->i;
    return OPSCHED_OK;
}

opsched_status os_onnx_attr_float(os_loader *L, int node, const char *name, float *out)
{
    const Onnx__AttributeProto *a = os_onnx_attr(L->gp->node[node], name);
    if (!a) return OPSCHED_OK;
    if (attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) {
        *out = a->f;
        return OPSCHED_OK;
    }
    if (attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) && a->i > -(1 << 24) &&
        a->i < (1 << 24)) {
        *out = (float)a->i;
        return OPSCHED_OK;
    }
    return wrong_type(L, node, name, "a float");
}

opsched_status os_onnx_attr_ints(os_loader *L, int node, const char *name, int64_t *out, int max,
                                 int *n)
{
    const Onnx__AttributeProto *a = os_onnx_attr(L->gp->node[node], name);
    if (!a) return OPSCHED_OK;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS))
        return wrong_type(L, node, name, "a list of integers");
    if (a->n_ints > (size_t)max)
        return os_onnx_node_fail(L, node, OPSCHED_ERR_UNSUPPORTED,
                                 "attribute '%s' has %zu values (at most %d supported)", name,
                                 a->n_ints, max);
    for (size_t i = 0; i < a->n_ints; i++)
        out[i] = a->ints[i];
    *n = (int)a->n_ints;
    return OPSCHED_OK;
}

opsched_status os_onnx_attr_string(os_loader *L, int node, const char *name, char *buf, size_t size,
                                   const char **out)
{
    const Onnx__AttributeProto *a = os_onnx_attr(L->gp->node[node], name);
    if (!a) return OPSCHED_OK;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING))
        return wrong_type(L, node, name, "a string");
    size_t n = a->s.len < size - 1 ? a->s.len : size - 1;
    if (n) memcpy(buf, a->s.data, n);
    buf[n] = '\0';
    *out = buf;
    return OPSCHED_OK;
}
