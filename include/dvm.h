/* dvm.h: the public C API of dvm, a bytecode virtual machine for differentiable parallel
 * kernels. See docs/c-api.md.
 *
 * Conventions
 * - Every call that can fail returns a dvm_status; DVM_OK (0) is success. The message of
 *   the last failure on a context is dvm_errmsg(ctx): it names the place (FILE:LINE:COL for
 *   source, kernel and line for launches). The library never prints and never exits.
 * - Ownership: every *_create / dvm_compile / dvm_load_* result is owned by the caller and
 *   released with the matching *_destroy. Handles returned by *_find and *_get are borrowed
 *   and live as long as their owner. A destroyed handle is detected: using it is
 *   DVM_ERR_USAGE, destroying it again does nothing, and destroying a context destroys what it
 *   still owns (docs/c-api.md, "Lifetimes and threads").
 * - A context is used by one thread at a time: a launch, array read/write or tape call from a
 *   second thread while one runs fails with DVM_ERR_USAGE (detected, not made safe).
 *   dvm_context_cancel is the exception. */
#ifndef DVM_H
#define DVM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DVM_VERSION_STRING "0.1.0"

typedef enum dvm_status {
    DVM_OK = 0,
    DVM_ERR_COMPILE = 1,  /* the source has errors */
    DVM_ERR_BLOB = 2,     /* a blob is malformed or of another format version */
    DVM_ERR_ARG = 3,      /* a missing, unknown, mistyped or misshaped argument */
    DVM_ERR_RUNTIME = 4,  /* the launch failed: out of bounds, assert, adstack overflow, ... */
    DVM_ERR_BACKEND = 5,  /* the backend or device is missing or failed */
    DVM_ERR_IO = 6,       /* a file could not be read or written */
    DVM_ERR_NOMEM = 7,
    DVM_ERR_USAGE = 8,    /* the API was called wrongly (NULL handle, bad option) */
    DVM_ERR_CANCELLED = 9 /* the launch was cancelled (dvm_context_cancel) or ran out of its
                             time (dvm_launch_opts.timeout_ms); it wrote nothing */
} dvm_status;

typedef enum dvm_dtype { DVM_F32 = 1, DVM_I32 = 2 } dvm_dtype;

typedef enum dvm_mode {
    DVM_FORWARD = 0, /* the kernel itself */
    DVM_ADJOINT = 1, /* reverse mode: runs the kernel (arrays hold its inputs, as for
                        DVM_FORWARD), then its adjoint, which adds dL/dx into every gradient.
                        The reverse of each top-level statement reads the arrays as they were
                        when that statement ran, so in-place updates and arrays passed from
                        one statement to the next get exact gradients (docs/autodiff.md). */
    DVM_TANGENT = 2  /* forward mode: primal outputs and their tangents */
} dvm_mode;

typedef struct dvm_context dvm_context;
typedef struct dvm_module dvm_module;
typedef struct dvm_kernel dvm_kernel; /* borrowed from its module */
typedef struct dvm_array dvm_array;
typedef struct dvm_args dvm_args;

