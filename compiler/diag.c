/* diag.c: formatting of compiler diagnostics. */
#include "compiler/diag.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dvm_diags_init(dvm_diags *d, const char *file, const char *src, size_t len) {
    memset(d, 0, sizeof *d);
    d->file = file ? file : "<source>";
    d->src = src;
    d->len = len;
    d->max_errors = 20;
}

void dvm_diags_free(dvm_diags *d) {
    free(d->buf);
    d->buf = NULL;
    d->n = d->cap = 0;
}

static void put(dvm_diags *d, const char *s, size_t n) {
    if (d->n + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        while (cap < d->n + n + 1) cap *= 2;
        char *b = realloc(d->buf, cap);
        if (!b) return;
        d->buf = b;
        d->cap = cap;
    }
    memcpy(d->buf + d->n, s, n);
    d->n += n;
    d->buf[d->n] = 0;
}

static void putf(dvm_diags *d, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    put(d, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void dvm_diag(dvm_diags *d, int line, int col, const char *fmt, ...) {
    d->nerrors++;
    if (d->nerrors > d->max_errors) return;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line <= 0) {
        putf(d, "%s: error: %s\n", d->file, msg);
        return;
    }
    putf(d, "%s:%d:%d: error: %s\n", d->file, line, col > 0 ? col : 1, msg);
    /* find the source line */
    const char *p = d->src, *end = d->src ? d->src + d->len : NULL;
    for (int l = 1; p && p < end && l < line; p++)
        if (*p == '\n') l++;
    if (!p || p >= end) return;
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\r') e++;
    put(d, "    ", 4);
    put(d, p, (size_t)(e - p));
    put(d, "\n    ", 5);
    for (int i = 1; i < col && p + i - 1 < e; i++) put(d, p[i - 1] == '\t' ? "\t" : " ", 1);
    put(d, "^\n", 2);
}

char *dvm_diags_take(dvm_diags *d) {
    if (d->nerrors > d->max_errors) putf(d, "%s: note: %d more errors not shown\n", d->file, d->nerrors - d->max_errors);
    char *b = d->buf ? d->buf : calloc(1, 1);
    d->buf = NULL;
    d->n = d->cap = 0;
    return b;
}
