/* heap.h: the one adstack heap layout, and its growth. Host side, shared by all backends.
 *
 * Layout (32-bit words). The heap holds nslots = nthread_slots + 1 slots: one per thread
 * the backend dispatches (be->slots()), then the serial slot. Slot s owns words
 * [s * stride, (s + 1) * stride). Within a slot, stack i starts at off[i]:
 *     word off[i]          its count (entries in use)
 *     words off[i]+1 ..    cap[i] entries, one primal value each (f32, i32 or bool)
 * Stacks follow each other in id order: off[0] = 0, off[i+1] = off[i] + 1 + cap[i].
 * The stride is that sum rounded up to DVM_HEAP_ALIGN_WORDS (a 64-byte cache line), so
 * no two CPU threads' slots share a line. All arithmetic in 64 bits; a layout that would
 * not fit in int64 or in size_t bytes is an error, never a wrap.
 * The offsets and stride here are the one definition; a backend only maps (slot, word) to
 * an address (DVM_HEAP_WORD, interp_core.h): the CPU as above, CUDA, HIP and Vulkan interleaved,
 * word w of slot s at w * nslots + s (a warp's pushes coalesce). Same total_words.
 *
 * Growth: a dvm_heap keeps one buffer per backend, reused across launches. When a launch
 * needs more, the buffer is replaced by one of max(needed, 2 * current) bytes (amortised
 * doubling; falls back to exactly `needed` if the doubled allocation fails); it never
 * shrinks. Contents are not preserved: every launch zeroes the counts it uses. */
#ifndef DVM_HEAP_H
#define DVM_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define DVM_HEAP_ALIGN_WORDS 16

typedef struct dvm_heap_layout {
    int64_t stride;      /* words per slot */
    int64_t nslots;      /* nthread_slots + 1 */
    int64_t total_words; /* nslots * stride */
    int64_t min_words;   /* nslots * sum(1 + cap[i]): the layout without alignment padding */
} dvm_heap_layout;

/* Fills off[0..nstacks) and *out for caps[0..nstacks) and nthread_slots (>= 1).
 * Returns 0, or -1 with a message (negative capacity, overflow). */
int dvm_heap_layout_compute(const int64_t *caps, uint32_t nstacks, int64_t nthread_slots, int64_t *off,
                            dvm_heap_layout *out, char *err, size_t errlen);

/* Where the heap's buffer comes from: the runtime passes its backend's allocator (vm/launch.c),
 * so heap/ knows nothing of backends. alloc: 0, or -1 with a message; the buffer is opaque. */
typedef struct dvm_heap_mem {
    int (*alloc)(void *user, size_t bytes, void **out, char *err, size_t errlen);
    void (*free)(void *user, void *buf);
    void *user;
} dvm_heap_mem;

typedef struct dvm_heap {
    void *buf;       /* from mem->alloc; NULL until the first launch that needs stacks */
    size_t bytes;    /* size of buf */
    size_t peak_need; /* the largest layout requested so far, in bytes */
} dvm_heap;

/* Makes h->buf at least `bytes` long (see Growth above). Returns 0, or -1 with a message.
 * bytes == 0 needs no buffer and leaves h unchanged. */
int dvm_heap_reserve(dvm_heap *h, const dvm_heap_mem *mem, size_t bytes, char *err, size_t errlen);

/* Frees the buffer; h is empty afterwards (reusable). */
void dvm_heap_release(dvm_heap *h, const dvm_heap_mem *mem);

#endif
