/* arena.c: a list of chunks; large requests get a chunk of their own. */
#include "compiler/arena.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} chunk;

struct dvm_arena {
    chunk *head;
    size_t total, limit; /* bytes in chunks; the test limit (0: none) */
};

void dvm_arena_set_limit(dvm_arena *a, size_t bytes) { a->limit = bytes; }

dvm_arena *dvm_arena_create(void) { return calloc(1, sizeof(dvm_arena)); }

void dvm_arena_destroy(dvm_arena *a) {
    if (!a) return;
    for (chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

void *dvm_arena_alloc(dvm_arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (size == 0) size = 16;
    chunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        if (a->limit && (a->total + cap > a->limit || a->total + cap < a->total)) return NULL;
        chunk *n = malloc(sizeof(chunk) + cap);
        if (!n) return NULL;
        a->total += cap;
        n->used = 0;
        n->cap = cap;
        if (c && size > 65536) { /* keep filling the current chunk */
            n->next = c->next;
            c->next = n;
        } else {
            n->next = c;
            a->head = n;
        }
        c = n;
    }
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

void *dvm_arena_grow(dvm_arena *a, void *old, size_t old_size, size_t new_size) {
    void *p = dvm_arena_alloc(a, new_size);
    if (p && old && old_size) memcpy(p, old, old_size < new_size ? old_size : new_size);
    return p;
}

char *dvm_arena_strndup(dvm_arena *a, const char *s, size_t n) {
    char *p = dvm_arena_alloc(a, n + 1);
    if (p) memcpy(p, s, n);
    return p;
}

char *dvm_arena_printf(dvm_arena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n >= 0 ? dvm_arena_alloc(a, (size_t)n + 1) : NULL;
    if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}
