/*
 * json.h - a bounded JSON tokenizer for answers from a peer we do not trust.
 *
 * The etcd client (server/agent) reads etcd's JSON gateway through this: a
 * jsmn-like tokenizer that writes flat tokens (type, offset, length, child
 * count, index past the subtree) into an array the caller owns, and never
 * allocates.  It keeps no pointers into the text, only offsets, and checks the
 * whole grammar: exactly one value, optional white space around it, strings
 * without raw control characters and with valid escapes (a \u escape of a
 * UTF-16 surrogate must be a correct pair), numbers as RFC 8259 writes them,
 * nesting at most JSON_MAX_DEPTH deep (an explicit stack, no recursion).
 *
 * The helpers read what etcd sends: a member of an object by name, a string
 * unescaped into a bounded buffer (\uXXXX to UTF-8), an int64 from either a
 * JSON string ("16": the gateway writes every int64 so) or an integer number,
 * exactly (no double on the way: lease ids are larger than 2^53), a bool.
 */
#ifndef HKV_JSON_H
#define HKV_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"

#define JSON_MAX_DEPTH 64
/* Longest text json_parse accepts: offsets are 32-bit. */
#define JSON_MAX_LEN (1u << 30)

enum json_type {
    JSON_OBJECT = 1,
    JSON_ARRAY,
    JSON_STRING,
    JSON_NUMBER,
    JSON_TRUE,
    JSON_FALSE,
    JSON_NULL,
};

struct json_tok {
    enum json_type type;
    uint32_t start;   /* string: first byte after the quote; others: first byte */
    uint32_t len;     /* string: raw bytes between the quotes (escapes kept) */
    uint32_t size;    /* object: members (a member is a key token then a value);
                       * array: elements; others 0 */
    uint32_t next;    /* index of the first token after this one's subtree */
};

/* Tokenizes js[0..len).  With toks NULL, only checks and counts (the count a
 * second call needs).  Returns the number of tokens (>= 1; token 0 is the
 * top value), HKV_EPROTO for anything that is not one JSON value,
 * HKV_EFULL when ntoks tokens are not enough or nesting passes
 * JSON_MAX_DEPTH, HKV_ETOOBIG past JSON_MAX_LEN. */
int json_parse(const char *js, size_t len, struct json_tok *toks, size_t ntoks);

/* The value token of member `name` of object token `obj`, or -1 (not an
 * object, or no such member; with duplicate names the first).  The key is
 * compared unescaped. */
int json_member(const char *js, const struct json_tok *t, int obj, const char *name);

/* Element k of array token `arr`, or -1. */
int json_elem(const struct json_tok *t, int arr, uint32_t k);

/* String token i unescaped into out (at most cap bytes, no NUL added);
 * *n its length.  HKV_OK, HKV_EINVAL (not a string), HKV_ETOOBIG (cap). */
int json_string(const char *js, const struct json_tok *t, int i, char *out, size_t cap,
                size_t *n);

/* 1 if string token i equals s (unescaped), else 0. */
int json_streq(const char *js, const struct json_tok *t, int i, const char *s);

/* An int64 from string token i ("-12", no sign '+', no leading zero, no
 * spaces) or number token i (an integer: no fraction, no exponent).
 * HKV_OK, HKV_EINVAL (another type or form), HKV_ETOOBIG (overflow). */
int json_int64(const char *js, const struct json_tok *t, int i, int64_t *out);

/* true/false token i: HKV_OK, or HKV_EINVAL. */
int json_bool(const struct json_tok *t, int i, int *out);

#endif
