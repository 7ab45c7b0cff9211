/*
 * hkv.h - the one status type of the project.
 *
 * Every library function (proto/, storage/, config/) returns an hkv_status and
 * fills whatever out-parameters it documents; only server/ decides what a
 * status means for a client, a log line or a process.  Values are negative so
 * that a function may return a count >= 0 or a status where its header says so.
 */
#ifndef HKV_H
#define HKV_H

typedef enum hkv_status {
    HKV_OK = 0,
    HKV_EAGAIN = -1,     /* need more bytes / try again later */
    HKV_EPROTO = -2,     /* malformed input (a client's or a peer's) */
    HKV_ENOMEM = -3,     /* allocation failed */
    HKV_EFULL = -4,      /* a configured bound was reached */
    HKV_EINVAL = -5,     /* invalid argument (a caller's mistake or bad value) */
    HKV_EIO = -6,        /* an I/O or storage error */
    HKV_ENOENT = -7,     /* no such key / file / entry */
    HKV_ESTALE = -8,     /* a stamp older than the one held */
    HKV_ETIMEDOUT = -9,  /* a deadline passed */
    HKV_EMOVED = -10,    /* the key belongs to another owner */
    HKV_ETOOBIG = -11,   /* a length over its limit */
    HKV_ECORRUPT = -12,  /* stored data failed validation */
    HKV_EEXIST = -13,    /* already exists (NX and friends) */
    HKV_ERESEND = -14,   /* not applied: send the same request again, as the retry it is */
} hkv_status;

/* A short constant English description of a status, never NULL. */
const char *hkv_strstatus(int status);

#endif
