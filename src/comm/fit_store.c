/*
 * fit_store.c - the alpha-beta fit of one collective, dtype and rank count
 * from the measured collectives of a store.
 */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "opsched/comm.h"
#include "opsched/store.h"

#define MAX_POINTS 256

typedef struct gather {
    opsched_collective c;
    opsched_dtype dtype;
    int ranks, nodes;
    int n;
    double bytes[MAX_POINTS], us[MAX_POINTS];
    char held[512];  /* what the store holds instead, for the message */
    char device[80]; /* the device of the points, to refuse mixing two */
    int devices;
} gather;

static opsched_status take(const opsched_collective_row *row, void *user)
{
    gather *g = user;
    if (row->r.wrong || !(row->r.stats.median > 0) || row->nodes != g->nodes) return OPSCHED_OK;
    if (row->r.collective == g->c && row->r.dtype == g->dtype && row->r.ranks == g->ranks) {
        if (!g->devices || strcmp(g->device, row->device_uuid) != 0) {
            g->devices++;
            snprintf(g->device, sizeof(g->device), "%s", row->device_uuid);
        }
        if (g->n < MAX_POINTS && (g->n == 0 || row->r.bytes > g->bytes[g->n - 1])) {
            g->bytes[g->n] = (double)row->r.bytes;
            g->us[g->n] = row->r.stats.median * 1e3;
            g->n++;
        }
        return OPSCHED_OK;
    }
    char one[96];
    snprintf(one, sizeof(one), "%s %s over %d", opsched_collective_name(row->r.collective),
             opsched_dtype_name(row->r.dtype), row->r.ranks);
    if (!strstr(g->held, one)) {
        size_t used = strlen(g->held);
        if (used + strlen(one) + 3 < sizeof(g->held))
            snprintf(g->held + used, sizeof(g->held) - used, "%s%s", used ? ", " : "", one);
    }
    return OPSCHED_OK;
}

opsched_status opsched_comm_fit_from_store(opsched_ctx *ctx, opsched_store *s, const char *device,
                                           opsched_collective c, opsched_dtype dtype, int ranks,
                                           opsched_comm_fit *out)
{
    return opsched_comm_fit_from_store_nodes(ctx, s, device, c, dtype, ranks, 1, out);
}

opsched_status opsched_comm_fit_from_store_nodes(opsched_ctx *ctx, opsched_store *s,
                                                 const char *device, opsched_collective c,
                                                 opsched_dtype dtype, int ranks, int nodes,
                                                 opsched_comm_fit *out)
{
    gather g;
    memset(&g, 0, sizeof(g));
    g.c = c;
    g.dtype = dtype;
    g.ranks = ranks;
    g.nodes = nodes;
    OS_TRY(opsched_store_collectives(s, device, take, &g));
    if (g.devices > 1)
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG,
                       "the database holds %s %s over %d ranks of %d devices; name one",
                       opsched_collective_name(c), opsched_dtype_name(dtype), ranks, g.devices);
    if (g.n < 3)
        return OS_FAIL(ctx, OPSCHED_ERR_NOT_FOUND,
                       "the database has %d sizes of %s %s over %d ranks on %d node%s (3 at "
                       "least); it holds %s (opsched commbench --gpus %d --ops %s --dtype %s "
                       "measures them)",
                       g.n, opsched_collective_name(c), opsched_dtype_name(dtype), ranks, nodes,
                       nodes == 1 ? "" : "s",
                       g.held[0] ? g.held : "no collectives", ranks, opsched_collective_name(c),
                       opsched_dtype_name(dtype));
    return opsched_comm_fit_points(ctx, g.bytes, g.us, g.n, 3, out);
}
