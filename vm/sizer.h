/* sizer.h: the adstack sizer, written once for every backend (vm/sizer.c): it lays out the
 * work of a variant's size programs and runs it through the backend's size_* primitives
 * (vm/backend.h); and the cache of its results per (kernel, variant). */
#ifndef DVM_SIZER_H
#define DVM_SIZER_H

#include <stddef.h>
#include <stdint.h>
#include "vm/backend.h"

/* The cpu max-reducer's budget (dvm_size_plan.reduce_budget): walk_cap times this many steps
 * summed over one range's evaluations (a range over 2^40 values must not run for hours); GPU
 * backends run the evaluations in parallel on thousands of threads and keep only walk_cap per
 * evaluation. */
#define DVM_SIZER_REDUCE_FACTOR 64

/* Runs the size program of every DVM_SZ_PROGRAM stack of job->var on the backend and stores
 * each stack's capacity in caps[i] (other entries untouched, and all of them on failure).
 * Returns 0, 1 (a runtime error in *rt: DVM_RT_SIZER_CAP, DVM_RT_CANCELLED), or -1 with a
 * message in err. */
int dvm_sizer_run(const dvm_backend_vtbl *vt, dvm_backend *be, const dvm_size_job *job, int64_t *caps,
                  dvm_rt_error *rt, char *err, size_t errlen);

/* Stack capacities computed by the sizer for one (kernel, variant), reused while the key is
 * the same: the uniforms, the default stack size (and whether the user gave it), and the
 * identity and version of every array that a size program reads (SZ_LOAD). Shapes are in
 * the uniforms (shape symbols) or literal, so they need no key words of their own. The
 * capacities learned by growing stacks with no formula share the key (vm/launch.c builds it). */
typedef struct dvm_size_cache {
    int valid;
    uint32_t *key;
    size_t keylen;
    int64_t *caps; /* nstacks of the variant */
    uint32_t ncaps;
    /* per stack with no formula (DVM_SZ_DEFAULT): the capacity a launch with this key grew it
       to after an overflow (vm/launch.c, run_variant), 0 if none; the next launch starts there */
    int64_t *learned;
    int scanned;        /* load_slot has been computed (dvm_size_cache_scan) */
    uint8_t *load_slot; /* per array slot: 1 if some size program reads its elements */
} dvm_size_cache;

/* Fills c->load_slot for the variant once: which array slots its size programs read elements
 * of (their identity and version go into the key). 0, or -1 out of memory. */
int dvm_size_cache_scan(dvm_size_cache *c, const dvm_program *p, const dvm_variant_desc *var);
void dvm_size_cache_free(dvm_size_cache *c);

#endif
