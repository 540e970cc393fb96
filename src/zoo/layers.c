/*
 * layers.c - the layer helpers the zoo's models share: conv(+bn)(+relu)
 * with BatchNorm folding, dropout that vanishes in the deployed form, and
 * AdaptiveAvgPool2d written as the ONNX pooling torch.onnx.export emits.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zoo/zoo_impl.h"

opsched_conv_desc os_zoo_conv_desc(int64_t out_channels, int64_t kh, int64_t kw, int64_t stride,
                                   int64_t ph, int64_t pw)
{
    opsched_conv_desc d;
    memset(&d, 0, sizeof(d));
    d.out_channels = out_channels;
    d.kernel_h = kh;
    d.kernel_w = kw;
    d.stride_h = d.stride_w = stride;
    d.pad_h = ph;
    d.pad_w = pw;
    d.dilation = 1;
    d.groups = 1;
    return d;
}

opsched_status os_zoo_name(os_zoo_net *net, char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, OS_ZOO_NAME_MAX, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= OS_ZOO_NAME_MAX)
        return OS_FAIL(opsched_graph_ctx(net->g), OPSCHED_ERR_INVALID_ARG,
                       "zoo: layer name '%s...' is longer than %d characters", buf,
                       OS_ZOO_NAME_MAX - 1);
    return OPSCHED_OK;
}

opsched_status os_zoo_relu(os_zoo_net *net, int x, const char *name, int *out)
{
    return opsched_build_unary(net->g, name, OPSCHED_OP_RELU, NULL, x, out);
}

opsched_status os_zoo_conv(os_zoo_net *net, int x, const opsched_conv_desc *desc, const char *conv,
                           const char *bn, float bn_eps, const char *relu, int *out)
{
    opsched_conv_desc d = *desc;
    int fold = bn && net->fold_bn;
    int y;
    /* Folding scales the weights and moves BatchNorm's shift into a bias;
     * the weight keeps its shape, so only the bias is new. */
    if (fold) d.bias = 1;
    OS_TRY(opsched_build_conv(net->g, conv, x, &d, &y));
    if (bn && !fold) OS_TRY(opsched_build_batchnorm(net->g, bn, y, bn_eps, &y));
    if (relu) OS_TRY(os_zoo_relu(net, y, relu, &y));
    *out = y;
    return OPSCHED_OK;
}

opsched_status os_zoo_basic_conv(os_zoo_net *net, int x, const char *prefix,
                                 const opsched_conv_desc *desc, int *out)
{
    char conv[OS_ZOO_NAME_MAX], bn[OS_ZOO_NAME_MAX], relu[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, conv, "%s.conv", prefix));
    OS_TRY(os_zoo_name(net, bn, "%s.bn", prefix));
    OS_TRY(os_zoo_name(net, relu, "%s.relu", prefix));
    return os_zoo_conv(net, x, desc, conv, bn, OS_ZOO_BN_EPS_INCEPTION, relu, out);
}

opsched_status os_zoo_bn_relu(os_zoo_net *net, int x, const char *bn, const char *relu, int *out)
{
    int y;
    OS_TRY(opsched_build_batchnorm(net->g, bn, x, OS_ZOO_BN_EPS, &y));
    if (relu) OS_TRY(os_zoo_relu(net, y, relu, &y));
    *out = y;
    return OPSCHED_OK;
}

opsched_status os_zoo_dropout(os_zoo_net *net, int x, const char *name, int *out)
{
    /* torch.onnx.export in eval mode drops Dropout altogether. */
    if (net->fold_bn) {
        *out = x;
        return OPSCHED_OK;
    }
    return opsched_build_unary(net->g, name, OPSCHED_OP_DROPOUT, NULL, x, out);
}

/*
 * nn.AdaptiveAvgPool2d((out_h, out_w)).  torch.onnx.export (torch 1.13)
 * writes output (1, 1) as GlobalAveragePool, and an input that is a
 * multiple of the output as AveragePool with kernel = stride = in / out: at
 * 224, AlexNet's 6x6 -> 6x6 and VGG's 7x7 -> 7x7 both become AveragePool
 * kernel 1, stride 1.  Any other size it refuses to export.  For those we
 * keep stride floor(in / out) and widen the kernel to in - (out - 1) *
 * stride, the one choice that yields exactly out positions (kernel
 * ceil(in / out) would not: 9 -> 7 gives 8).  PyTorch's own windows are
 * [floor(i * in / out), ceil((i + 1) * in / out)), between floor(in / out)
 * and ceil(in / out) + 1 wide, so the count is close rather than exact.  An
 * input smaller than the output, which PyTorch fills by repeating
 * elements, has no pooling form and is refused.
 */
opsched_status os_zoo_adaptive_avgpool(os_zoo_net *net, int x, const char *name, int64_t out_h,
                                       int64_t out_w, int *out)
{
    if (out_h == 1 && out_w == 1)
        return opsched_build_unary(net->g, name, OPSCHED_OP_GLOBALAVGPOOL, NULL, x, out);
    const opsched_tensor *t = opsched_graph_tensor(net->g, x);
    if (!t || t->shape.ndim != 4)
        return OS_FAIL(opsched_graph_ctx(net->g), OPSCHED_ERR_SHAPE,
                       "layer '%s': adaptive pooling needs a 4-D input", name);
    int64_t in[2] = {t->shape.d[2], t->shape.d[3]}, want[2] = {out_h, out_w};
    if (in[0] < out_h || in[1] < out_w)
        return OS_FAIL(opsched_graph_ctx(net->g), OPSCHED_ERR_SHAPE,
                       "layer '%s': AdaptiveAvgPool2d((%lld, %lld)) needs a feature map of at "
                       "least that size, got %lldx%lld: the input image is too small",
                       name, (long long)out_h, (long long)out_w, (long long)in[0],
                       (long long)in[1]);
    opsched_op_attr a;
    memset(&a, 0, sizeof(a));
    for (int i = 0; i < 2; i++) {
        a.pool.stride[i] = in[i] / want[i];
        a.pool.kernel[i] = in[i] - (want[i] - 1) * a.pool.stride[i];
        a.pool.dilation[i] = 1;
    }
    return opsched_graph_add_node(net->g, name, OPSCHED_OP_AVGPOOL, &a, &x, 1, 1, NULL, out);
}
