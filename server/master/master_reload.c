/*
 * master_reload.c - config generations.  The master is the only process that
 * reads the config file: it builds a whole new config (the file, then the
 * command-line directives, replayed in order), validates it, and only then
 * makes it the live one, numbered by a generation and sent to every child
 * over its control channel (nginx: a reload builds a new cycle and keeps the
 * old one when that fails).  A bad file on SIGHUP changes nothing and is
 * counted in config_reload_failures; CONFIG SET from an edge takes the same
 * path from the live config.  Restart-only directives keep their running
 * values (cfg_reload_merge) and a change to one is logged.
 *
 * It also says READY to systemd once every child serves, again after each
 * reload (RELOADING=1 must be followed by READY=1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "server/core/clock.h"
#include "server/core/ctl.h"
#include "server/core/log.h"
#include "server/core/notify.h"
#include "server/master/master_int.h"

struct cfg *master_load_config(const struct master_opts *o, struct cfg_error *err)
{
    struct cfg *c = cfg_create();
    if (c == NULL) {
        snprintf(err->msg, sizeof(err->msg), "out of memory");
        return NULL;
    }
    if (o->config_path != NULL && cfg_load_file(c, o->config_path, err) != HKV_OK)
        goto fail;
    for (int i = 0; i < o->noverrides; i++)
        if (cfg_apply(c, o->override_argc[i], o->override_argv[i], "command line", err) != HKV_OK)
            goto fail;
    if (cfg_validate(c, err) != HKV_OK)
        goto fail;
    if (cfg_local_cluster(c) != HKV_OK) { /* leaf-moves: a cluster of one */
        snprintf(err->msg, sizeof(err->msg), "out of memory");
        goto fail;
    }
    return c;
fail:
    cfg_destroy(&c);
    return NULL;
}

void master_announce(struct master *m)
{
    int ready = 0;
    for (int i = 0; i < m->nchildren; i++)
        ready += m->children[i].ready;
    if (ready < m->nchildren || m->stopping)
        return;
    char addr[256] = "";
    if (m->cfg->nbind > 0)
        snprintf(addr, sizeof(addr), "%s:%d", m->cfg->bind[0], m->cfg->port);
    if (m->cfg->nbind > 0 && m->ntls > 0)
        snprintf(addr + strlen(addr), sizeof(addr) - strlen(addr), " and TLS port %d",
                 m->cfg->tls_port);
    if (!m->announced_ready) {
        m->announced_ready = 1;
        log_notice("ready: %d edges and %d owners serving on %s (config generation %llu)",
                   m->cfg->colos * m->cfg->edge_workers, m->cfg->hot_owners + m->cfg->cold_owners, addr,
                   (unsigned long long)m->generation);
    }
    notify_sendf("READY=1\nSTATUS=serving on %s: %d edges, %d owners, config generation %llu",
                 addr, m->cfg->colos * m->cfg->edge_workers, m->cfg->hot_owners + m->cfg->cold_owners,
                 (unsigned long long)m->generation);
}

static void send_config(struct master *m, struct child *c)
{
    if (!master_reload_sends(c->ctl != NULL))
        return;
    size_t len;
    char *text = cfg_serialize(m->cfg, &len);
    if (text == NULL)
        return;
    char *msg = malloc(len + 8);
    if (msg != NULL) {
        ctl_put_u64((unsigned char *)msg, m->generation);
        memcpy(msg + 8, text, len);
        ctl_put(bufferevent_get_output(c->ctl), CTL_CONFIG, msg, len + 8);
        free(msg);
    }
    free(text);
}

/* Makes `next` the live config (taking it), bumps the generation and sends
 * it to every child. */
static void install(struct master *m, struct cfg *next)
{
    cfg_destroy(&m->cfg);
    m->cfg = next;
    m->generation++;
    atomic_store_explicit(&m->board->config_generation, m->generation, memory_order_relaxed);
    log_setup(m->cfg->loglevel, m->cfg->logfile);
    for (int i = 0; i < m->nchildren; i++)
        send_config(m, &m->children[i]);
}

static void log_restart_only(const char *name, int flags, void *arg)
{
    if (!(flags & CFG_F_RELOADABLE))
        log_warning("reload: '%s' changed but takes effect only after a restart", name);
    else
        log_notice("reload: '%s' changed", name);
}

void master_reload(struct master *m)
{
    notify_sendf("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
                 (unsigned long long)clock_mono_us());
    log_reopen();
    struct cfg_error err;
    struct cfg *next = master_load_config(m->opts, &err);
    if (next == NULL) {
        atomic_fetch_add_explicit(&m->board->config_reload_failures, 1, memory_order_relaxed);
        log_warning("reload refused, keeping config generation %llu: %s",
                    (unsigned long long)m->generation, err.msg);
        master_announce(m);
        return;
    }
    struct cfg *merged = cfg_reload_merge(m->cfg, next);
    if (merged == NULL) {
        atomic_fetch_add_explicit(&m->board->config_reload_failures, 1, memory_order_relaxed);
        log_warning("reload refused: out of memory");
        cfg_destroy(&next);
        master_announce(m);
        return;
    }
    /* What would run keeps the running restart-only values, which the file
     * may have counted on changing (wire-max-frame against proto-max-bulk-len):
     * check the merge too, or the children would refuse it. */
    if (cfg_validate(merged, &err) != HKV_OK) {
        atomic_fetch_add_explicit(&m->board->config_reload_failures, 1, memory_order_relaxed);
        log_warning("reload refused, keeping config generation %llu: %s (restart-only "
                    "directives keep their running values until a restart)",
                    (unsigned long long)m->generation, err.msg);
        cfg_destroy(&next);
        cfg_destroy(&merged);
        master_announce(m);
        return;
    }
    int changed = cfg_diff(m->cfg, next, log_restart_only, NULL);
    cfg_destroy(&next);
    install(m, merged);
    log_notice("reload: config generation %llu applied (%d directives changed)",
               (unsigned long long)m->generation, changed);
    master_announce(m);
}

/* The same validation as a file, applied to the live config and broadcast
 * like a reload.  A later reload from the file replaces it (there is no
 * CONFIG REWRITE). */
void master_config_set(struct master *m, const char *p, size_t len)
{
    struct cfg *next = cfg_dup(m->cfg);
    struct cfg_error err = {"out of memory"};
    int ok = next != NULL;
    size_t i = 0;
    while (ok && i < len) {
        const char *name = p + i;
        size_t nl = strnlen(name, len - i);
        if (i + nl + 1 >= len) {
            snprintf(err.msg, sizeof(err.msg), "malformed request");
            ok = 0;
            break;
        }
        const char *val = name + nl + 1;
        size_t vl = strnlen(val, len - i - nl - 1);
        ok = cfg_set(next, name, val, &err) == HKV_OK;
        i += nl + 1 + vl + 1;
    }
    if (ok)
        ok = cfg_validate(next, &err) == HKV_OK;
    if (!ok) {
        log_warning("CONFIG SET refused: %s", err.msg);
        cfg_destroy(&next);
        return;
    }
    install(m, next);
    log_notice("CONFIG SET: config generation %llu applied", (unsigned long long)m->generation);
}