/* ---- context ---- */
typedef struct dvm_context_opts {
    const char *backend; /* "cpu", "vulkan", "cuda", "hip" or "auto"/NULL: the first that opens
                            of cuda, hip, vulkan, cpu; auto passes over a software Vulkan
                            device (VK_PHYSICAL_DEVICE_TYPE_CPU, e.g. lavapipe), which
                            "vulkan" named explicitly still uses */
    int device;          /* device index within the backend (0 = first) */
    int threads;         /* CPU backend worker threads; 0 = all cores; at most 4 x the online
                            CPUs and at most 1024 (more is DVM_ERR_USAGE) */
    /* Every switch below is 0 by default, so a zero-initialised struct (or one that names only
       the fields above) gets the defaults. docs/c-api.md, "Context options", says what each is
       for; a negative value or one out of range is DVM_ERR_USAGE. */
    /* The compiler, for dvm_compile and dvm_load_file of source on this context. A blob records
       these (dvm disasm prints them); loading a blob ignores them. Results are the same with
       any of them: they are for bisecting a suspected miscompile and for tests. */
    int no_opt;       /* 1: no bytecode optimizer and no loop partitioning */
    int no_partition; /* 1: no loop partitioning (a parallel loop with one `if` on its indices
                         is not split into boxes) */
    int unroll;       /* copies of a small loop body per trip: 0 = the default (4), 1 = no
                         unrolling, at most 256 */
    /* The backends; each is ignored by the backends it does not name. */
    int cpu_lanes;    /* cpu: 1 runs parallel tasks several iterations per call through the
                         lane interpreters of the CUDA and HIP backends, so that they are
                         checked on a machine without a GPU (slower than the default) */
    int gpu_threads;  /* cuda, hip, vulkan: > 0 lets at most this many device threads run a
                         parallel task, each taking every gpu_threads-th iteration (tests of
                         threads with many iterations); 0 = enough to fill the device */
    int vk_no_int64;  /* vulkan: 1 uses the checked 32-bit index math of devices without
                         shaderInt64 (docs/backends.md) on any device */
    int vk_no_float_atomics; /* vulkan: 1 adds f32 atomically by compare-and-swap loops, as on
                                devices without native f32 atomic adds */
    int64_t vk_max_alloc;    /* vulkan: > 0 lowers the largest single allocation to this many
                                bytes (a larger one is a clear error); 0 = the device's limit */
    int vk_lanes;            /* vulkan: iterations of a parallel task an invocation runs: 1, or
                                4 where the launch allows it (no adstacks), also on CPU devices
                                such as lavapipe; 0 = 4 on GPUs, 1 on CPU devices */
} dvm_context_opts;

/* Creates a context on a backend. On failure *out is still set (unless NULL) so that
 * dvm_errmsg(*out) says why; destroy it as usual. */
dvm_status dvm_context_create(const dvm_context_opts *opts, dvm_context **out);
void dvm_context_destroy(dvm_context *ctx);
/* Asks the launch running on ctx to stop: it fails with DVM_ERR_CANCELLED at its next cancel
 * point and writes nothing (arrays keep what they held before it). Callable from any thread
 * and from a signal handler: it only stores to one word. Cancel points are a loop's backward
 * jump in every interpreter (each thread reads the word every 64 jumps on the cpu and
 * Vulkan, every 4096 on CUDA and HIP), the adstack sizer, and the trips of a serial loop of
 * stages; a launch with no loop has no cancel point and runs to its end (its size bounds it).
 * A tape's dvm_tape_launch and dvm_tape_backward stop the same way (backward between and
 * inside its launches). Race: the word is cleared when a launch (dvm_launch, dvm_tape_launch,
 * dvm_tape_backward) starts, so a cancel that arrives while none runs is dropped, and one
 * that arrives after the last cancel point of a launch leaves it to succeed. */
dvm_status dvm_context_cancel(dvm_context *ctx);
/* The message of the last failed call on ctx ("" if none). Valid until the next call. */
const char *dvm_errmsg(const dvm_context *ctx);
/* "cpu", "vulkan", "cuda" or "hip", and a description of the device in use. */
const char *dvm_context_backend(const dvm_context *ctx);
const char *dvm_context_device(const dvm_context *ctx);
/* A multi-line report of every backend and device found, and why others are missing. */
char *dvm_backends_report(void); /* free with dvm_free */
void dvm_free(void *p);

/* ---- modules: compiled programs ---- */
/* Compiles .dvk source (every kernel in it) in memory, with the context's compiler options
 * (dvm_context_opts). `filename` is used in messages. */
dvm_status dvm_compile(dvm_context *ctx, const char *source, size_t len, const char *filename,
                       dvm_module **out);
/* Loads and verifies a blob; nothing is run before verification succeeds. */
dvm_status dvm_load_blob(dvm_context *ctx, const void *blob, size_t len, const char *name,
                         dvm_module **out);
/* Loads a file: a .dvb blob (by its magic) or .dvk source. */
dvm_status dvm_load_file(dvm_context *ctx, const char *path, dvm_module **out);
/* Serializes a module to a blob; free *blob with dvm_free. */
dvm_status dvm_module_save(dvm_context *ctx, const dvm_module *m, void **blob, size_t *len);
void dvm_module_destroy(dvm_module *m);
int dvm_module_kernel_count(const dvm_module *m);
const dvm_kernel *dvm_module_kernel(const dvm_module *m, int i);
/* Writes the disassembly (with source lines) into a string; free with dvm_free. */
dvm_status dvm_module_disasm(dvm_context *ctx, const dvm_module *m, char **text);

