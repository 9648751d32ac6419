/* test_heap.c: the adstack heap layout (offsets, stride, totals, overflow) and its
 * amortised growth through the CPU backend's allocator. */
#include <stdio.h>
#include <string.h>

#include "heap/heap.h"
#include "vm/backend.h"

#include "tests/check.h"

/* the heap's allocator over the CPU backend, as vm/launch.c passes its context's backend */
static int cpu_alloc(void *user, size_t bytes, void **out, char *err, size_t errlen)
{
    dvm_buffer *b = NULL;
    int rc = dvm_backend_cpu.alloc((dvm_backend *)user, bytes, &b, err, errlen);
    *out = b;
    return rc;
}
static void cpu_free(void *user, void *buf) { dvm_backend_cpu.free((dvm_backend *)user, (dvm_buffer *)buf); }

int main(void)
{
    char err[256];
    int64_t off[4];
    dvm_heap_layout L;

    /* three stacks of 5, 0 and 20 entries, 3 thread slots + the serial one */
    int64_t caps[3] = {5, 0, 20};
    CHECK(dvm_heap_layout_compute(caps, 3, 3, off, &L, err, sizeof err) == 0, "layout: %s", err);
    CHECK(off[0] == 0 && off[1] == 6 && off[2] == 7, "offsets: expected 0 6 7, got %lld %lld %lld",
          (long long)off[0], (long long)off[1], (long long)off[2]);
    CHECK(L.stride == 32, "stride: 28 words rounded to 16 -> 32, got %lld", (long long)L.stride);
    CHECK(L.nslots == 4 && L.total_words == 128 && L.min_words == 4 * 28,
          "totals: expected 4 slots, 128 words, 112 minimum; got %lld %lld %lld", (long long)L.nslots,
          (long long)L.total_words, (long long)L.min_words);

    /* no stacks: nothing to allocate */
    CHECK(dvm_heap_layout_compute(caps, 0, 8, off, &L, err, sizeof err) == 0 && L.stride == 0 && L.total_words == 0,
          "empty layout: stride %lld total %lld", (long long)L.stride, (long long)L.total_words);

    /* errors: negative capacity, 64-bit overflow, no thread slot */
    int64_t neg[1] = {-1};
    CHECK(dvm_heap_layout_compute(neg, 1, 1, off, &L, err, sizeof err) == -1 && strstr(err, "stack 0"),
          "negative capacity must fail naming the stack, got '%s'", err);
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    CHECK(dvm_heap_layout_compute(huge, 2, (int64_t)1 << 30, off, &L, err, sizeof err) == -1,
          "2^41 words times 2^30 slots must overflow");
    int64_t hugest[2] = {INT64_MAX / 8, INT64_MAX / 8};
    CHECK(dvm_heap_layout_compute(hugest, 2, 1, off, &L, err, sizeof err) == -1, "sum of capacities must overflow");
    CHECK(dvm_heap_layout_compute(caps, 3, 0, off, &L, err, sizeof err) == -1, "zero thread slots must fail");

    /* growth: doubling, reuse, never shrinks */
    dvm_backend_opts o = {.threads = 2};
    dvm_backend *be = dvm_backend_cpu.open(&o, err, sizeof err);
    CHECK(be != NULL, "open: %s", err);
    const dvm_heap_mem mem = {cpu_alloc, cpu_free, be};
    dvm_heap h;
    memset(&h, 0, sizeof h);
    CHECK(dvm_heap_reserve(&h, &mem, 0, err, sizeof err) == 0 && h.buf == NULL, "0 bytes needs no buffer");
    CHECK(dvm_heap_reserve(&h, &mem, 1000, err, sizeof err) == 0 && h.bytes == 1000, "first: %zu", h.bytes);
    void *first = h.buf;
    CHECK(dvm_heap_reserve(&h, &mem, 600, err, sizeof err) == 0 && h.buf == first && h.bytes == 1000,
          "a smaller need reuses the buffer (got %zu bytes)", h.bytes);
    CHECK(dvm_heap_reserve(&h, &mem, 1200, err, sizeof err) == 0 && h.bytes == 2000,
          "growth doubles: expected 2000, got %zu", h.bytes);
    CHECK(dvm_heap_reserve(&h, &mem, 9000, err, sizeof err) == 0 && h.bytes == 9000,
          "a big jump takes what is needed: expected 9000, got %zu", h.bytes);
    CHECK(h.peak_need == 9000, "peak need: %zu", h.peak_need);
    /* the buffer is usable over its whole size */
    unsigned char z[9000];
    memset(z, 0xAB, sizeof z);
    CHECK(dvm_backend_cpu.write(be, (dvm_buffer *)h.buf, 0, z, sizeof z, err, sizeof err) == 0, "write whole heap: %s", err);
    CHECK(dvm_backend_cpu.write(be, (dvm_buffer *)h.buf, 1, z, sizeof z, err, sizeof err) == -1, "write past the end must fail");
    dvm_heap_release(&h, &mem);
    CHECK(h.buf == NULL && h.bytes == 0, "release empties the heap");
    dvm_backend_cpu.close(be);
    if (fails) {
        printf("%d check(s) failed\n", fails);
        return 1;
    }
    printf("test_heap: all passed\n");
    return 0;
}
