/*
 * layer_energy.c - energy of each layer of a profiled network, measured
 * one configuration at a time.
 *
 * A layer alone lasts microseconds and the device's energy counter moves
 * every ~100 ms, so each distinct configuration (by signature: operator,
 * attributes, shapes, dtype) is measured by the operator harness in its own
 * window of >= 1 s of back-to-back launches, with the math mode, layout
 * and algorithm the executor used for it; layers that share a signature
 * share the result.  Their sum against the network's energy per inference
 * is the energy attribution.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "profile/profile_impl.h"

#define SIG_BYTES 512

/* The harness's options for layer i: the executor's settings, a short
 * timing (the window is what matters), energy on. */
static void layer_options(const os_profiler *p, int i, int energy, opsched_measure_options *m)
{
    const opsched_node *n = opsched_graph_node(p->g, i);
    const opsched_layer_profile *l = &p->r->layers[i];
    opsched_measure_options_default(m);
    m->plan = p->o.exec.plan;
    /* a fused conv+bias+ReLU is one layer in the network: measure it so */
    m->plan.fuse_activation = p->o.exec.plan.fuse_activation;
    const char *algo = m->plan.algo;
    int named = algo && strcmp(algo, "heuristic") != 0 && strcmp(algo, "find") != 0;
    /* As the executor does: a named algorithm is for convolutions, and a
     * layer that fell back ran with the library's choice. */
    if ((named && n->op != OPSCHED_OP_CONV) || l->fallback) m->plan.algo = NULL;
    m->warmup_ms = OS_MIN(p->o.warmup_ms, 100.0);
    m->iters = energy ? 10 : 30;
    m->min_ms = 0;
    m->energy = energy;
    m->energy_window_ms = p->o.energy_window_ms;
    m->idle_ms = p->o.idle_ms;
    m->seed = p->o.exec.seed;
}

opsched_status os_profile_layers_alone(os_profiler *p, int energy)
{
    opsched_status st = OPSCHED_OK;
    opsched_profile_result *r = p->r;
    int nl = r->n_layers;
    opsched_device_info info;
    OS_TRY(opsched_device_info_get(p->dev, &info));
    if (!info.has_power && !info.has_energy) energy = 0; /* nothing to read: NaN */
    char *sigs = calloc((size_t)(nl > 0 ? nl : 1), SIG_BYTES);
    unsigned char *done_flags = calloc((size_t)(nl > 0 ? nl : 1), 1);
    if (!sigs || !done_flags) {
        st = OS_NOMEM(p->ctx);
        goto done;
    }
    for (int i = 0; i < nl; i++)
        if (r->layers[i].timed)
            OS_TRY_GOTO(
                st, opsched_node_signature(p->g, i, sigs + (size_t)i * SIG_BYTES, SIG_BYTES), done);
    for (int i = 0; i < nl; i++) {
        if (!r->layers[i].timed || done_flags[i]) continue;
        opsched_measure_options mo;
        opsched_measurement m;
        layer_options(p, i, energy, &mo);
        opsched_status ms = opsched_measure_node(p->dev, p->g, i, &mo, &m);
        if (ms != OPSCHED_OK && m.status == OPSCHED_OK) {
            st = ms;
            goto done;
        }
        if (ms != OPSCHED_OK) opsched_ctx_clear_error(p->ctx); /* recorded: no energy */
        const char *sig = sigs + (size_t)i * SIG_BYTES;
        for (int j = i; j < nl; j++) {
            if (!r->layers[j].timed || strcmp(sigs + (size_t)j * SIG_BYTES, sig) != 0) continue;
            done_flags[j] = 1;
            if (m.status != OPSCHED_OK) continue;
            r->layers[j].isolated = m;
            r->layers[j].isolated_ms = m.stats.median;
            if (!energy) continue;
            r->layers[j].energy = m.energy;
            r->layers[j].energy_j = m.energy.valid ? m.energy.energy_j : NAN;
        }
    }
    double sum = 0, ms = 0;
    for (int i = 0; i < nl; i++) {
        if (!r->layers[i].timed) {
            r->layers[i].energy_j = 0;
            r->layers[i].isolated_ms = 0;
            continue;
        }
        sum += r->layers[i].energy_j; /* NaN when any layer has none */
        ms += r->layers[i].isolated_ms;
    }
    if (energy) r->layer_energy_sum_j = sum;
    r->layer_isolated_sum_ms = ms;
done:
    free(sigs);
    free(done_flags);
    return st;
}
