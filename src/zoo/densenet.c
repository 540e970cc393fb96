/*
 * densenet.c - DenseNet-121 as torchvision defines it
 * (torchvision/models/densenet.py): growth rate 32, bottleneck width 4 x 32,
 * blocks of 6, 12, 24 and 16 layers joined by transitions that halve the
 * channels and the resolution.
 *
 * Each dense layer concatenates every feature map before it (torch.cat in
 * _DenseLayer.bn_function, a Concat of one input for the first layer), and
 * each block ends in a Concat of all of them, as the exported model does.
 * The layers are pre-activation (BatchNorm, ReLU, then conv), so folding
 * only removes norm0 and each layer's norm2, the BatchNorms that follow a
 * convolution; norm1, the transitions' norm and norm5 stay, as they do in
 * torch.onnx.export's output.
 */
#include "zoo/zoo_impl.h"

#define GROWTH 32
#define BN_SIZE 4
#define MAX_LAYERS 24

static opsched_status dense_layer(os_zoo_net *net, const int *feats, int n, const char *p, int *out)
{
    char name[OS_ZOO_NAME_MAX], bn[OS_ZOO_NAME_MAX], relu[OS_ZOO_NAME_MAX];
    int y;
    OS_TRY(os_zoo_name(net, name, "%s.cat", p));
    OS_TRY(opsched_build_concat(net->g, name, feats, n, 1, &y));
    OS_TRY(os_zoo_name(net, bn, "%s.norm1", p));
    OS_TRY(os_zoo_name(net, relu, "%s.relu1", p));
    OS_TRY(os_zoo_bn_relu(net, y, bn, relu, &y));

    opsched_conv_desc d1 = os_zoo_conv_desc(BN_SIZE * GROWTH, 1, 1, 1, 0, 0);
    OS_TRY(os_zoo_name(net, name, "%s.conv1", p));
    OS_TRY(os_zoo_name(net, bn, "%s.norm2", p));
    OS_TRY(os_zoo_name(net, relu, "%s.relu2", p));
    OS_TRY(os_zoo_conv(net, y, &d1, name, bn, OS_ZOO_BN_EPS, relu, &y));

    opsched_conv_desc d2 = os_zoo_conv_desc(GROWTH, 3, 3, 1, 1, 1);
    OS_TRY(os_zoo_name(net, name, "%s.conv2", p));
    return os_zoo_conv(net, y, &d2, name, NULL, 0.0f, NULL, out);
}

static opsched_status dense_block(os_zoo_net *net, int x, int block, int layers, int *out)
{
    char p[OS_ZOO_NAME_MAX], name[OS_ZOO_NAME_MAX];
    int feats[MAX_LAYERS + 1];
    feats[0] = x;
    for (int l = 0; l < layers; l++) {
        OS_TRY(os_zoo_name(net, p, "features.denseblock%d.denselayer%d", block, l + 1));
        OS_TRY(dense_layer(net, feats, l + 1, p, &feats[l + 1]));
    }
    OS_TRY(os_zoo_name(net, name, "features.denseblock%d.cat", block));
    return opsched_build_concat(net->g, name, feats, layers + 1, 1, out);
}

static opsched_status transition(os_zoo_net *net, int x, int block, int64_t out_channels, int *out)
{
    char bn[OS_ZOO_NAME_MAX], relu[OS_ZOO_NAME_MAX], conv[OS_ZOO_NAME_MAX], pool[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, bn, "features.transition%d.norm", block));
    OS_TRY(os_zoo_name(net, relu, "features.transition%d.relu", block));
    OS_TRY(os_zoo_name(net, conv, "features.transition%d.conv", block));
    OS_TRY(os_zoo_name(net, pool, "features.transition%d.pool", block));
    OS_TRY(os_zoo_bn_relu(net, x, bn, relu, &x));
    opsched_conv_desc d = os_zoo_conv_desc(out_channels, 1, 1, 1, 0, 0);
    OS_TRY(os_zoo_conv(net, x, &d, conv, NULL, 0.0f, NULL, &x));
    /* nn.AvgPool2d(2, stride=2): count_include_pad defaults to True. */
    return opsched_build_pool(net->g, pool, OPSCHED_OP_AVGPOOL, x, 2, 2, 0, 0, 1, out);
}

opsched_status os_zoo_build_densenet121(os_zoo_net *net, int x, int *out)
{
    static const int blocks[4] = {6, 12, 24, 16};
    opsched_conv_desc stem = os_zoo_conv_desc(64, 7, 7, 2, 3, 3);
    OS_TRY(os_zoo_conv(net, x, &stem, "features.conv0", "features.norm0", OS_ZOO_BN_EPS,
                       "features.relu0", &x));
    OS_TRY(opsched_build_pool(net->g, "features.pool0", OPSCHED_OP_MAXPOOL, x, 3, 2, 1, 0, 0, &x));
    int64_t channels = 64;
    for (int b = 0; b < 4; b++) {
        OS_TRY(dense_block(net, x, b + 1, blocks[b], &x));
        channels += (int64_t)blocks[b] * GROWTH;
        if (b < 3) {
            channels /= 2;
            OS_TRY(transition(net, x, b + 1, channels, &x));
        }
    }
    /* DenseNet.forward: F.relu, F.adaptive_avg_pool2d, torch.flatten. */
    OS_TRY(os_zoo_bn_relu(net, x, "features.norm5", "relu", &x));
    OS_TRY(os_zoo_adaptive_avgpool(net, x, "avgpool", 1, 1, &x));
    OS_TRY(opsched_build_flatten(net->g, "flatten", x, 1, &x));
    return opsched_build_linear(net->g, "classifier", x, 1000, 1, out);
}
