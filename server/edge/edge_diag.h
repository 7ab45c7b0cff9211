/*
 * edge_diag.h - the one log line that explains a failed write: the failure
 * together with what its owner says about itself when asked for STATS at
 * once (queue depth, persist backlog, stall time), or that it was mute.
 */
#ifndef HKV_EDGE_DIAG_H
#define HKV_EDGE_DIAG_H

#include "server/edge/edge_owners.h"

/* Asks o for STATS on its READ link and logs `what` with the answer (or
 * its absence within 1 s); logs at once if it cannot ask. */
void edge_write_failed_report(struct owner_ref *o, const char *what);

#endif
