/*
 * notify.c - the classes and events of keyspace notifications (notify.h).
 */
#include "proto/notify.h"

static const struct { const char *name; unsigned cls; } EVENTS[NEV_COUNT] = {
    [NEV_SET] = {"set", NOTIFY_STRING},
    [NEV_DEL] = {"del", NOTIFY_GENERIC},
    [NEV_EXPIRE] = {"expire", NOTIFY_GENERIC},
    [NEV_PERSIST] = {"persist", NOTIFY_GENERIC},
    [NEV_INCRBY] = {"incrby", NOTIFY_STRING},
    [NEV_INCRBYFLOAT] = {"incrbyfloat", NOTIFY_STRING},
    [NEV_APPEND] = {"append", NOTIFY_STRING},
    [NEV_SETRANGE] = {"setrange", NOTIFY_STRING},
    [NEV_SETBIT] = {"setbit", NOTIFY_STRING},
    [NEV_RENAME_FROM] = {"rename_from", NOTIFY_GENERIC},
    [NEV_RENAME_TO] = {"rename_to", NOTIFY_GENERIC},
    [NEV_COPY_TO] = {"copy_to", NOTIFY_GENERIC},
    [NEV_EXPIRED] = {"expired", NOTIFY_EXPIRED},
    [NEV_NEW] = {"new", NOTIFY_NEW},
};

int notify_parse(const char *s, unsigned *flags)
{
    unsigned f = 0;
    for (; *s != '\0'; s++) {
        switch (*s) {
        case 'A': /* Redis's alias: every class but m and n */
            f |= NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH |
                 NOTIFY_ZSET | NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE;
            break;
        case 'g': f |= NOTIFY_GENERIC; break;
        case '$': f |= NOTIFY_STRING; break;
        case 'l': f |= NOTIFY_LIST; break;
        case 's': f |= NOTIFY_SET; break;
        case 'h': f |= NOTIFY_HASH; break;
        case 'z': f |= NOTIFY_ZSET; break;
        case 'x': f |= NOTIFY_EXPIRED; break;
        case 'e': f |= NOTIFY_EVICTED; break;
        case 't': f |= NOTIFY_STREAM; break;
        case 'm': f |= NOTIFY_KEY_MISS; break;
        case 'd': f |= NOTIFY_MODULE; break;
        case 'n': f |= NOTIFY_NEW; break;
        case 'K': f |= NOTIFY_KEYSPACE; break;
        case 'E': f |= NOTIFY_KEYEVENT; break;
        default: return -1;
        }
    }
    *flags = f;
    return 0;
}

const char *notify_event_name(enum notify_event ev)
{
    return ev < NEV_COUNT ? EVENTS[ev].name : "";
}

unsigned notify_event_class(enum notify_event ev)
{
    return ev < NEV_COUNT ? EVENTS[ev].cls : 0;
}

int notify_wants(unsigned flags, enum notify_event ev)
{
    return (flags & (NOTIFY_KEYSPACE | NOTIFY_KEYEVENT)) != 0 &&
           (flags & notify_event_class(ev)) != 0;
}
