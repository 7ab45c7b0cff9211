/*
 * cfg_internal.h - what the files of config/ share and nobody else sees.
 *
 * The option table (cfg_options.c) describes every directive as data; the
 * other files work from the table only: cfg_value.c parses, renders, compares,
 * copies and frees one option's value by its type; cfg_parse.c turns text into
 * words and words into option values; cfg_class.c is the one special handler
 * with real structure (class); cfg.c and cfg_diff.c are the whole-config
 * operations.  Parse functions never build "FILE:LINE:" themselves: they write
 * a bare reason into a `why` buffer of CFG_WHY bytes and the caller, which
 * knows where the words came from, adds the location.
 */
#ifndef HKV_CFG_INTERNAL_H
#define HKV_CFG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"
#include "proto/buf.h"

#define CFG_WHY 400                  /* bytes of a reason buffer */
#define CFG_FILE_MAX (16u << 20)     /* a config file larger than this is refused */
#define CFG_INCLUDE_DEPTH 16         /* files open at once, the top one included */

#define CFG_KB 1024LL
#define CFG_MB (1024LL * CFG_KB)
#define CFG_GB (1024LL * CFG_MB)
#define CFG_SEC 1000LL
#define CFG_MIN (60 * CFG_SEC)
#define CFG_HOUR (60 * CFG_MIN)
#define CFG_MAX_REPLICAS 3         /* followers per leaf (cmap.h CMAP_MAX_ISR) */
#define CFG_DAY (24 * CFG_HOUR)

enum cfg_type {
    CFG_T_INT,       /* integer, min..max; an int or int64_t field */
    CFG_T_SIZE,      /* bytes with k kb m mb g gb, min..max; int64_t */
    CFG_T_DURATION,  /* milliseconds from ms s m h, min..max; int64_t */
    CFG_T_STRING,    /* char *, optionally checked */
    CFG_T_PATH,      /* char *, a filesystem path */
    CFG_T_ENUM,      /* int field holding the index into `enums` */
    CFG_T_BOOL,      /* int field, yes|no */
    CFG_T_RATIO,     /* a fraction "0.7" (at most 3 decimals), stored per mille in an int,
                      * min..max per mille */
    CFG_T_STRLIST,   /* char ** + size_t count; min..max words */
    CFG_T_DURLIST,   /* int64_t * + size_t count; min..max words */
    CFG_T_SPECIAL,   /* its own handler */
};

/* Each rendered value is written for one of two readers. */
enum cfg_render_mode {
    CFG_R_FILE,      /* whole "name args\n" lines that the parser reads back */
    CFG_R_GET,       /* the value alone, as CONFIG GET shows it */
};

