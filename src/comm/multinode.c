/*
 * multinode.c - a collective over several nodes, from what one node
 * measured (a fit over its GPUs) and the network between nodes (a
 * bandwidth per node and a latency per hop that the user gives or that a
 * commbench database of that cluster gives).
 *
 * What the model takes from the intra-node fit: the bus bandwidth of its
 * bandwidth-bound piece (the last), which the NVLink links set, and the
 * latency per hop, the latency-bound piece's alpha over the hops a chunk
 * travels inside a node.
 *
 * Ring (every collective it covers): the N = nodes * G GPUs form rings
 * that run through each node's GPUs and leave it through a NIC, one ring
 * per channel spread over the NICs.  A chunk of an all-reduce travels
 * 2(N-1) hops (N-1 for all-gather, reduce-scatter and broadcast); of
 * these, 2 * nodes (nodes) cross the network.  Latency: the sum over that
 * path, the pipeline's fill.  Bandwidth: each GPU's share crosses every
 * link of the ring, so the bus bandwidth is the slower of NVLink's (the
 * intra-node fit's) and the network's per node (every ring crosses each
 * node boundary once, and the rings share the node's NICs).
 *
 * Tree (all-reduce only): inside a node a chain of G GPUs reduces to one
 * GPU and broadcasts back; between nodes, two binary trees each carry
 * half of the data, every node interior in one and a leaf in the other.
 * Counted per node and direction, reduction and broadcast together send
 * (and receive) twice the message through its NICs, and each link of the
 * chain carries it once per direction, at a GPU's NVLink bandwidth (the
 * intra-node bus bandwidth is what each GPU sends per second).  Latency:
 * the chain's 2(G-1) hops and 2 * ceil(log2 nodes) network hops.  So a
 * tree never moves more bytes per second than a ring; it wins where
 * latency dominates.
 */
#include <math.h>

#include "opsched/comm.h"

/* Hops a chunk travels in a ring of n ranks. */
static double ring_hops(opsched_collective c, int n)
{
    return c == OPSCHED_ALLREDUCE ? 2.0 * (n - 1) : (double)(n - 1);
}

double opsched_comm_multinode_us(opsched_collective c, double bytes, const opsched_comm_fit *intra,
                                 const opsched_comm_network *net, opsched_comm_algo *algo)
{
    if (algo) *algo = OPSCHED_COMM_RING;
    if (!net || net->nodes < 1 || net->gpus_per_node < 1 || !(bytes >= 0) || !(net->net_gbs > 0) ||
        !(net->net_us >= 0))
        return NAN;
    if (c != OPSCHED_ALLREDUCE && c != OPSCHED_ALLGATHER && c != OPSCHED_REDUCESCATTER &&
        c != OPSCHED_BROADCAST)
        return NAN;
    const int g = net->gpus_per_node, m = net->nodes, n = g * m;
    if (g > 1 && (!intra || intra->n_segments < 1)) return NAN;
    if (m == 1) return opsched_comm_fit_eval(intra, bytes);
    /* The node's NVLink: bus bandwidth and latency per hop. */
    double bus_intra = INFINITY, hop_intra = 0;
    if (g > 1) {
        const opsched_comm_segment *last = &intra->seg[intra->n_segments - 1];
        bus_intra = isfinite(last->bw_gbs) ? last->bw_gbs * opsched_collective_busbw_factor(c, g)
                                           : INFINITY;
        hop_intra = intra->seg[0].alpha_us / ring_hops(c, g);
    }
    double bus = net->net_gbs < bus_intra ? net->net_gbs : bus_intra;
    double hops = ring_hops(c, n), inter = c == OPSCHED_ALLREDUCE ? 2.0 * m : (double)m;
    double ring = (hops - inter) * hop_intra + inter * net->net_us +
                  bytes * opsched_collective_busbw_factor(c, n) / (bus * 1e3);
    if (c != OPSCHED_ALLREDUCE) return ring;
    double depth = ceil(log2((double)m));
    double tree_bw = net->net_gbs / 2 < bus_intra ? net->net_gbs / 2 : bus_intra;
    double tree = 2.0 * (g - 1) * hop_intra + 2.0 * depth * net->net_us + bytes / (tree_bw * 1e3);
    if (tree < ring) {
        if (algo) *algo = OPSCHED_COMM_TREE;
        return tree;
    }
    return ring;
}
