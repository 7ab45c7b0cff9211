/*
 * owner_clock.c - the owner's one reading of time, as the ledger takes it
 * (storage/ledger.h struct ledger_clock: a monotonic part for intervals and
 * a wall part for expiry and versions).  It sits at the bottom of the
 * owner's modules, apart from the request executor that first needed it, so
 * the link layer, tickets and persistence read the clock without calling up.
 *
 * While a request runs the clock is held (owner_clock_hold): every reading
 * inside it is the one taken when it started (the link layer holds it
 * across up to 32 requests of one read batch).  A SET read the clock about ten
 * times (each ledger lookup, the push, the gates), two clock_gettime calls a
 * reading, 17% of the owner's cycles on SET -P16; one request is one
 * instant anyway (Redis, too, judges expiry by one time per command).
 */
#include "server/core/clock.h"
#include "server/owner/owner_int.h"

static struct ledger_clock held;
static unsigned holding;

static struct ledger_clock read_clock(void)
{
    /* +1: the ledger requires mono_ms > 0. */
    struct ledger_clock c = {(uint64_t)clock_mono_ms() + 1, clock_unix_ms()};
    return c;
}

struct ledger_clock owner_clock(void)
{
    return holding ? held : read_clock();
}

void owner_clock_hold(void)
{
    if (holding++ == 0)
        held = read_clock();
}

void owner_clock_release(void)
{
    if (holding > 0)
        holding--;
}
