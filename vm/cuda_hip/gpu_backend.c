/* gpu_backend.c: the CUDA and HIP backends, written once over gpu_driver.h. It uploads
 * programs, packs each launch's tables into one upload, runs tasks and the sizer passes
 * with the entry points of interp_cuda.cu, and reads back once per launch (the error
 * record, with the uniforms when they are few; the capacities for the sizer). */
#include "vm/cuda_hip/gpu_driver.h"
#include "vm/interp/gpu_abi.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dvm_buffer {
    uint64_t ptr;
    size_t bytes;
    int borrowed; /* the caller's device memory (dvm_gpu_wrap_device): never freed here */
};

struct dvm_loaded {
    uint64_t nodes, consts, tasks;
    uint32_t nnodes, nconsts;
};

/* Per-task launch configuration; slots() and exec() derive it the same way. */
typedef struct gpu_cfg {
    uint32_t flags, nregs_pad, smem;
    uint32_t blocks; /* parallel: grid size */
    uint32_t lanes;  /* iterations per thread and call: 1 (dvm_k_parallel), DVM_GPU_LANES or
                        DVM_GPU_LANES_WIDE (the lane kernels) */
    void *fn;        /* parallel: the kernel */
} gpu_cfg;

struct dvm_backend {
    const dvm_gpu_driver *drv;
    int ordinal;
    void *ctx, *mod;
    void *k_serial, *k_parallel, *k_ranges, *k_reduce, *k_final, *k_lanes, *k_lanes8, *k_mlanes, *k_mlanes8;
    int sms, cc_major, cc_minor, smem_max; /* smem_max: dynamic shared memory we may use */
    uint32_t max_threads;                  /* the gpu_threads option: only N threads iterate (tests:
                                              puts small kernels through the lanes' every path) */
    char name[384];
    /* growable scratch on the device and its host staging copy */
    uint64_t tab;
    size_t tab_cap;
    unsigned char *stage;
    size_t stage_cap;
    uint64_t regs;
    size_t regs_cap;
    uint64_t work;
    size_t work_cap;
    volatile uint32_t *cancel_host; /* the cancel word (mapped host memory) and the kernels' address */
    uint64_t cancel_dev;
};

#define SMEM_CODE_BUDGET (16u * 1024u) /* largest task copied into shared memory */
#define SMEM_REGS_BUDGET (48u * 1024u) /* register files of one block in shared memory */

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Names a failed driver call: "cuda: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (...)". */
#define CHECK(be_drv, call, what)                                                               \
    do {                                                                                        \
        int rc_ = (call);                                                                       \
        if (rc_ != 0)                                                                           \
            return fail(err, errlen, "%s backend (%s:%d): %s failed: %s", (be_drv)->name,       \
                        __FILE__, __LINE__, what, (be_drv)->errstr(rc_));                       \
    } while (0)

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static int grow(dvm_backend *be, uint64_t *p, size_t *cap, size_t need, char *err, size_t errlen) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need) n *= 2;
    if (*p) be->drv->free(*p);
    *p = 0;
    *cap = 0;
    CHECK(be->drv, be->drv->alloc(p, n), "device allocation of scratch");
    *cap = n;
    return 0;
}

static int grow_stage(dvm_backend *be, size_t need, char *err, size_t errlen) {
    if (need <= be->stage_cap) return 0;
    size_t n = be->stage_cap ? be->stage_cap : 4096;
    while (n < need) n *= 2;
    unsigned char *s = realloc(be->stage, n);
    if (!s) return fail(err, errlen, "%s backend: out of host memory (%zu bytes)", be->drv->name, n);
    be->stage = s;
    be->stage_cap = n;
    return 0;
}

volatile uint32_t *dvm_gpu_cancel_word(dvm_backend *be) { return be->cancel_host; }

int dvm_gpu_probe(const dvm_gpu_driver *drv, char *out, size_t outlen) {
    char msg[512];
    size_t used = out ? strlen(out) : 0;
#define APPEND(...)                                                                             \
    do {                                                                                        \
        if (out && used < outlen) {                                                             \
            int w_ = snprintf(out + used, outlen - used, __VA_ARGS__);                          \
            if (w_ > 0) used += (size_t)w_ < outlen - used ? (size_t)w_ : outlen - used - 1;    \
        }                                                                                       \
    } while (0)
    if (drv->load(msg, sizeof msg) != 0) {
        APPEND("%s: unavailable: %s\n", drv->name, msg);
        return 0;
    }
    int n = 0;
    int rc = drv->count(&n);
    if (rc != 0) {
        APPEND("%s: unavailable: counting devices failed: %s\n", drv->name, drv->errstr(rc));
        return 0;
    }
    if (n == 0) APPEND("%s: no device found by the %s\n", drv->name, drv->api);
    for (int i = 0; i < n; i++) {
        char nm[256] = "?";
        int sms = 0, ma = 0, mi = 0;
        drv->dev_name(i, nm, (int)sizeof nm);
        drv->attr(i, DVM_GPU_A_SMS, &sms);
        drv->attr(i, DVM_GPU_A_CC_MAJOR, &ma);
        drv->attr(i, DVM_GPU_A_CC_MINOR, &mi);
        APPEND("%s: device %d: %s (compute capability %d.%d, %d multiprocessors)\n", drv->name, i, nm,
               ma, mi, sms);
    }
#undef APPEND
    return n;
}

