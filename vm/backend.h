/* backend.h: what every backend (cpu, vulkan, cuda, hip) provides to the host runtime
 * (vm/launch.c). The host does argument binding, sizing orchestration, heap layout (heap/),
 * snapshot/restore of written arrays and error messages; a backend only moves memory and
 * runs verified bytecode.
 *
 * Launch protocol, in order (vm/launch.c):
 *  1. uniforms: host fills the scalar parameters and shape symbols (dvm_param_desc.uslot,
 *     dvm_sym_desc.uslot); the rest of the variant's nuniforms words start at zero.
 *  2. sizes: for stacks with sizing DVM_SZ_PROGRAM, unless cached, the host's sizer
 *     (vm/sizer.c) runs their size programs and the max-reducer on the device through the
 *     backend's size_* primitives and reads back every capacity (one readback).
 *  3. heap: host computes the layout (heap/heap.h) for be->slots() parallel slots plus one
 *     serial slot, and grows the heap buffer (amortised doubling).
 *  4. snapshot: every array slot with `writes` set is copied (be->copy) so that a failed
 *     launch can be undone.
 *  5. be->exec() runs the variant's tasks in order; the first runtime error stops it.
 *  6. on a runtime error: restore the snapshots, format the message from the record. An
 *     adstack overflow of a stack with no formula (DVM_SZ_DEFAULT), when the user set no
 *     capacity, instead restores them, grows that stack and goes back to 3.
 * An ADJOINT launch (dvm_launch with DVM_ADJOINT) runs the ADJOINT variant alone: its
 * phase-0 tasks are the forward, its phase-1 tasks the reverse sweeps, run as windows with
 * the arrays each stage's reverse must see (vm/launch.c run_stages).
 *
 * Return convention of every function that takes `err`: 0 success; -1 failure with a
 * message in err (NUL-terminated, at most errlen bytes). exec and size_read also return 1 for
 * a runtime error, with the record in *rt. */
#ifndef DVM_BACKEND_H
#define DVM_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "bytecode/bc.h"

typedef struct dvm_backend dvm_backend;   /* a backend instance on one device */
typedef struct dvm_buffer dvm_buffer;     /* device memory */
typedef struct dvm_loaded dvm_loaded;     /* a program uploaded to the device */

/* Everything one execution of a variant needs. */
typedef struct dvm_exec {
    const dvm_program *prog;          /* verified */
    const dvm_loaded *loaded;         /* from be->load(prog) */
    uint32_t kernel;                  /* index in prog->kernels */
    uint32_t variant;                 /* dvm_variant_kind */
    const dvm_variant_desc *var;
    uint32_t nslots;                  /* array slots */
    dvm_buffer *const *arrays;        /* per slot */
    const int64_t *arr_len;           /* per slot: element count */
    const int32_t *arr_shape;         /* per slot: DVM_MAX_RANK extents (unused axes 1) */
    uint32_t *uniforms;               /* nuniforms host words: initial values in; the
                                         backend may write back what serial tasks stored */
    uint32_t nuniforms;
    /* adstack heap: slot s (0 <= s <= nthread_slots; s == nthread_slots is the serial slot)
       owns words [s * stride, (s + 1) * stride); stack i lives at stack_off[i] in it:
       word 0 its count, then stack_cap[i] entries. */
    dvm_buffer *heap;
    int64_t stride;
    const int64_t *stack_off;
    const int64_t *stack_cap;
    uint32_t nstacks;
    int64_t nthread_slots;            /* as returned by be->slots() for this exec */
    /* The variant's first host_tasks tasks are serial tasks the host has run already
       (dvm_task_uniform_only; vm/launch.c): their results are in uniforms. A backend must skip
       them: each runs exactly once, and one that stores to a uniform it read (a parameter's,
       say) would not give the same values twice. known:
       per uniform slot, whether the host knows its value before the launch (host-filled, or
       written by those tasks; no later task writes it). total: per task of var, a parallel
       task's iteration count where known covers its extents and starts (saturated at 2^40,
       beyond any grid), else -1: a backend may size its grids from it. Either may be NULL
       (nothing known); read them with dvm_exec_known_i32 and dvm_exec_total. */
    uint32_t host_tasks;
    const uint8_t *known;
    const int64_t *total;
    /* An adjoint runs its stages as several windows of its tasks (var: a copy with a task
       range inside the variant's; vm/launch.c run_stages). resume: an earlier window ran, so
       the serial slot's stacks hold what it pushed (not zeroed) and uniforms hold what it
       stored; more: a later window follows, so every uniform a serial task stored must be
       written back to `uniforms`. */
    int resume, more;
    /* The launch's cancel word (NULL: none, never cancelled): a run stops with DVM_RT_CANCELLED at a backward
       jump that finds it set (interp_run.h, DVM_CANCEL_EVERY). Where be->cancel_word exists
       it is that word, which the device reads; else host memory. */
    const volatile uint32_t *cancel;
} dvm_exec;