/* ---- kernels ---- */
dvm_status dvm_kernel_find(dvm_context *ctx, const dvm_module *m, const char *name,
                           const dvm_kernel **out);
const char *dvm_kernel_name(const dvm_kernel *k);
int dvm_kernel_param_count(const dvm_kernel *k);
typedef struct dvm_param_info {
    const char *name;
    int is_array;
    dvm_dtype dtype;
    int rank;                   /* arrays */
    const char *dims[4];        /* arrays: each axis's shape symbol, or NULL for a literal */
    int64_t literal_dims[4];    /* arrays: literal extents (where dims[k] is NULL) */
} dvm_param_info;
void dvm_kernel_param(const dvm_kernel *k, int i, dvm_param_info *info);

/* ---- arrays: memory owned by the context's backend ---- */
/* A zero-filled array; shape has `rank` extents (1..4, each >= 0). */
dvm_status dvm_array_create(dvm_context *ctx, dvm_dtype dtype, int rank, const int64_t *shape,
                            dvm_array **out);
/* An array over the caller's host memory, used in place (cpu backend only; other backends
 * refuse with DVM_ERR_USAGE). ptr holds count(shape) elements of dtype, aligned to 4 bytes.
 * Lifetime: the memory stays the caller's; it must outlive the array, and dvm_array_destroy
 * never frees it. Launches read it and write into it directly (a failed launch restores it);
 * the caller may read and change it between launches, never during one. */
dvm_status dvm_array_wrap_host(dvm_context *ctx, dvm_dtype dtype, int rank, const int64_t *shape, void *ptr,
                               dvm_array **out);
/* The same over caller-owned device memory (cuda and hip backends; others refuse with
 * DVM_ERR_USAGE): ptr is a device address of this context's device (from cudaMalloc, torch,
 * cupy, hipMalloc...), 4-byte aligned, with count(shape) elements inside its allocation; a
 * plain host pointer is refused. Lifetime as for dvm_array_wrap_host. dvm runs its work on
 * the device's default (legacy) stream and returns once it is done: work the caller queued
 * on other streams that touches the memory must be finished before a launch. */
dvm_status dvm_array_wrap_device(dvm_context *ctx, dvm_dtype dtype, int rank, const int64_t *shape, void *ptr,
                                 dvm_array **out);
/* The array's memory, for zero-copy exchange (DLPack): a host address on cpu, a device
 * address on cuda and hip, NULL on vulkan. Valid until the array is destroyed; contents are
 * stable only between launches. */
void *dvm_array_data(const dvm_array *a);
void dvm_array_destroy(dvm_array *a);
dvm_dtype dvm_array_dtype(const dvm_array *a);
int dvm_array_rank(const dvm_array *a);
int64_t dvm_array_dim(const dvm_array *a, int axis);
int64_t dvm_array_count(const dvm_array *a); /* number of elements */
/* Copies count elements from host memory into the array (count must equal its size). */
dvm_status dvm_array_write(dvm_context *ctx, dvm_array *a, const void *src, int64_t count);
/* Copies the array into host memory. */
dvm_status dvm_array_read(dvm_context *ctx, const dvm_array *a, void *dst, int64_t count);

/* ---- arguments and launches ---- */
/* A set of bindings for one kernel; reuse it across launches. */
dvm_status dvm_args_create(dvm_context *ctx, const dvm_kernel *k, dvm_args **out);
void dvm_args_destroy(dvm_args *args);
dvm_status dvm_args_array(dvm_context *ctx, dvm_args *args, const char *name, dvm_array *a);
/* Gradient (adjoint launches) and tangent (tangent launches) arrays of an f32 array
 * parameter; unbound ones start at zero in a scratch array. */
