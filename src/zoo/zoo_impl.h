/*
 * zoo_impl.h - what the model files of the zoo share: the network being
 * built, the layer helpers every model uses, one entry point per model.
 *
 * Layer and tensor names are torchvision's module paths ("layer1.0.conv1",
 * "features.0"), so a user recognises them next to the PyTorch source.
 * Functional calls that have no module (torch.cat, F.relu, F.avg_pool2d)
 * take their parent module's path plus the call's name, numbered "_1",
 * "_2" when one module makes the same call again, as torch.onnx.export
 * numbers them.
 */
#ifndef OS_ZOO_IMPL_H
#define OS_ZOO_IMPL_H

#include "core/error.h"
#include "opsched/zoo.h"

/* Longest layer name a model makes, with room to spare. */
#define OS_ZOO_NAME_MAX 128

/* torchvision's nn.BatchNorm2d default, and BasicConv2d's in the Inception
 * networks. */
#define OS_ZOO_BN_EPS 1e-5f
#define OS_ZOO_BN_EPS_INCEPTION 1e-3f

/* The network under construction.  fold_bn selects the eval-mode deployed
 * form that torch.onnx.export writes: BatchNormalization that follows a
 * convolution is folded into it, Dropout is gone, and a Concat that feeds
 * a Concat on the same axis is merged into it.  (The exporter also writes
 * a padded average pool as Pad + AveragePool; we keep the one AveragePool
 * with pads and count_include_pad, which computes the same.) */
typedef struct os_zoo_net {
    opsched_graph *g;
    int fold_bn;
} os_zoo_net;

/* Builds one model from the input tensor x ([N,3,H,W]) to its logits. */
typedef opsched_status (*os_zoo_build_fn)(os_zoo_net *net, int x, int *out);

opsched_status os_zoo_build_alexnet(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_vgg16(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_resnet50(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_resnet152(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_densenet121(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_googlenet(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_inception_v3(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_squeezenet1_1(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_randwire(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_randwire_large(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_nasnet(os_zoo_net *net, int x, int *out);
opsched_status os_zoo_build_nasnet_large(os_zoo_net *net, int x, int *out);

/* A convolution without bias (the form that precedes a BatchNorm): out
 * channels, kernel kh x kw, one stride for both axes, padding ph, pw. */
opsched_conv_desc os_zoo_conv_desc(int64_t out_channels, int64_t kh, int64_t kw, int64_t stride,
                                   int64_t ph, int64_t pw);

/* Formats a layer name into buf (OS_ZOO_NAME_MAX bytes); a name that does
 * not fit is an error rather than a silently truncated, possibly clashing
 * name. */
opsched_status os_zoo_name(os_zoo_net *net, char *buf, const char *fmt, ...) OS_PRINTF(3, 4);

/* conv, then BatchNorm named bn (none when bn is NULL), then ReLU named relu
 * (none when relu is NULL).  With fold_bn the BatchNorm disappears and the
 * convolution gains a bias, as in the exported model. */
opsched_status os_zoo_conv(os_zoo_net *net, int x, const opsched_conv_desc *desc, const char *conv,
                           const char *bn, float bn_eps, const char *relu, int *out);

/* torchvision's BasicConv2d of GoogLeNet and Inception v3: "<prefix>.conv"
 * (no bias), "<prefix>.bn" (eps 1e-3), then F.relu as "<prefix>.relu". */
opsched_status os_zoo_basic_conv(os_zoo_net *net, int x, const char *prefix,
                                 const opsched_conv_desc *desc, int *out);

/* A BatchNorm that follows no convolution (DenseNet's pre-activation), so it
 * stays in the folded form too; then ReLU named relu unless relu is NULL. */
opsched_status os_zoo_bn_relu(os_zoo_net *net, int x, const char *bn, const char *relu, int *out);

opsched_status os_zoo_relu(os_zoo_net *net, int x, const char *name, int *out);

/* nn.Dropout: a Dropout node, or nothing in the folded (eval) form, where
 * *out is x. */
opsched_status os_zoo_dropout(os_zoo_net *net, int x, const char *name, int *out);

/* nn.AdaptiveAvgPool2d((out_h, out_w)); see layers.c for how it maps
 * to ONNX pooling. */
opsched_status os_zoo_adaptive_avgpool(os_zoo_net *net, int x, const char *name, int64_t out_h,
                                       int64_t out_w, int *out);

#endif /* OS_ZOO_IMPL_H */
