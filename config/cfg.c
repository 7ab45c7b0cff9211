/*
 * cfg.c - a config's life: create it from the table's defaults, copy it,
 * free it, and check it as a whole.
 *
 * cfg_create knows no default values of its own: it feeds each row's default
 * text through the same splitter and option parser a file goes through.  Copy
 * and free are driven by the table too (cfg_opt_copy/release per row), so a
 * new directive needs no change here.  cfg_validate holds only the checks that
 * relate several directives; everything about one value is checked when it is
 * parsed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_internal.h"

void cfg_destroy(struct cfg **cp)
{
    if (cp == NULL || *cp == NULL)
        return;
    if (--(*cp)->refs > 0) {
        *cp = NULL;
        return;
    }
    for (size_t i = 0; i < cfg_noptions; i++)
        cfg_opt_release(*cp, &cfg_options[i]);
    for (size_t i = 0; (*cp)->origins != NULL && i < cfg_noptions; i++)
        free((*cp)->origins[i]);
    free((*cp)->origins);
    free(*cp);
    *cp = NULL;
}

const char *cfg_origin(const struct cfg *c, const struct cfg_option *o)
{
    return c->origins != NULL ? c->origins[o - cfg_options] : NULL;
}

hkv_status cfg_origin_set(struct cfg *c, const struct cfg_option *o, const char *where)
{
    if (c->origins == NULL && where == NULL)
        return HKV_OK;
    if (c->origins == NULL && (c->origins = calloc(cfg_noptions, sizeof(char *))) == NULL)
        return HKV_ENOMEM;
    char *w = NULL;
    if (where != NULL && (w = strdup(where)) == NULL)
        return HKV_ENOMEM;
    free(c->origins[o - cfg_options]);
    c->origins[o - cfg_options] = w;
    return HKV_OK;
}

hkv_status cfg_origin_copy(struct cfg *dst, const struct cfg *src, const struct cfg_option *o)
{
    return dst == src ? HKV_OK : cfg_origin_set(dst, o, cfg_origin(src, o));
}

struct cfg *cfg_ref(struct cfg *c)
{
    c->refs++;
    return c;
}

struct cfg *cfg_create(void)
{
    struct cfg *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->refs = 1;
    for (size_t i = 0; i < cfg_noptions; i++) {
        const struct cfg_option *o = &cfg_options[i];
        char why[CFG_WHY], **argv = NULL;
        int argc = 0;
        if (o->def[0] == '\0')
            continue;   /* a multi directive that starts with no entries (user) */
        hkv_status st = cfg_split(o->def, strlen(o->def), &argc, &argv, why);
        if (st == HKV_OK)
            st = cfg_opt_apply(c, o, argc, argv, why);
        cfg_words_free(argc, argv);
        if (st != HKV_OK) {
            cfg_destroy(&c);
            return NULL;
        }
    }
    return c;
}

struct cfg *cfg_dup(const struct cfg *src)
{
    struct cfg *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->refs = 1;
    for (size_t i = 0; i < cfg_noptions; i++) {
        if (cfg_opt_copy(c, src, &cfg_options[i]) != HKV_OK ||
            cfg_origin_copy(c, src, &cfg_options[i]) != HKV_OK) {
            cfg_destroy(&c);
            return NULL;
        }
    }
    return c;
}