void dvm_gpu_close(dvm_backend *be) {
    if (!be) return;
    const dvm_gpu_driver *d = be->drv;
    if (be->ctx) {
        d->bind(be->ordinal, be->ctx);
        if (be->tab) d->free(be->tab);
        if (be->regs) d->free(be->regs);
        if (be->work) d->free(be->work);
        if (be->mod) d->mod_unload(be->mod);
        if (be->cancel_host) d->host_free((void *)be->cancel_host);
        d->ctx_close(be->ordinal, be->ctx);
    }
    free(be->stage);
    free(be);
}

static int open_fail(dvm_backend *be, int rc) {
    dvm_gpu_close(be);
    return rc;
}

dvm_backend *dvm_gpu_open(const dvm_gpu_driver *drv, const dvm_backend_opts *opts, char *err, size_t errlen) {
    if (drv->load(err, errlen) != 0) return NULL;
    int n = 0, rc = drv->count(&n);
    if (rc != 0) {
        fail(err, errlen, "%s backend: counting devices failed: %s", drv->name, drv->errstr(rc));
        return NULL;
    }
    int ordinal = opts ? opts->device : 0;
    if (n == 0) {
        fail(err, errlen, "%s backend: the %s found no device", drv->name, drv->api);
        return NULL;
    }
    if (ordinal < 0 || ordinal >= n) {
        fail(err, errlen, "%s backend: device %d does not exist (%d found)", drv->name, ordinal, n);
        return NULL;
    }
    dvm_backend *be = calloc(1, sizeof *be);
    if (!be) {
        fail(err, errlen, "%s backend: out of host memory", drv->name);
        return NULL;
    }
    be->drv = drv;
    be->ordinal = ordinal;
    char nm[256] = "?";
    drv->dev_name(ordinal, nm, (int)sizeof nm);
    drv->attr(ordinal, DVM_GPU_A_SMS, &be->sms);
    drv->attr(ordinal, DVM_GPU_A_CC_MAJOR, &be->cc_major);
    drv->attr(ordinal, DVM_GPU_A_CC_MINOR, &be->cc_minor);
    int optin = 48 * 1024;
    if (drv->attr(ordinal, DVM_GPU_A_SMEM_OPTIN, &optin) != 0 || optin <= 0) optin = 48 * 1024;
    be->smem_max = optin < (int)(SMEM_CODE_BUDGET + SMEM_REGS_BUDGET) ? optin : (int)(SMEM_CODE_BUDGET + SMEM_REGS_BUDGET);
    if (be->sms <= 0) be->sms = 1;
    be->max_threads = opts && opts->gpu_threads > 0 ? (uint32_t)opts->gpu_threads : 0u;
    char few[48] = ""; /* the gpu_threads option, which changes how the work is spread */
    if (be->max_threads) snprintf(few, sizeof few, ", at most %u threads (gpu_threads)", be->max_threads);
    snprintf(be->name, sizeof be->name, "%s device %d: %s (compute capability %d.%d, %d multiprocessors%s)",
             drv->name, ordinal, nm, be->cc_major, be->cc_minor, be->sms, few);

    rc = drv->ctx_open(ordinal, &be->ctx);
    if (rc != 0) {
        fail(err, errlen, "%s backend: creating a context on device %d failed: %s", drv->name, ordinal, drv->errstr(rc));
        be->ctx = NULL;
        open_fail(be, 0);
        return NULL;
    }
    void *cw = NULL;
    rc = drv->host_alloc_mapped(64, &cw, &be->cancel_dev);
    if (rc != 0) {
        fail(err, errlen, "%s backend: allocating the mapped host word for dvm_context_cancel failed: %s", drv->name,
             drv->errstr(rc));
        open_fail(be, 0);
        return NULL;
    }
    be->cancel_host = (volatile uint32_t *)cw;
    *be->cancel_host = 0;
    rc = drv->mod_load(drv->image, &be->mod);
    if (rc != 0) {
        if (rc == drv->no_binary_code)
            fail(err, errlen, "%s backend: the embedded interpreter has no code for %s (compute capability %d.%d); it was built for %s",
                 drv->name, nm, be->cc_major, be->cc_minor, drv->targets);
        else
            fail(err, errlen, "%s backend: loading the embedded interpreter failed: %s", drv->name, drv->errstr(rc));
        be->mod = NULL;
        open_fail(be, 0);
        return NULL;
    }
    static const char *const names[9] = {"dvm_k_serial",      "dvm_k_parallel",   "dvm_k_size_ranges",
                                         "dvm_k_size_reduce", "dvm_k_size_final", "dvm_k_parallel_lanes",
                                         "dvm_k_parallel_lanes8", "dvm_k_parallel_mlanes", "dvm_k_parallel_mlanes8"};
    void **fns[9] = {&be->k_serial, &be->k_parallel, &be->k_ranges, &be->k_reduce, &be->k_final,
                     &be->k_lanes,  &be->k_lanes8,   &be->k_mlanes, &be->k_mlanes8};
    for (int i = 0; i < 9; i++) {
        rc = drv->func(be->mod, names[i], fns[i]);
        if (rc != 0) {
            fail(err, errlen, "%s backend: the embedded interpreter lacks %s: %s", drv->name, names[i], drv->errstr(rc));
            open_fail(be, 0);
            return NULL;
        }
    }
    /* A stale interpreter (built from another ops.def) is detected, not run. */
    uint64_t hp = 0;
    size_t hb = 0;
    unsigned long long dev_hash = 0;
    rc = drv->global(be->mod, "dvm_interp_ops_hash", &hp, &hb);
    if (rc == 0 && hb == sizeof dev_hash) rc = drv->d2h(&dev_hash, hp, sizeof dev_hash);
    if (rc != 0 || hb != sizeof dev_hash) {
        fail(err, errlen, "%s backend: the embedded interpreter has no ops-table hash", drv->name);
        open_fail(be, 0);
        return NULL;
    }
    if ((uint64_t)dev_hash != dvm_ops_hash()) {
        fail(err, errlen, "%s backend: the embedded interpreter was built from another opcode table "
             "(hash %016llx, this library %016llx): rebuild dvm", drv->name, dev_hash,
             (unsigned long long)dvm_ops_hash());
        open_fail(be, 0);
        return NULL;
    }
    if (be->smem_max > 48 * 1024) {
        void *const par[5] = {be->k_parallel, be->k_lanes, be->k_lanes8, be->k_mlanes, be->k_mlanes8};
        for (int i = 0; i < 5; i++)
            if (drv->set_max_smem(par[i], be->smem_max) != 0) be->smem_max = 48 * 1024;
    }
    return be;
}