/* What the sizer (vm/sizer.c) needs: the variant's stacks, arrays and uniforms (as in dvm_exec). */
typedef struct dvm_size_job {
    const dvm_program *prog;
    const dvm_loaded *loaded;
    const dvm_variant_desc *var;
    uint32_t nslots;
    dvm_buffer *const *arrays;
    const int64_t *arr_len;
    const int32_t *arr_shape;
    const uint32_t *uniforms;
    uint32_t nuniforms;
    int64_t walk_cap; /* serial steps one evaluation may take before DVM_RT_SIZER_CAP (<= 0: no
                         limit); the cpu max-reducer's budget derives from it (dvm_size_plan) */
    const volatile uint32_t *cancel; /* as in dvm_exec */
} dvm_size_job;

/* The sizer's work for one job, as the host (vm/sizer.c) lays it out before any backend call:
   the size programs (one per DVM_SZ_PROGRAM stack, in stack order) and their top-level
   SZ_RANGE nodes, which go to the max-reducer. */
typedef struct dvm_size_prog {
    uint32_t stack;                 /* stack id in the variant */
    uint32_t begin, len;            /* the program: absolute first node, node count */
    uint32_t range_first, nranges;  /* its top-level ranges in dvm_size_plan.ranges */
} dvm_size_prog;
typedef struct dvm_size_range {
    uint32_t prog;                  /* index in dvm_size_plan.progs */
    uint32_t node, end;             /* the SZ_RANGE node and its body's end, program-relative:
                                       the body is nodes node+1 .. end-1 */
} dvm_size_range;
typedef struct dvm_size_plan {
    const dvm_size_job *job;
    const dvm_size_prog *progs;
    uint32_t nprogs;
    const dvm_size_range *ranges;
    uint32_t nranges;
    uint32_t maxlen;                /* the longest program */
    uint32_t maxbody;               /* the longest top-level range body */
    int64_t walk_cap;               /* steps one evaluation may take (job->walk_cap, or INT64_MAX) */
    int64_t reduce_budget;          /* steps all evaluations of one range may take together
                                       (DVM_SIZER_REDUCE_FACTOR, vm/sizer.h): the cpu backend
                                       keeps it, the GPUs keep walk_cap per evaluation */
} dvm_size_plan;
typedef struct dvm_sizing dvm_sizing; /* a backend's state for one plan, on its device */

/* From dvm_context_opts (include/dvm.h documents each; dvm_context_create checks them). */
typedef struct dvm_backend_opts {
    int device;
    int threads;     /* cpu only; 0 = all cores */
    int cpu_lanes;   /* cpu: parallel tasks through the lane interpreters */
    int gpu_threads; /* cuda, hip, vulkan: > 0, at most this many threads run a parallel task */
    int vk_no_int64, vk_no_float_atomics; /* vulkan: as on a device without the feature */
    int64_t vk_max_alloc; /* vulkan: > 0, the largest allocation lowered to this many bytes */
    int vk_lanes;         /* vulkan: 0 (the device's default), 1 or 4 iterations an invocation */
    int cpu_no_avx2; /* cpu: as on a CPU without AVX2 (the blocks' baseline copy; tests) */
} dvm_backend_opts;