dvm_status dvm_args_grad(dvm_context *ctx, dvm_args *args, const char *name, dvm_array *a);
dvm_status dvm_args_dual(dvm_context *ctx, dvm_args *args, const char *name, dvm_array *a);
dvm_status dvm_args_f32(dvm_context *ctx, dvm_args *args, const char *name, float v);
dvm_status dvm_args_i32(dvm_context *ctx, dvm_args *args, const char *name, int32_t v);

typedef struct dvm_launch_opts {
    dvm_mode mode;
    int64_t ad_stack_size;         /* > 0: force every adstack to this capacity */
    int64_t default_ad_stack_size; /* capacity for stacks with no formula; 0 = 256 */
    double timeout_ms;             /* > 0: the launch is cancelled (DVM_ERR_CANCELLED, a message
                                      saying it timed out) if it runs longer, at its next cancel
                                      point (dvm_context_cancel); 0 = no limit */
} dvm_launch_opts;

typedef struct dvm_launch_stats {
    double size_ms;    /* sizer and max-reducer (0 when cached sizes were reused) */
    double exec_ms;    /* the tasks */
    double total_ms;
    int64_t heap_bytes; /* adstack heap in use */
    int64_t heap_min_bytes; /* what the exact per-thread maximum would need */
    int64_t snapshot_bytes; /* arrays copied before the launch so that a failure writes nothing
                               (0 when the host proves that no runtime error can occur) */
    int64_t version_bytes;  /* adjoint launches: arrays copied between the forward's top-level
                               statements, for earlier statements' reverse sweeps (docs/autodiff.md) */
    int sizes_cached;
    int retries; /* reruns after an adstack with no formula overflowed and was grown (docs/autodiff.md) */
} dvm_launch_stats;

/* Runs the kernel (or its adjoint / tangent). On failure nothing is written to any array:
 * arrays hold what they held before the call. `stats` may be NULL. */
dvm_status dvm_launch(dvm_context *ctx, const dvm_kernel *k, dvm_args *args,
                      const dvm_launch_opts *opts, dvm_launch_stats *stats);

/* ---- tapes: gradients through a sequence of launches (docs/autodiff.md, "Tapes") ---- */
typedef struct dvm_tape dvm_tape;
typedef struct dvm_tape_stats {
    int forward_launches;  /* launches backward ran forward again (checkpointing) */
    int adjoint_launches;
    int checkpoints;       /* checkpoints the budget allowed besides the initial state */
    int64_t saved_bytes;   /* copies the tape holds between launches and backward */
    int64_t work_bytes;    /* the working state backward allocates (outside the budget) */
} dvm_tape_stats;
/* memory_budget: 0 keeps a copy of every array a recorded launch overwrites (no recomputation);
 * > 0 keeps at most that many bytes: the arrays' contents before the first launch that writes
 * them, then checkpoints during backward, recomputing launches between them (binomial
 * schedule). The gradients are the same. */
dvm_status dvm_tape_create(dvm_context *ctx, int64_t memory_budget, dvm_tape **out);
void dvm_tape_destroy(dvm_tape *t);
/* Runs a forward launch of k (as dvm_launch with DVM_FORWARD) and records it with its
 * bindings (args may be rebound or destroyed afterwards). A recorded array must not be changed
 * other than by recorded launches until backward. Fails, recording nothing, like dvm_launch,
 * and for a kernel without an adjoint. */
dvm_status dvm_tape_launch(dvm_tape *t, const dvm_kernel *k, dvm_args *args);
/* Binds the gradient array of an f32 array (its shape): backward adds dL/d(a's value before
 * the first recorded launch) into it; what it holds before backward is the seed of a's final
 * value. Arrays without one get a zeroed gradient of their own during backward. */
dvm_status dvm_tape_grad(dvm_tape *t, dvm_array *a, dvm_array *grad);
/* Runs every recorded launch's adjoint, the last first, each on the arrays as they were when
 * it ran; the arrays themselves keep their final values. `stats` may be NULL. */
dvm_status dvm_tape_backward(dvm_tape *t, dvm_tape_stats *stats);
/* Forgets the records and the gradient bindings (the copies are freed). */
void dvm_tape_reset(dvm_tape *t);
int dvm_tape_count(const dvm_tape *t);

#ifdef __cplusplus
}
#endif
#endif