/* Text output with a sticky status: callers write freely and check once. */
struct cfg_out {
    struct hkv_buf b;
    hkv_status st;
};
void cfg_out_puts(struct cfg_out *o, const char *s);
void cfg_out_putc(struct cfg_out *o, char ch);
void cfg_out_printf(struct cfg_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes one word so that the lexer reads it back unchanged: bare when it can,
 * else double-quoted with escapes. */
void cfg_out_word(struct cfg_out *o, const char *w);

struct cfg_option;

/* A directive whose value is not one field of a plain type.  apply gets the
 * arguments without the directive name and must leave c unchanged on error. */
struct cfg_special {
    hkv_status (*apply)(struct cfg *c, int argc, char **argv, char *why);
    void (*render)(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                   enum cfg_render_mode mode);
    int (*equal)(const struct cfg *a, const struct cfg *b);
    hkv_status (*copy)(struct cfg *dst, const struct cfg *src);
    void (*release)(struct cfg *c);
};

/* NULL if s is acceptable, else what it needs ("needs ..."). */
typedef const char *(*cfg_check_fn)(const char *s);

struct cfg_option {
    const char *name;
    enum cfg_type type;
    size_t off;                      /* the value's field in struct cfg */
    size_t size;                     /* its sizeof, for int vs int64_t */
    size_t noff;                     /* list types: the count field */
    const char *def;                 /* default, as config text */
    int64_t min, max;                /* value bounds, or word counts for lists */
    int flags;
    cfg_check_fn check;              /* STRING, PATH, STRLIST: extra check, or NULL */
    const char *const *enums;        /* ENUM: NULL-terminated names */
    const struct cfg_special *special;
    const char *doc;
};

/* cfg_options.c */
extern const struct cfg_option cfg_options[];
extern const size_t cfg_noptions;
const struct cfg_option *cfg_option_find(const char *name);
extern const struct cfg_special cfg_class_special;   /* cfg_class.c */
extern const struct cfg_special cfg_cobl_special;    /* cfg_value.c */
extern const struct cfg_special cfg_rl_class_special; /* cfg_ratelimit.c */
extern const struct cfg_special cfg_rl_cmd_special;   /* cfg_ratelimit.c */
extern const struct cfg_special cfg_user_special;    /* cfg_user.c */
extern const struct cfg_special cfg_requirepass_special;
extern const char *const cfg_loglevel_names[];
extern const char *const cfg_tls_auth_names[];

/* cfg_value.c: one option's value by type. */
hkv_status cfg_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);
hkv_status cfg_parse_size(const char *s, int64_t min, int64_t max, int64_t *out);
hkv_status cfg_parse_duration(const char *s, int64_t min, int64_t max, int64_t *out);
int cfg_parse_bool(const char *s);   /* 1, 0, or -1 */
/* "0.7", ".25", "1", "0.125" -> per mille (700, 250, 1000, 125); at most 3
 * decimals; HKV_EINVAL out of min..max (per mille) or malformed. */
hkv_status cfg_parse_ratio(const char *s, int64_t min, int64_t max, int64_t *out);
void cfg_render_ratio(int64_t permille, char *buf, size_t len);
void cfg_render_size(int64_t v, char *buf, size_t len);
void cfg_render_duration(int64_t ms, char *buf, size_t len);
/* `s` shortened for an error message. */
const char *cfg_show(const char *s, char *buf, size_t len);
void cfg_why_size(char *why, const char *what, const char *got, int64_t min, int64_t max);
void cfg_why_duration(char *why, const char *what, const char *got, int64_t min, int64_t max);
/* Sets option o from its arguments (argv excludes the name); c is unchanged on
 * error, which is HKV_EINVAL with why filled, or HKV_ENOMEM. */
hkv_status cfg_opt_apply(struct cfg *c, const struct cfg_option *o, int argc, char **argv,
                         char *why);
void cfg_opt_render(const struct cfg *c, const struct cfg_option *o, struct cfg_out *out,
                    enum cfg_render_mode mode);
int cfg_opt_equal(const struct cfg *a, const struct cfg *b, const struct cfg_option *o);
hkv_status cfg_opt_copy(struct cfg *dst, const struct cfg *src, const struct cfg_option *o);
void cfg_opt_release(struct cfg *c, const struct cfg_option *o);

/* cfg_parse.c: splits one line into words as redis.conf does.  *argv is a
 * malloc'd array of malloc'd words (free with cfg_words_free).  HKV_EINVAL with
 * why filled on bad quoting, HKV_ENOMEM. */
hkv_status cfg_split(const char *line, size_t len, int *argc, char ***argv, char *why);
void cfg_words_free(int argc, char **argv);

/* cfg.c: where option o was last set (struct cfg's origins), or NULL for
 * its default; and recording it (`where` is copied; HKV_ENOMEM). */
const char *cfg_origin(const struct cfg *c, const struct cfg_option *o);
hkv_status cfg_origin_set(struct cfg *c, const struct cfg_option *o, const char *where);
hkv_status cfg_origin_copy(struct cfg *dst, const struct cfg *src, const struct cfg_option *o);

/* cfg_class.c */
void cfg_class_deinit(struct cfg_class *k);
/* 1 if s is 1..max characters of [A-Za-z0-9_-]. */
int cfg_name_ok(const char *s, size_t max);

#endif
