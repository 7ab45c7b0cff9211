/*
 * b64.h - standard base64 (RFC 4648 §4, with padding), both ways.
 *
 * etcd's JSON gateway carries every key and value as base64; the agent
 * encodes what it sends and decodes what etcd answers, which is input from a
 * peer: the decoder accepts only the canonical form (length a multiple of 4,
 * '=' only as the last one or two characters, zero bits after the last byte,
 * no white space, no URL-safe alphabet) and never writes past the caller's
 * buffer.
 */
#ifndef HKV_B64_H
#define HKV_B64_H

#include <stddef.h>

#include "proto/hkv.h"

/* Characters that encoding n bytes takes (4 per 3 bytes, rounded up). */
static inline size_t b64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }
/* Bytes that decoding n characters may give at most. */
static inline size_t b64_decoded_max(size_t n) { return n / 4 * 3; }

/* Writes exactly b64_encoded_len(n) characters to out (no NUL). */
void b64_encode(const void *in, size_t n, char *out);

/* Decodes in[0..n) into out (at most cap bytes); *outlen the byte count.
 * HKV_OK, HKV_EPROTO (not canonical base64), HKV_ETOOBIG (cap). */
int b64_decode(const char *in, size_t n, void *out, size_t cap, size_t *outlen);

#endif
