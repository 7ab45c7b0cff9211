/*
 * notify.h - keyspace notifications as Redis 7.0 names them: the classes of
 * `notify-keyspace-events` (K E g $ l s h z x e t m d n A) and the events a
 * write emits, each on `__keyspace@0__:<key>` (message: the event) and/or
 * `__keyevent@0__:<event>` (message: the key).  Pure: the owner decides
 * when an event goes out (server/owner/owner_notify.c).
 */
#ifndef HKV_PROTO_NOTIFY_H
#define HKV_PROTO_NOTIFY_H

#include <stddef.h>

enum {
    NOTIFY_KEYSPACE = 1u << 0,  /* K */
    NOTIFY_KEYEVENT = 1u << 1,  /* E */
    NOTIFY_GENERIC = 1u << 2,   /* g: del, expire, rename, persist, copy */
    NOTIFY_STRING = 1u << 3,    /* $ */
    NOTIFY_LIST = 1u << 4,      /* l (no lists here: accepted, never emitted) */
    NOTIFY_SET = 1u << 5,       /* s (likewise) */
    NOTIFY_HASH = 1u << 6,      /* h (likewise) */
    NOTIFY_ZSET = 1u << 7,      /* z (likewise) */
    NOTIFY_EXPIRED = 1u << 8,   /* x */
    NOTIFY_EVICTED = 1u << 9,   /* e (an owner evicts only clean copies: never emitted) */
    NOTIFY_STREAM = 1u << 10,   /* t (likewise) */
    NOTIFY_KEY_MISS = 1u << 11, /* m (reads are the edges' and the colo's: never emitted) */
    NOTIFY_MODULE = 1u << 12,   /* d (likewise) */
    NOTIFY_NEW = 1u << 13,      /* n */
};

/* The events a write here can emit. */
enum notify_event {
    NEV_SET, NEV_DEL, NEV_EXPIRE, NEV_PERSIST, NEV_INCRBY, NEV_INCRBYFLOAT, NEV_APPEND,
    NEV_SETRANGE, NEV_SETBIT, NEV_RENAME_FROM, NEV_RENAME_TO, NEV_COPY_TO, NEV_EXPIRED, NEV_NEW,
    NEV_COUNT
};

/* The config string's classes into *flags: 0, or -1 for a character Redis
 * does not know (*flags untouched). */
int notify_parse(const char *s, unsigned *flags);
/* The event's name ("set", "rename_from" ...) and its class flag. */
const char *notify_event_name(enum notify_event ev);
unsigned notify_event_class(enum notify_event ev);
/* 1 if flags deliver ev at all (a class and K or E). */
int notify_wants(unsigned flags, enum notify_event ev);

#endif
