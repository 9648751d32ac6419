/* runtime.h: the host runtime's private structures, shared by api.c, launch.c, registry.c
 * and the `dvm` command (which links the library statically). Not part of the public API:
 * include/dvm.h is. Calls go one way: launch.c and tape.c use api.c (handles, messages), api.c
 * uses neither. */
#ifndef DVM_RUNTIME_H
#define DVM_RUNTIME_H

#include <pthread.h>
#include <stdint.h>
#include "dvm.h"
#include "vm/backend.h"
#include "vm/sizer.h"
#include "heap/heap.h"

#define DVM_ERRMSG_MAX 8192

/* handle.c: the first member of every public handle. Its memory is never freed: destroy
   marks it dead and parks it (a quarantine), so stale pointers are detected, not read after
   free. prev/next: the owning context's list of live children. */
typedef enum dvm_handle_kind { DVM_HK_CONTEXT, DVM_HK_MODULE, DVM_HK_ARRAY, DVM_HK_ARGS, DVM_HK_TAPE, DVM_HK_COUNT } dvm_handle_kind;
#define DVM_MAGIC_DEAD 0xDEADDEADu
typedef struct dvm_handle {
    uint32_t magic, kind;
    struct dvm_handle *prev, *next;
    struct dvm_handle *qnext; /* in the quarantine */
} dvm_handle;
/* A zeroed live handle of size bytes (reusing a parked one; scrub frees what it kept). */
void *dvm_handle_alloc(dvm_handle_kind kind, size_t size, void (*scrub)(void *));
void dvm_handle_release(void *h);          /* marks it dead and parks it */
int dvm_handle_live(const void *h, dvm_handle_kind kind);
int dvm_handle_dead(const void *h);        /* a destroyed handle (of any kind) */

/* Buffers a context reuses across launches (vm/launch.c), freed with the context (api.c). */
typedef struct dvm_launch_scratch {
    dvm_heap heap;
    dvm_heap_mem heap_mem; /* the heap's allocator: the context's backend (api.c) */
    dvm_buffer **snap; /* snapshot buffers, by position in the launch's list of written slots */
    size_t *snap_bytes;
    uint32_t nsnap;
} dvm_launch_scratch;

struct dvm_context {
    dvm_handle h;
    const dvm_backend_vtbl *vt; /* NULL when creation failed */
    dvm_backend *be;
    char device[256];
    char err[DVM_ERRMSG_MAX];
    int err_located;      /* err starts with FILE:LINE:COL: error: */
    dvm_status err_status; /* the status err was set with (dvm_fail); DVM_OK once cleared */
    int cli_remedies;     /* overflow remedies name command-line options, not opts fields */
    dvm_context_opts opts; /* as created (backend NULL: the string is the caller's); dvm_compile
                              reads the compiler's switches here */
    uint64_t next_array_id;
    dvm_launch_scratch scratch; /* heap and snapshot buffers, reused across launches */
    /* Cancel (dvm_context_cancel): the word is be->cancel_word's (device-visible) or
       cancel_own; the outermost launch of a call (run_depth 0 -> 1: dvm_launch,
       dvm_tape_launch, dvm_tape_backward) clears it, and every poll reads it. */
    volatile uint32_t *cancel;
    uint32_t cancel_own;
    int run_depth;
    int timed_out;     /* the cancel came from the launch's timeout (its message) */
    double timeout_ms; /* the launch's opts.timeout_ms, for that message */
    /* live children (handle.c), destroyed with the context; kids_mu guards the list only */
    pthread_mutex_t kids_mu;
    dvm_handle *kids;
    /* the thread using the context (dvm_ctx_enter), and its nesting depth */
    uintptr_t owner;
    int depth;
};

struct dvm_kernel {
    const struct dvm_module *m;
    uint32_t index; /* in prog->kernels */
    const dvm_kernel_desc *kd;
    dvm_size_cache cache[DVM_V_COUNT]; /* mutable launch state behind a const handle */
};

struct dvm_module {
    dvm_handle h;
    dvm_context *ctx;
    dvm_program *prog; /* verified */
    dvm_loaded *loaded;
    struct dvm_kernel *kernels;
};

struct dvm_array {
    dvm_handle h;
    dvm_context *ctx;
    dvm_dtype dtype;
    int rank;
    int64_t shape[DVM_MAX_RANK];
    int64_t count;
    dvm_buffer *buf;
    uint64_t id;      /* unique within the context: with version, keys the size cache */
    uint64_t version; /* bumped by dvm_array_write and by launches that may write it */
    int host_owned;   /* wraps the caller's host memory (dvm_array_wrap_host): it may change
                         between launches, so sizes read from it are never reused */
};

struct dvm_args {
    dvm_handle h;
    dvm_context *ctx;
    const struct dvm_kernel *k;
    uint32_t nparams;
    dvm_array **arr;     /* per parameter (arrays only) */
    dvm_array **grad;    /* per parameter: bound gradient or NULL */
    dvm_array **dual;    /* per parameter: bound tangent or NULL */
    dvm_array **scratch; /* per parameter: zeroed stand-in for an unbound grad/dual */
    uint32_t *scalar;    /* per parameter: the 32-bit value of a scalar */
    uint8_t *scalar_set;
};

/* Records a message on ctx (printf-style) and returns st. located: the message starts with
 * its source location. */
dvm_status dvm_fail(dvm_context *ctx, dvm_status st, int located, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void dvm_clear_err(dvm_context *ctx);

/* handle.c: a context's children, and its use by one thread at a time. dvm_ctx_enter: 0, or
   -1 when another thread is inside a call on ctx (dvm_ctx_conflict is then ctx, for
   dvm_errmsg); calls nest on one thread. */
void dvm_ctx_adopt(dvm_context *ctx, void *h);
void dvm_ctx_disown(dvm_context *ctx, void *h);
int dvm_ctx_enter(dvm_context *ctx);
void dvm_ctx_leave(dvm_context *ctx);
extern _Thread_local const dvm_context *dvm_ctx_conflict;
int dvm_kernel_live(const dvm_kernel *k); /* its module is alive (api.c) */

/* For the command: 1 if the last message carries its own FILE:LINE:COL: error: prefix. */
int dvm_errmsg_located(const dvm_context *ctx);
/* For the command: overflow messages name --ad-stack-size instead of opts.ad_stack_size. */
void dvm_context_cli_remedies(dvm_context *ctx, int on);

/* registry.c: the compiled-in backends, in `auto` order (cuda, hip, vulkan, cpu). */
const dvm_backend_vtbl *const *dvm_backend_list(int *n);
const dvm_backend_vtbl *dvm_backend_by_name(const char *name);
/* `auto`: the first backend of the list that opens device opts->device, passing over software
   devices (vtbl->software); *vt is the one opened. NULL if none did, with each one's reason
   in why. */
dvm_backend *dvm_backend_open_auto(const dvm_backend_opts *opts, const dvm_backend_vtbl **vt, char *why, size_t whylen);

/* "x: f32[n, 3]": parameter i's declaration, for messages. */
void dvm_param_decl(const dvm_kernel *k, uint32_t i, char *buf, size_t len);
/* "(10, 3)", "(10,)": a shape as NumPy prints it. */
void dvm_shape_str(const int64_t *shape, int rank, char *buf, size_t len);
/* Name of an element type for messages ("f32", "i32"). */
const char *dvm_dtype_name(dvm_dtype t);

#endif
