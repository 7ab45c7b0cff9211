/*
 * counters.h - the daemon's process counters, declared once.
 *
 * Each list is X(name, kind, help): `name` is the field, the STATS name and
 * the INFO name (and later the metric's name); `kind` is CTR_COUNTER (only
 * grows; CONFIG RESETSTAT zeroes it) or CTR_GAUGE (a level: clients
 * connected, keys held, a backlog; never reset); `help` is one line for
 * whoever reads the metric.
 *
 *   CTR_EDGE   every edge's own counters, in its scoreboard slot (board.h);
 *              INFO sums them over the edges.
 *   CTR_OWNER  what an owner answers to STATS (proto/wire.h), by name: the
 *              owner encodes every field from this list, the edges decode
 *              the ones they know into an array indexed by CTR_OWNER_<name>,
 *              and INFO's "# Owners" renders them in this order.
 *
 * The colo segments declare their own counters next to their data
 * (CACHE_COUNTERS in server/colo/cache.h, RL_COUNTERS in
 * server/colo/ratelimit.h): all of those are counters, zeroed by the master
 * on RESETSTAT.
 *
 * Adding a counter: one line here, then count it where it happens (an edge:
 * board_add on its slot field; an owner: its o->st field, or its source in
 * owner_admin.c for a value read from the ledger, persister or rifl).
 */
#ifndef HKV_COUNTERS_H
#define HKV_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

enum ctr_kind { CTR_COUNTER = 0, CTR_GAUGE = 1 };

#define CTR_EDGE(X)                                                                             \
    X(connected_clients, CTR_GAUGE, "Client connections open")                                 \
    X(total_connections_received, CTR_COUNTER, "Client connections accepted")                  \
    X(rejected_connections, CTR_COUNTER, "Client connections refused (maxclients)")            \
    X(total_commands_processed, CTR_COUNTER, "Commands run")                                   \
    X(protocol_errors, CTR_COUNTER, "Client requests that were not valid RESP")                \
    X(client_output_buffer_limit_disconnections, CTR_COUNTER,                                 \
      "Clients closed by client-output-buffer-limit (output, replies owed, held requests)")   \
    X(write_retries, CTR_COUNTER, "Write requests sent to an owner again")                     \
    X(write_failures, CTR_COUNTER, "Writes that failed explicitly")                            \
    X(auth_failures, CTR_COUNTER, "AUTH and HELLO AUTH attempts refused")                      \
    X(tls_connections, CTR_GAUGE, "Client connections open on the TLS port")                   \
    X(tls_handshake_failures, CTR_COUNTER, "TLS handshakes that failed")                       \
    X(total_error_replies, CTR_COUNTER, "Error replies sent (INFO errorstats by prefix)")   \
    X(http_requests_2xx, CTR_COUNTER, "HTTP responses with a 2xx status")                     \
    X(http_requests_3xx, CTR_COUNTER, "HTTP responses with a 3xx status (304)")               \
    X(http_requests_4xx, CTR_COUNTER, "HTTP responses with a 4xx status")                     \
    X(http_requests_5xx, CTR_COUNTER, "HTTP responses with a 5xx status")                     \
    X(http_polls_held, CTR_GAUGE, "HTTP long polls held now")                                 \
    X(http_watch_streams, CTR_GAUGE, "HTTP watch streams open now")                           \
    X(http_polls_hangup, CTR_COUNTER, "Held long polls and watches freed: their client left")  \
    X(http_polls_woken, CTR_COUNTER, "Long polls answered because their key changed")         \
    X(http_polls_expired, CTR_COUNTER, "Long polls answered when their wait passed")          \
    X(http_polls_refused, CTR_COUNTER, "Long polls and watches refused (http-max-polls)")     \
    X(http_wakeups, CTR_COUNTER, "Change-ring signals read (by held readers and trackers)")   \
    X(blocked_clients, CTR_GAUGE, "Connections parked by CLIENT PAUSE now")                   \
    X(client_pause_parked, CTR_COUNTER, "Requests parked by CLIENT PAUSE")                    \
    X(tracking_clients, CTR_GAUGE, "Clients with CLIENT TRACKING on")                          \
    X(tracking_total_keys, CTR_GAUGE, "Keys in the tracking tables")                           \
    X(tracking_total_items, CTR_GAUGE, "(client, key) pairs in the tracking tables")           \
    X(tracking_total_prefixes, CTR_GAUGE, "BCAST prefixes registered")                         \
    X(tracking_invalidations, CTR_COUNTER, "Invalidation messages sent to tracking clients")   \
    X(tracking_flushes, CTR_COUNTER, "Flush-everything invalidations sent (a gap, FLUSHALL)")  \
    X(tracking_evicted_keys, CTR_COUNTER, "Keys invalidated to fit tracking-table-max-keys")   \
    X(http_puts, CTR_COUNTER, "HTTP PUT /v1/kv requests run as writes")                      \
    X(http_deletes, CTR_COUNTER, "HTTP DELETE /v1/kv requests run as writes")                \
    X(http_precondition_failed, CTR_COUNTER, "HTTP writes answered 412 (If-Match, If-None-Match)") \
    X(http_body_timeouts, CTR_COUNTER, "HTTP connections closed: a body not in http-body-timeout") \
    X(http_bodies_too_large, CTR_COUNTER, "HTTP PUTs refused 413 (over proto-max-bulk-len)")  \
    X(http_idempotent_writes, CTR_COUNTER, "HTTP writes that carried an Idempotency-Key")     \
    X(http_idempotent_replays, CTR_COUNTER, "HTTP writes answered from an Idempotency-Key record") \
    X(http_idempotency_mismatches, CTR_COUNTER,                                               \
      "HTTP writes refused 422: their Idempotency-Key was used for another request")          \
    X(pubsub_messages_delivered, CTR_COUNTER, "Pub/sub messages written to subscribers")      \
    X(pubsub_output_limit_closed, CTR_COUNTER,                                                \
      "Subscribers closed by client-output-buffer-limit pubsub")                              \
    X(pubsub_bus_losses, CTR_COUNTER, "Times this edge fell a whole bus behind (lost records)") \
    X(pubsub_lost_closed, CTR_COUNTER, "Subscribers closed because the bus lost records")     \
    X(pubsub_published_local, CTR_COUNTER,                                                    \
      "PUBLISHes with no owner route (owner-push off, a link down): this host's colos only")

