/* launch.h: launch orchestration state (vm/launch.c implements dvm_launch and follows the
 * protocol written at the top of vm/backend.h). */
#ifndef DVM_LAUNCH_H
#define DVM_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include "vm/backend.h"
#include "heap/heap.h"

/* Stack capacities computed by the sizer for one (kernel, variant), reused while the key is
 * the same: the uniforms, the default stack size (and whether the user gave it), and the
 * identity and version of every array that a size program reads (SZ_LOAD). Shapes are in
 * the uniforms (shape symbols) or literal, so they need no key words of their own. The
 * capacities learned by growing stacks with no formula share the key. */
typedef struct dvm_size_cache {
    int valid;
    uint32_t *key;
    size_t keylen;
    int64_t *caps; /* nstacks of the variant */
    uint32_t ncaps;
    /* per stack with no formula (DVM_SZ_DEFAULT): the capacity a launch with this key grew it
       to after an overflow (vm/launch.c, run_variant), 0 if none; the next launch starts there */
    int64_t *learned;
    int scanned;        /* load_slots has been computed */
    uint8_t *load_slot; /* per array slot: 1 if some size program reads its elements */
} dvm_size_cache;

/* Buffers a context reuses across launches. */
typedef struct dvm_launch_scratch {
    dvm_heap heap;
    dvm_buffer **snap; /* snapshot buffers, by position in the launch's list of written slots */
    size_t *snap_bytes;
    uint32_t nsnap;
} dvm_launch_scratch;

void dvm_size_cache_free(dvm_size_cache *c);
void dvm_launch_scratch_free(const dvm_backend_vtbl *vt, dvm_backend *be, dvm_launch_scratch *s);

#endif
