/*
 * owner_clock.c - the owner's one reading of time, as the ledger takes it
 * (storage/ledger.h struct ledger_clock: a monotonic part for intervals and
 * a wall part for expiry and versions).  It sits at the bottom of the
 * owner's modules, apart from the request executor that first needed it, so
 * the link layer, tickets and persistence read the clock without calling up.
 */
#include "server/core/clock.h"
#include "server/owner/owner_int.h"

struct ledger_clock owner_clock(void)
{
    /* +1: the ledger requires mono_ms > 0. */
    struct ledger_clock c = {(uint64_t)clock_mono_ms() + 1, clock_unix_ms()};
    return c;
}
