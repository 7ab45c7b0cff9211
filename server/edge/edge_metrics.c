/*
 * edge_metrics.c - the /metrics exposition; see edge_metrics.h.
 *
 * The edge counters are summed per colo over every edge slot of the board,
 * so a family has one sample per colo of the host (a bounded label) and
 * summing over `colo` gives the host, as INFO does.
 */
#include "server/edge/edge_metrics.h"

#include <stdio.h>
#include <string.h>

#include "server/core/counters_prom.h"
#include "server/core/topo.h"
#include "server/edge/edge_int.h"

/* Colos one host may run; more are summed into the last row (the config
 * caps colos far below this). */
#define MET_COLOS_MAX 64

static hkv_status render_edge_counters(struct edge *e, struct hkv_buf *out)
{
    struct board *bd = e->ctx->board;
    int ncolo = e->ctx->cfg->colos > 0 ? e->ctx->cfg->colos : 1;
    if (ncolo > MET_COLOS_MAX)
        ncolo = MET_COLOS_MAX;
    int64_t vals[MET_COLOS_MAX][CTR_EDGE_COUNT];
    memset(vals, 0, sizeof(vals));
    for (uint32_t i = 0; i < bd->nslots; i++) {
        struct board_slot *s = &bd->slots[i];
        if (atomic_load_explicit(&s->role, memory_order_relaxed) != BOARD_EDGE)
            continue;
        uint32_t c = atomic_load_explicit(&s->colo, memory_order_relaxed);
        int k = c == 0 ? 0 : (int)c - 1;
        if (k >= ncolo)
            k = ncolo - 1;
        int j = 0;
#define X(name, kind, help) vals[k][j++] += (int64_t)board_load(&s->name);
        CTR_EDGE(X)
#undef X
    }
    char names[MET_COLOS_MAX][TOPO_COLO_NAME_MAX];
    struct prom_label labels[MET_COLOS_MAX];
    struct ctr_prom_row rows[MET_COLOS_MAX];
    for (int k = 0; k < ncolo; k++) {
        topo_colo_name(e->ctx->cfg, k, names[k], sizeof(names[k]));
        labels[k] = (struct prom_label){"colo", names[k]};
        rows[k] = (struct ctr_prom_row){&labels[k], 1, vals[k]};
    }
    return ctr_prom_render(out, ctr_edge_defs, CTR_EDGE_COUNT, rows, (size_t)ncolo);
}

int edge_metrics_render(struct edge *e, struct hkv_buf *out)
{
    return render_edge_counters(e, out);
}