typedef struct dvm_backend_vtbl {
    const char *name; /* "cpu", "vulkan", "cuda", "hip" */
    /* Opens the backend on opts->device. NULL on failure, with why in err. */
    dvm_backend *(*open)(const dvm_backend_opts *opts, char *err, size_t errlen);
    void (*close)(dvm_backend *be);
    /* Appends a description of every device this backend finds (or why none) to out,
       one line each, for `dvm info`. Returns the number of devices. */
    int (*probe)(char *out, size_t outlen);
    /* One line naming the open device. */
    const char *(*device_name)(dvm_backend *be);
    /* 1 if device opts->device is a software implementation that runs on the host CPU (a
       Vulkan device of type VK_PHYSICAL_DEVICE_TYPE_CPU, such as lavapipe), with its name in
       `name`; else 0 (also when the device does not exist: open says why). `auto` passes over
       such a device, since the cpu backend runs the same bytecode much faster (registry.c).
       NULL: the backend has none. */
    int (*software)(const dvm_backend_opts *opts, char *name, size_t namelen);

    int (*alloc)(dvm_backend *be, size_t bytes, dvm_buffer **out, char *err, size_t errlen); /* zeroed */
    void (*free)(dvm_backend *be, dvm_buffer *b);
    int (*write)(dvm_backend *be, dvm_buffer *b, size_t off, const void *src, size_t n, char *err, size_t errlen);
    int (*read)(dvm_backend *be, dvm_buffer *b, size_t off, void *dst, size_t n, char *err, size_t errlen);
    int (*copy)(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n, char *err, size_t errlen);
    /* copy, which the backend may defer: to the start of the next exec (one submission with
       the tasks), or to the start of any other call (write, read, copy, free, sizing), which
       runs it first. launch.c takes the snapshots with it: their destinations are scratch
       buffers that only a later call reads. NULL: launch.c calls copy. */
    int (*copy_lazy)(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n, char *err, size_t errlen);
    /* A buffer over `bytes` of caller-owned host memory at p, used in place (no copy); free
       releases the buffer, never the memory. NULL where buffers are not host memory (every
       backend but cpu): dvm_array_wrap_host then refuses. */
    int (*wrap_host)(dvm_backend *be, void *p, size_t bytes, dvm_buffer **out, char *err, size_t errlen);
    /* The same over caller-owned device memory at p (cuda, hip: an address the driver knows,
       on this device, with `bytes` inside its allocation). NULL on the other backends. */
    int (*wrap_device)(dvm_backend *be, void *p, size_t bytes, dvm_buffer **out, char *err, size_t errlen);
    /* Where the buffer's memory is: a host address (cpu) or a device address (cuda, hip).
       NULL where it has none the caller could use (vulkan). */
    void *(*data)(dvm_backend *be, dvm_buffer *b);

    /* Uploads the program's nodes and constants (kept until unload). */
    int (*load)(dvm_backend *be, const dvm_program *prog, dvm_loaded **out, char *err, size_t errlen);
    void (*unload)(dvm_backend *be, dvm_loaded *l);

    /* The sizer's primitives (vm/sizer.c runs them; the protocol's step 2). size_begin uploads
       what the plan's programs read (uniforms, array table) and makes room for their state.
       Then, per program p in order: size_pass(p, final 0), the range pass (one thread: each
       top-level SZ_RANGE stores its bounds and skips its body); size_reduce(p), the max-reducer
       over p's top-level ranges (each body evaluated in parallel over its bound variable, a
       max per range; nested ranges walked serially); size_pass(p, final 1), the final pass (one
       thread: each top-level range takes the reducer's max, or 0 when empty; the value, clamped
       at 0, is p's capacity). Every evaluation stops at walk_cap steps (DVM_RT_SIZER_CAP) and
       polls job->cancel (DVM_RT_CANCELLED); the first runtime error wins and the later work
       does nothing. A backend may queue these calls: size_read waits for them and reads back
       the capacities (caps[p] per program) and the error record: 0, 1 (runtime error in *rt,
       caps untouched) or -1. size_end frees the state (after any of the calls). */
    int (*size_begin)(dvm_backend *be, const dvm_size_plan *plan, dvm_sizing **out, char *err, size_t errlen);
    int (*size_pass)(dvm_backend *be, dvm_sizing *s, uint32_t prog, int final, char *err, size_t errlen);
    int (*size_reduce)(dvm_backend *be, dvm_sizing *s, uint32_t prog, char *err, size_t errlen);
    int (*size_read)(dvm_backend *be, dvm_sizing *s, int64_t *caps, dvm_rt_error *rt, char *err, size_t errlen);
    void (*size_end)(dvm_backend *be, dvm_sizing *s);

    /* How many parallel thread slots (heap slices) exec will use for this variant. */
    int64_t (*slots)(dvm_backend *be, const dvm_exec *x);

    /* Runs every task of the variant in order. Returns 0, 1 (runtime error in *rt), -1. */
    int (*exec)(dvm_backend *be, const dvm_exec *x, dvm_rt_error *rt, char *err, size_t errlen);

    /* The word a launch's cancel request is stored in (dvm_context_cancel), in memory the
       device reads while it runs (mapped host memory): kept until close. NULL: the context
       keeps the word in host memory (the cpu backend). */
    volatile uint32_t *(*cancel_word)(dvm_backend *be);

    /* Whether the backend may stop task t (total iterations: 1 for a serial task) with an
       error of its own after earlier tasks have written, such as a guard against a driver's
       limits (vm/launch.c then keeps the launch's snapshot). NULL: never. */
    int (*may_stop)(dvm_backend *be, const dvm_node *nodes, const dvm_task_desc *t, int64_t total);
} dvm_backend_vtbl;

/* A uniform slot's value where the host knows it before the launch (x->known: 1, *v set),
   else 0; and task t's (index in x->var) iteration count where the host knows it, else -1. */
static inline int dvm_exec_known_i32(const dvm_exec *x, uint32_t slot, int32_t *v) {
    if (!x->known || !x->uniforms || slot >= x->nuniforms || !x->known[slot]) return 0;
    *v = (int32_t)x->uniforms[slot];
    return 1;
}
static inline int64_t dvm_exec_total(const dvm_exec *x, uint32_t t) { return x->total ? x->total[t] : -1; }

/* vm/cpu/interp_cpu.c: runs a dvm_task_uniform_only serial task over uniforms on the
   host; 0, or 1 if it failed. */
int dvm_cpu_run_uniform_task(const dvm_program *p, uint32_t task_index, const dvm_task_desc *t, uint32_t *uniforms);

/* The backends compiled into this build (NULL entries for those left out). */
extern const dvm_backend_vtbl dvm_backend_cpu;
#ifdef DVM_HAVE_VULKAN
extern const dvm_backend_vtbl dvm_backend_vulkan;
#endif
#ifdef DVM_HAVE_CUDA
extern const dvm_backend_vtbl dvm_backend_cuda;
#endif
#ifdef DVM_HAVE_HIP
extern const dvm_backend_vtbl dvm_backend_hip;
#endif

#endif
