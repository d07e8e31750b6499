/* xmlscan.c: bounded extraction of one element's text (see xmlscan.h).
 *
 * Used on bytes from the network (S3 error bodies, STS answers), so every
 * read is bounded by len and nothing assumes a terminating NUL. */
#include "base/xmlscan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* First occurrence of needle[0..nlen) in hay[0..hlen), or NULL. */
static const char *find(const char *hay, size_t hlen, const char *needle,
                        size_t nlen)
{
    if (nlen == 0 || hlen < nlen)
        return NULL;
    for (size_t i = 0; i + nlen <= hlen; i++)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, nlen))
            return hay + i;
    return NULL;
}

/* Append the UTF-8 encoding of code point cp; returns bytes written. */
static size_t put_utf8(char *o, unsigned long cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Decode one entity starting at s[0] == '&' (n bytes available). Writes the
 * decoded bytes to o and returns how many input bytes it used, or 0 when it
 * is not an entity we know (the '&' is then copied as is). */
static size_t decode_entity(const char *s, size_t n, char *o, size_t *olen)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'},
                 {"&quot;", '"'}, {"&apos;", '\''}};
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        size_t l = strlen(named[i].name);
        if (n >= l && !memcmp(s, named[i].name, l)) {
            o[0] = named[i].c;
            *olen = 1;
            return l;
        }
    }
    if (n >= 4 && s[1] == '#') {
        int hexa = (s[2] == 'x' || s[2] == 'X');
        size_t i = hexa ? 3 : 2;
        unsigned long cp = 0;
        size_t digits = 0;
        for (; i < n && digits < 8 && s[i] != ';'; i++, digits++) {
            char c = s[i];
            int v = (c >= '0' && c <= '9')   ? c - '0'
                    : hexa && c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : hexa && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                   : -1;
            if (v < 0)
                return 0;
            cp = cp * (hexa ? 16 : 10) + (unsigned long)v;
        }
        if (i >= n || s[i] != ';' || digits == 0 || cp == 0 || cp > 0x10ffff)
            return 0;
        *olen = put_utf8(o, cp);
        return i + 1;
    }
    return 0;
}

char *vt__xml_tag(const char *body, size_t len, const char *tag)
{
    char open[72], close[72];
    size_t tlen;
    const char *p, *end = body + len, *vstart = NULL, *vend;
    char *out = NULL;

    if (!body || !tag || (tlen = strlen(tag)) == 0 || tlen > 64)
        return NULL;
    open[0] = '<';
    memcpy(open + 1, tag, tlen);
    close[0] = '<';
    close[1] = '/';
    memcpy(close + 2, tag, tlen);
    close[2 + tlen] = '>';

    /* Start tag: "<tag>" or "<tag attr...>", not "<tagSuffix>". */
    for (p = body; p < end;) {
        const char *o = find(p, (size_t)(end - p), open, tlen + 1);
        if (!o)
            return NULL;
        const char *after = o + tlen + 1;
        if (after >= end)
            return NULL;
        if (*after == '>') {
            vstart = after + 1;
            break;
        }
        if (*after == '/' && after + 1 < end && after[1] == '>') {
            out = malloc(1); /* <tag/>: empty element */
            if (out)
                out[0] = '\0';
            return out;
        }
        if (*after == ' ' || *after == '\t' || *after == '\r' || *after == '\n') {
            const char *gt = memchr(after, '>', (size_t)(end - after));
            if (!gt)
                return NULL;
            if (gt[-1] == '/') { /* <tag/>: empty element */
                out = malloc(1);
                if (out)
                    out[0] = '\0';
                return out;
            }
            vstart = gt + 1;
            break;
        }
        p = after;
    }
    if (!vstart)
        return NULL;
    vend = find(vstart, (size_t)(end - vstart), close, tlen + 3);
    if (!vend || (size_t)(vend - vstart) > VT_XML_MAX_VALUE)
        return NULL;

    /* Decoding never grows the text (longest output, 4 bytes of UTF-8,
     * comes from at least 4 input bytes like "&#x10000;"). */
    size_t n = (size_t)(vend - vstart), j = 0;
    out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t used = 0, olen = 0;
        if (vstart[i] == '&')
            used = decode_entity(vstart + i, n - i, out + j, &olen);
        if (used) {
            i += used;
            j += olen;
        } else {
            out[j++] = vstart[i++];
        }
    }
    out[j] = '\0';
    return out;
}

const char *vt__xml_next(const char *body, size_t len, const char *tag,
                         size_t *inner_len, const char **next)
{
    char open[72], close[72];
    size_t tlen;
    const char *o, *c;

    if (!body || !tag || (tlen = strlen(tag)) == 0 || tlen > 64)
        return NULL;
    open[0] = '<';
    memcpy(open + 1, tag, tlen);
    open[tlen + 1] = '>';
    close[0] = '<';
    close[1] = '/';
    memcpy(close + 2, tag, tlen);
    close[2 + tlen] = '>';
    o = find(body, len, open, tlen + 2);
    if (!o)
        return NULL;
    o += tlen + 2;
    c = find(o, (size_t)(body + len - o), close, tlen + 3);
    if (!c)
        return NULL;
    *inner_len = (size_t)(c - o);
    *next = c + tlen + 3;
    return o;
}
