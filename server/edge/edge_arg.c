/*
 * edge_arg.c - argument helpers shared by the command families (edge_arg.h).
 * They sit at the bottom of server/edge on purpose: before, edge_arg_is lived in
 * the connection layer, so every family that compared a word called up into
 * it.
 */
#include "server/edge/edge_arg.h"
#include "proto/num.h"

#include <limits.h>
#include <string.h>
#include <strings.h>

int edge_arg_is(const struct resp_slice *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->len == n && strncasecmp(s->p, lit, n) == 0;
}

int edge_arg_ll(const struct resp_slice *s, long long *out)
{
    int64_t v;
    if (!num_parse_ll(s->p, s->len, &v))
        return -1;
    *out = (long long)v;
    return 0;
}