const char *dvm_gpu_device_name(dvm_backend *be) { return be->name; }

int dvm_gpu_alloc(dvm_backend *be, size_t bytes, dvm_buffer **out, char *err, size_t errlen) {
    *out = NULL;
    dvm_buffer *b = calloc(1, sizeof *b);
    if (!b) return fail(err, errlen, "%s backend: out of host memory", be->drv->name);
    size_t n = bytes ? align_up(bytes, 16) : 16; /* zero-size arrays still get an address */
    int rc;
    if ((rc = be->drv->bind(be->ordinal, be->ctx)) != 0 || (rc = be->drv->alloc(&b->ptr, n)) != 0) {
        free(b);
        return fail(err, errlen, "%s backend: allocating %zu bytes of device memory failed: %s",
                    be->drv->name, bytes, be->drv->errstr(rc));
    }
    if ((rc = be->drv->zero(b->ptr, n)) != 0) {
        be->drv->free(b->ptr);
        free(b);
        return fail(err, errlen, "%s backend: zero-filling %zu bytes failed: %s", be->drv->name, n, be->drv->errstr(rc));
    }
    b->bytes = bytes;
    *out = b;
    return 0;
}

void dvm_gpu_free(dvm_backend *be, dvm_buffer *b) {
    if (!b) return;
    if (!b->borrowed) {
        be->drv->bind(be->ordinal, be->ctx);
        be->drv->free(b->ptr);
    }
    free(b);
}

/* Caller-owned device memory as a buffer, used in place. The driver must know the address
 * (a plain host pointer would fault in a kernel and poison the context), on this device,
 * with all `bytes` inside one allocation: the interpreters check element indices against
 * the array's length, never against the allocation. */
int dvm_gpu_wrap_device(dvm_backend *be, void *p, size_t bytes, dvm_buffer **out, char *err, size_t errlen) {
    *out = NULL;
    const dvm_gpu_driver *d = be->drv;
    uint64_t addr = (uint64_t)(uintptr_t)p, start = 0;
    size_t size = 0;
    int ord = -1, rc;
    if ((rc = d->bind(be->ordinal, be->ctx)) != 0)
        return fail(err, errlen, "%s backend: %s", d->name, d->errstr(rc));
    rc = d->ptr_range ? d->ptr_range(addr, &ord, &start, &size) : -1;
    if (rc == -1)
        return fail(err, errlen, "%s backend: the %s cannot tell where a pointer lies (too old), so device memory "
                    "cannot be wrapped", d->name, d->api);
    if (rc != 0)
        return fail(err, errlen, "%s backend: %p is not memory of a %s device (%s); host memory needs the cpu "
                    "backend's dvm_array_wrap_host or a copy with dvm_array_write", d->name, p, d->name, d->errstr(rc));
    if (ord != be->ordinal)
        return fail(err, errlen, "%s backend: %p is memory of device %d, this context runs on device %d", d->name, p,
                    ord, be->ordinal);
    if (addr < start || addr - start > size || bytes > size - (addr - start))
        return fail(err, errlen, "%s backend: %zu bytes at %p run past the end of their allocation (%zu bytes at "
                    "0x%llx)", d->name, bytes, p, size, (unsigned long long)start);
    dvm_buffer *b = calloc(1, sizeof *b);
    if (!b) return fail(err, errlen, "%s backend: out of host memory", d->name);
    b->ptr = addr;
    b->bytes = bytes;
    b->borrowed = 1;
    *out = b;
    return 0;
}

void *dvm_gpu_data(dvm_backend *be, dvm_buffer *b) {
    (void)be;
    return b ? (void *)(uintptr_t)b->ptr : NULL;
}