static hkv_status invalid(struct cfg_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static hkv_status invalid(struct cfg_error *err, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return HKV_EINVAL;
}

static hkv_status validate_classes(const struct cfg *c, struct cfg_error *err)
{
    if (c->nclasses == 0 || strcmp(c->classes[c->nclasses - 1].name, "default") != 0)
        return invalid(err, "the class 'default' is missing or not last");
    for (size_t i = 0; i < c->nclasses; i++) {
        const struct cfg_class *k = &c->classes[i];
        int dflt = i == c->nclasses - 1;
        char f[32], kp[32];
        if (!dflt && strcmp(k->name, "default") == 0)
            return invalid(err, "class 'default' appears twice");
        if (dflt && k->npatterns > 0)
            return invalid(err, "class 'default' cannot have patterns");
        if (!dflt && k->npatterns == 0)
            return invalid(err, "class '%s' has no pattern: no key could ever use it", k->name);
        if (k->keep_ms < k->fresh_ms) {
            cfg_render_duration(k->fresh_ms, f, sizeof(f));
            cfg_render_duration(k->keep_ms, kp, sizeof(kp));
            return invalid(err, "class '%s': keep (%s) must be at least fresh (%s)", k->name, kp,
                           f);
        }
        if (k->pool == CFG_POOL_HOT && c->hot_owners == 0 && c->cluster[0] == '\0')
            return invalid(err, "class '%s' uses the hot pool but hot-owners is 0", k->name);
        if (k->pool == CFG_POOL_COLD && c->cold_owners == 0 && c->cluster[0] == '\0')
            return invalid(err, "class '%s' uses the cold pool but cold-owners is 0", k->name);
    }
    return HKV_OK;
}

/* Every single-key command a client may legally send must fit in one frame
 * on the owner link: an owner closes a link on a frame over wire-max-frame.
 * Such a command carries a key and a value, each up to proto-max-bulk-len,
 * and the whole command fits in client-query-buffer-limit; CFG_FRAME_FIELDS
 * is room for the frame's other fields (about 60 bytes today).  A multi-key
 * command (DEL, MGET ...) is bounded only by the query buffer: one too large
 * for a frame is refused by the edge, unsent (server/edge/edge_link.h). */
#define CFG_FRAME_FIELDS CFG_KB
static hkv_status validate_frame(const struct cfg *c, struct cfg_error *err)
{
    int64_t two = 2 * c->proto_max_bulk_len; /* at most 8gb: no overflow */
    int64_t need = (two < c->client_query_buffer_limit ? two : c->client_query_buffer_limit) +
                   CFG_FRAME_FIELDS;
    if (c->wire_max_frame >= need)
        return HKV_OK;
    /* The line to fix: the limit that was set rather than defaulted. */
    const char *names[] = {"proto-max-bulk-len", "client-query-buffer-limit", "wire-max-frame"};
    const char *where = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && where == NULL; i++)
        where = cfg_origin(c, cfg_option_find(names[i]));
    char bulk[32], qb[32], frame[32], want[32];
    cfg_render_size(c->proto_max_bulk_len, bulk, sizeof(bulk));
    cfg_render_size(c->client_query_buffer_limit, qb, sizeof(qb));
    cfg_render_size(c->wire_max_frame, frame, sizeof(frame));
    cfg_render_size(need, want, sizeof(want));
    return invalid(err,
                   "%s%sa command's key and value (each up to proto-max-bulk-len %s, together "
                   "at most client-query-buffer-limit %s) must fit in one owner-link frame: "
                   "wire-max-frame is %s and needs at least %s (lower proto-max-bulk-len or "
                   "raise wire-max-frame, which takes a restart)",
                   where != NULL ? where : "", where != NULL ? ": " : "", bulk, qb, frame, want);
}

/* The HTTP ports: distinct from each other and from the RESP ports; HTTPS
 * takes tls-port's certificate (and its client checks). */
static hkv_status validate_http(const struct cfg *c, struct cfg_error *err)
{
    const int ports[] = {c->port, c->tls_port, c->http_port, c->https_port, c->writer_port};
    const char *names[] = {"port", "tls-port", "http-port", "https-port", "writer-port"};
    for (int i = 2; i < 5; i++)
        for (int j = 0; j < i; j++)
            if (ports[i] != 0 && ports[i] == ports[j])
                return invalid(err, "%s and %s must differ (both %d)", names[i], names[j],
                               ports[i]);
    if (c->writer_port != 0 && c->writer_edges >= c->edge_workers)
        return invalid(err, "writer-edges %d leaves no edge for port: edge-workers must be more "
                       "(it is %d)", c->writer_edges, c->edge_workers);
    if (c->https_port != 0) {
        if (c->tls_cert_file[0] == '\0' || c->tls_key_file[0] == '\0')
            return invalid(err, "https-port needs tls-cert-file and tls-key-file");
        if (c->tls_auth_clients != CFG_TLS_AUTH_NO && c->tls_ca_cert_file[0] == '\0')
            return invalid(err, "tls-auth-clients %s needs tls-ca-cert-file",
                           cfg_tls_auth_name(c->tls_auth_clients));
    }
    return HKV_OK;
}

