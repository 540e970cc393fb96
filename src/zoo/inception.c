/*
 * inception.c - GoogLeNet and Inception v3 as torchvision defines them
 * (torchvision/models/googlenet.py, inception.py), both without their
 * auxiliary classifiers (which only run in training) and with
 * transform_input off.  Every convolution is a BasicConv2d: conv without
 * bias, BatchNorm with eps 1e-3, F.relu.
 */
#include "core/util.h"
#include "zoo/zoo_impl.h"

/* BasicConv2d "<p>.<sub>" (or "<sub>" when p is NULL). */
static opsched_status bconv(os_zoo_net *net, int x, const char *p, const char *sub,
                            int64_t out_channels, int64_t kh, int64_t kw, int64_t stride,
                            int64_t ph, int64_t pw, int *out)
{
    char prefix[OS_ZOO_NAME_MAX];
    if (p)
        OS_TRY(os_zoo_name(net, prefix, "%s.%s", p, sub));
    else
        OS_TRY(os_zoo_name(net, prefix, "%s", sub));
    opsched_conv_desc d = os_zoo_conv_desc(out_channels, kh, kw, stride, ph, pw);
    return os_zoo_basic_conv(net, x, prefix, &d, out);
}

/* A functional pooling call inside module p, named "<p>.<call>". */
static opsched_status fpool(os_zoo_net *net, int x, const char *p, const char *call,
                            opsched_op_kind op, int64_t kernel, int64_t stride, int64_t pad,
                            int *out)
{
    char name[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, name, "%s.%s", p, call));
    /* F.avg_pool2d counts the padding in the average by default. */
    return opsched_build_pool(net->g, name, op, x, kernel, stride, pad, 0, op == OPSCHED_OP_AVGPOOL,
                              out);
}

static opsched_status cat(os_zoo_net *net, const int *xs, int n, const char *p, const char *call,
                          int *out)
{
    char name[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, name, "%s.%s", p, call));
    return opsched_build_concat(net->g, name, xs, n, 1, out);
}

/* ---- GoogLeNet ------------------------------------------------------- */

typedef struct v1_block {
    const char *name;
    int64_t ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj;
} v1_block;

static opsched_status inception_v1(os_zoo_net *net, int x, const v1_block *c, int *out)
{
    char pool[OS_ZOO_NAME_MAX];
    int b[4];
    OS_TRY(bconv(net, x, c->name, "branch1", c->ch1x1, 1, 1, 1, 0, 0, &b[0]));
    OS_TRY(bconv(net, x, c->name, "branch2.0", c->ch3x3red, 1, 1, 1, 0, 0, &b[1]));
    OS_TRY(bconv(net, b[1], c->name, "branch2.1", c->ch3x3, 3, 3, 1, 1, 1, &b[1]));
    OS_TRY(bconv(net, x, c->name, "branch3.0", c->ch5x5red, 1, 1, 1, 0, 0, &b[2]));
    /* 3x3 where the paper has 5x5: torchvision's known deviation
     * (pytorch/vision#906), kept because its weights were trained so. */
    OS_TRY(bconv(net, b[2], c->name, "branch3.1", c->ch5x5, 3, 3, 1, 1, 1, &b[2]));
    OS_TRY(os_zoo_name(net, pool, "%s.branch4.0", c->name));
    OS_TRY(opsched_build_pool(net->g, pool, OPSCHED_OP_MAXPOOL, x, 3, 1, 1, 1, 0, &b[3]));
    OS_TRY(bconv(net, b[3], c->name, "branch4.1", c->pool_proj, 1, 1, 1, 0, 0, &b[3]));
    return cat(net, b, 4, c->name, "cat", out);
}

/* nn.MaxPool2d(kernel, stride, ceil_mode=True), as all of GoogLeNet's. */
static opsched_status v1_maxpool(os_zoo_net *net, int x, const char *name, int64_t kernel, int *out)
{
    return opsched_build_pool(net->g, name, OPSCHED_OP_MAXPOOL, x, kernel, 2, 0, 1, 0, out);
}