int dvm_gpu_write(dvm_backend *be, dvm_buffer *b, size_t off, const void *src, size_t n, char *err, size_t errlen) {
    if (off > b->bytes || n > b->bytes - off)
        return fail(err, errlen, "%s backend: write of %zu bytes at %zu past a %zu-byte buffer", be->drv->name, n, off, b->bytes);
    if (n == 0) return 0;
    CHECK(be->drv, be->drv->bind(be->ordinal, be->ctx), "binding the context");
    CHECK(be->drv, be->drv->h2d(b->ptr + off, src, n), "host-to-device copy");
    return 0;
}

int dvm_gpu_read(dvm_backend *be, dvm_buffer *b, size_t off, void *dst, size_t n, char *err, size_t errlen) {
    if (off > b->bytes || n > b->bytes - off)
        return fail(err, errlen, "%s backend: read of %zu bytes at %zu past a %zu-byte buffer", be->drv->name, n, off, b->bytes);
    if (n == 0) return 0;
    CHECK(be->drv, be->drv->bind(be->ordinal, be->ctx), "binding the context");
    CHECK(be->drv, be->drv->d2h(dst, b->ptr + off, n), "device-to-host copy");
    return 0;
}

int dvm_gpu_copy(dvm_backend *be, dvm_buffer *dst, dvm_buffer *src, size_t n, char *err, size_t errlen) {
    if (n > dst->bytes || n > src->bytes)
        return fail(err, errlen, "%s backend: copy of %zu bytes between buffers of %zu and %zu bytes",
                    be->drv->name, n, src->bytes, dst->bytes);
    if (n == 0) return 0;
    CHECK(be->drv, be->drv->bind(be->ordinal, be->ctx), "binding the context");
    CHECK(be->drv, be->drv->d2d(dst->ptr, src->ptr, n), "device-to-device copy");
    return 0;
}

static int upload(dvm_backend *be, uint64_t *p, const void *src, size_t n, char *err, size_t errlen) {
    *p = 0;
    CHECK(be->drv, be->drv->alloc(p, n ? n : 16), "device allocation for the program");
    if (n) CHECK(be->drv, be->drv->h2d(*p, src, n), "program upload");
    return 0;
}

int dvm_gpu_load(dvm_backend *be, const dvm_program *prog, dvm_loaded **out, char *err, size_t errlen) {
    *out = NULL;
    dvm_loaded *l = calloc(1, sizeof *l);
    if (!l) return fail(err, errlen, "%s backend: out of host memory", be->drv->name);
    CHECK(be->drv, be->drv->bind(be->ordinal, be->ctx), "binding the context");
    if (upload(be, &l->nodes, prog->nodes, (size_t)prog->nnodes * sizeof(dvm_node), err, errlen) ||
        upload(be, &l->consts, prog->consts, (size_t)prog->nconsts * 4u, err, errlen) ||
        upload(be, &l->tasks, prog->tasks, (size_t)prog->ntasks * sizeof(dvm_task_desc), err, errlen)) {
        dvm_gpu_unload(be, l);
        return -1;
    }
    l->nnodes = prog->nnodes;
    l->nconsts = prog->nconsts;
    *out = l;
    return 0;
}

void dvm_gpu_unload(dvm_backend *be, dvm_loaded *l) {
    if (!l) return;
    be->drv->bind(be->ordinal, be->ctx);
    if (l->nodes) be->drv->free(l->nodes);
    if (l->consts) be->drv->free(l->consts);
    if (l->tasks) be->drv->free(l->tasks);
    free(l);
}

/* ---- per-launch tables: one host staging block, one upload ----
   [err record (64 B)][caps or nothing][uniforms][arr ptrs][arr_len][arr_shape][stack_off][stack_cap] */
typedef struct tab_layout {
    size_t err, caps, uni, arr, len, shape, soff, scap, total;
} tab_layout;

static tab_layout layout(uint32_t ncaps, uint32_t nuni, uint32_t nslots, uint32_t nstacks) {
    tab_layout t;
    t.err = 0;
    t.caps = 64;
    t.uni = align_up(t.caps + (size_t)ncaps * 8u, 16);
    t.arr = align_up(t.uni + (size_t)nuni * 4u, 16);
    t.len = t.arr + (size_t)nslots * 8u;
    t.shape = t.len + (size_t)nslots * 8u;
    t.soff = align_up(t.shape + (size_t)nslots * 4u * DVM_MAX_RANK, 16);
    t.scap = t.soff + (size_t)nstacks * 8u;
    t.total = align_up(t.scap + (size_t)nstacks * 8u, 16);
    return t;
}

static int stage_tables(dvm_backend *be, const tab_layout *t, uint32_t nuni, const uint32_t *uni, uint32_t nslots,
                        dvm_buffer *const *arrays, const int64_t *arr_len, const int32_t *arr_shape, uint32_t nstacks,
                        const int64_t *soff, const int64_t *scap, char *err, size_t errlen) {
    if (grow_stage(be, t->total, err, errlen) || grow(be, &be->tab, &be->tab_cap, t->total, err, errlen)) return -1;
    unsigned char *s = be->stage;
    memset(s, 0, t->uni); /* error record and caps start at zero */
    if (nuni) memcpy(s + t->uni, uni, (size_t)nuni * 4u);
    for (uint32_t i = 0; i < nslots; i++) {
        uint64_t p = arrays[i] ? arrays[i]->ptr : 0;
        memcpy(s + t->arr + i * 8u, &p, 8);
    }
    if (nslots) {
        memcpy(s + t->len, arr_len, (size_t)nslots * 8u);
        memcpy(s + t->shape, arr_shape, (size_t)nslots * 4u * DVM_MAX_RANK);
    }
    if (nstacks) {
        memcpy(s + t->soff, soff, (size_t)nstacks * 8u);
        memcpy(s + t->scap, scap, (size_t)nstacks * 8u);
    }
    CHECK(be->drv, be->drv->h2d(be->tab, s, t->total), "upload of the launch tables");
    return 0;
}

