/*
 * edge_throttle.c - CL.THROTTLE; see edge_throttle.h.
 */
#include "server/edge/edge_throttle.h"

#include <string.h>

#include "server/colo/ratelimit.h"
#include "server/edge/edge_arg.h"
#include "server/edge/edge_conn.h"
#include "server/edge/edge_int.h"
#include "server/edge/edge_rl.h"
#include "server/edge/edge_sess.h"

#define ERR_INT "ERR value is not an integer or out of range"

static int parse(const struct resp_slice *w, long long lo, long long hi, int64_t *out)
{
    long long v;
    if (edge_arg_ll(w, &v) != 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int edge_throttle(struct edge *e, const char *key, size_t klen, const struct resp_slice *burst,
                  const struct resp_slice *count, const struct resp_slice *period,
                  const struct resp_slice *quantity, struct gcra_result *res, int *failopen,
                  const char **err)
{
    struct gcra_limit l = {.quantity = 1};
    int64_t period_s = 0;
    if ((int64_t)klen > edge_config(e)->app_ratelimit_key_max) {
        *err = "ERR CL.THROTTLE key longer than app-ratelimit-key-max";
        return -1;
    }
    if (parse(burst, 0, GCRA_MAX_BURST, &l.max_burst) != 0) {
        *err = "ERR CL.THROTTLE max_burst must be an integer 0..1073741824";
        return -1;
    }
    if (parse(count, 1, GCRA_MAX_COUNT, &l.count) != 0) {
        *err = "ERR CL.THROTTLE count_per_period must be an integer 1..1073741824";
        return -1;
    }
    if (parse(period, 1, GCRA_MAX_PERIOD_S, &period_s) != 0) {
        *err = "ERR CL.THROTTLE period must be whole seconds 1..4194304";
        return -1;
    }
    if (quantity != NULL && parse(quantity, 0, GCRA_MAX_QUANTITY, &l.quantity) != 0) {
        *err = "ERR CL.THROTTLE quantity must be an integer 0..1073741824";
        return -1;
    }
    l.period_ns = period_s * 1000000000;
    *failopen = rl_throttle(e->rl->app, key, klen, &l, rl_now(), res) != 0;
    return 0;
}

void edge_cmd_throttle(struct conn *c, int argc, const struct resp_slice *argv)
{
    if (argc > 6) {
        resp_add_error(&c->out, "ERR wrong number of arguments for 'cl.throttle' command");
        return;
    }
    struct gcra_result r;
    int failopen = 0;
    const char *err = NULL;
    if (edge_throttle(c->e, argv[1].p, argv[1].len, &argv[2], &argv[3], &argv[4],
                      argc == 6 ? &argv[5] : NULL, &r, &failopen, &err) != 0) {
        resp_add_error(&c->out, err);
        return;
    }
    if (failopen && sess_of(c)->meta && sess_of(c)->proto == 3) {
        resp_add_attr(&c->out, 1);
        resp_add_bulk_str(&c->out, "failopen");
        resp_add_int(&c->out, 1);
    }
    resp_add_array(&c->out, 5);
    resp_add_int(&c->out, r.limited);
    resp_add_int(&c->out, r.limit);
    resp_add_int(&c->out, r.remaining);
    resp_add_int(&c->out, r.retry_after_s);
    resp_add_int(&c->out, r.reset_after_s);
}
