/*
 * cfg_cidr.c - address ranges as access directives state them
 * (http-metrics-allow): "any", an address, or an address with /prefix.
 *
 * Parsing and matching live together so the text the config accepts is
 * exactly what the edge matches against; an IPv4-mapped IPv6 peer
 * (::ffff:a.b.c.d, what a dual-stack socket reports) is matched as the IPv4
 * address it carries.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "config/cfg.h"

hkv_status cfg_cidr_parse(const char *s, struct cfg_cidr *out)
{
    memset(out, 0, sizeof(*out));
    if (strcasecmp(s, "any") == 0) {
        out->any = 1;
        return HKV_OK;
    }
    char addr[64];
    const char *slash = strchr(s, '/');
    size_t n = slash != NULL ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(addr))
        return HKV_EINVAL;
    memcpy(addr, s, n);
    addr[n] = '\0';
    int max;
    if (inet_pton(AF_INET, addr, out->addr) == 1) {
        out->family = AF_INET;
        max = 32;
    } else if (inet_pton(AF_INET6, addr, out->addr) == 1) {
        out->family = AF_INET6;
        max = 128;
    } else {
        return HKV_EINVAL;
    }
    out->prefix = max;
    if (slash != NULL) {
        const char *p = slash + 1;
        if (*p < '0' || *p > '9' || strlen(p) > 3)
            return HKV_EINVAL;
        int v = 0;
        for (; *p != '\0'; p++) {
            if (*p < '0' || *p > '9')
                return HKV_EINVAL;
            v = v * 10 + (*p - '0');
        }
        if (v > max)
            return HKV_EINVAL;
        out->prefix = v;
    }
    return HKV_OK;
}

static int prefix_eq(const unsigned char *a, const unsigned char *b, int bits)
{
    int bytes = bits / 8, rest = bits % 8;
    if (memcmp(a, b, (size_t)bytes) != 0)
        return 0;
    if (rest == 0)
        return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[bytes] & mask) == (b[bytes] & mask);
}

int cfg_cidr_match(const struct cfg_cidr *c, const struct sockaddr *sa)
{
    if (c->any)
        return 1;
    if (sa == NULL)
        return 0;
    unsigned char a[16];
    int family = sa->sa_family;
    if (family == AF_INET) {
        memcpy(a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (family == AF_INET6) {
        const struct in6_addr *in6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(in6)) {
            family = AF_INET;
            memcpy(a, in6->s6_addr + 12, 4);
        } else {
            memcpy(a, in6->s6_addr, 16);
        }
    } else {
        return 0;
    }
    return family == c->family && prefix_eq(a, c->addr, c->prefix);
}