/* narr: the variant's array slots. A parallel task whose nodes and register files both fit
   in shared memory also gets the array table there (32 bytes a slot: interp_cuda.cu,
   dvm_gpu_stage_all), ahead of the nodes. */
static gpu_cfg task_cfg(dvm_backend *be, const dvm_node *nodes, const dvm_task_desc *t, int has_stacks, uint32_t narr) {
    gpu_cfg c;
    memset(&c, 0, sizeof c);
    uint32_t nregs = t->nregs ? t->nregs : 1;
    c.nregs_pad = DVM_GPU_LANE_PAD(nregs, 1u);
    c.flags = has_stacks ? DVM_GPU_F_STACKS : 0;
    for (uint32_t d = 0; t->kind == DVM_TASK_PARALLEL && d < t->ndim && d < DVM_MAX_PAR_DIMS; d++)
        if (t->start_u[d] != DVM_NO_SLOT) c.flags |= DVM_GPU_F_STARTS;
    uint32_t code = 0;
    const uint32_t tabs = narr * 32u;
    if (t->kind == DVM_TASK_PARALLEL && (size_t)t->code_len * 8u <= SMEM_CODE_BUDGET) {
        c.flags |= DVM_GPU_F_SMEM_CODE;
        code = DVM_GPU_CODE_WORDS(t->code_len) * 8u;
    }
    uint32_t nthr = t->kind == DVM_TASK_PARALLEL ? DVM_GPU_BLOCK : 1;
    uint32_t regs = c.nregs_pad * 4u * nthr;
    /* register files in shared memory where they fit, else in global memory (regs_global) */
    if ((c.flags & DVM_GPU_F_SMEM_CODE) && tabs + code + regs <= (uint32_t)be->smem_max) {
        c.flags |= DVM_GPU_F_SMEM_REGS;
        c.smem = tabs + code + regs;
    } else if (!(c.flags & DVM_GPU_F_SMEM_CODE) && regs <= (uint32_t)be->smem_max) {
        c.flags |= DVM_GPU_F_SMEM_REGS;
        c.smem = regs;
    } else {
        c.smem = code;
    }
    c.lanes = 1;
    if (t->kind == DVM_TASK_PARALLEL) {
        int nb = 0;
        const dvm_task_flow fl = dvm_task_flow_of(nodes, t);
        /* Several iterations per thread (dispatch paid once for all, their loads in flight
           together) when nodes and the wider register files fit in shared memory with at least
           two blocks per multiprocessor: the wider of the two widths that fits so. On an H200
           8 lanes were as fast or faster than 4 at every register count tried, even with
           fewer iterations in flight per multiprocessor: 1.3x for a stencil of 8 registers (6
           blocks against 12), 1.27x and 1.08x for kernels of 9 (5 blocks against 11) with and
           without a branch, the same at 15 and 23 registers (2-3 blocks against 4-7), faster
           than picking the most lanes x resident blocks. */
        /* Lanes, and which ones. A task with no conditional branch runs the plain lanes, whose
           lanes never part. A task with one runs masked lanes, whose lanes part at a branch and
           meet again (engine_lanes.h, DVM_MASKED): a loop with a data-dependent trip count
           disagrees in nearly every round, and even the stencil's boundary test ran 1.9x
           faster masked than with the earlier plain lanes, which stopped at a disagreement
           and finished the lanes one by one (H200). Masked lanes cost
           branch-free tasks 20-30% (saxpy, trans). */
        const int masked = fl.cond != 0;
        /* keep the warp together (below) */
        const int conv = fl.loops >= 2 && be->drv->warp_vote_cc && be->cc_major >= be->drv->warp_vote_cc;
        if (c.flags & DVM_GPU_F_SMEM_CODE) {
            static const uint32_t widths[2] = {DVM_GPU_LANES, DVM_GPU_LANES_WIDE};
            void *const fns[2] = {masked ? be->k_mlanes : be->k_lanes, masked ? be->k_mlanes8 : be->k_lanes8};
            int fits = 0;
            /* a task that keeps its warp together runs 4 masked lanes: 8 ran the dynsin adjoint
               at 9.9 ms against 4 lanes' 7.1 on an H200 */
            for (int w = 0; w < (masked && conv ? 1 : 2); w++) {
                uint32_t pad = DVM_GPU_LANE_PAD(nregs, widths[w]), smem = tabs + code + pad * 4u * DVM_GPU_BLOCK;
                int nbw = 0;
                if (smem > (uint32_t)be->smem_max || be->drv->occupancy(&nbw, fns[w], DVM_GPU_BLOCK, smem) != 0 || nbw < 2)
                    continue;
                fits = 1; /* the wider one replaces the narrower */
                nb = nbw;
                c.lanes = widths[w];
                c.fn = fns[w];
                c.nregs_pad = pad;
                c.smem = smem;
            }
            if (fits) c.flags |= DVM_GPU_F_SMEM_REGS;
            /* the row path of array nodes (engine_lanes.h, ROW1_ and ROW2_) */
            if (fits && fl.fixed_idx && t->ndim <= 2) c.flags |= DVM_GPU_F_ROWS;
        }
        if (c.lanes == 1) {
            c.fn = be->k_parallel;
            if (be->drv->occupancy(&nb, be->k_parallel, DVM_GPU_BLOCK, c.smem) != 0 || nb <= 0) nb = 1;
        }
        /* Two loops or more one after another (an adjoint's forward sweep, then its reverse
           loop): a warp's threads leave the first at different times and would run the second
           out of step, each group's nodes in turn. Keeping the round's threads together (a
           warp vote after each conditional branch, only the lowest node index goes on) took
           the dynsin adjoint from 24.9 to 13.6 ms on an H200; with one loop it only costs
           (dynloop 1.43 -> 1.98 ms), so it is for tasks with two or more. The masked lanes do
           the same (dynsin adjoint 21.4 -> 7.1 ms). sm_80 and newer (the vote is redux.sync). */
        if ((c.lanes == 1 || masked) && conv) c.flags |= DVM_GPU_F_CONVERGE;
        c.blocks = (uint32_t)nb * (uint32_t)be->sms;
    } else {
        c.blocks = 1;
    }
    return c;
}

