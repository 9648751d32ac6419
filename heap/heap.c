/* heap.c: adstack heap layout and amortised growth (heap.h describes both). */
#include "heap/heap.h"

#include <stdio.h>

int dvm_heap_layout_compute(const int64_t *caps, uint32_t nstacks, int64_t nthread_slots, int64_t *off,
                            dvm_heap_layout *out, char *err, size_t errlen)
{
    const int64_t lim = INT64_MAX / 4; /* total bytes must fit int64 too */
    if (nthread_slots < 1 || nthread_slots >= lim) {
        if (err && errlen) snprintf(err, errlen, "adstack heap: invalid thread slot count %lld", (long long)nthread_slots);
        return -1;
    }
    int64_t w = 0;
    for (uint32_t i = 0; i < nstacks; i++) {
        if (caps[i] < 0 || caps[i] >= lim - 1 - w) {
            if (err && errlen)
                snprintf(err, errlen, "adstack heap: capacity %lld of stack %u is negative or too large",
                         (long long)caps[i], i);
            return -1;
        }
        off[i] = w;
        w += 1 + caps[i];
    }
    int64_t stride = (w + DVM_HEAP_ALIGN_WORDS - 1) / DVM_HEAP_ALIGN_WORDS * DVM_HEAP_ALIGN_WORDS;
    int64_t nslots = nthread_slots + 1;
    if (stride > 0 && nslots > lim / stride) {
        if (err && errlen)
            snprintf(err, errlen, "adstack heap: %lld slots of %lld words overflow 64-bit arithmetic",
                     (long long)nslots, (long long)stride);
        return -1;
    }
    if ((uint64_t)(nslots * stride) > (uint64_t)(SIZE_MAX / 4)) {
        if (err && errlen) snprintf(err, errlen, "adstack heap: %lld words exceed the address space", (long long)(nslots * stride));
        return -1;
    }
    out->stride = stride;
    out->nslots = nslots;
    out->total_words = nslots * stride;
    out->min_words = nslots * w;
    return 0;
}

int dvm_heap_reserve(dvm_heap *h, const dvm_heap_mem *mem, size_t bytes, char *err, size_t errlen)
{
    if (bytes > h->peak_need) h->peak_need = bytes;
    if (bytes == 0 || (h->buf && h->bytes >= bytes)) return 0;
    size_t want = h->bytes > SIZE_MAX / 2 ? SIZE_MAX : h->bytes * 2;
    if (want < bytes) want = bytes;
    /* Free first: the old contents are dead, and peak memory stays at one buffer. */
    if (h->buf) mem->free(mem->user, h->buf);
    h->buf = NULL;
    h->bytes = 0;
    void *b = NULL;
    if (mem->alloc(mem->user, want, &b, err, errlen) != 0) {
        want = bytes;
        if (mem->alloc(mem->user, want, &b, err, errlen) != 0) return -1;
    }
    h->buf = b;
    h->bytes = want;
    return 0;
}

void dvm_heap_release(dvm_heap *h, const dvm_heap_mem *mem)
{
    if (h->buf) mem->free(mem->user, h->buf);
    h->buf = NULL;
    h->bytes = 0;
    h->peak_need = 0;
}
