/* interp_cpu.c: the CPU backend. Buffers are host memory, the program is used in place,
 * and parallel tasks run the shared interpreter core (interp_core.h) on OpenMP threads.
 * The sizer's passes (vm/sizer.c) run on the calling thread; top-level max-over-range nodes
 * go to an OpenMP max reduction (the CPU's max-reducer). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "vm/backend.h"

/* ---- the core's atomics, on GCC/Clang __atomic builtins ---- */
static inline float dvm_cpu_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t dvm_cpu_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline void dvm_cpu_atomic_add_f32(uint32_t *p, float v)
{
    uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, dvm_cpu_f2u(dvm_cpu_u2f(old) + v), 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
/* max/min with the interpreter's rule: the stored (first) operand wins when equal or
 * unordered, so nothing is written unless v is strictly better. */
static inline void dvm_cpu_atomic_max_f32(uint32_t *p, float v)
{
    uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > dvm_cpu_u2f(old) &&
           !__atomic_compare_exchange_n(p, &old, dvm_cpu_f2u(v), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
static inline void dvm_cpu_atomic_min_f32(uint32_t *p, float v)
{
    uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < dvm_cpu_u2f(old) &&
           !__atomic_compare_exchange_n(p, &old, dvm_cpu_f2u(v), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
static inline void dvm_cpu_atomic_max_i32(uint32_t *p, int32_t v)
{
    uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > (int32_t)old &&
           !__atomic_compare_exchange_n(p, &old, (uint32_t)v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
static inline void dvm_cpu_atomic_min_i32(uint32_t *p, int32_t v)
{
    uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < (int32_t)old &&
           !__atomic_compare_exchange_n(p, &old, (uint32_t)v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
static inline uint32_t dvm_cpu_cas_u32(uint32_t *p, uint32_t expect, uint32_t desired)
{
    __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return expect; /* the old value: equals the expected one exactly when it succeeded */
}
static inline void dvm_cpu_atomic_max_i64(int64_t *p, int64_t v)
{
    int64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* Alone: the runs of a task that runs on one thread (serial tasks, and every task of a launch
 * on one thread: tasks run one after another, and nothing else may touch the launch's arrays
 * while it runs, docs/c-api.md) do their atomic adds, max and min as plain read-modify-writes,
 * the same operations in the same order as the atomics' (a CAS loop was three quarters of the
 * stencil's adjoint on one thread), and a block's adds vectorize. CPU_ALONE_ (0 or 1) is set
 * around each inclusion of interp_run.h: the macros read it where the handlers expand. */
static inline void dvm_cpu_add_f32(uint32_t *p, float v) { *p = dvm_cpu_f2u(dvm_cpu_u2f(*p) + v); }
static inline void dvm_cpu_max_f32(uint32_t *p, float v) { if (v > dvm_cpu_u2f(*p)) *p = dvm_cpu_f2u(v); }
static inline void dvm_cpu_min_f32(uint32_t *p, float v) { if (v < dvm_cpu_u2f(*p)) *p = dvm_cpu_f2u(v); }
static inline void dvm_cpu_max_i32(uint32_t *p, int32_t v) { if (v > (int32_t)*p) *p = (uint32_t)v; }
static inline void dvm_cpu_min_i32(uint32_t *p, int32_t v) { if (v < (int32_t)*p) *p = (uint32_t)v; }

#define DVM_FN static inline
#define DVM_ATOMIC_ADD_F32(p, v) (CPU_ALONE_ ? dvm_cpu_add_f32((p), (v)) : dvm_cpu_atomic_add_f32((p), (v)))
#define DVM_ATOMIC_ADD_I32(p, v) \
    (CPU_ALONE_ ? (void)(*(p) += (uint32_t)(v)) : (void)__atomic_fetch_add((p), (uint32_t)(v), __ATOMIC_RELAXED))
#define DVM_ATOMIC_MAX_I32(p, v) (CPU_ALONE_ ? dvm_cpu_max_i32((p), (v)) : dvm_cpu_atomic_max_i32((p), (v)))
#define DVM_ATOMIC_MIN_I32(p, v) (CPU_ALONE_ ? dvm_cpu_min_i32((p), (v)) : dvm_cpu_atomic_min_i32((p), (v)))
#define DVM_ATOMIC_MAX_F32(p, v) (CPU_ALONE_ ? dvm_cpu_max_f32((p), (v)) : dvm_cpu_atomic_max_f32((p), (v)))
#define DVM_ATOMIC_MIN_F32(p, v) (CPU_ALONE_ ? dvm_cpu_min_f32((p), (v)) : dvm_cpu_atomic_min_f32((p), (v)))
#define DVM_ATOMIC_CAS_I32(p, e, d) dvm_cpu_cas_u32((p), (e), (d))
#define DVM_ATOMIC_MAX_I64(p, v) dvm_cpu_atomic_max_i64((p), (v))
#define DVM_LOAD_ERR(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define CPU_ALONE_ 0
#include "vm/interp/interp_run.h"
#undef CPU_ALONE_
#define CPU_ALONE_ 1
#define DVM_RUN_NAME dvm_run_alone
#include "vm/interp/interp_run.h"
#undef CPU_ALONE_
#define CPU_ALONE_ 0 /* the lanes below (cpu_lanes, for testing) keep the atomics */
/* cpu_lanes (dvm_context_opts): parallel tasks run CPU_LANES iterations per call through the lane
 * interpreters that the CUDA and HIP backends use (engine_lanes.h): plain lanes for
 * a task with no conditional branch, masked lanes (DVM_MASKED) for the rest, chosen by the
 * same rule, so the test suite checks that logic on machines without a GPU. Slower than the
 * default on a CPU: for testing only. */
#define CPU_LANES 4
#define DVM_LANES CPU_LANES
#define DVM_RUN_NAME dvm_run_lanes
#include "vm/interp/interp_run.h"
#define DVM_LANES CPU_LANES
#define DVM_MASKED 1
#define DVM_RUN_NAME dvm_run_mlanes
#include "vm/interp/interp_run.h"
#undef CPU_ALONE_
/* Blocks: a parallel task without loops or adstacks runs CPU_BLOCK consecutive iterations per
 * call, one node at a time over the whole block (the dispatch paid once per block, the work in
 * between loops over the lanes), with the row path (engine_lanes.h, DVM_ROW_STEP 1) taking a
 * block's affine accesses x[i + k], u[i + a, j + b] as contiguous runs. Masked where the task
 * branches. */
#define CPU_BLOCK 64
typedef unsigned __int128 cpu_mask; /* a block's lanes, and the row flag (DVM_ROW_FLAG_OF) */
#define CPU_SFX _base
#include "vm/cpu/cpu_blocks.h"
#undef CPU_SFX
/* On x86-64 the blocks also get an AVX2 copy (256-bit vectors for the lane loops, against
 * SSE2's 128), taken where the CPU has AVX2 (cpu_open). AVX2 without FMA: a * b + c is never
 * fused, so both copies give the same bits. The stencil and saxpy ran 1.5-1.7x faster on one
 * thread. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_HAVE_AVX2_COPY 1
#pragma GCC push_options
#pragma GCC target("avx2")
#define CPU_SFX _avx2
#include "vm/cpu/cpu_blocks.h"
#undef CPU_SFX
#pragma GCC pop_options
#endif
#undef CPU_ALONE_

typedef int dvm_blk_fn(const dvm_env *, uint32_t, const dvm_task_desc *, const int32_t *, int64_t, uint32_t *,
                       uint32_t, cpu_mask);
/* the block runs, [avx2][alone][masked] */
static dvm_blk_fn *const cpu_blk_fns[2][2][2] = {
    {{dvm_run_blk_base, dvm_run_mblk_base}, {dvm_run_blk_alone_base, dvm_run_mblk_alone_base}},
#ifdef CPU_HAVE_AVX2_COPY
    {{dvm_run_blk_avx2, dvm_run_mblk_avx2}, {dvm_run_blk_alone_avx2, dvm_run_mblk_alone_avx2}},
#else
    {{dvm_run_blk_base, dvm_run_mblk_base}, {dvm_run_blk_alone_base, dvm_run_mblk_alone_base}},
#endif
};

/* a thread's register file: DVM_MAX_REGS registers of up to CPU_BLOCK lanes (256 KiB: in
   the backend, not on the OpenMP threads' stacks) */
#define CPU_REG_WORDS ((size_t)DVM_MAX_REGS * CPU_BLOCK)

struct dvm_backend {
    int threads;
    int lanes; /* 1, or CPU_LANES (the cpu_lanes option) */
    uint32_t *regs; /* threads register files of CPU_REG_WORDS (a context runs one launch at a time) */
    int avx2;       /* the blocks' AVX2 copy runs (the CPU has AVX2, and not opts->cpu_no_avx2) */
    char name[192];
};
struct dvm_buffer {
    size_t bytes;
    unsigned char *p;
    int borrowed; /* p is the caller's (cpu_wrap_host): never freed here */
};
struct dvm_loaded {
    const dvm_program *prog; /* borrowed: the caller keeps it alive until unload */
};

static void cpu_msg(char *err, size_t errlen, const char *fmt, const char *a)
{
    if (err && errlen) snprintf(err, errlen, fmt, a);
}

/* Model name from /proc/cpuinfo, or "unknown CPU". */
static void cpu_model(char *out, size_t n)
{
    snprintf(out, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t') c++;
                size_t l = strlen(c);
                while (l && (c[l - 1] == '\n' || c[l - 1] == ' ')) c[--l] = 0;
                snprintf(out, n, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

/* Thread-creation probe: libgomp ends the process when it cannot create a thread, so the
 * context first creates threads - 1 pthreads (default attributes, as libgomp's), all alive at
 * once, and fails with a message if the system refuses one; then a first parallel region
 * creates OpenMP's pool, which later regions of this thread reuse. (A region started later
 * from another thread gets a new pool: that creation is not probed.) */
typedef struct cpu_probe_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;
} cpu_probe_gate;

static void *cpu_probe_thread(void *p)
{
    cpu_probe_gate *g = (cpu_probe_gate *)p;
    pthread_mutex_lock(&g->mu);
    while (!g->go) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static int cpu_probe_threads(int n, char *err, size_t errlen)
{
    cpu_probe_gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    pthread_t *th = calloc((size_t)(n > 1 ? n : 1), sizeof *th);
    if (!th) {
        cpu_msg(err, errlen, "cpu backend: out of memory%s", "");
        return -1;
    }
    int made = 0, rc = 0;
    for (; made < n - 1; made++) {
        rc = pthread_create(&th[made], NULL, cpu_probe_thread, &g);
        if (rc != 0) break;
    }
    pthread_mutex_lock(&g.mu);
    g.go = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    for (int i = 0; i < made; i++) pthread_join(th[i], NULL);
    free(th);
    if (rc != 0 && err && errlen)
        snprintf(err, errlen, "cpu backend: cannot create %d worker threads: the system refused thread %d (%s); "
                              "ask for fewer threads", n, made + 2, strerror(rc));
    return rc != 0 ? -1 : 0;
}

static dvm_backend *cpu_open(const dvm_backend_opts *opts, char *err, size_t errlen)
{
    dvm_backend *be = calloc(1, sizeof *be);
    if (!be) {
        cpu_msg(err, errlen, "cpu backend: out of memory%s", "");
        return NULL;
    }
    be->threads = (opts && opts->threads > 0) ? opts->threads : omp_get_max_threads();
    if (be->threads < 1) be->threads = 1;
    if (cpu_probe_threads(be->threads, err, errlen) != 0) {
        free(be);
        return NULL;
    }
    int got = 1;
#pragma omp parallel num_threads(be->threads)
    {
#pragma omp master
        got = omp_get_num_threads();
    }
    if (got >= 1 && got < be->threads) be->threads = got; /* OMP_THREAD_LIMIT, OMP_DYNAMIC */
    be->regs = calloc((size_t)be->threads * CPU_REG_WORDS, sizeof(uint32_t));
    if (!be->regs) {
        if (err && errlen)
            snprintf(err, errlen, "cpu backend: cannot allocate the register files of %d threads (%zu bytes); "
                                  "ask for fewer threads", be->threads, (size_t)be->threads * CPU_REG_WORDS * 4u);
        free(be);
        return NULL;
    }
    be->lanes = opts && opts->cpu_lanes ? CPU_LANES : 1;
#ifdef CPU_HAVE_AVX2_COPY
    be->avx2 = __builtin_cpu_supports("avx2") && !(opts && opts->cpu_no_avx2);
#endif
    char model[128];
    cpu_model(model, sizeof model);
    snprintf(be->name, sizeof be->name, "cpu: %s, %d threads (OpenMP)%s%s", model, be->threads,
             be->avx2 ? ", AVX2" : "", be->lanes > 1 ? ", lanes (cpu_lanes)" : "");
    return be;
}

static void cpu_close(dvm_backend *be)
{
    if (be) free(be->regs);
    free(be);
}

static int cpu_probe(char *out, size_t outlen)
{
    char model[128];
    cpu_model(model, sizeof model);
    size_t used = out ? strlen(out) : 0;
    if (out && used < outlen)
        snprintf(out + used, outlen - used, "cpu: %s, %d threads (OpenMP)\n", model, omp_get_max_threads());
    return 1;
}

static const char *cpu_device_name(dvm_backend *be) { return be->name; }

static int cpu_alloc(dvm_backend *be, size_t bytes, dvm_buffer **out, char *err, size_t errlen)
{
    (void)be;
    dvm_buffer *b = calloc(1, sizeof *b);
    /* Round up to whole words so that a word-addressed interpreter never reads past it. */
    size_t n = bytes ? (bytes + 7u) & ~(size_t)7u : 8u;
    if (b && n >= bytes) b->p = calloc(1, n);
    if (!b || !b->p) {
        free(b);
        if (err && errlen) snprintf(err, errlen, "cpu backend: cannot allocate %zu bytes", bytes);
        return -1;
    }
    b->bytes = bytes;
    *out = b;
    return 0;
}

static void cpu_free(dvm_backend *be, dvm_buffer *b)
{
    (void)be;
    if (b && !b->borrowed) free(b->p);
    free(b);
}

/* The caller's memory as a buffer: arrays are read and written in place by 32-bit element,
 * never past `bytes` (the interpreter checks every index against the array's length). */
static int cpu_wrap_host(dvm_backend *be, void *p, size_t bytes, dvm_buffer **out, char *err, size_t errlen)
{
    (void)be;
    dvm_buffer *b = calloc(1, sizeof *b);
    if (!b) {
        cpu_msg(err, errlen, "cpu backend: out of memory%s", "");
        return -1;
    }
    b->p = (unsigned char *)p;
    b->bytes = bytes;
    b->borrowed = 1;
    *out = b;
    return 0;
}

static void *cpu_data(dvm_backend *be, dvm_buffer *b)
{
    (void)be;
    return b ? b->p : NULL;
}

static int cpu_range_ok(const dvm_buffer *b, size_t off, size_t n, const char *what, char *err, size_t errlen)
{
    if (!b || off > b->bytes || n > b->bytes - off) {
        if (err && errlen)
            snprintf(err, errlen, "cpu backend: %s of %zu bytes at %zu is outside a buffer of %zu bytes", what,
                     n, off, b ? b->bytes : (size_t)0);
        return 0;
    }
    return 1;
}

static int cpu_write(dvm_backend *be, dvm_buffer *b, size_t off, const void *src, size_t n, char *err, size_t errlen)
{
    (void)be;
    if (!cpu_range_ok(b, off, n, "write", err, errlen)) return -1;
    if (n) memmove(b->p + off, src, n); /* src may be the wrapped memory itself */
    return 0;
}

static int cpu_read(dvm_backend *be, dvm_buffer *b, size_t off, void *dst, size_t n, char *err, size_t errlen)
{
    (void)be;
    if (!cpu_range_ok(b, off, n, "read", err, errlen)) return -1;
    if (n) memmove(dst, b->p + off, n);
    return 0;
}

static int cpu_copy(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n, char *err, size_t errlen)
{
    (void)be;
    if (!cpu_range_ok(dst, 0, n, "copy", err, errlen) || !cpu_range_ok(src, 0, n, "copy", err, errlen)) return -1;
    if (n) memmove(dst->p, src->p, n);
    return 0;
}

static int cpu_load(dvm_backend *be, const dvm_program *prog, dvm_loaded **out, char *err, size_t errlen)
{
    (void)be;
    dvm_loaded *l = calloc(1, sizeof *l);
    if (!l) {
        cpu_msg(err, errlen, "cpu backend: out of memory%s", "");
        return -1;
    }
    l->prog = prog;
    *out = l;
    return 0;
}

static void cpu_unload(dvm_backend *be, dvm_loaded *l)
{
    (void)be;
    free(l);
}

/* The next iteration's digits, row-major (last dimension fastest). A digit is below its
 * extent, which may pass INT32_MAX (stop - start): stepped in u32, no signed overflow. */
static inline void cpu_next_idx(int32_t *idx, int nd, const int64_t *ext)
{
    for (int d = nd - 1; d >= 0; d--) {
        const uint32_t v = (uint32_t)idx[d] + 1u;
        idx[d] = (int32_t)v;
        if ((int64_t)v < ext[d]) break;
        if (d > 0) idx[d] = 0;
    }
}

static int64_t cpu_slots(dvm_backend *be, const dvm_exec *x)
{
    (void)x;
    return (int64_t)be->threads * be->lanes; /* a heap slot per lane */
}

/* Array base pointers of a job; NULL buffers (empty arrays) give NULL (never read: every
 * access is checked against arr_len first). */
static int cpu_arrays(uint32_t nslots, dvm_buffer *const *arrays, const int64_t *arr_len, uint32_t **out,
                      char *err, size_t errlen)
{
    for (uint32_t i = 0; i < nslots; i++) {
        out[i] = arrays[i] ? (uint32_t *)arrays[i]->p : NULL;
        size_t have = arrays[i] ? arrays[i]->bytes : 0;
        if (arr_len[i] < 0 || (uint64_t)arr_len[i] > have / 4u) {
            if (err && errlen)
                snprintf(err, errlen, "cpu backend: array slot %u holds %zu bytes, fewer than its %lld elements",
                         i, have, (long long)arr_len[i]);
            return -1;
        }
    }
    return 0;
}

/* Whether no two iterations of parallel task t write one array element, so that its atomics
 * may be plain with several threads too (the alone runs): its index registers are registers
 * 0..ndim-1 and no node writes them (fl->fixed_idx), every node that writes an array writes the
 * element of the iteration's own indices (x[i] in 1-D, u[i, j] in 2-D, no offset), and no node
 * adds into a uniform. Each element then has one writer, the iteration of its index: an
 * adjoint's `x.grad[i] += ...` (saxpy's, a map's, a loop's per element). */
static int cpu_task_private(const dvm_node *code, const dvm_task_desc *t, const dvm_task_flow *fl)
{
    if (t->kind != DVM_TASK_PARALLEL || !fl->fixed_idx || t->ndim < 1 || t->ndim > 2) return 0;
    for (uint32_t k = 0; k < t->code_len; k++) {
        const dvm_node *n = &code[k];
        if (n->op == DVM_OP_ATOMADDU) return 0;
        if (!dvm_slot_write_op(n->op)) continue;
        int own;
        if (t->ndim == 1) {
            switch (n->op) {
            case DVM_OP_ST: case DVM_OP_ATOMADDF: case DVM_OP_ATOMADDI: case DVM_OP_ATOMMAXF:
            case DVM_OP_ATOMMINF: case DVM_OP_ATOMMAXI: case DVM_OP_ATOMMINI: own = n->a == 0; break;
            case DVM_OP_ATOMADDFO: own = n->a == 0 && n->c == 0; break;
            default: own = 0; break;
            }
        } else {
            switch (n->op) {
            case DVM_OP_ST2: case DVM_OP_ATOMADDF2: own = n->a == 0 && n->b == 1; break;
            case DVM_OP_ATOMADDF2O:
                own = DVM_OFS_REG(n->a) == 0 && DVM_OFS_OFF(n->a) == 0 && DVM_OFS_REG(n->b) == 1 && DVM_OFS_OFF(n->b) == 0;
                break;
            default: own = 0; break;
            }
        }
        if (!own) return 0;
    }
    return 1;
}

/* Whether a task with a loop runs in blocks: not when it adds (or takes a max or min) into
 * memory that other iterations may share (an atomic node, unless the task is private), and not
 * when it calls library math (sin, exp, pow: DVM_F_MATH), which masked lanes compute for every
 * lane, the waiting ones too (the sin loop was 1.25x slower in blocks than one iteration per
 * call on one thread, its lanes' trips U[0, 64)). */
static int cpu_loop_blocks(const dvm_node *code, const dvm_task_desc *t, int private_)
{
    for (uint32_t k = 0; k < t->code_len; k++) {
        const uint32_t op = code[k].op;
        if (dvm_op_table[op].flags & DVM_F_MATH) return 0;
        if (!private_ && (op == DVM_OP_ATOMADDU || dvm_op_effect(op) == DVM_E_ATOMIC)) return 0;
    }
    return 1;
}

/* The cancel word of an exec that has none (a job built by hand) */
static const volatile uint32_t cpu_never_cancelled = 0;

/* Iterations between two polls of the error word in a parallel loop. */
#define CPU_CHUNK_MIN 64

/* Runs serial task t (dvm_task_uniform_only) over uniforms alone, on the host: 0, or 1 if it
   failed (an assert, a division by zero: the caller then leaves it to the backend, which
   reports it). */
int dvm_cpu_run_uniform_task(const dvm_program *p, uint32_t task_index, const dvm_task_desc *t, uint32_t *uniforms) {
    dvm_rt_error rec;
    memset(&rec, 0, sizeof rec);
    dvm_env env;
    memset(&env, 0, sizeof env);
    env.nodes = p->nodes;
    env.consts = p->consts;
    env.uni = uniforms;
    env.err = &rec;
    env.cancel = &cpu_never_cancelled; /* a uniform-only task has no backward jump */
    uint32_t regs[DVM_MAX_REGS];
    memset(regs, 0, sizeof(uint32_t) * (t->nregs < DVM_MAX_REGS ? t->nregs : DVM_MAX_REGS));
    const int32_t idx[3] = {0, 0, 0};
    return dvm_run(&env, task_index, t, idx, 0, regs, 0) != 0 || rec.code != 0;
}

static int cpu_exec(dvm_backend *be, const dvm_exec *x, dvm_rt_error *rt, char *err, size_t errlen)
{
    const dvm_program *p = x->prog;
    dvm_rt_error rec;
    memset(&rec, 0, sizeof rec);
    memset(rt, 0, sizeof *rt);
    uint32_t *arrp[DVM_MAX_ARRAY_SLOTS + 1];
    if (x->nslots > DVM_MAX_ARRAY_SLOTS) {
        cpu_msg(err, errlen, "cpu backend: too many array slots%s", "");
        return -1;
    }
    if (cpu_arrays(x->nslots, x->arrays, x->arr_len, arrp, err, errlen)) return -1;
    int64_t nts = x->nthread_slots;
    if (nts < 1) {
        cpu_msg(err, errlen, "cpu backend: exec needs at least one thread slot%s", "");
        return -1;
    }
    uint32_t *heap = NULL;
    if (x->nstacks > 0) {
        /* The layout must fit the buffer: (nthread_slots + 1) slots of stride words. */
        size_t need_words = 0;
        if (!x->heap || x->stride < 0 || nts > INT64_MAX / 2 ||
            (x->stride > 0 && (nts + 1) > INT64_MAX / 4 / x->stride)) {
            cpu_msg(err, errlen, "cpu backend: no adstack heap or a bad heap layout%s", "");
            return -1;
        }
        need_words = (size_t)((nts + 1) * x->stride);
        if (need_words > x->heap->bytes / 4u) {
            cpu_msg(err, errlen, "cpu backend: adstack heap smaller than its layout%s", "");
            return -1;
        }
        for (uint32_t i = 0; i < x->nstacks; i++)
            if (x->stack_off[i] < 0 || x->stack_cap[i] < 0 || x->stack_off[i] + 1 + x->stack_cap[i] > x->stride) {
                cpu_msg(err, errlen, "cpu backend: adstack layout does not fit its stride%s", "");
                return -1;
            }
        heap = (uint32_t *)x->heap->p;
    }
    dvm_env env;
    env.nodes = p->nodes;
    env.consts = p->consts;
    env.arr = arrp;
    env.arr_len = x->arr_len;
    env.arr_shape = x->arr_shape;
    env.uni = x->uniforms;
    env.heap = heap;
    env.stride = x->stride;
    env.stack_off = x->stack_off;
    env.stack_cap = x->stack_cap;
    env.nstacks = heap ? x->nstacks : 0;
    env.err = &rec;
    env.cancel = x->cancel ? x->cancel : &cpu_never_cancelled;
    env.start[0] = env.start[1] = env.start[2] = 0; /* a parallel task's: set below */
    if (heap && !x->resume) dvm_thread_begin(&env, nts); /* the serial slot, once per launch */

    const int lanes = be->lanes;
    int nthreads = be->threads < nts / lanes ? be->threads : (int)(nts / lanes);
    if (nthreads < 1) {
        cpu_msg(err, errlen, "cpu backend: exec needs a heap slot per lane%s", "");
        return -1;
    }
    /* one thread: the launch's atomics may be plain (dvm_run_alone) */
    const int one_thread = nthreads == 1;
    const dvm_variant_desc *var = x->var;
    /* the host ran the first host_tasks tasks (vm/launch.c): their results are in the uniforms */
    for (uint32_t ti = x->host_tasks; ti < var->ntasks; ti++) {
        uint32_t task_index = ti; /* task index within the variant (the error record's unit) */
        const dvm_task_desc *t = &p->tasks[var->task_begin + ti];
        /* lanes: plain for a task with no conditional branch, else masked (the GPU backends' rule) */
        const dvm_task_flow fl = dvm_task_flow_of(p->nodes, t);
        const int masked = fl.cond != 0;
        /* plain atomics: on one thread, or where each element has one writer */
        const int private_ = cpu_task_private(p->nodes + t->code_begin, t, &fl);
        const int alone = one_thread || private_;
        /* blocks: every parallel task without adstacks (a heap slot per lane). A task with a
           data-dependent loop too: its lanes wait for each other's trips (masked), but each
           node's dispatch is still paid once for the block (the FMA loop 1.35x faster, its
           adjoint 1.5x, on one thread); unless it adds into shared memory, whose f32 sums
           would then depend on how the loop's trips interleave across lanes (an unrolled loop
           and the same loop rolled would differ in the last bits on one thread), or calls
           library math (cpu_loop_blocks) */
        const int blk = lanes == 1 && !heap && t->kind == DVM_TASK_PARALLEL &&
                        (fl.loops == 0 || cpu_loop_blocks(p->nodes + t->code_begin, t, private_));
        const int rowable = blk && fl.fixed_idx && t->ndim <= 2;
        if (t->kind == DVM_TASK_SERIAL) {
            uint32_t regs[DVM_MAX_REGS];
            memset(regs, 0, sizeof(uint32_t) * (t->nregs < DVM_MAX_REGS ? t->nregs : DVM_MAX_REGS));
            int32_t idx[3] = {0, 0, 0};
            dvm_run_alone(&env, task_index, t, idx, nts, regs, 0);
        } else {
            int64_t ext[DVM_MAX_PAR_DIMS] = {1, 1, 1}, total = 1;
            int nd = t->ndim < 1 ? 1 : (t->ndim > DVM_MAX_PAR_DIMS ? DVM_MAX_PAR_DIMS : t->ndim);
            /* dimension d: [start, stop), the run's idx are digits (interp_core.h adds the start) */
            env.start[0] = env.start[1] = env.start[2] = 0;
            for (int d = 0; d < nd; d++) {
                int64_t v = (int32_t)x->uniforms[t->ext_u[d]];
                if (t->start_u[d] != DVM_NO_SLOT) {
                    env.start[d] = (int32_t)x->uniforms[t->start_u[d]];
                    v -= env.start[d];
                }
                ext[d] = v > 0 ? v : 0;
            }
            /* 64-bit product: each extent is < 2^32 (an i32 stop less an i32 start), so two or
               three dimensions can pass 2^63. */
            for (int d = 0; d < nd; d++) {
                if (ext[d] && total > INT64_MAX / ext[d]) {
                    cpu_msg(err, errlen, "cpu backend: parallel iteration space exceeds 2^63%s", "");
                    return -1;
                }
                total *= ext[d];
            }
            if (total > 0) {
                /* Dynamic chunks: loops with data-dependent trip counts stay balanced, and a
                   thread polls the error word once per chunk. */
                int64_t chunk = total / ((int64_t)nthreads * 16);
                if (chunk < CPU_CHUNK_MIN) chunk = CPU_CHUNK_MIN;
                int64_t nchunks = (total + chunk - 1) / chunk;
#pragma omp parallel num_threads(nthreads)
                {
                    int tid = omp_get_thread_num();
                    uint32_t *const regs = be->regs + (size_t)tid * CPU_REG_WORDS;
                    memset(regs, 0, sizeof(uint32_t) * (blk ? CPU_BLOCK : lanes) * (t->nregs < DVM_MAX_REGS ? t->nregs : DVM_MAX_REGS));
                    if (heap)
                        for (int l = 0; l < lanes; l++) dvm_thread_begin(&env, (int64_t)tid * lanes + l);
                    /* the lanes that have run the task's prologue (nodes [0, body)): a call
                       starts at body only when every lane with an iteration has */
                    uint32_t primed = 0;
#pragma omp for schedule(dynamic, 1)
                    for (int64_t c = 0; c < nchunks; c++) {
                        if (DVM_LOAD_ERR(&rec.code)) continue;
                        int64_t b = c * chunk, e = b + chunk < total ? b + chunk : total;
                        int32_t idx[3] = {0, 0, 0};
                        /* row-major: last dimension fastest; digits (the run adds the starts) */
                        int64_t r = b;
                        for (int d = nd - 1; d >= 0; d--) {
                            idx[d] = (int32_t)(uint32_t)(r % ext[d]);
                            r /= ext[d];
                        }
                        if (blk) {
                            dvm_blk_fn *const run = cpu_blk_fns[be->avx2][alone][masked];
                            for (int64_t it = b; it < e; it += CPU_BLOCK) {
                                int32_t lidx[3 * CPU_BLOCK];
                                cpu_mask have = 0;
                                const int n = e - it < CPU_BLOCK ? (int)(e - it) : CPU_BLOCK;
                                /* one row: lane l at lane 0's + l in the last dimension */
                                const int row = (int64_t)idx[nd - 1] + n <= ext[nd - 1];
                                if (rowable && row && n == CPU_BLOCK) {
                                    /* the row path: lane 0's indices say every lane's (DVM_ROW_INDEX) */
                                    memcpy(lidx, idx, sizeof idx);
                                    have = ~(cpu_mask)0 >> (128 - CPU_BLOCK) | DVM_ROW_FLAG_OF(cpu_mask);
                                    idx[nd - 1] += n - 1;
                                    cpu_next_idx(idx, nd, ext);
                                } else if (row) {
                                    for (int l = 0; l < CPU_BLOCK; l++) {
                                        lidx[3 * l] = idx[0], lidx[3 * l + 1] = idx[1], lidx[3 * l + 2] = idx[2];
                                        lidx[3 * l + nd - 1] = idx[nd - 1] + (l < n ? l : 0);
                                    }
                                    have = ~(cpu_mask)0 >> (128 - n);
                                    idx[nd - 1] += n - 1;
                                    cpu_next_idx(idx, nd, ext);
                                } else {
                                    for (int l = 0; l < CPU_BLOCK; l++) {
                                        if (l >= n) { /* no iteration: lane 0's indices */
                                            memcpy(lidx + 3 * l, lidx, sizeof idx);
                                            continue;
                                        }
                                        memcpy(lidx + 3 * l, idx, sizeof idx);
                                        have |= (cpu_mask)1 << l;
                                        cpu_next_idx(idx, nd, ext);
                                    }
                                }
                                const uint32_t start = primed ? t->body : 0u;
                                primed = 1; /* lane 0 always has an iteration: every lane runs the prologue */
                                if (run(&env, task_index, t, lidx, (int64_t)tid, regs, start, have))
                                    break;
                            }
                            continue;
                        }
                        if (lanes == 1) {
                            for (int64_t it = b; it < e; it++) {
                                if ((alone ? dvm_run_alone : dvm_run)(&env, task_index, t, idx, tid, regs, primed ? t->body : 0)) break;
                                primed = 1;
                                cpu_next_idx(idx, nd, ext);
                            }
                            continue;
                        }
                        for (int64_t it = b; it < e; it += lanes) {
                            /* lane l takes iteration it + l */
                            int32_t lidx[3 * CPU_LANES];
                            uint32_t have = 0;
                            for (int l = 0; l < lanes; l++) {
                                if (it + l >= e) { /* no iteration: lane 0's indices (interp_core.h) */
                                    memcpy(lidx + 3 * l, lidx, sizeof idx);
                                    continue;
                                }
                                memcpy(lidx + 3 * l, idx, sizeof idx);
                                have |= 1u << l;
                                cpu_next_idx(idx, nd, ext);
                            }
                            const uint32_t start = (have & ~primed) ? 0u : t->body;
                            primed |= have;
                            if ((masked ? dvm_run_mlanes : dvm_run_lanes)(&env, task_index, t, lidx, (int64_t)tid,
                                                                          regs, start, have))
                                break;
                        }
                    }
                }
            }
        }
        if (rec.code != 0) {
            *rt = rec;
            return 1;
        }
    }
    return 0;
}

/* ---- sizer primitives (vm/sizer.c runs them): every program's state is host memory, the
   range and final passes run on the calling thread, and the max-reducer is an OpenMP max
   reduction ---- */
struct dvm_sizing {
    const dvm_size_plan *plan;
    uint32_t *arrp[DVM_MAX_ARRAY_SLOTS + 1];
    dvm_rt_error rec;   /* the first runtime error of any pass */
    int64_t *state;     /* per program, 4 * len words from off[p]: scratch, range lo, hi, value */
    size_t *off;
    int64_t *caps;      /* per program */
};

static void cpu_size_end(dvm_backend *be, dvm_sizing *s)
{
    (void)be;
    if (!s) return;
    free(s->state);
    free(s->off);
    free(s->caps);
    free(s);
}

static int cpu_size_begin(dvm_backend *be, const dvm_size_plan *plan, dvm_sizing **out, char *err, size_t errlen)
{
    (void)be;
    const dvm_size_job *job = plan->job;
    *out = NULL;
    if (job->nslots > DVM_MAX_ARRAY_SLOTS) {
        cpu_msg(err, errlen, "cpu backend: too many array slots%s", "");
        return -1;
    }
    dvm_sizing *s = calloc(1, sizeof *s);
    if (!s) {
        cpu_msg(err, errlen, "cpu backend: out of memory in the sizer%s", "");
        return -1;
    }
    s->plan = plan;
    size_t words = 0;
    s->off = calloc(plan->nprogs ? plan->nprogs : 1, sizeof *s->off);
    s->caps = calloc(plan->nprogs ? plan->nprogs : 1, sizeof *s->caps);
    for (uint32_t g = 0; s->off && g < plan->nprogs; g++) {
        s->off[g] = words;
        words += 4 * (size_t)plan->progs[g].len;
    }
    /* zeroed: slots not yet written read as 0 */
    if (s->off && s->caps) s->state = calloc(words ? words : 1, sizeof *s->state);
    if (!s->state) {
        cpu_size_end(be, s);
        cpu_msg(err, errlen, "cpu backend: out of memory in the sizer%s", "");
        return -1;
    }
    if (cpu_arrays(job->nslots, job->arrays, job->arr_len, s->arrp, err, errlen)) {
        cpu_size_end(be, s);
        return -1;
    }
    *out = s;
    return 0;
}

/* The evaluation environment of program g over its state; *scratch: its slots. */
static void cpu_size_env(dvm_sizing *s, uint32_t g, dvm_size_env *e, int64_t **scratch)
{
    const dvm_size_job *job = s->plan->job;
    const dvm_size_prog *pg = &s->plan->progs[g];
    int64_t *st = s->state + s->off[g];
    const size_t len = pg->len;
    e->nodes = job->prog->nodes;
    e->consts = job->prog->consts;
    e->arr = s->arrp;
    e->arr_len = job->arr_len;
    e->arr_shape = job->arr_shape;
    e->uni = job->uniforms;
    e->range_lo = st + len;
    e->range_hi = st + 2 * len;
    e->range_val = st + 3 * len;
    e->walk_cap = s->plan->walk_cap;
    e->stack = pg->stack;
    e->prog_begin = pg->begin;
    e->err = &s->rec;
    e->cancel = job->cancel;
    e->tally = NULL;
    *scratch = st;
}

static int cpu_size_pass(dvm_backend *be, dvm_sizing *s, uint32_t g, int final, char *err, size_t errlen)
{
    (void)be, (void)err, (void)errlen;
    const dvm_size_prog *pg = &s->plan->progs[g];
    dvm_size_env e;
    int64_t *scratch;
    cpu_size_env(s, g, &e, &scratch);
    if (!final) {
        dvm_size_eval(&e, pg->begin, pg->len, DVM_SZ_PASS_RANGES, NULL, 0, scratch);
        return 0;
    }
    int64_t cap = 0;
    if (!s->rec.code) cap = dvm_size_eval(&e, pg->begin, pg->len, DVM_SZ_PASS_FINAL, NULL, 0, scratch);
    s->caps[g] = cap > 0 ? cap : 0;
    return 0;
}

static int cpu_size_reduce(dvm_backend *be, dvm_sizing *s, uint32_t g, char *err, size_t errlen)
{
    const dvm_size_plan *plan = s->plan;
    const dvm_size_prog *pg = &plan->progs[g];
    dvm_size_env e;
    int64_t *scratch;
    cpu_size_env(s, g, &e, &scratch);
    dvm_rt_error *rec = &s->rec;
    for (uint32_t ri = pg->range_first; ri < pg->range_first + pg->nranges && !rec->code; ri++) {
        const uint32_t k = plan->ranges[ri].node, bend = plan->ranges[ri].end;
        int64_t lo = e.range_lo[k], hi = e.range_hi[k], best = -DVM_SIZE_SAT - 1;
        if (lo >= hi || bend <= k + 1) {
            e.range_val[k] = 0;
            continue;
        }
        int nthreads = be->threads;
        if (hi - lo < 4096) nthreads = 1; /* not worth waking the team */
        /* Per-thread scratch starts as the range pass left it: the body may read slots
           computed before its range. */
        int64_t *tsall = malloc(sizeof(int64_t) * bend * (size_t)nthreads);
        if (!tsall) {
            cpu_msg(err, errlen, "cpu backend: out of memory in the max-reducer%s", "");
            return -1;
        }
        /* The steps of every evaluation count against one budget (plan->reduce_budget): each
           thread adds its own to `spent` every 256 evaluations and at its end, so the error
           comes exactly when the sum passes the budget, whatever the schedule. */
        int64_t spent = 0;
        const int64_t budget = plan->reduce_budget;
        const uint32_t at = pg->begin + k;
#pragma omp parallel num_threads(nthreads) reduction(max : best)
        {
            int64_t *ts = tsall + (size_t)omp_get_thread_num() * bend;
            memcpy(ts, scratch, sizeof(int64_t) * bend);
            dvm_size_env ms = e;
            int64_t mine = 0, nev = 0;
            ms.tally = &mine;
            /* each thread its own block of the range, left at the first error (an omp for
               cannot break: it would step through the rest of a 2^40 range) */
            const int64_t nth = omp_get_num_threads(), me = omp_get_thread_num();
            const int64_t per = (hi - lo) / nth, extra = (hi - lo) % nth;
            const int64_t vb = lo + me * per + (me < extra ? me : extra), ve = vb + per + (me < extra);
            for (int64_t v = vb; v < ve; v++) {
                if (DVM_LOAD_ERR(&rec->code)) break;
                int64_t r = dvm_size_eval(&ms, at + 1, bend - k - 1, DVM_SZ_PASS_BODY, &v, 1, ts);
                if (r > best) best = r;
                if ((++nev & 255) == 0) {
                    if (__atomic_add_fetch(&spent, mine, __ATOMIC_RELAXED) > budget)
                        dvm_record_error(rec, DVM_RT_SIZER_CAP, 0, at, pg->stack, budget, 0, 0);
                    mine = 0;
                }
            }
            if (__atomic_add_fetch(&spent, mine, __ATOMIC_RELAXED) > budget)
                dvm_record_error(rec, DVM_RT_SIZER_CAP, 0, at, pg->stack, budget, 0, 0);
        }
        free(tsall);
        e.range_val[k] = best;
    }
    return 0;
}

static int cpu_size_read(dvm_backend *be, dvm_sizing *s, int64_t *caps, dvm_rt_error *rt, char *err, size_t errlen)
{
    (void)be, (void)err, (void)errlen;
    if (s->rec.code) {
        *rt = s->rec;
        return 1;
    }
    memcpy(caps, s->caps, sizeof *caps * s->plan->nprogs);
    return 0;
}

const dvm_backend_vtbl dvm_backend_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .probe = cpu_probe,
    .device_name = cpu_device_name,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .write = cpu_write,
    .read = cpu_read,
    .copy = cpu_copy,
    .wrap_host = cpu_wrap_host,
    .data = cpu_data,
    .load = cpu_load,
    .unload = cpu_unload,
    .size_begin = cpu_size_begin,
    .size_pass = cpu_size_pass,
    .size_reduce = cpu_size_reduce,
    .size_read = cpu_size_read,
    .size_end = cpu_size_end,
    .slots = cpu_slots,
    .exec = cpu_exec,
};
