/* arena.h: one bump allocator per compilation; everything the compiler builds (tokens,
 * syntax tree, IR, diagnostics) lives in it and is freed at once with it. */
#ifndef DVM_ARENA_H
#define DVM_ARENA_H
#include <stddef.h>

typedef struct dvm_arena dvm_arena;

dvm_arena *dvm_arena_create(void);
void dvm_arena_destroy(dvm_arena *a);
/* For tests of the out-of-memory paths: every allocation that would take the arena's chunks
 * past `bytes` in all fails as malloc would (0: no limit, the default). */
void dvm_arena_set_limit(dvm_arena *a, size_t bytes);
/* Zeroed memory aligned for any type; NULL only when the system is out of memory. */
void *dvm_arena_alloc(dvm_arena *a, size_t size);
/* Grows an array allocated in the arena (the old block is abandoned, not freed). */
void *dvm_arena_grow(dvm_arena *a, void *old, size_t old_size, size_t new_size);
char *dvm_arena_strndup(dvm_arena *a, const char *s, size_t n);
char *dvm_arena_printf(dvm_arena *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#endif