opsched_status os_zoo_build_googlenet(os_zoo_net *net, int x, int *out)
{
    static const v1_block b3[] = {
        {"inception3a", 64, 96, 128, 16, 32, 32},
        {"inception3b", 128, 128, 192, 32, 96, 64},
    };
    static const v1_block b4[] = {
        {"inception4a", 192, 96, 208, 16, 48, 64},    {"inception4b", 160, 112, 224, 24, 64, 64},
        {"inception4c", 128, 128, 256, 24, 64, 64},   {"inception4d", 112, 144, 288, 32, 64, 64},
        {"inception4e", 256, 160, 320, 32, 128, 128},
    };
    static const v1_block b5[] = {
        {"inception5a", 256, 160, 320, 32, 128, 128},
        {"inception5b", 384, 192, 384, 48, 128, 128},
    };
    OS_TRY(bconv(net, x, NULL, "conv1", 64, 7, 7, 2, 3, 3, &x));
    OS_TRY(v1_maxpool(net, x, "maxpool1", 3, &x));
    OS_TRY(bconv(net, x, NULL, "conv2", 64, 1, 1, 1, 0, 0, &x));
    OS_TRY(bconv(net, x, NULL, "conv3", 192, 3, 3, 1, 1, 1, &x));
    OS_TRY(v1_maxpool(net, x, "maxpool2", 3, &x));
    for (size_t i = 0; i < OS_ARRAY_LEN(b3); i++)
        OS_TRY(inception_v1(net, x, &b3[i], &x));
    OS_TRY(v1_maxpool(net, x, "maxpool3", 3, &x));
    for (size_t i = 0; i < OS_ARRAY_LEN(b4); i++)
        OS_TRY(inception_v1(net, x, &b4[i], &x));
    OS_TRY(v1_maxpool(net, x, "maxpool4", 2, &x));
    for (size_t i = 0; i < OS_ARRAY_LEN(b5); i++)
        OS_TRY(inception_v1(net, x, &b5[i], &x));
    OS_TRY(os_zoo_adaptive_avgpool(net, x, "avgpool", 1, 1, &x));
    OS_TRY(opsched_build_flatten(net->g, "flatten", x, 1, &x));
    OS_TRY(os_zoo_dropout(net, x, "dropout", &x));
    return opsched_build_linear(net->g, "fc", x, 1000, 1, out);
}

/* ---- Inception v3 ---------------------------------------------------- */

static opsched_status inception_a(os_zoo_net *net, int x, const char *p, int64_t pool_features,
                                  int *out)
{
    int b[4];
    OS_TRY(bconv(net, x, p, "branch1x1", 64, 1, 1, 1, 0, 0, &b[0]));
    OS_TRY(bconv(net, x, p, "branch5x5_1", 48, 1, 1, 1, 0, 0, &b[1]));
    OS_TRY(bconv(net, b[1], p, "branch5x5_2", 64, 5, 5, 1, 2, 2, &b[1]));
    OS_TRY(bconv(net, x, p, "branch3x3dbl_1", 64, 1, 1, 1, 0, 0, &b[2]));
    OS_TRY(bconv(net, b[2], p, "branch3x3dbl_2", 96, 3, 3, 1, 1, 1, &b[2]));
    OS_TRY(bconv(net, b[2], p, "branch3x3dbl_3", 96, 3, 3, 1, 1, 1, &b[2]));
    OS_TRY(fpool(net, x, p, "avg_pool2d", OPSCHED_OP_AVGPOOL, 3, 1, 1, &b[3]));
    OS_TRY(bconv(net, b[3], p, "branch_pool", pool_features, 1, 1, 1, 0, 0, &b[3]));
    return cat(net, b, 4, p, "cat", out);
}