int64_t dvm_gpu_slots(dvm_backend *be, const dvm_exec *x) {
    const dvm_program *p = x->prog;
    int64_t best = 1;
    if (be->drv->bind(be->ordinal, be->ctx) != 0) return best;
    for (uint32_t i = 0; i < x->var->ntasks; i++) {
        const dvm_task_desc *t = &p->tasks[x->var->task_begin + i];
        if (t->kind != DVM_TASK_PARALLEL) continue;
        gpu_cfg c = task_cfg(be, p->nodes, t, x->nstacks > 0, x->nslots);
        /* the grid exec launches: no more blocks than the iterations the host knows fill (the
           adstack heap then grows with the work, not with the device) */
        const int64_t total = dvm_exec_total(x, i), per = (int64_t)DVM_GPU_BLOCK * c.lanes;
        if (total >= 0 && (total + per - 1) / per < (int64_t)c.blocks) c.blocks = (uint32_t)((total + per - 1) / per);
        int64_t n = (int64_t)c.blocks * DVM_GPU_BLOCK * c.lanes; /* a heap slot per lane */
        if (n > best) best = n;
    }
    return best;
}

static int launch(dvm_backend *be, void *fn, unsigned grid, unsigned block, unsigned smem, void *args, const char *what,
                  char *err, size_t errlen) {
    void *params[1] = {args};
    CHECK(be->drv, be->drv->launch(fn, grid, block, smem, params), what);
    return 0;
}

/* Reads back the error record (and, if small, the uniforms right after it): the one
   readback of a launch. */
#define UNI_READBACK_MAX 256u

/* The launches of dvm_gpu_exec: each task's arguments in a and its configuration in cfgs. */
static int exec_tasks(dvm_backend *be, const dvm_exec *x, const dvm_gpu_exec_args *ap, const gpu_cfg *cfgs, char *err,
                      size_t errlen) {
    const dvm_program *p = x->prog;
    const dvm_loaded *l = x->loaded;
    dvm_gpu_exec_args a = *ap;
    a.max_threads = be->max_threads;
    a.regs_global = be->regs; /* grown by dvm_gpu_exec; read only by tasks without DVM_GPU_F_SMEM_REGS */
    int zero_serial = x->nstacks > 0 && !x->resume; /* a later window keeps what earlier ones pushed */
    for (uint32_t i = 0; i < x->var->ntasks; i++) {
        uint32_t ti = x->var->task_begin + i;
        const dvm_task_desc *td = &p->tasks[ti];
        if (i < x->host_tasks) continue; /* the host ran it (vm/launch.c): its results are in the uniforms */
        const gpu_cfg c = cfgs[i];
        if (td->kind == DVM_TASK_PARALLEL && c.blocks == 0) continue; /* no iteration */
        a.task = l->tasks + (uint64_t)ti * sizeof(dvm_task_desc);
        a.task_index = i;
        a.code_begin = td->code_begin;
        a.code_len = td->code_len;
        a.nregs_pad = c.nregs_pad;
        a.flags = c.flags;
        a.ndim = td->ndim;
        for (int d = 0; d < 3; d++) a.start_u[d] = td->start_u[d], a.ext_u[d] = td->ext_u[d];
        /* starts the host knows go by value (DVM_GPU_F_STARTS_KNOWN) */
        int sk = td->kind == DVM_TASK_PARALLEL;
        for (uint32_t d = 0; d < 3; d++) {
            a.start_v[d] = 0;
            if (d < td->ndim && td->start_u[d] != DVM_NO_SLOT && !dvm_exec_known_i32(x, td->start_u[d], &a.start_v[d]))
                sk = 0;
        }
        if (sk) a.flags |= DVM_GPU_F_STARTS_KNOWN;
        if (td->kind == DVM_TASK_SERIAL) {
            if (zero_serial) a.flags |= DVM_GPU_F_ZERO_SERIAL;
            zero_serial = 0;
            if (launch(be, be->k_serial, 1, 1, c.smem, &a, "launching a serial task", err, errlen)) return -1;
        } else {
            if (launch(be, c.fn, c.blocks, DVM_GPU_BLOCK, c.smem, &a,
                       "launching a parallel task", err, errlen))
                return -1;
        }
    }
    return 0;
}