/* The first fourteen are INFO's "# Owners" lines since before this list;
 * new fields go at the end, so INFO's existing lines keep their order. */
#define CTR_OWNER(X)                                                                            \
    X(owner_reads, CTR_COUNTER, "Read requests run")                                           \
    X(owner_writes, CTR_COUNTER, "Write requests applied")                                     \
    X(owner_idempotent_retries, CTR_COUNTER, "Write retries answered from a completion record") \
    X(owner_unknown_outcomes, CTR_COUNTER, "Retries answered outcome-unknown (first try lost)")   \
    X(owner_completion_records, CTR_GAUGE, "Completion records held (exactly-once retries)")   \
    X(owner_keys, CTR_GAUGE, "Keys resident in the ledger")                                    \
    X(persist_dirty_keys, CTR_GAUGE, "Keys written but not yet persisted")                     \
    X(persist_batches, CTR_COUNTER, "Persist batches done")                                    \
    X(persist_rows, CTR_COUNTER, "Rows written to SQLite")                                     \
    X(persist_last_commit_ms, CTR_GAUGE, "Duration of the last SQLite transaction, ms")        \
    X(persist_stall_ms_max, CTR_GAUGE, "Longest wait of a batch before its transaction, ms")   \
    X(persist_errors, CTR_COUNTER, "SQLite transactions that failed")                          \
    X(owner_queue_depth, CTR_GAUGE, "Requests queued in the owner (durable replies)")                    \
    X(persist_backlog_bytes, CTR_GAUGE, "Bytes of the keys not yet persisted")                 \
    X(owner_moved, CTR_COUNTER, "Requests answered MOVED (a key of another owner)")            \
    X(owner_busy_rejects, CTR_COUNTER, "Writes refused while the persist backlog is full")     \
    X(owner_durable_timeouts, CTR_COUNTER, "Durable writes answered outcome-unknown")          \
    X(owner_disk_reads, CTR_COUNTER, "Keys read from disk (not resident)")          \
    X(owner_protocol_errors, CTR_COUNTER, "Malformed frames from edges")                       \
    X(owner_pushes, CTR_COUNTER, "Pushes and invalidations sent to colos")                     \
    X(owner_notifications, CTR_COUNTER, "Keyspace notification events sent to colos")        \
    X(owner_notify_dropped, CTR_COUNTER, "Keyspace notification events dropped (bound, age)") \
    X(owner_tombstones, CTR_GAUGE, "Tombstones resident in the ledger")                        \
    X(owner_memory_bytes, CTR_GAUGE, "Bytes the ledger holds")                                 \
    X(owner_evictions, CTR_COUNTER, "Keys evicted from the ledger")                            \
    X(owner_expired, CTR_COUNTER, "Expired keys turned into tombstones")                       \
    X(owner_links, CTR_GAUGE, "Edge links open")                                               \
    X(persist_transactions, CTR_COUNTER, "SQLite transactions attempted")                      \
    X(persist_fsync_commits, CTR_COUNTER, "Transactions committed with synchronous=FULL")      \
    X(persist_backlog_age_ms, CTR_GAUGE, "Age of the oldest unfinished batch, ms")             \
    X(persist_queued_batches, CTR_GAUGE, "Batches queued or in a transaction")                 \
    X(owner_durable_waiting, CTR_GAUGE, "Replies waiting for a durable commit")                \
    X(owner_completions_dropped, CTR_COUNTER, "Completion records dropped by the bound")       \
    X(owner_expires, CTR_GAUGE, "Resident live keys with an expiry (INFO keyspace expires)")  \
    X(owner_avg_ttl_ms, CTR_GAUGE, "Their average time to live, ms (INFO keyspace avg_ttl)")  \
    X(persist_last_save_time_seconds, CTR_GAUGE, "Unix time of the last committed transaction (0: none)") \
    X(leaf_moves_started, CTR_COUNTER, "Leaf moves started from this owner")                   \
    X(leaf_moves_committed, CTR_COUNTER, "Leaf moves from this owner that committed")         \
    X(leaf_moves_aborted, CTR_COUNTER, "Leaf moves from this owner that aborted (leaf stayed)") \
    X(leaf_moves_refused, CTR_COUNTER, "Leaf moves whose intent was refused or lost")          \
    X(leaf_moves_in_doubt, CTR_COUNTER, "Leaf move commits whose outcome was unknown at first") \
    X(leaf_moves_outgoing, CTR_GAUGE, "A leaf move from this owner is under way (0 or 1)")     \
    X(leaf_moves_incoming, CTR_GAUGE, "Leaf moves coming in now")                              \
    X(leaf_moves_received, CTR_COUNTER, "Leaves adopted from another owner")                   \
    X(leaf_moves_dropped, CTR_COUNTER, "Incoming leaf copies dropped (their move aborted)")    \
    X(leaf_splits, CTR_COUNTER, "Leaf splits this owner asked for that applied")               \
    X(leaf_fence_ms_last, CTR_GAUGE, "The last committed move's fence, ms (writes waited)")    \
    X(leaf_fence_ms_max, CTR_GAUGE, "The longest committed move's fence, ms")                  \
    X(leaf_copy_rows, CTR_COUNTER, "Rows sent by leaf moves (ledger and SQLite)")              \
    X(leaf_copy_bytes, CTR_COUNTER, "Key and value bytes sent by leaf moves")                  \
    X(leaf_copy_ms_last, CTR_GAUGE, "The last move's copy, ms")                                \
    X(leaf_copy_bytes_per_second, CTR_GAUGE, "The last move's copy rate, bytes a second")      \
    X(leaf_parked, CTR_COUNTER, "Requests that waited for a moving leaf")                      \
    X(leaf_parked_writes, CTR_COUNTER, "Writes among them")                                    \
    X(leaf_parked_now, CTR_GAUGE, "Requests waiting for a moving leaf now")                    \
    X(leaf_parked_ms_max, CTR_GAUGE, "The longest wait of a parked request, ms")               \
    X(leaf_parked_ms_p99, CTR_GAUGE, "The 99th percentile of parked waits, ms (upper bound)")  \
    X(leaf_parked_timeouts, CTR_COUNTER, "Parked requests answered TRYAGAIN (wait too long)")    \
    X(repl_role_primary_leaves, CTR_GAUGE, "Leaves served here with an in-sync follower")       \
    X(repl_role_follower_leaves, CTR_GAUGE, "Leaves followed here (another owner's copies)")    \
    X(repl_followers, CTR_GAUGE, "Streams to followers out now (seeding or in sync)")          \
    X(repl_isr_members, CTR_GAUGE, "Of them, in their leaf's in-sync set")                     \
    X(repl_lag_entries_max, CTR_GAUGE, "Results sent and not yet held, worst stream")          \
    X(repl_lag_ms_max, CTR_GAUGE, "Age of the oldest answer waiting for followers, ms")        \
    X(repl_isr_adds, CTR_COUNTER, "Followers added to an in-sync set (CAS applied)")           \
    X(repl_isr_removals, CTR_COUNTER, "Followers taken out of an in-sync set (CAS applied)")   \
    X(repl_acks_waited, CTR_COUNTER, "Write answers held until followers held the write")      \
    X(repl_ack_timeouts, CTR_COUNTER, "... answered outcome unknown: followers too late")      \
    X(repl_deposed, CTR_COUNTER, "... answered outcome unknown: the primary changed")          \
    X(repl_waiting, CTR_GAUGE, "Write answers waiting for followers now")                      \
    X(repl_follows_seeded, CTR_COUNTER, "Follows begun here (seeded by a primary)")            \
    X(repl_follows_promoted, CTR_COUNTER, "Follows ended by promotion to primary")             \
    X(repl_follows_dropped, CTR_COUNTER, "Follows ended otherwise (copy dropped)")             \
    X(repl_retries_inherited, CTR_COUNTER, "Retries applied by a promoted follower as new")    \
    X(repl_handovers, CTR_COUNTER, "Planned hand-overs to a follower that moved the primary")  \
    X(repl_handovers_failed, CTR_COUNTER, "... that did not (the writes went on here)")        \
    X(repl_handover_ms_last, CTR_GAUGE, "The last hand-over's write pause (fence to release)") \
    X(repl_handover_ms_max, CTR_GAUGE, "The longest hand-over write pause, ms")                \
    X(owner_busy_permille, CTR_GAUGE, "Per mille of the last move-window the loop thread ran")

enum ctr_edge_id {
#define X(name, kind, help) CTR_EDGE_##name,
    CTR_EDGE(X)
#undef X
    CTR_EDGE_COUNT
};

enum ctr_owner_id {
#define X(name, kind, help) CTR_OWNER_##name,
    CTR_OWNER(X)
#undef X
    CTR_OWNER_COUNT
};

/* One entry of a list, as data (for renderers that walk it). */
struct ctr_def {
    const char *name;
    enum ctr_kind kind;
    const char *help;
};
extern const struct ctr_def ctr_edge_defs[CTR_EDGE_COUNT];
extern const struct ctr_def ctr_owner_defs[CTR_OWNER_COUNT];

/* Stores the value of every field of a STATS reply that CTR_OWNER names into
 * v[CTR_OWNER_<name>]; fields it does not name are skipped, fields missing
 * from the reply keep their value in v. */
void ctr_owner_take(const struct wire_stat *stats, uint32_t n, int64_t *v);

#endif
