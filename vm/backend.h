/* backend.h: what every backend (cpu, vulkan, cuda, hip) provides to the host runtime
 * (vm/launch.c). The host does argument binding, sizing orchestration, heap layout (heap/),
 * snapshot/restore of written arrays and error messages; a backend only moves memory and
 * runs verified bytecode.
 *
 * Launch protocol, in order (vm/launch.c):
 *  1. uniforms: host fills the scalar parameters and shape symbols (dvm_param_desc.uslot,
 *     dvm_sym_desc.uslot); the rest of the variant's nuniforms words start at zero.
 *  2. sizes: for stacks with sizing DVM_SZ_PROGRAM, unless cached, be->size() runs the
 *     sizer and max-reducer on the device and returns every capacity (one readback).
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
 * message in err (NUL-terminated, at most errlen bytes). exec and size also return 1 for a
 * runtime error, with the record in *rt. */
#ifndef DVM_BACKEND_H
#define DVM_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "../bytecode/bc.h"

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
       written by those tasks): a backend may size its grids from such extents. */
    uint32_t host_tasks;
    const uint8_t *known;
    /* An adjoint runs its stages as several windows of its tasks (var: a copy with a task
       range inside the variant's; vm/launch.c run_stages). resume: an earlier window ran, so
       the serial slot's stacks hold what it pushed (not zeroed) and uniforms hold what it
       stored; more: a later window follows, so every uniform a serial task stored must be
       written back to `uniforms`. */
    int resume, more;
    /* The launch's cancel word (NULL: none, never cancelled): a run stops with DVM_RT_CANCELLED at a backward
       jump that finds it set (interp_core.h, DVM_CANCEL_EVERY). Where be->cancel_word exists
       it is that word, which the device reads; else host memory. */
    const volatile uint32_t *cancel;
} dvm_exec;

/* What the sizer needs: the variant's stacks, arrays and uniforms (as in dvm_exec). */
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
    int64_t walk_cap; /* serial steps one evaluation may take before DVM_RT_SIZER_CAP; also the
                         steps one max-reduction (every evaluation of a top-level range's body)
                         may take in all, times DVM_SIZER_REDUCE_FACTOR (the cpu backend) */
    const volatile uint32_t *cancel; /* as in dvm_exec */
} dvm_size_job;

/* The cpu max-reducer's budget: walk_cap times this many steps summed over one range's
   evaluations (a range over 2^40 values must not run for hours); GPU backends run the
   evaluations in parallel on thousands of threads and keep only walk_cap per evaluation. */
#define DVM_SIZER_REDUCE_FACTOR 64

/* From dvm_context_opts (include/dvm.h documents each; dvm_context_create checks them). */
typedef struct dvm_backend_opts {
    int device;
    int threads;     /* cpu only; 0 = all cores */
    int cpu_lanes;   /* cpu: parallel tasks through the lane interpreters */
    int gpu_threads; /* cuda, hip, vulkan: > 0, at most this many threads run a parallel task */
    int vk_no_int64, vk_no_float_atomics; /* vulkan: as on a device without the feature */
    int64_t vk_max_alloc; /* vulkan: > 0, the largest allocation lowered to this many bytes */
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

    int (*alloc)(dvm_backend *be, size_t bytes, dvm_buffer **out, char *err, size_t errlen); /* zeroed */
    void (*free)(dvm_backend *be, dvm_buffer *b);
    int (*write)(dvm_backend *be, dvm_buffer *b, size_t off, const void *src, size_t n, char *err, size_t errlen);
    int (*read)(dvm_backend *be, dvm_buffer *b, size_t off, void *dst, size_t n, char *err, size_t errlen);
    int (*copy)(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n, char *err, size_t errlen);
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

    /* Runs the size programs of every DVM_SZ_PROGRAM stack of the variant and stores each
       stack's capacity in caps[i] (other entries untouched). Top-level SZ_RANGE nodes go
       to the parallel max-reducer; nested ones are walked serially, at most walk_cap steps
       per evaluation. Returns 0, 1 (runtime error: DVM_RT_SIZER_CAP in *rt), or -1. */
    int (*size)(dvm_backend *be, const dvm_size_job *job, int64_t *caps, dvm_rt_error *rt, char *err, size_t errlen);

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

/* vm/launch.c: a uniform slot's value when the host knows it before the launch (x->known: 1,
   *v set), else 0; and a parallel task's iteration count when x->known covers its extents and
   starts, else -1 (saturates at 2^40, beyond any grid). */
int dvm_exec_known_i32(const dvm_exec *x, uint32_t slot, int32_t *v);
int64_t dvm_exec_known_total(const dvm_exec *x, const dvm_task_desc *td);

/* vm/interp_cpu/interp_cpu.c: runs a dvm_task_uniform_only serial task over uniforms on the
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