int cfg_local_map(const struct cfg *c)
{
    return c->leaf_moves &&
           (c->cluster[0] == '\0' || strcmp(c->cluster, CFG_LOCAL_CLUSTER) == 0);
}

hkv_status cfg_local_cluster(struct cfg *c)
{
    if (!cfg_local_map(c) || c->cluster[0] != '\0')
        return HKV_OK;
    char *cl = strdup(CFG_LOCAL_CLUSTER);
    char *host = c->host[0] != '\0' ? NULL : strdup(c->colo);
    if (cl == NULL || (c->host[0] == '\0' && host == NULL)) {
        free(cl);
        free(host);
        return HKV_ENOMEM;
    }
    free(c->cluster);
    c->cluster = cl;
    if (host != NULL) {
        free(c->host);
        c->host = host;
    }
    return HKV_OK;
}

#define CFG_ZONE_MAX 64

hkv_status cfg_validate(const struct cfg *c, struct cfg_error *err)
{
    char a[32], b[32];
    if (c->leaf_moves && !cfg_local_map(c))
        return invalid(err, "leaf-moves is for a single host (no cluster): a cluster's leaves "
                            "always move, its map is in etcd");
    if (cfg_local_map(c) && c->hot_owners + c->cold_owners < 1)
        return invalid(err, "hot-owners + cold-owners must be at least 1");
    if (cfg_local_map(c) && c->owner_port != 0)
        return invalid(err, "owner-port is for a cluster: with leaf-moves, every owner is on "
                            "this host");
    if (c->replicas > 0 && c->cluster[0] == '\0' && !c->leaf_moves)
        return invalid(err, "replicas needs a cluster or leaf-moves yes (followers are other "
                            "owners, placed and promoted through the leaf map)");
    if (strlen(c->zone) > CFG_ZONE_MAX || strpbrk(c->zone, " \t\"\\") != NULL)
        return invalid(err, "zone: at most 64 bytes, no blank, quote or backslash");
    if (c->nbind < 1)
        return invalid(err, "at least one bind address is needed");
    if (c->edge_workers < 1)
        return invalid(err, "edge-workers must be at least 1");
    if (c->hot_owners + c->cold_owners < 1 && c->cluster[0] == '\0')
        return invalid(err, "hot-owners + cold-owners must be at least 1 (0 only in a cluster)");
    if (c->cluster[0] != '\0') {
        if (c->host[0] == '\0')
            return invalid(err, "cluster needs host (this host's name in it)");
        if (c->owner_port != 0 && c->advertise_addr[0] == '\0')
            return invalid(err, "owner-port needs advertise-addr");
        if (c->owner_port != 0 && (c->cluster_tls_cert_file[0] == '\0' ||
                                   c->cluster_tls_key_file[0] == '\0' ||
                                   c->cluster_tls_ca_file[0] == '\0'))
            return invalid(err, "owner-port needs cluster-tls-cert-file, cluster-tls-key-file "
                                "and cluster-tls-ca-file (links between hosts are mutual TLS)");
        if (c->owner_port != 0 && c->owner_port + c->hot_owners + c->cold_owners > 65536)
            return invalid(err, "owner-port + owners does not fit in a port number");
    }
    if (c->write_deadline_ms < c->write_timeout_ms) {
        cfg_render_duration(c->write_deadline_ms, a, sizeof(a));
        cfg_render_duration(c->write_timeout_ms, b, sizeof(b));
        return invalid(err, "write-deadline (%s) must be at least write-timeout (%s)", a, b);
    }
    if (c->tls_port != 0) {
        if (c->tls_port == c->port)
            return invalid(err, "tls-port and port must differ (both %d)", c->port);
        if (c->tls_cert_file[0] == '\0' || c->tls_key_file[0] == '\0')
            return invalid(err, "tls-port needs tls-cert-file and tls-key-file");
        if (c->tls_auth_clients != CFG_TLS_AUTH_NO && c->tls_ca_cert_file[0] == '\0')
            return invalid(err, "tls-auth-clients %s needs tls-ca-cert-file",
                           cfg_tls_auth_name(c->tls_auth_clients));
    }
    if (validate_http(c, err) != HKV_OK)
        return HKV_EINVAL;
    if (validate_frame(c, err) != HKV_OK)
        return HKV_EINVAL;
    return validate_classes(c, err);
}