int dvm_gpu_exec(dvm_backend *be, const dvm_exec *x, dvm_rt_error *rt, char *err, size_t errlen) {
    const dvm_program *p = x->prog;
    const dvm_loaded *l = x->loaded;
    CHECK(be->drv, be->drv->bind(be->ordinal, be->ctx), "binding the context");
    tab_layout t = layout(0, x->nuniforms, x->nslots, x->nstacks);
    if (stage_tables(be, &t, x->nuniforms, x->uniforms, x->nslots, x->arrays, x->arr_len, x->arr_shape, x->nstacks,
                     x->stack_off, x->stack_cap, err, errlen))
        return -1;
    dvm_gpu_exec_args a;
    memset(&a, 0, sizeof a);
    a.nodes = l->nodes;
    a.consts = l->consts;
    a.arr = be->tab + t.arr;
    a.arr_len = be->tab + t.len;
    a.arr_shape = be->tab + t.shape;
    a.uni = be->tab + t.uni;
    a.heap = x->heap ? x->heap->ptr : 0;
    a.stack_off = be->tab + t.soff;
    a.stack_cap = be->tab + t.scap;
    a.err = be->tab + t.err;
    a.cancel = be->cancel_dev;
    a.stride = x->stride;
    a.slot = x->nthread_slots;
    a.nslots = x->nthread_slots + 1;
    a.nstacks = x->nstacks;
    a.narr = x->nslots;
    /* Every task's configuration, and the register files in global memory grown for the
       largest, before the first launch: once a task has written, nothing is left to fail for
       want of memory (vm/launch.c skips the arrays' snapshots of launches that cannot fail). */
    gpu_cfg *cfgs = (gpu_cfg *)calloc(x->var->ntasks ? x->var->ntasks : 1, sizeof *cfgs);
    if (!cfgs) return fail(err, errlen, "%s backend: out of host memory", be->drv->name);
    size_t regs_need = 0;
    for (uint32_t i = x->host_tasks; i < x->var->ntasks; i++) {
        const dvm_task_desc *td = &p->tasks[x->var->task_begin + i];
        gpu_cfg *c = &cfgs[i];
        *c = task_cfg(be, p->nodes, td, x->nstacks > 0, x->nslots);
        if (td->kind == DVM_TASK_PARALLEL) {
            /* Extents the host knows (host-filled, or computed by the tasks it ran): no more
               blocks than the iterations fill, and no launch for none. Every other grid is
               the full one (its blocks beyond the iterations stage the task and leave): a
               partitioned loop's thin boxes took 8-11 us each that way on an H200. */
            const int64_t total = dvm_exec_total(x, i);
            if (total == 0) c->blocks = 0;
            if (total > 0) {
                const int64_t per = (int64_t)DVM_GPU_BLOCK * c->lanes, need = (total + per - 1) / per;
                if (need < (int64_t)c->blocks) c->blocks = (uint32_t)need;
            }
        }
        if (td->kind == DVM_TASK_PARALLEL && (int64_t)c->blocks * DVM_GPU_BLOCK * c->lanes > x->nthread_slots) {
            fail(err, errlen, "%s backend: %lld heap slots for a grid of %u threads x %u lanes (slots() disagrees with exec)",
                 be->drv->name, (long long)x->nthread_slots, c->blocks * DVM_GPU_BLOCK, c->lanes);
            free(cfgs);
            return -1;
        }
        if (!(c->flags & DVM_GPU_F_SMEM_REGS)) {
            const size_t n = (size_t)c->nregs_pad * 4u * (td->kind == DVM_TASK_SERIAL ? 1u : (size_t)c->blocks * DVM_GPU_BLOCK);
            if (n > regs_need) regs_need = n;
        }
    }
    if (regs_need && grow(be, &be->regs, &be->regs_cap, regs_need, err, errlen)) {
        free(cfgs);
        return -1;
    }
    int rc = exec_tasks(be, x, &a, cfgs, err, errlen);
    free(cfgs);
    if (rc) return -1;
    /* One readback: the error record, and the uniforms that follow it when they are few. */
    const int uni_back = x->nuniforms && x->uniforms && (x->nuniforms <= UNI_READBACK_MAX || x->more);
    size_t nread = uni_back ? t.uni + (size_t)x->nuniforms * 4u : sizeof(dvm_rt_error);
    rc = be->drv->d2h(be->stage, be->tab, nread);
    if (rc != 0)
        return fail(err, errlen, "%s backend: running kernel tasks failed: %s", be->drv->name, be->drv->errstr(rc));
    dvm_rt_error e;
    memcpy(&e, be->stage + t.err, sizeof e);
    if (uni_back) memcpy(x->uniforms, be->stage + t.uni, (size_t)x->nuniforms * 4u);
    if (e.code != 0) {
        if (rt) *rt = e;
        return 1;
    }
    return 0;
}

