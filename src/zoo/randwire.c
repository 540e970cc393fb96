/*
 * randwire.c - RandWire-WS (Xie, Kirillov, Girshick, He, "Exploring
 * Randomly Wired Neural Networks for Image Recognition", ICCV 2019): stages
 * whose nodes are wired by a random Watts-Strogatz graph, WS(K=4, P=0.75).
 *
 * Two regimes of the paper's Table 1:
 *   randwire        small regime, C = 78, N = 32: conv1 (3x3/2, C/2), conv2
 *                   (3x3/2, C), random stages conv3 (C), conv4 (2C), conv5
 *                   (4C); the paper's 583M-FLOP, 5.6M-parameter model
 *   randwire_large  regular regime, C = 154, N = 32: conv1 (3x3/2, C/2),
 *                   random stages conv2 (N/2 nodes, C), conv3 (2C), conv4
 *                   (4C), conv5 (8C); the model IOS (Ding et al., MLSys
 *                   2021) benchmarks as "RandWire"
 * then a classifier: ReLU, 1x1 conv to 1280, BatchNorm, global average
 * pool, fc to 1000.
 *
 * The graphs.  The paper draws each stage's graph once and keeps it; so do
 * we, with our own generator, so that the network is the same on every
 * platform and in every build:
 *   - splitmix64 (Steele, Lea, Flood 2014), seeded with RW_SEED + s for the
 *     stage named conv<s>; integer draws only (a rewiring happens when a
 *     draw below RW_P_DEN is below RW_P_NUM; a target is drawn uniformly by
 *     rejection), so no floating point enters the graph;
 *   - Watts-Strogatz as the paper (and networkx) define it: a ring where
 *     every node is joined to its K/2 neighbours on each side; then for
 *     j = 1..K/2, for every node u in order, the edge (u, u+j) is rewired
 *     with probability P to (u, w), w drawn among the nodes that are
 *     neither u nor joined to u;
 *   - the DAG orients every edge from the lower to the higher index.
 * The same generator is written again in tests/zoo_randwire_reference.py,
 * which counts the parameters, multiply-adds and operators by arithmetic
 * and hashes the edges; tests/test_zoo.c checks all of them.
 *
 * A node: aggregation, ReLU, 3x3 separable convolution (depthwise 3x3, then
 * pointwise 1x1), BatchNorm.  The paper aggregates with a weighted sum,
 * sum_i sigmoid(w_i) x_i, one learned scalar per edge; we write a plain
 * Add of the inputs (a chain, "add", "add_1", ..., in increasing source
 * index), so the edge weights - 64 scalars per stage - are not in the
 * parameter count and the per-edge scaling is not in the work.  Nodes
 * without inputs read the stage's input with stride 2 (and with the
 * previous stage's channels); nodes without outputs are averaged into the
 * stage's output (an Add chain, then Mul by the constant 1/n).  The
 * paper's extra input node and output node are exactly that fan-out and
 * that average.
 *
 * Names: "conv<s>.n<v>.relu|dw|pw|bn|add[_i]" for node v of stage s,
 * "conv<s>.out.add[_i]|mean|scale" for the stage output.
 */
#include <stdint.h>
#include <string.h>

#include "zoo/zoo_impl.h"

/* "RandWire" in ASCII. */
#define RW_SEED UINT64_C(0x52616E6457697265)
#define RW_K 4
#define RW_P_NUM 3 /* P = 3/4 */
#define RW_P_DEN 4
#define RW_MAX_NODES 32
#define RW_BN_EPS OS_ZOO_BN_EPS

/* ---- the random graph ------------------------------------------------- */

typedef struct rw_rng {
    uint64_t state;
} rw_rng;

