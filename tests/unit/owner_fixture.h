/* owner_fixture.h - a real owner (hot/0) in the test's own process, for the
 * owner's unit suites (check_owner_call, check_owner_exec, check_owner_scan,
 * check_owner_cluster; the edges they talk to are fake_edge.h's): its config
 * from a text the suite writes (loaded and validated; a bad text fails the
 * test), opened on its dir, its loop run by the test in bounded passes.  The
 * owner and its worker context stay the suite's (it reads own.base,
 * own.links ...); this header only starts and stops them.  Header-only:
 * each suite includes it once. */
#ifndef HKV_TEST_OWNER_FIXTURE_H
#define HKV_TEST_OWNER_FIXTURE_H

#include <check.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "config/cfg.h"
#include "server/owner/owner_int.h"
#include "tests/harness.h"

/* Owner hot/0 of the config `text` (`name` in error messages), with
 * ctx->cmap = with (NULL: none), initialised and opened. */
static inline void of_start(struct owner *own, struct worker_ctx *ctx, const char *text,
                            const char *name, struct cmap *with)
{
    struct cfg *c = cfg_create();
    struct cfg_error err = {{0}};
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(cfg_load_text(c, text, strlen(text), name, &err) == HKV_OK, "%s", err.msg);
    ck_assert_msg(cfg_validate(c, &err) == HKV_OK, "%s", err.msg);
    *ctx = (struct worker_ctx){.index = 0, .cfg = c, .cmap = with};
    struct owner_ctx octx = {.pool = CFG_POOL_HOT, .link_fd = -1, .tcp_fd = -1};
    ck_assert_int_eq(owner_init(own, ctx, &octx), 0);
    ck_assert_int_eq(owner_open(own), 0);
}

/* Closes what of_start opened (the suite closes its fake edges first). */
static inline void of_stop(struct owner *own, struct worker_ctx *ctx)
{
    owner_deinit(own);
    cfg_destroy(&ctx->cfg);
}

/* Runs the owner's loop for ms without blocking, a pass a millisecond
 * (timers included: the map poll, the persist interval). */
static inline void of_run_ms(struct owner *own, int ms)
{
    int64_t end = h_now_ms() + ms;
    for (int i = 0; i < 100000 && h_now_ms() < end; i++) {
        event_base_loop(own->base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
}

#endif