static opsched_status inception_b(os_zoo_net *net, int x, const char *p, int *out)
{
    int b[3];
    OS_TRY(bconv(net, x, p, "branch3x3", 384, 3, 3, 2, 0, 0, &b[0]));
    OS_TRY(bconv(net, x, p, "branch3x3dbl_1", 64, 1, 1, 1, 0, 0, &b[1]));
    OS_TRY(bconv(net, b[1], p, "branch3x3dbl_2", 96, 3, 3, 1, 1, 1, &b[1]));
    OS_TRY(bconv(net, b[1], p, "branch3x3dbl_3", 96, 3, 3, 2, 0, 0, &b[1]));
    OS_TRY(fpool(net, x, p, "max_pool2d", OPSCHED_OP_MAXPOOL, 3, 2, 0, &b[2]));
    return cat(net, b, 3, p, "cat", out);
}

static opsched_status inception_c(os_zoo_net *net, int x, const char *p, int64_t c7, int *out)
{
    int b[4];
    OS_TRY(bconv(net, x, p, "branch1x1", 192, 1, 1, 1, 0, 0, &b[0]));
    OS_TRY(bconv(net, x, p, "branch7x7_1", c7, 1, 1, 1, 0, 0, &b[1]));
    OS_TRY(bconv(net, b[1], p, "branch7x7_2", c7, 1, 7, 1, 0, 3, &b[1]));
    OS_TRY(bconv(net, b[1], p, "branch7x7_3", 192, 7, 1, 1, 3, 0, &b[1]));
    OS_TRY(bconv(net, x, p, "branch7x7dbl_1", c7, 1, 1, 1, 0, 0, &b[2]));
    OS_TRY(bconv(net, b[2], p, "branch7x7dbl_2", c7, 7, 1, 1, 3, 0, &b[2]));
    OS_TRY(bconv(net, b[2], p, "branch7x7dbl_3", c7, 1, 7, 1, 0, 3, &b[2]));
    OS_TRY(bconv(net, b[2], p, "branch7x7dbl_4", c7, 7, 1, 1, 3, 0, &b[2]));
    OS_TRY(bconv(net, b[2], p, "branch7x7dbl_5", 192, 1, 7, 1, 0, 3, &b[2]));
    OS_TRY(fpool(net, x, p, "avg_pool2d", OPSCHED_OP_AVGPOOL, 3, 1, 1, &b[3]));
    OS_TRY(bconv(net, b[3], p, "branch_pool", 192, 1, 1, 1, 0, 0, &b[3]));
    return cat(net, b, 4, p, "cat", out);
}

static opsched_status inception_d(os_zoo_net *net, int x, const char *p, int *out)
{
    int b[3];
    OS_TRY(bconv(net, x, p, "branch3x3_1", 192, 1, 1, 1, 0, 0, &b[0]));
    OS_TRY(bconv(net, b[0], p, "branch3x3_2", 320, 3, 3, 2, 0, 0, &b[0]));
    OS_TRY(bconv(net, x, p, "branch7x7x3_1", 192, 1, 1, 1, 0, 0, &b[1]));
    OS_TRY(bconv(net, b[1], p, "branch7x7x3_2", 192, 1, 7, 1, 0, 3, &b[1]));
    OS_TRY(bconv(net, b[1], p, "branch7x7x3_3", 192, 7, 1, 1, 3, 0, &b[1]));
    OS_TRY(bconv(net, b[1], p, "branch7x7x3_4", 192, 3, 3, 2, 0, 0, &b[1]));
    OS_TRY(fpool(net, x, p, "max_pool2d", OPSCHED_OP_MAXPOOL, 3, 2, 0, &b[2]));
    return cat(net, b, 3, p, "cat", out);
}

/*
 * InceptionE splits two of its branches in two and concatenates them before
 * the final torch.cat: three calls, named cat, cat_1 and cat_2 in the order
 * they run.  torch.onnx.export merges a Concat that feeds a Concat on the
 * same axis, so the deployed form has one Concat of six inputs, named cat.
 */
