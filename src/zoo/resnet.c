/*
 * resnet.c - ResNet-50 and ResNet-152 as torchvision defines them
 * (torchvision/models/resnet.py): the v1.5 Bottleneck, whose stride sits in
 * the 3x3 convolution, and a 1x1 convolution + BatchNorm "downsample" on
 * the first block of each stage.
 */
#include "zoo/zoo_impl.h"

/*
 * One Bottleneck, "layer<stage>.<block>", in the order its forward() runs:
 * conv1/bn1/relu, conv2/bn2/relu, conv3/bn3, downsample(x), add, relu.  The
 * block reuses one nn.ReLU module three times; its calls are numbered as
 * torch.onnx.export numbers them (relu, relu_1, relu_2).
 */
static opsched_status bottleneck(os_zoo_net *net, int x, int stage, int block, int64_t planes,
                                 int64_t stride, int downsample, int *out)
{
    char p[OS_ZOO_NAME_MAX], conv[OS_ZOO_NAME_MAX], bn[OS_ZOO_NAME_MAX], relu[OS_ZOO_NAME_MAX],
        add[OS_ZOO_NAME_MAX];
    int y, identity = x;
    OS_TRY(os_zoo_name(net, p, "layer%d.%d", stage, block));

    opsched_conv_desc d1 = os_zoo_conv_desc(planes, 1, 1, 1, 0, 0);
    OS_TRY(os_zoo_name(net, conv, "%s.conv1", p));
    OS_TRY(os_zoo_name(net, bn, "%s.bn1", p));
    OS_TRY(os_zoo_name(net, relu, "%s.relu", p));
    OS_TRY(os_zoo_conv(net, x, &d1, conv, bn, OS_ZOO_BN_EPS, relu, &y));

    opsched_conv_desc d2 = os_zoo_conv_desc(planes, 3, 3, stride, 1, 1);
    OS_TRY(os_zoo_name(net, conv, "%s.conv2", p));
    OS_TRY(os_zoo_name(net, bn, "%s.bn2", p));
    OS_TRY(os_zoo_name(net, relu, "%s.relu_1", p));
    OS_TRY(os_zoo_conv(net, y, &d2, conv, bn, OS_ZOO_BN_EPS, relu, &y));

    opsched_conv_desc d3 = os_zoo_conv_desc(planes * 4, 1, 1, 1, 0, 0);
    OS_TRY(os_zoo_name(net, conv, "%s.conv3", p));
    OS_TRY(os_zoo_name(net, bn, "%s.bn3", p));
    OS_TRY(os_zoo_conv(net, y, &d3, conv, bn, OS_ZOO_BN_EPS, NULL, &y));

    if (downsample) {
        opsched_conv_desc dd = os_zoo_conv_desc(planes * 4, 1, 1, stride, 0, 0);
        OS_TRY(os_zoo_name(net, conv, "%s.downsample.0", p));
        OS_TRY(os_zoo_name(net, bn, "%s.downsample.1", p));
        OS_TRY(os_zoo_conv(net, x, &dd, conv, bn, OS_ZOO_BN_EPS, NULL, &identity));
    }
    OS_TRY(os_zoo_name(net, add, "%s.add", p));
    OS_TRY(opsched_build_binary(net->g, add, OPSCHED_OP_ADD, y, identity, &y));
    OS_TRY(os_zoo_name(net, relu, "%s.relu_2", p));
    return os_zoo_relu(net, y, relu, out);
}

static opsched_status resnet(os_zoo_net *net, int x, const int blocks[4], int *out)
{
    opsched_conv_desc stem = os_zoo_conv_desc(64, 7, 7, 2, 3, 3);
    OS_TRY(os_zoo_conv(net, x, &stem, "conv1", "bn1", OS_ZOO_BN_EPS, "relu", &x));
    OS_TRY(opsched_build_pool(net->g, "maxpool", OPSCHED_OP_MAXPOOL, x, 3, 2, 1, 0, 0, &x));
    int64_t inplanes = 64;
    for (int s = 0; s < 4; s++) {
        int64_t planes = (int64_t)64 << s, stride = s == 0 ? 1 : 2;
        for (int b = 0; b < blocks[s]; b++) {
            /* Only the first block changes the resolution or the width. */
            int64_t st = b == 0 ? stride : 1;
            int down = b == 0 && (st != 1 || inplanes != planes * 4);
            OS_TRY(bottleneck(net, x, s + 1, b, planes, st, down, &x));
            inplanes = planes * 4;
        }
    }
    OS_TRY(os_zoo_adaptive_avgpool(net, x, "avgpool", 1, 1, &x));
    OS_TRY(opsched_build_flatten(net->g, "flatten", x, 1, &x));
    return opsched_build_linear(net->g, "fc", x, 1000, 1, out);
}

opsched_status os_zoo_build_resnet50(os_zoo_net *net, int x, int *out)
{
    static const int blocks[4] = {3, 4, 6, 3};
    return resnet(net, x, blocks, out);
}

opsched_status os_zoo_build_resnet152(os_zoo_net *net, int x, int *out)
{
    static const int blocks[4] = {3, 8, 36, 3};
    return resnet(net, x, blocks, out);
}
