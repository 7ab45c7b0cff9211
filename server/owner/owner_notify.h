/*
 * owner_notify.h - keyspace notifications (notify-keyspace-events): events
 * noted as writes apply, sent with the push that makes each write visible
 * (owner_notify.c has the why).  Private to server/owner.
 */
#ifndef HKV_OWNER_NOTIFY_H
#define HKV_OWNER_NOTIFY_H

#include "proto/notify.h"
#include "server/owner/owner_int.h"

/* ---- owner_notify.c: keyspace notifications, sent with the write's push ---- */
/* Notes event ev of a write that gave key `version`; it goes out with the
 * flush that pushes that version (or a newer one) of the key. */
void owner_notify(struct owner *o, struct wire_slice key, hkv_stamp version,
                  enum notify_event ev);
/* The ledger expired key (its hook): "expired", sent with the next flush
 * (the caller kicks it: owner_pushq_kick). */
void owner_notify_expired(struct owner *o, const char *key, size_t klen);
/* 1 if the flush running now pushes key at `version` or newer. */
typedef int (*owner_pushed_fn)(void *arg, const char *key, size_t klen, uint64_t place,
                               hkv_stamp version);
/* From the push flush, after its pushes: every event whose push went, to
 * the nto links, in the order noted. */
void owner_notify_flush(struct owner *o, owner_pushed_fn pushed, void *arg, struct olink **to,
                        int nto);
void owner_notify_teardown(struct owner *o);

#endif