static opsched_status inception_e(os_zoo_net *net, int x, const char *p, int *out)
{
    int b1x1, b3x3[2], dbl[2], pool, t, cat3x3 = -1, catdbl = -1;
    OS_TRY(bconv(net, x, p, "branch1x1", 320, 1, 1, 1, 0, 0, &b1x1));
    OS_TRY(bconv(net, x, p, "branch3x3_1", 384, 1, 1, 1, 0, 0, &t));
    OS_TRY(bconv(net, t, p, "branch3x3_2a", 384, 1, 3, 1, 0, 1, &b3x3[0]));
    OS_TRY(bconv(net, t, p, "branch3x3_2b", 384, 3, 1, 1, 1, 0, &b3x3[1]));
    if (!net->fold_bn) OS_TRY(cat(net, b3x3, 2, p, "cat", &cat3x3));
    OS_TRY(bconv(net, x, p, "branch3x3dbl_1", 448, 1, 1, 1, 0, 0, &t));
    OS_TRY(bconv(net, t, p, "branch3x3dbl_2", 384, 3, 3, 1, 1, 1, &t));
    OS_TRY(bconv(net, t, p, "branch3x3dbl_3a", 384, 1, 3, 1, 0, 1, &dbl[0]));
    OS_TRY(bconv(net, t, p, "branch3x3dbl_3b", 384, 3, 1, 1, 1, 0, &dbl[1]));
    if (!net->fold_bn) OS_TRY(cat(net, dbl, 2, p, "cat_1", &catdbl));
    OS_TRY(fpool(net, x, p, "avg_pool2d", OPSCHED_OP_AVGPOOL, 3, 1, 1, &t));
    OS_TRY(bconv(net, t, p, "branch_pool", 192, 1, 1, 1, 0, 0, &pool));
    if (net->fold_bn) {
        int all[6] = {b1x1, b3x3[0], b3x3[1], dbl[0], dbl[1], pool};
        return cat(net, all, 6, p, "cat", out);
    }
    int parts[4] = {b1x1, cat3x3, catdbl, pool};
    return cat(net, parts, 4, p, "cat_2", out);
}

opsched_status os_zoo_build_inception_v3(os_zoo_net *net, int x, int *out)
{
    OS_TRY(bconv(net, x, NULL, "Conv2d_1a_3x3", 32, 3, 3, 2, 0, 0, &x));
    OS_TRY(bconv(net, x, NULL, "Conv2d_2a_3x3", 32, 3, 3, 1, 0, 0, &x));
    OS_TRY(bconv(net, x, NULL, "Conv2d_2b_3x3", 64, 3, 3, 1, 1, 1, &x));
    OS_TRY(opsched_build_pool(net->g, "maxpool1", OPSCHED_OP_MAXPOOL, x, 3, 2, 0, 0, 0, &x));
    OS_TRY(bconv(net, x, NULL, "Conv2d_3b_1x1", 80, 1, 1, 1, 0, 0, &x));
    OS_TRY(bconv(net, x, NULL, "Conv2d_4a_3x3", 192, 3, 3, 1, 0, 0, &x));
    OS_TRY(opsched_build_pool(net->g, "maxpool2", OPSCHED_OP_MAXPOOL, x, 3, 2, 0, 0, 0, &x));
    OS_TRY(inception_a(net, x, "Mixed_5b", 32, &x));
    OS_TRY(inception_a(net, x, "Mixed_5c", 64, &x));
    OS_TRY(inception_a(net, x, "Mixed_5d", 64, &x));
    OS_TRY(inception_b(net, x, "Mixed_6a", &x));
    OS_TRY(inception_c(net, x, "Mixed_6b", 128, &x));
    OS_TRY(inception_c(net, x, "Mixed_6c", 160, &x));
    OS_TRY(inception_c(net, x, "Mixed_6d", 160, &x));
    OS_TRY(inception_c(net, x, "Mixed_6e", 192, &x));
    OS_TRY(inception_d(net, x, "Mixed_7a", &x));
    OS_TRY(inception_e(net, x, "Mixed_7b", &x));
    OS_TRY(inception_e(net, x, "Mixed_7c", &x));
    OS_TRY(os_zoo_adaptive_avgpool(net, x, "avgpool", 1, 1, &x));
    /* Inception3 drops out before flattening; GoogLeNet after. */
    OS_TRY(os_zoo_dropout(net, x, "dropout", &x));
    OS_TRY(opsched_build_flatten(net->g, "flatten", x, 1, &x));
    return opsched_build_linear(net->g, "fc", x, 1000, 1, out);
}
