/* storm_report.c - what storm measured, as INFO deltas and summary lines; see storm_int.h. */
#include "scripts/bench/storm_int.h"

/* ---- INFO --------------------------------------------------------------------- */

/* Reads owner_reads from INFO on a fresh connection within timeout_ms.
 * 1 with *out set, 0 if INFO has no such field, -1 on error/timeout. */
int info_owner_reads(struct storm *s, int timeout_ms, int64_t *out)
{
    int fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc = -1;
    struct hkv_buf b = HKV_BUF_INIT;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&s->addr, s->addrlen) != 0)
        goto out;
    resp_add_array(&b, 1);
    resp_add_bulk(&b, "INFO", 4);
    if (write(fd, buf_head(&b), buf_unread(&b)) != (ssize_t)buf_unread(&b))
        goto out;
    buf_reset(&b);
    int64_t end = now_ns() + (int64_t)timeout_ms * 1000000LL;
    for (;;) {
        if (buf_reserve(&b, 16384, 1 << 24) != HKV_OK || now_ns() > end)
            goto out;
        ssize_t n = read(fd, buf_tail(&b), buf_room(&b));
        if (n <= 0)
            goto out;
        b.len += (size_t)n;
        size_t used;
        struct resp_value *v = NULL;
        int prc = resp_parse_reply(buf_head(&b), buf_unread(&b), &used, &v);
        if (prc == HKV_EAGAIN)
            continue;
        if (prc != HKV_OK)
            goto out;
        rc = 0;
        if (v->type == RESP_BULK || v->type == RESP_VERBATIM) {
            static const char field[] = "owner_reads:";
            const char *p = v->str, *e = v->str + v->len;
            while (p < e) {
                const char *nl = memchr(p, '\n', (size_t)(e - p));
                const char *le = nl ? nl : e;
                if ((size_t)(le - p) > sizeof(field) - 1 && memcmp(p, field, sizeof(field) - 1) == 0) {
                    *out = strtoll(p + sizeof(field) - 1, NULL, 10);
                    rc = 1;
                    break;
                }
                p = nl ? nl + 1 : e;
            }
        }
        resp_value_free(&v);
        break;
    }
out:
    buf_deinit(&b);
    close(fd);
    return rc;
}

