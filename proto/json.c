/*
 * json.c - the bounded JSON tokenizer and its readers (see json.h).
 *
 * One pass, one loop, no recursion: the only state is the position, what the
 * grammar expects next and a fixed stack of the open containers' token
 * indices (its size is the depth limit, so a hostile "[[[[..." costs neither
 * stack nor heap).  Strings are validated in full while tokenizing, with the
 * same escape decoder the readers use (str_next), so a string token that
 * exists is one json_string can always decode; only the caller's buffer size
 * can then fail it.  Counting mode (no token array) runs the same code with
 * the writes skipped, which is how a caller sizes the array for a body whose
 * length is bounded but whose token count is not known.
 */
#include "proto/json.h"
#include "proto/num.h"

#include <string.h>

enum expect {
    EX_VALUE,          /* a value (top level, after ':' or after ',' in an array) */
    EX_VALUE_OR_END,   /* after '[' */
    EX_KEY,            /* after ',' in an object */
    EX_KEY_OR_END,     /* after '{' */
    EX_COLON,          /* after a key */
    EX_COMMA_OR_END,   /* after a value inside a container */
    EX_DONE,           /* the top value is complete */
};

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static long hex4(const char *p)
{
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = num_hexval((unsigned char)p[k]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

/* Decodes the next character of a string body s[*i..end) into out (1 to 4
 * bytes of UTF-8 for an escape, the raw byte otherwise) and advances *i.
 * Returns the byte count, or -1 for a bad escape, a lone surrogate or a
 * raw control character.  The caller stops at end (the closing quote). */
static int str_next(const char *s, size_t *i, size_t end, unsigned char out[4])
{
    unsigned char c = (unsigned char)s[*i];
    if (c < 0x20)
        return -1;
    if (c != '\\') {
        out[0] = c;
        (*i)++;
        return 1;
    }
    if (*i + 1 >= end)
        return -1;
    char e = s[*i + 1];
    const char *simple = "\"\\/bfnrt";
    const char *to = "\"\\/\b\f\n\r\t";
    const char *hit = e != '\0' ? strchr(simple, e) : NULL;
    if (hit != NULL) {
        out[0] = (unsigned char)to[hit - simple];
        *i += 2;
        return 1;
    }
    if (e != 'u' || *i + 6 > end)
        return -1;
    long cp = hex4(s + *i + 2);
    if (cp < 0)
        return -1;
    size_t used = 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return -1; /* a low surrogate first */
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (*i + 12 > end || s[*i + 6] != '\\' || s[*i + 7] != 'u')
            return -1;
        long lo = hex4(s + *i + 8);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return -1;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        used = 12;
    }
    *i += used;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Scans a string whose opening quote is at js[pos]; the index of the closing
 * quote, or -1 (unterminated, bad escape, control character). */
static long scan_string(const char *js, size_t len, size_t pos)
{
    size_t i = pos + 1;
    unsigned char tmp[4];
    /* no escape contains a quote except \" (one character, consumed by
     * str_next), so the first bare quote ends the string */
    while (i < len && js[i] != '"') {
        if (str_next(js, &i, len, tmp) < 0)
            return -1;
    }
    return i < len ? (long)i : -1;
}

/* Scans a number at js[pos]; its length, or 0 if it is not one. */
static size_t scan_number(const char *js, size_t len, size_t pos)
{
    size_t i = pos;
    if (i < len && js[i] == '-')
        i++;
    if (i >= len)
        return 0;
    if (js[i] == '0') {
        i++;
    } else if (js[i] >= '1' && js[i] <= '9') {
        while (i < len && js[i] >= '0' && js[i] <= '9')
            i++;
    } else {
        return 0;
    }
    if (i < len && js[i] == '.') {
        size_t d = ++i;
        while (i < len && js[i] >= '0' && js[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    if (i < len && (js[i] == 'e' || js[i] == 'E')) {
        i++;
        if (i < len && (js[i] == '+' || js[i] == '-'))
            i++;
        size_t d = i;
        while (i < len && js[i] >= '0' && js[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    /* a number must end at a delimiter ("12x", "01" are not numbers) */
    if (i < len && !is_ws(js[i]) && js[i] != ',' && js[i] != ']' && js[i] != '}')
        return 0;
    return i - pos;
}

int json_parse(const char *js, size_t len, struct json_tok *toks, size_t ntoks)
{
    if (len > JSON_MAX_LEN)
        return HKV_ETOOBIG;
    uint32_t stack[JSON_MAX_DEPTH];
    enum json_type stype[JSON_MAX_DEPTH];
    int depth = 0;
    size_t n = 0;
    enum expect ex = EX_VALUE;
    size_t pos = 0;

    while (pos < len) {
        char c = js[pos];
        if (is_ws(c)) {
            pos++;
            continue;
        }
        if (ex == EX_DONE)
            return HKV_EPROTO; /* trailing garbage */
        if (ex == EX_COLON) {
            if (c != ':')
                return HKV_EPROTO;
            ex = EX_VALUE;
            pos++;
            continue;
        }
        if (ex == EX_COMMA_OR_END) {
            if (c == ',') {
                ex = stype[depth - 1] == JSON_OBJECT ? EX_KEY : EX_VALUE;
                pos++;
                continue;
            }
            if (c != '}' && c != ']')
                return HKV_EPROTO;
        }
        if (c == '}' || c == ']') {
            enum json_type want = c == '}' ? JSON_OBJECT : JSON_ARRAY;
            int may_end = ex == EX_COMMA_OR_END || (want == JSON_OBJECT && ex == EX_KEY_OR_END) ||
                          (want == JSON_ARRAY && ex == EX_VALUE_OR_END);
            if (!may_end || depth == 0 || stype[depth - 1] != want)
                return HKV_EPROTO;
            depth--;
            if (toks != NULL) {
                toks[stack[depth]].len = (uint32_t)(pos + 1 - toks[stack[depth]].start);
                toks[stack[depth]].next = (uint32_t)n;
            }
            ex = depth == 0 ? EX_DONE : EX_COMMA_OR_END;
            pos++;
            continue;
        }
        int is_key = ex == EX_KEY || ex == EX_KEY_OR_END;
        if (is_key && c != '"')
            return HKV_EPROTO;
        /* a value (or a key): one token */
        if (n >= (size_t)UINT32_MAX || (toks != NULL && n >= ntoks))
            return HKV_EFULL;
        struct json_tok tk = {0, (uint32_t)pos, 0, 0, (uint32_t)(n + 1)};
        size_t adv;
        if (c == '"') {
            long q = scan_string(js, len, pos);
            if (q < 0)
                return HKV_EPROTO;
            tk.type = JSON_STRING;
            tk.start = (uint32_t)(pos + 1);
            tk.len = (uint32_t)((size_t)q - pos - 1);
            adv = (size_t)q + 1 - pos;
        } else if (c == '{' || c == '[') {
            if (depth >= JSON_MAX_DEPTH)
                return HKV_EFULL;
            tk.type = c == '{' ? JSON_OBJECT : JSON_ARRAY;
            adv = 1;
        } else if (c == 't' || c == 'f' || c == 'n') {
            const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
            size_t wl = strlen(word);
            if (len - pos < wl || memcmp(js + pos, word, wl) != 0)
                return HKV_EPROTO;
            if (pos + wl < len && !is_ws(js[pos + wl]) && js[pos + wl] != ',' &&
                js[pos + wl] != ']' && js[pos + wl] != '}')
                return HKV_EPROTO;
            tk.type = c == 't' ? JSON_TRUE : c == 'f' ? JSON_FALSE : JSON_NULL;
            tk.len = (uint32_t)wl;
            adv = wl;
        } else {
            adv = scan_number(js, len, pos);
            if (adv == 0)
                return HKV_EPROTO;
            tk.type = JSON_NUMBER;
            tk.len = (uint32_t)adv;
        }
        if (toks != NULL) {
            toks[n] = tk;
            /* an object counts members (its keys), an array its elements */
            if (depth > 0 && (stype[depth - 1] == JSON_ARRAY || is_key))
                toks[stack[depth - 1]].size++;
        }
        if (tk.type == JSON_OBJECT || tk.type == JSON_ARRAY) {
            stack[depth] = (uint32_t)n;
            stype[depth] = tk.type;
            depth++;
            ex = tk.type == JSON_OBJECT ? EX_KEY_OR_END : EX_VALUE_OR_END;
        } else if (is_key) {
            ex = EX_COLON;
        } else {
            ex = depth == 0 ? EX_DONE : EX_COMMA_OR_END;
        }
        n++;
        pos += adv;
    }
    if (ex != EX_DONE)
        return HKV_EPROTO; /* empty, or ends inside a value */
    return (int)(n > (size_t)INT32_MAX ? HKV_EFULL : (int)n);
}

int json_member(const char *js, const struct json_tok *t, int obj, const char *name)
{
    if (obj < 0 || t[obj].type != JSON_OBJECT)
        return -1;
    uint32_t i = (uint32_t)obj + 1;
    for (uint32_t m = 0; m < t[obj].size; m++) {
        uint32_t val = i + 1;
        if (json_streq(js, t, (int)i, name))
            return (int)val;
        i = t[val].next;
    }
    return -1;
}

int json_elem(const struct json_tok *t, int arr, uint32_t k)
{
    if (arr < 0 || t[arr].type != JSON_ARRAY || k >= t[arr].size)
        return -1;
    uint32_t i = (uint32_t)arr + 1;
    for (uint32_t m = 0; m < k; m++)
        i = t[i].next;
    return (int)i;
}

int json_string(const char *js, const struct json_tok *t, int i, char *out, size_t cap,
                size_t *n)
{
    if (i < 0 || t[i].type != JSON_STRING)
        return HKV_EINVAL;
    size_t p = t[i].start, end = p + t[i].len, w = 0;
    unsigned char ch[4];
    while (p < end) {
        int k = str_next(js, &p, end, ch);
        if (k < 0)
            return HKV_EINVAL; /* not from json_parse */
        if ((size_t)k > cap - w)
            return HKV_ETOOBIG;
        memcpy(out + w, ch, (size_t)k);
        w += (size_t)k;
    }
    *n = w;
    return HKV_OK;
}

int json_streq(const char *js, const struct json_tok *t, int i, const char *s)
{
    if (i < 0 || t[i].type != JSON_STRING)
        return 0;
    size_t p = t[i].start, end = p + t[i].len, sl = strlen(s), w = 0;
    unsigned char ch[4];
    while (p < end) {
        int k = str_next(js, &p, end, ch);
        if (k < 0 || (size_t)k > sl - w || memcmp(s + w, ch, (size_t)k) != 0)
            return 0;
        w += (size_t)k;
    }
    return w == sl;
}

int json_int64(const char *js, const struct json_tok *t, int i, int64_t *out)
{
    if (i < 0 || (t[i].type != JSON_STRING && t[i].type != JSON_NUMBER))
        return HKV_EINVAL;
    const char *s = js + t[i].start;
    size_t n = t[i].len, k = 0;
    int neg = n > 0 && s[0] == '-';
    k = (size_t)neg;
    if (k >= n || s[k] < '0' || s[k] > '9' || (s[k] == '0' && n > k + 1))
        return HKV_EINVAL;
    uint64_t v = 0;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    int over = 0;
    for (; k < n; k++) {
        unsigned d = (unsigned)(unsigned char)s[k] - '0';
        if (d > 9)
            return HKV_EINVAL; /* '.', 'e', a space, an escape */
        if (v > (lim - d) / 10)
            over = 1;
        else
            v = v * 10 + d;
    }
    if (over)
        return HKV_ETOOBIG;
    if (neg && v == 0)
        return HKV_EINVAL; /* "-0" */
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return HKV_OK;
}

int json_bool(const struct json_tok *t, int i, int *out)
{
    if (i < 0 || (t[i].type != JSON_TRUE && t[i].type != JSON_FALSE))
        return HKV_EINVAL;
    *out = t[i].type == JSON_TRUE;
    return HKV_OK;
}
