/*
 * alexnet_vgg.c - AlexNet and VGG-16 as torchvision defines them
 * (torchvision/models/alexnet.py, vgg.py): plain conv/ReLU/max-pool stacks
 * under "features.<i>", AdaptiveAvgPool2d "avgpool", torch.flatten, and a
 * Linear/ReLU/Dropout classifier under "classifier.<i>".  Neither has
 * BatchNorm, so fold_bn only removes the Dropouts.
 */
#include "core/util.h"
#include "zoo/zoo_impl.h"

/* features.<i>: a biased convolution, then its ReLU as features.<i+1>. */
static opsched_status conv_relu(os_zoo_net *net, int x, int i, const opsched_conv_desc *d, int *out)
{
    char conv[OS_ZOO_NAME_MAX], relu[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, conv, "features.%d", i));
    OS_TRY(os_zoo_name(net, relu, "features.%d", i + 1));
    return os_zoo_conv(net, x, d, conv, NULL, 0.0f, relu, out);
}

static opsched_status maxpool(os_zoo_net *net, int x, int i, int64_t kernel, int64_t stride,
                              int *out)
{
    char name[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, name, "features.%d", i));
    return opsched_build_pool(net->g, name, OPSCHED_OP_MAXPOOL, x, kernel, stride, 0, 0, 0, out);
}

static opsched_conv_desc biased(int64_t out_channels, int64_t k, int64_t stride, int64_t pad)
{
    opsched_conv_desc d = os_zoo_conv_desc(out_channels, k, k, stride, pad, pad);
    d.bias = 1;
    return d;
}

opsched_status os_zoo_build_alexnet(os_zoo_net *net, int x, int *out)
{
    opsched_conv_desc c0 = biased(64, 11, 4, 2), c3 = biased(192, 5, 1, 2),
                      c6 = biased(384, 3, 1, 1), c8 = biased(256, 3, 1, 1),
                      c10 = biased(256, 3, 1, 1);
    OS_TRY(conv_relu(net, x, 0, &c0, &x));
    OS_TRY(maxpool(net, x, 2, 3, 2, &x));
    OS_TRY(conv_relu(net, x, 3, &c3, &x));
    OS_TRY(maxpool(net, x, 5, 3, 2, &x));
    OS_TRY(conv_relu(net, x, 6, &c6, &x));
    OS_TRY(conv_relu(net, x, 8, &c8, &x));
    OS_TRY(conv_relu(net, x, 10, &c10, &x));
    OS_TRY(maxpool(net, x, 12, 3, 2, &x));
    OS_TRY(os_zoo_adaptive_avgpool(net, x, "avgpool", 6, 6, &x));
    OS_TRY(opsched_build_flatten(net->g, "flatten", x, 1, &x));
    OS_TRY(os_zoo_dropout(net, x, "classifier.0", &x));
    OS_TRY(opsched_build_linear(net->g, "classifier.1", x, 4096, 1, &x));
    OS_TRY(os_zoo_relu(net, x, "classifier.2", &x));
    OS_TRY(os_zoo_dropout(net, x, "classifier.3", &x));
    OS_TRY(opsched_build_linear(net->g, "classifier.4", x, 4096, 1, &x));
    OS_TRY(os_zoo_relu(net, x, "classifier.5", &x));
    return opsched_build_linear(net->g, "classifier.6", x, 1000, 1, out);
}

opsched_status os_zoo_build_vgg16(os_zoo_net *net, int x, int *out)
{
    /* Configuration "D": output channels of 3x3 convolutions, 0 for a
     * 2x2 max pool of stride 2. */
    static const int64_t cfg[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                                  0,  512, 512, 512, 0,   512, 512, 512, 0};
    int i = 0;
    for (size_t c = 0; c < OS_ARRAY_LEN(cfg); c++) {
        if (cfg[c] == 0) {
            OS_TRY(maxpool(net, x, i, 2, 2, &x));
            i += 1;
        } else {
            opsched_conv_desc d = biased(cfg[c], 3, 1, 1);
            OS_TRY(conv_relu(net, x, i, &d, &x));
            i += 2;
        }
    }
    OS_TRY(os_zoo_adaptive_avgpool(net, x, "avgpool", 7, 7, &x));
    OS_TRY(opsched_build_flatten(net->g, "flatten", x, 1, &x));
    OS_TRY(opsched_build_linear(net->g, "classifier.0", x, 4096, 1, &x));
    OS_TRY(os_zoo_relu(net, x, "classifier.1", &x));
    OS_TRY(os_zoo_dropout(net, x, "classifier.2", &x));
    OS_TRY(opsched_build_linear(net->g, "classifier.3", x, 4096, 1, &x));
    OS_TRY(os_zoo_relu(net, x, "classifier.4", &x));
    OS_TRY(os_zoo_dropout(net, x, "classifier.5", &x));
    return opsched_build_linear(net->g, "classifier.6", x, 1000, 1, out);
}