/* ---- sizer primitives (vm/sizer.c runs them): the range and final passes on one thread, the
   max-reducer on the grid, all queued on the stream; size_read is the one readback of every
   capacity and the error record ---- */
struct dvm_sizing {
    const dvm_size_plan *plan;
    dvm_gpu_size_args a; /* the tables' and the state's addresses; per call: the program */
    tab_layout t;
    uint32_t blocks;     /* the max-reducer's grid */
};

int dvm_gpu_size_begin(dvm_backend *be, const dvm_size_plan *plan, dvm_sizing **out, char *err, size_t errlen) {
    const dvm_size_job *job = plan->job;
    *out = NULL;
    CHECK(be->drv, be->drv->bind(be->ordinal, be->ctx), "binding the context");
    int nb = 0;
    if (be->drv->occupancy(&nb, be->k_reduce, DVM_GPU_BLOCK, 0) != 0 || nb <= 0) nb = 1;
    const uint32_t blocks = (uint32_t)nb * (uint32_t)be->sms;
    const size_t nthreads = (size_t)blocks * DVM_GPU_BLOCK;
    /* work: range_lo, range_hi, range_val, scratch (maxlen each), then per-thread scratch */
    const size_t per = (size_t)plan->maxlen * 8u;
    if (grow(be, &be->work, &be->work_cap, per * 4u + per * nthreads, err, errlen)) return -1;
    /* the caps area: one word per program */
    tab_layout t = layout(plan->nprogs, job->nuniforms, job->nslots, 0);
    if (stage_tables(be, &t, job->nuniforms, job->uniforms, job->nslots, job->arrays, job->arr_len, job->arr_shape, 0,
                     NULL, NULL, err, errlen))
        return -1;
    dvm_sizing *s = calloc(1, sizeof *s);
    if (!s) return fail(err, errlen, "%s backend: out of host memory", be->drv->name);
    s->plan = plan;
    s->t = t;
    s->blocks = blocks;
    dvm_gpu_size_args *a = &s->a;
    a->nodes = job->loaded->nodes;
    a->consts = job->loaded->consts;
    a->arr = be->tab + t.arr;
    a->arr_len = be->tab + t.len;
    a->arr_shape = be->tab + t.shape;
    a->uni = be->tab + t.uni;
    a->range_lo = be->work;
    a->range_hi = be->work + per;
    a->range_val = be->work + 2 * per;
    a->scratch = be->work + 3 * per;
    a->scratch_par = be->work + 4 * per;
    a->err = be->tab + t.err;
    a->caps = be->tab + t.caps;
    a->cancel = be->cancel_dev;
    a->walk_cap = plan->walk_cap;
    *out = s;
    return 0;
}

/* The arguments' program part: program g of the plan. */
static void size_prog(dvm_sizing *s, uint32_t g) {
    const dvm_size_prog *pg = &s->plan->progs[g];
    s->a.begin = pg->begin;
    s->a.len = pg->len;
    s->a.stack = pg->stack;
    s->a.cap_index = g;
    s->a.nranges = 0;
}

int dvm_gpu_size_pass(dvm_backend *be, dvm_sizing *s, uint32_t g, int final, char *err, size_t errlen) {
    size_prog(s, g);
    return launch(be, final ? be->k_final : be->k_ranges, 1, 1, 0, &s->a, "launching the sizer", err, errlen);
}

/* The program's ranges, DVM_GPU_MAX_RANGES a launch (the arguments' tables). */
int dvm_gpu_size_reduce(dvm_backend *be, dvm_sizing *s, uint32_t g, char *err, size_t errlen) {
    const dvm_size_prog *pg = &s->plan->progs[g];
    size_prog(s, g);
    for (uint32_t r = 0; r < pg->nranges;) {
        s->a.nranges = 0;
        for (; r < pg->nranges && s->a.nranges < DVM_GPU_MAX_RANGES; r++) {
            const dvm_size_range *rg = &s->plan->ranges[pg->range_first + r];
            s->a.range_node[s->a.nranges] = rg->node;
            s->a.range_end[s->a.nranges] = rg->end;
            s->a.nranges++;
        }
        if (launch(be, be->k_reduce, s->blocks, DVM_GPU_BLOCK, 0, &s->a, "launching the max-reducer", err, errlen))
            return -1;
    }
    return 0;
}

int dvm_gpu_size_read(dvm_backend *be, dvm_sizing *s, int64_t *caps, dvm_rt_error *rt, char *err, size_t errlen) {
    const size_t nread = s->t.caps + (size_t)s->plan->nprogs * 8u;
    int rc = be->drv->d2h(be->stage, be->tab, nread);
    if (rc != 0) return fail(err, errlen, "%s backend: running the sizer failed: %s", be->drv->name, be->drv->errstr(rc));
    dvm_rt_error e;
    memcpy(&e, be->stage + s->t.err, sizeof e);
    if (e.code != 0) {
        if (rt) *rt = e;
        return 1;
    }
    memcpy(caps, be->stage + s->t.caps, (size_t)s->plan->nprogs * 8u);
    return 0;
}

void dvm_gpu_size_end(dvm_backend *be, dvm_sizing *s) {
    (void)be;
    free(s);
}