/* ---- results ------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct_us(const int64_t *v, size_t n, double p)
{
    if (n == 0)
        return NAN;
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return (double)v[rank - 1] / 1000.0;
}

void write_latency_log(struct storm *s)
{
    FILE *f = fopen(s->o.latency_log, "w");
    if (f == NULL) {
        fprintf(stderr, "storm: cannot write %s: %s\n", s->o.latency_log, strerror(errno));
        return;
    }
    fprintf(f, "# t_s latency_us status   (writes of the hot key; status ok|late|error|lost|none)\n");
    for (size_t i = 0; i < s->w_n; i++) {
        const struct wrec *r = &s->w[i];
        const char *st = r->lat == -2 ? "lost" : r->lat < 0 ? "none" : r->err ? "error" :
                         r->late ? "late" : "ok";
        fprintf(f, "%.6f %.1f %s\n", (double)r->sent / 1e9, r->lat >= 0 ? (double)r->lat / 1000.0 : -1.0,
                st);
    }
    fclose(f);
}

static void fmt_num(char *b, size_t n, double v, const char *fmt)
{
    if (isnan(v))
        snprintf(b, n, "n/a");
    else
        snprintf(b, n, fmt, v);
}

int report_load(struct storm *s, double secs)
{
    double rate = secs > 0 ? (double)s->load_done / secs : 0;
    printf("load: %ld keys of %d bytes set in %.2f s = %.0f sets/s (errors %llu, conn_errors %llu)\n",
           s->load_done, s->o.value_size, secs, rate, (unsigned long long)s->load_err,
           (unsigned long long)s->r_conn_err);
    printf("STORM mode=load keys=%ld set=%ld value_size=%d secs=%.3f sets_per_s=%.0f errors=%llu "
           "conn_errors=%llu\n", s->o.load, s->load_done, s->o.value_size, secs, rate,
           (unsigned long long)s->load_err, (unsigned long long)s->r_conn_err);
    return s->load_done == s->o.load && s->load_err == 0 ? 0 : 1;
}

void report(struct storm *s, double secs, int info_rc0, int64_t reads0, int info_rc1,
                   int64_t reads1)
{
    size_t answered = 0, errors = 0, late = 0, lost = 0, none = 0;
    int64_t *lat = malloc(sizeof(int64_t) * (s->w_n + 1));
    for (size_t i = 0; i < s->w_n; i++) {
        const struct wrec *r = &s->w[i];
        if (r->lat == -2) {
            lost++;
        } else if (r->lat < 0) {
            none++;
        } else if (r->err) {
            errors++;
        } else {
            lat[answered++] = r->lat;
            late += r->late;
        }
    }
    /* timeouts: answered after T, or never answered (lost ones are errors) */
    for (size_t i = 0; i < s->w_n; i++) {
        const struct wrec *r = &s->w[i];
        if (r->late || r->lat == -1)
            s->w_timeouts++;
    }
    qsort(lat, answered, sizeof(int64_t), cmp_i64);
    double p50 = pct_us(lat, answered, 50), p90 = pct_us(lat, answered, 90);
    double p99 = pct_us(lat, answered, 99);
    double p999 = pct_us(lat, answered, 99.9), mx = pct_us(lat, answered, 100);
    double rps = secs > 0 ? (double)s->r_ops / secs : 0;
    char orps[32] = "n/a", odelta[32] = "n/a";
    if (s->o.info_owner_reads && info_rc0 == 1 && info_rc1 == 1 && secs > 0) {
        snprintf(orps, sizeof(orps), "%.1f", (double)(reads1 - reads0) / secs);
        snprintf(odelta, sizeof(odelta), "%lld", (long long)(reads1 - reads0));
    }
    printf("config: readers %d x pipeline %d, keys %ld (zipf %.2f), key %s, value %d B, "
           "write every %d ms, timeout %d ms\n", s->o.readers, s->o.pipeline, s->o.keys, s->o.zipf,
           s->o.key, s->o.value_size, s->o.write_interval_ms, s->o.write_timeout_ms);
    printf("reader_throughput: %.0f ops/s (%llu replies in %.3f s)\n", rps,
           (unsigned long long)s->r_ops, secs);
    printf("reader_errors: %llu error replies, %llu nulls, %llu other, %llu connection errors\n",
           (unsigned long long)s->r_err, (unsigned long long)s->r_null,
           (unsigned long long)s->r_other, (unsigned long long)s->r_conn_err);
    printf("writer_count: %zu writes sent, %zu answered OK\n", s->w_n, answered);
    char a[32], b[32], c[32], d[32], a9[32];
    fmt_num(a, sizeof(a), p50, "%.0f");
    fmt_num(a9, sizeof(a9), p90, "%.0f");
    fmt_num(b, sizeof(b), p99, "%.0f");
    fmt_num(c, sizeof(c), p999, "%.0f");
    fmt_num(d, sizeof(d), mx, "%.0f");
    printf("writer_latency_us: p50 %s p90 %s p99 %s p99.9 %s max %s\n", a, a9, b, c, d);
    printf("writer_errors: %zu error replies, %zu lost with the connection (%llu drops)\n", errors,
           lost, (unsigned long long)s->w_conn_err);
    printf("writer_timeouts: %llu (no reply within %d ms: %zu answered late, %zu never)\n",
           (unsigned long long)s->w_timeouts, s->o.write_timeout_ms, late, none);
    if (s->o.info_owner_reads)
        printf("owner_reads: %s calls/s (delta %s over %.3f s%s)\n", orps, odelta, secs,
               info_rc0 == 0 || info_rc1 == 0 ? "; INFO has no owner_reads field" :
               info_rc0 < 0 || info_rc1 < 0 ? "; INFO failed" : "");
    printf("STORM readers=%d pipeline=%d keys=%ld zipf=%.2f duration_s=%.3f reader_ops=%llu "
           "reader_ops_per_s=%.0f reader_errors=%llu reader_nulls=%llu reader_conn_errors=%llu "
           "writes=%zu write_ok=%zu write_errors=%zu write_lost=%zu write_timeouts=%llu "
           "write_p50_us=%s write_p90_us=%s write_p99_us=%s write_p999_us=%s write_max_us=%s "
           "owner_reads_per_s=%s\n",
           s->o.readers, s->o.pipeline, s->o.keys, s->o.zipf, secs, (unsigned long long)s->r_ops,
           rps, (unsigned long long)s->r_err, (unsigned long long)s->r_null,
           (unsigned long long)s->r_conn_err, s->w_n, answered, errors, lost,
           (unsigned long long)s->w_timeouts, a, a9, b, c, d, orps);
    free(lat);
}

