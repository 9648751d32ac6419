/* handle.c: the lifetimes of the public handles (contexts, modules, arrays, argument sets,
 * tapes). A handle's memory never goes back to malloc: destroy marks it dead (its magic word)
 * and parks it in its kind's quarantine, so that a later call with the stale pointer reads a
 * dead magic, not freed memory, and fails with DVM_ERR_USAGE; a second destroy is a no-op.
 * Parked handles are reused first in, first out, only once DVM_HANDLE_QUARANTINE of their
 * kind are parked: a stale pointer is detected until that many others were destroyed after
 * it. Each context lists its live children, so that destroying it destroys them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "vm/runtime.h"

#define DVM_HANDLE_QUARANTINE 1024

static const uint32_t live_magic[DVM_HK_COUNT] = {0x43747864u, 0x4d6f6475u, 0x41727261u, 0x41726773u, 0x54617065u};

typedef struct quarantine {
    dvm_handle *head, *tail;
    size_t n;
} quarantine;

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static quarantine q[DVM_HK_COUNT];

void *dvm_handle_alloc(dvm_handle_kind kind, size_t size, void (*scrub)(void *)) {
    dvm_handle *h = NULL;
    pthread_mutex_lock(&q_mu);
    quarantine *qq = &q[kind];
    if (qq->n > DVM_HANDLE_QUARANTINE) {
        h = qq->head;
        qq->head = h->qnext;
        if (!qq->head) qq->tail = NULL;
        qq->n--;
    }
    pthread_mutex_unlock(&q_mu);
    if (h) {
        if (scrub) scrub(h); /* what the dead handle still kept (a module's kernels) */
        memset(h, 0, size);
    } else {
        h = (dvm_handle *)calloc(1, size);
        if (!h) return NULL;
    }
    h->magic = live_magic[kind];
    h->kind = kind;
    return h;
}

void dvm_handle_release(void *p) {
    dvm_handle *h = (dvm_handle *)p;
    __atomic_store_n(&h->magic, DVM_MAGIC_DEAD, __ATOMIC_RELEASE);
    h->qnext = NULL;
    pthread_mutex_lock(&q_mu);
    quarantine *qq = &q[h->kind < DVM_HK_COUNT ? h->kind : 0];
    if (qq->tail) qq->tail->qnext = h;
    else qq->head = h;
    qq->tail = h;
    qq->n++;
    pthread_mutex_unlock(&q_mu);
}

int dvm_handle_live(const void *p, dvm_handle_kind kind) {
    const dvm_handle *h = (const dvm_handle *)p;
    return h && __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == live_magic[kind];
}

int dvm_handle_dead(const void *p) {
    const dvm_handle *h = (const dvm_handle *)p;
    return h && __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == DVM_MAGIC_DEAD;
}

/* ---- a context's children ---- */

void dvm_ctx_adopt(dvm_context *ctx, void *p) {
    dvm_handle *h = (dvm_handle *)p;
    pthread_mutex_lock(&ctx->kids_mu);
    h->prev = NULL;
    h->next = ctx->kids;
    if (ctx->kids) ctx->kids->prev = h;
    ctx->kids = h;
    pthread_mutex_unlock(&ctx->kids_mu);
}

void dvm_ctx_disown(dvm_context *ctx, void *p) {
    dvm_handle *h = (dvm_handle *)p;
    pthread_mutex_lock(&ctx->kids_mu);
    if (h->prev) h->prev->next = h->next;
    else if (ctx->kids == h) ctx->kids = h->next;
    if (h->next) h->next->prev = h->prev;
    h->prev = h->next = NULL;
    pthread_mutex_unlock(&ctx->kids_mu);
}

/* ---- one thread at a time ---- */

static _Thread_local char me_marker; /* its address names the calling thread */

int dvm_ctx_enter(dvm_context *ctx) {
    uintptr_t me = (uintptr_t)&me_marker, cur = 0;
    if (__atomic_compare_exchange_n(&ctx->owner, &cur, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) || cur == me) {
        ctx->depth++;
        dvm_ctx_conflict = NULL;
        return 0;
    }
    dvm_ctx_conflict = ctx;
    return -1;
}

void dvm_ctx_leave(dvm_context *ctx) {
    if (--ctx->depth == 0) __atomic_store_n(&ctx->owner, (uintptr_t)0, __ATOMIC_RELEASE);
}

_Thread_local const dvm_context *dvm_ctx_conflict;
