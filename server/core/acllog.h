/*
 * acllog.h - ACL LOG: the host's denied attempts, Redis 7.0's way.
 *
 * One log for the host, in shared memory (the board, board_acllog), so
 * ACL LOG on any edge shows what every edge denied: a wrong password
 * (reason "auth"), a command or a key outside the user's rules ("command",
 * "key").  As Redis's addACLLogEntry: a denial equal to one of the ten
 * newest entries (same reason, context, object and user, that entry
 * updated at most 60 s ago) counts into it and moves it to the front;
 * otherwise it is a new entry at the front and the log is trimmed to
 * acllog-max-len (at most ACLLOG_CAP).
 *
 * Bounds: object, user and client-info are cut at their fields' sizes
 * below (client-controlled bytes: an AUTH's user name).  Writers on
 * different processes take a lock word (the holder's pid) for a few
 * copies; one that cannot take it at once spins briefly, takes over a
 * lock whose holder is dead, and otherwise drops the entry (counted in
 * dropped): a loop thread never waits on another process.
 */
#ifndef HKV_ACLLOG_H
#define HKV_ACLLOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define ACLLOG_CAP 1024
#define ACLLOG_OBJECT 128
#define ACLLOG_USER 64
#define ACLLOG_INFO 400
#define ACLLOG_GROUP_MS 60000

enum acllog_reason { ACLLOG_AUTH, ACLLOG_COMMAND, ACLLOG_KEY, ACLLOG_CHANNEL };
enum acllog_context { ACLLOG_TOPLEVEL, ACLLOG_MULTI, ACLLOG_HTTP };

struct acllog_entry {
    uint64_t count;
    int64_t updated_ms;          /* CLOCK_MONOTONIC: Redis's ctime (age-seconds from it) */
    uint8_t reason, context;
    uint16_t object_len, user_len, info_len;
    char object[ACLLOG_OBJECT];
    char user[ACLLOG_USER];
    char info[ACLLOG_INFO];
};

struct acllog {
    _Atomic int32_t lock;        /* 0, or the pid holding it */
    uint32_t n;                  /* entries held, newest at head */
    uint32_t head;
    uint32_t pad;
    _Atomic uint64_t dropped;    /* denials not logged: the lock was busy */
    struct acllog_entry e[ACLLOG_CAP];
};

/* What one denial says (bytes not NUL-terminated; cut to the field sizes). */
struct acllog_in {
    enum acllog_reason reason;
    enum acllog_context context;
    const char *object, *user, *info;
    size_t object_len, user_len, info_len;
};

/* Logs one denial at now_ms (monotonic), keeping at most max_len entries
 * (clamped to 1..ACLLOG_CAP; 0 logs nothing).  0, or -1 when dropped. */
int acllog_add(struct acllog *l, const struct acllog_in *in, int64_t now_ms, uint32_t max_len);

/* Copies the newest min(count, held, max_len) entries into out (newest
 * first); returns how many, or -1 when the lock could not be taken. */
int acllog_read(struct acllog *l, struct acllog_entry *out, uint32_t count, uint32_t max_len);

/* ACL LOG RESET.  0, or -1 (the lock). */
int acllog_reset(struct acllog *l);

const char *acllog_reason_name(unsigned reason);
const char *acllog_context_name(unsigned context);

#endif