static uint64_t rw_next(rw_rng *r)
{
    uint64_t z = (r->state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0: draws below 2^64 mod n are rejected. */
static uint64_t rw_below(rw_rng *r, uint64_t n)
{
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = rw_next(r);
        if (x >= threshold) return x % n;
    }
}

typedef struct rw_graph {
    int n;
    unsigned char adj[RW_MAX_NODES][RW_MAX_NODES]; /* undirected, symmetric */
} rw_graph;

static void rw_join(rw_graph *g, int u, int v, unsigned char on)
{
    g->adj[u][v] = g->adj[v][u] = on;
}

/* WS(n, k, P) from seed; n <= RW_MAX_NODES, 0 < k < n, k even. */
static void rw_ws_graph(int n, int k, uint64_t seed, rw_graph *g)
{
    rw_rng r = {seed};
    int cand[RW_MAX_NODES];
    memset(g, 0, sizeof(*g));
    g->n = n;
    for (int j = 1; j <= k / 2; j++)
        for (int u = 0; u < n; u++)
            rw_join(g, u, (u + j) % n, 1);
    for (int j = 1; j <= k / 2; j++) {
        for (int u = 0; u < n; u++) {
            int v = (u + j) % n;
            if (rw_below(&r, RW_P_DEN) >= RW_P_NUM) continue;
            int nc = 0;
            for (int w = 0; w < n; w++)
                if (w != u && !g->adj[u][w]) cand[nc++] = w;
            if (nc == 0 || !g->adj[u][v]) continue;
            int w = cand[rw_below(&r, (uint64_t)nc)];
            rw_join(g, u, v, 0);
            rw_join(g, u, w, 1);
        }
    }
}

/* ---- layers ------------------------------------------------------------- */

/* ReLU, depthwise 3x3 (stride), pointwise 1x1 to channels, BatchNorm. */
static opsched_status rw_node(os_zoo_net *net, int x, const char *p, int64_t channels,
                              int64_t stride, int *out)
{
    char relu[OS_ZOO_NAME_MAX], dw[OS_ZOO_NAME_MAX], pw[OS_ZOO_NAME_MAX], bn[OS_ZOO_NAME_MAX];
    OS_TRY(os_zoo_name(net, relu, "%s.relu", p));
    OS_TRY(os_zoo_name(net, dw, "%s.dw", p));
    OS_TRY(os_zoo_name(net, pw, "%s.pw", p));
    OS_TRY(os_zoo_name(net, bn, "%s.bn", p));
    int64_t in = opsched_graph_tensor(net->g, x)->shape.d[1];
    OS_TRY(os_zoo_relu(net, x, relu, &x));
    opsched_conv_desc d = os_zoo_conv_desc(in, 3, 3, stride, 1, 1);
    d.groups = in;
    OS_TRY(os_zoo_conv(net, x, &d, dw, NULL, 0.0f, NULL, &x));
    d = os_zoo_conv_desc(channels, 1, 1, 1, 0, 0);
    return os_zoo_conv(net, x, &d, pw, bn, RW_BN_EPS, NULL, out);
}

/* Sums xs[0..n) with a chain of Adds "<p>.add", "<p>.add_1", ... */
static opsched_status rw_sum(os_zoo_net *net, const int *xs, int n, const char *p, int *out)
{
    char name[OS_ZOO_NAME_MAX];
    int y = xs[0];
    for (int i = 1; i < n; i++) {
        if (i == 1)
            OS_TRY(os_zoo_name(net, name, "%s.add", p));
        else
            OS_TRY(os_zoo_name(net, name, "%s.add_%d", p, i - 1));
        OS_TRY(opsched_build_binary(net->g, name, OPSCHED_OP_ADD, y, xs[i], &y));
    }
    *out = y;
    return OPSCHED_OK;
}

/* The average of xs[0..n): their sum times the constant 1/n. */
static opsched_status rw_mean(os_zoo_net *net, const int *xs, int n, const char *p, int *out)
{
    char name[OS_ZOO_NAME_MAX];
    int y, scale;
    OS_TRY(rw_sum(net, xs, n, p, &y));
    if (n == 1) {
        *out = y;
        return OPSCHED_OK;
    }
    const opsched_tensor *t = opsched_graph_tensor(net->g, y);
    opsched_shape one = {.ndim = 1, .d = {1}};
    float v = 1.0f / (float)n;
    OS_TRY(os_zoo_name(net, name, "%s.scale", p));
    OS_TRY(opsched_graph_add_tensor(net->g, name, OPSCHED_TENSOR_CONSTANT, t->dtype, &one, &scale));
    OS_TRY(opsched_graph_set_data(net->g, scale, &v, sizeof(v)));
    OS_TRY(os_zoo_name(net, name, "%s.mean", p));
    return opsched_build_binary(net->g, name, OPSCHED_OP_MUL, y, scale, out);
}

/* Random stage conv<number> of n nodes with the given output channels. */
static opsched_status rw_stage(os_zoo_net *net, int x, int number, int n, int64_t channels,
                               int *out)
{
    if (n < RW_K + 1 || n > RW_MAX_NODES)
        return OS_FAIL(opsched_graph_ctx(net->g), OPSCHED_ERR_INVALID_ARG,
                       "zoo: randwire stage conv%d: %d nodes, must be %d to %d", number, n,
                       RW_K + 1, RW_MAX_NODES);
    rw_graph g;
    rw_ws_graph(n, RW_K, RW_SEED + (uint64_t)number, &g);
    int outs[RW_MAX_NODES], ins[RW_MAX_NODES], sinks = 0;
    char p[OS_ZOO_NAME_MAX];
    for (int v = 0; v < n; v++) {
        int k = 0;
        for (int u = 0; u < v; u++)
            if (g.adj[u][v]) ins[k++] = outs[u];
        OS_TRY(os_zoo_name(net, p, "conv%d.n%d", number, v));
        int agg = x;
        if (k > 0) OS_TRY(rw_sum(net, ins, k, p, &agg));
        OS_TRY(rw_node(net, agg, p, channels, k > 0 ? 1 : 2, &outs[v]));
    }
    for (int v = 0; v < n; v++) {
        int has_out = 0;
        for (int w = v + 1; w < n && !has_out; w++)
            has_out = g.adj[v][w];
        if (!has_out) ins[sinks++] = outs[v];
    }
    OS_TRY(os_zoo_name(net, p, "conv%d.out", number));
    return rw_mean(net, ins, sinks, p, out);
}

typedef struct rw_stage_desc {
    int number;
    int nodes;
    int64_t channels;
} rw_stage_desc;

static opsched_status randwire(os_zoo_net *net, int x, int small, int n, int64_t c, int *out)
{
    opsched_conv_desc d = os_zoo_conv_desc(c / 2, 3, 3, 2, 1, 1);
    OS_TRY(os_zoo_conv(net, x, &d, "conv1.conv", "conv1.bn", RW_BN_EPS, NULL, &x));
    rw_stage_desc stages[4];
    int n_stages;
    if (small) {
        OS_TRY(os_zoo_relu(net, x, "conv2.relu", &x));
        d = os_zoo_conv_desc(c, 3, 3, 2, 1, 1);
        OS_TRY(os_zoo_conv(net, x, &d, "conv2.conv", "conv2.bn", RW_BN_EPS, NULL, &x));
        rw_stage_desc s[3] = {{3, n, c}, {4, n, 2 * c}, {5, n, 4 * c}};
        memcpy(stages, s, sizeof(s));
        n_stages = 3;
    } else {
        rw_stage_desc s[4] = {{2, n / 2, c}, {3, n, 2 * c}, {4, n, 4 * c}, {5, n, 8 * c}};
        memcpy(stages, s, sizeof(s));
        n_stages = 4;
    }
    for (int i = 0; i < n_stages; i++)
        OS_TRY(rw_stage(net, x, stages[i].number, stages[i].nodes, stages[i].channels, &x));
    OS_TRY(os_zoo_relu(net, x, "classifier.relu", &x));
    d = os_zoo_conv_desc(1280, 1, 1, 1, 0, 0);
    OS_TRY(os_zoo_conv(net, x, &d, "classifier.conv", "classifier.bn", RW_BN_EPS, NULL, &x));
    OS_TRY(os_zoo_adaptive_avgpool(net, x, "avgpool", 1, 1, &x));
    OS_TRY(opsched_build_flatten(net->g, "flatten", x, 1, &x));
    return opsched_build_linear(net->g, "fc", x, 1000, 1, out);
}

opsched_status os_zoo_build_randwire(os_zoo_net *net, int x, int *out)
{
    return randwire(net, x, 1, 32, 78, out);
}

opsched_status os_zoo_build_randwire_large(os_zoo_net *net, int x, int *out)
{
    return randwire(net, x, 0, 32, 154, out);
}
