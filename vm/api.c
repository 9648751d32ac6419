/* api.c: the public C API (include/dvm.h) except dvm_launch (launch.c): contexts, modules,
 * kernels, arrays and argument bindings. Every failure leaves its message in the context. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "vm/runtime.h"
#include "bytecode/blob.h"
#include "compiler/compile.h"

/* ---- messages ---- */

dvm_status dvm_fail(dvm_context *ctx, dvm_status st, int located, const char *fmt, ...) {
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
        va_end(ap);
        ctx->err_located = located;
        ctx->err_status = st;
    }
    return st;
}

void dvm_clear_err(dvm_context *ctx) {
    if (ctx) {
        ctx->err[0] = 0;
        ctx->err_located = 0;
        ctx->err_status = DVM_OK;
    }
}

const char *dvm_errmsg(const dvm_context *ctx) {
    if (!ctx) return "no context (NULL)";
    if (dvm_ctx_conflict == ctx) /* this thread's last call found another thread inside ctx */
        return "the context is in use by another thread: a context is used by one thread at a time (docs/c-api.md)";
    if (!dvm_handle_live(ctx, DVM_HK_CONTEXT)) return "the context was destroyed";
    return ctx->err;
}
int dvm_errmsg_located(const dvm_context *ctx) { return ctx ? ctx->err_located : 0; }
void dvm_context_cli_remedies(dvm_context *ctx, int on) {
    if (ctx) ctx->cli_remedies = on;
}
void dvm_free(void *p) { free(p); }

const char *dvm_dtype_name(dvm_dtype t) { return t == DVM_F32 ? "f32" : t == DVM_I32 ? "i32" : "?"; }

/* ---- contexts ---- */

/* The most CPU worker threads a context accepts: OpenMP exits the process (32768) or
 * crashes (65536) on absurd counts, so they are refused before it sees them. */
#define DVM_THREADS_PER_CPU 4
#define DVM_MAX_THREADS 1024

static int thread_limit(int *cpus) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *cpus = n > 0 && n < DVM_MAX_THREADS ? (int)n : DVM_MAX_THREADS;
    return *cpus * DVM_THREADS_PER_CPU < DVM_MAX_THREADS ? *cpus * DVM_THREADS_PER_CPU : DVM_MAX_THREADS;
}

/* The adstack heap's allocator (heap/heap.h): the context's backend. */
static int heap_alloc(void *user, size_t bytes, void **out, char *err, size_t errlen) {
    dvm_context *ctx = (dvm_context *)user;
    dvm_buffer *b = NULL;
    int rc = ctx->vt->alloc(ctx->be, bytes, &b, err, errlen);
    *out = b;
    return rc;
}
static void heap_free(void *user, void *buf) {
    dvm_context *ctx = (dvm_context *)user;
    ctx->vt->free(ctx->be, (dvm_buffer *)buf);
}

/* What the context's launches kept for the next one: the heap, the snapshot buffers. */
static void scratch_free(dvm_context *ctx) {
    dvm_launch_scratch *s = &ctx->scratch;
    dvm_heap_release(&s->heap, &s->heap_mem);
    for (uint32_t i = 0; i < s->nsnap; i++)
        if (s->snap[i]) ctx->vt->free(ctx->be, s->snap[i]);
    free(s->snap);
    free(s->snap_bytes);
    memset(s, 0, sizeof *s);
}

dvm_status dvm_context_create(const dvm_context_opts *opts, dvm_context **out) {
    if (out) *out = NULL;
    if (!out) return DVM_ERR_USAGE;
    dvm_context *ctx = (dvm_context *)dvm_handle_alloc(DVM_HK_CONTEXT, sizeof *ctx, NULL);
    if (!ctx) return DVM_ERR_NOMEM;
    pthread_mutex_init(&ctx->kids_mu, NULL);
    *out = ctx;
    ctx->next_array_id = 1;
    ctx->cancel = &ctx->cancel_own;
    ctx->scratch.heap_mem = (dvm_heap_mem){heap_alloc, heap_free, ctx};
    const char *want = opts && opts->backend ? opts->backend : "auto";
    if (opts) ctx->opts = *opts;
    ctx->opts.backend = NULL;
    const dvm_context_opts *co = &ctx->opts;
    dvm_backend_opts bo = {.device = co->device, .threads = co->threads, .cpu_lanes = co->cpu_lanes,
                           .gpu_threads = co->gpu_threads, .vk_no_int64 = co->vk_no_int64,
                           .vk_no_float_atomics = co->vk_no_float_atomics, .vk_max_alloc = co->vk_max_alloc,
                           .vk_lanes = co->vk_lanes};
    if (bo.device < 0) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "device index %d is negative", bo.device);
    if (bo.threads < 0) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "thread count %d is negative", bo.threads);
    /* the switches: 0 or 1, counts >= 0 (docs/c-api.md, "Context options") */
    const struct {
        const char *name;
        int64_t v, max;
    } sw[] = {{"no_opt", co->no_opt, 1},
              {"no_partition", co->no_partition, 1},
              {"unroll", co->unroll, DVM_UNROLL_MAX},
              {"cpu_lanes", co->cpu_lanes, 1},
              {"gpu_threads", co->gpu_threads, INT32_MAX},
              {"vk_no_int64", co->vk_no_int64, 1},
              {"vk_no_float_atomics", co->vk_no_float_atomics, 1},
              {"vk_max_alloc", co->vk_max_alloc, INT64_MAX}};
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++)
        if (sw[i].v < 0 || sw[i].v > sw[i].max)
            return dvm_fail(ctx, DVM_ERR_USAGE, 0, "context option %s = %lld: expected 0 to %lld", sw[i].name,
                            (long long)sw[i].v, (long long)sw[i].max);
    if (co->vk_lanes != 0 && co->vk_lanes != 1 && co->vk_lanes != 4)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "context option vk_lanes = %d: expected 0, 1 or 4", co->vk_lanes);
    int cpus, max_threads = thread_limit(&cpus);
    if (bo.threads > max_threads)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "thread count %d is more than the limit of %d (%d x the %d online CPUs, at most %d)",
                        bo.threads, max_threads, DVM_THREADS_PER_CPU, cpus, DVM_MAX_THREADS);
    char why[1024];
    if (strcmp(want, "auto") != 0) {
        if (strcmp(want, "cpu") && strcmp(want, "vulkan") && strcmp(want, "cuda") && strcmp(want, "hip"))
            return dvm_fail(ctx, DVM_ERR_USAGE, 0, "unknown backend '%s' (expected cpu, vulkan, cuda, hip or auto)", want);
        const dvm_backend_vtbl *vt = dvm_backend_by_name(want);
        if (!vt)
            return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "backend '%s' is not compiled into this build (see `dvm info`)", want);
        why[0] = 0;
        ctx->be = vt->open(&bo, why, sizeof why);
        if (!ctx->be) return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "backend '%s' device %d: %s", want, bo.device, why);
        ctx->vt = vt;
    } else {
        char reasons[2048];
        ctx->be = dvm_backend_open_auto(&bo, &ctx->vt, reasons, sizeof reasons);
        if (!ctx->be) return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "no backend could be opened (%s)", reasons);
    }
    if (ctx->vt->cancel_word) {
        volatile uint32_t *w = ctx->vt->cancel_word(ctx->be);
        if (w) ctx->cancel = w;
    }
    const char *dn = ctx->vt->device_name ? ctx->vt->device_name(ctx->be) : NULL;
    snprintf(ctx->device, sizeof ctx->device, "%s", dn ? dn : "");
    return DVM_OK;
}

void dvm_tape_destroy(dvm_tape *t);

/* Destroys what the context still owns: tapes first (they hold argument sets and arrays),
   then argument sets (their scratch arrays), modules, arrays. Each later destroy of one of
   them finds it dead and does nothing. */
void dvm_context_destroy(dvm_context *ctx) {
    if (!ctx || !dvm_handle_live(ctx, DVM_HK_CONTEXT)) return; /* NULL, or destroyed already */
    static const dvm_handle_kind order[4] = {DVM_HK_TAPE, DVM_HK_ARGS, DVM_HK_MODULE, DVM_HK_ARRAY};
    for (int o = 0; o < 4; o++) {
        for (;;) {
            pthread_mutex_lock(&ctx->kids_mu);
            dvm_handle *h = ctx->kids;
            while (h && h->kind != order[o]) h = h->next;
            pthread_mutex_unlock(&ctx->kids_mu);
            if (!h) break;
            switch (order[o]) {
            case DVM_HK_TAPE: dvm_tape_destroy((dvm_tape *)h); break;
            case DVM_HK_ARGS: dvm_args_destroy((dvm_args *)h); break;
            case DVM_HK_MODULE: dvm_module_destroy((dvm_module *)h); break;
            default: dvm_array_destroy((dvm_array *)h); break;
            }
        }
    }
    if (ctx->be) {
        scratch_free(ctx);
        ctx->vt->close(ctx->be);
        ctx->be = NULL;
    }
    pthread_mutex_destroy(&ctx->kids_mu);
    dvm_handle_release(ctx);
}

const char *dvm_context_backend(const dvm_context *ctx) {
    return dvm_handle_live(ctx, DVM_HK_CONTEXT) && ctx->vt ? ctx->vt->name : "";
}
const char *dvm_context_device(const dvm_context *ctx) { return dvm_handle_live(ctx, DVM_HK_CONTEXT) ? ctx->device : ""; }

/* A destroyed context is DVM_ERR_USAGE (dvm_errmsg says so); its memory is never freed (handle.c). */
#define NEED_CTX(ctx)                                                               \
    do {                                                                            \
        if (!dvm_handle_live(ctx, DVM_HK_CONTEXT)) return DVM_ERR_USAGE;            \
        if (!(ctx)->be) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: the context has no backend (its creation failed)", __func__); \
        dvm_clear_err(ctx);                                                         \
    } while (0)

/* ---- modules ---- */

static const char *str_at(const dvm_program *p, uint32_t off) {
    return off < p->nstrings_bytes ? p->strings + off : "?";
}

/* Takes ownership of a verified program and uploads it. */
/* A parked module keeps its kernels (borrowed handles that may outlive it: a stale kernel
   still reaches its dead module) until the module's memory is reused. */
static void module_scrub(void *p) { free(((dvm_module *)p)->kernels); }

static dvm_status module_create(dvm_context *ctx, dvm_program *prog, const char *name, dvm_module **out) {
    dvm_module *m = (dvm_module *)dvm_handle_alloc(DVM_HK_MODULE, sizeof *m, module_scrub);
    struct dvm_kernel *ks = (struct dvm_kernel *)calloc(prog->nkernels ? prog->nkernels : 1, sizeof *ks);
    if (!m || !ks) {
        if (m) dvm_handle_release(m);
        free(ks);
        dvm_program_free(prog);
        return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "%s: out of memory", name);
    }
    char err[1024] = "";
    if (ctx->vt->load(ctx->be, prog, &m->loaded, err, sizeof err) != 0) {
        dvm_handle_release(m);
        free(ks);
        dvm_program_free(prog);
        return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "%s: %s backend could not load the program: %s", name, ctx->vt->name, err);
    }
    m->ctx = ctx;
    m->prog = prog;
    m->kernels = ks;
    for (uint32_t i = 0; i < prog->nkernels; i++) {
        ks[i].m = m;
        ks[i].index = i;
        ks[i].kd = &prog->kernels[i];
    }
    dvm_ctx_adopt(ctx, m);
    *out = m;
    return DVM_OK;
}

dvm_status dvm_compile(dvm_context *ctx, const char *source, size_t len, const char *filename, dvm_module **out) {
    if (out) *out = NULL;
    NEED_CTX(ctx);
    if (!out || (!source && len)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_compile: NULL argument");
    if (!filename) filename = "<source>";
    dvm_program *prog = NULL;
    char *msg = NULL;
    const dvm_compile_opts copts = {.no_opt = ctx->opts.no_opt, .no_partition = ctx->opts.no_partition,
                                    .unroll = (unsigned)ctx->opts.unroll};
    if (dvm_compile_source_opts(source ? source : "", len, filename, &copts, &prog, &msg) != 0) {
        /* the diagnostics are already FILE:LINE:COL: error: ... lines */
        size_t n = msg ? strlen(msg) : 0;
        while (n && msg[n - 1] == '\n') msg[--n] = 0;
        dvm_status st = dvm_fail(ctx, DVM_ERR_COMPILE, 1, "%s", msg && *msg ? msg : "compilation failed");
        if (!msg || !*msg) ctx->err_located = 0;
        free(msg);
        return st;
    }
    free(msg);
    char err[1024] = "";
    if (dvm_verify(prog, err, sizeof err) != 0) {
        dvm_program_free(prog);
        return dvm_fail(ctx, DVM_ERR_COMPILE, 0, "%s: internal compiler error: the compiled program fails verification: %s",
                        filename, err);
    }
    return module_create(ctx, prog, filename, out);
}

dvm_status dvm_load_blob(dvm_context *ctx, const void *blob, size_t len, const char *name, dvm_module **out) {
    if (out) *out = NULL;
    NEED_CTX(ctx);
    if (!out || (!blob && len)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_load_blob: NULL argument");
    if (!name) name = "<blob>";
    dvm_program *prog = NULL;
    char err[1024] = "";
    if (dvm_blob_read(blob, len, &prog, err, sizeof err) != 0)
        return dvm_fail(ctx, DVM_ERR_BLOB, 0, "%s: invalid blob: %s", name, err);
    return module_create(ctx, prog, name, out);
}

/* Reads a whole file (NUL-terminated); the status and the reason in ctx on failure. */
static dvm_status read_file(dvm_context *ctx, const char *path, char **out, size_t *len) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        return dvm_fail(ctx, DVM_ERR_IO, 0, "%s: cannot open: %s", path, strerror(errno));
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    /* bounded, so that an endless file (/dev/zero, a pipe) ends: a source stops one byte past
       the largest the compiler takes (it reports "source too large"), a blob at 1 GiB */
    const size_t max_blob = (size_t)1 << 30;
    for (;;) {
        size_t max = n >= 16 && dvm_blob_is_blob(buf, n) ? max_blob : DVM_MAX_SOURCE_BYTES + 1;
        if (n >= max) break;
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 65536;
            char *nb = (char *)realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "%s: out of memory", path);
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, (cap - n < max - n ? cap - n : max - n), f);
        n += r;
        if (r == 0) break;
    }
    if (n >= max_blob) {
        fclose(f);
        free(buf);
        return dvm_fail(ctx, DVM_ERR_IO, 0, "%s: file too large (a blob is at most 1 GiB)", path);
    }
    if (ferror(f)) {
        fclose(f);
        free(buf);
        return dvm_fail(ctx, DVM_ERR_IO, 0, "%s: read error", path);
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    *out = buf;
    return DVM_OK;
}

dvm_status dvm_load_file(dvm_context *ctx, const char *path, dvm_module **out) {
    if (out) *out = NULL;
    NEED_CTX(ctx);
    if (!out || !path) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_load_file: NULL argument");
    size_t len = 0;
    char *buf;
    dvm_status rs = read_file(ctx, path, &buf, &len);
    if (rs != DVM_OK) return rs;
    size_t pl = strlen(path);
    int is_blob = dvm_blob_is_blob(buf, len) || (pl >= 4 && !strcmp(path + pl - 4, ".dvb"));
    dvm_status st = is_blob ? dvm_load_blob(ctx, buf, len, path, out) : dvm_compile(ctx, buf, len, path, out);
    free(buf);
    return st;
}

dvm_status dvm_module_save(dvm_context *ctx, const dvm_module *m, void **blob, size_t *len) {
    NEED_CTX(ctx);
    if (!m || !blob || !len) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_module_save: NULL argument");
    if (!dvm_handle_live(m, DVM_HK_MODULE)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_module_save: the module was destroyed");
    char err[1024] = "";
    if (dvm_blob_write(m->prog, blob, len, err, sizeof err) != 0)
        return dvm_fail(ctx, DVM_ERR_BLOB, 0, "%s: cannot write the blob: %s", str_at(m->prog, m->prog->source_name), err);
    return DVM_OK;
}

/* A second destroy (and one after the context's) finds the module dead: nothing happens. */
void dvm_module_destroy(dvm_module *m) {
    if (!dvm_handle_live(m, DVM_HK_MODULE)) return;
    for (uint32_t i = 0; i < m->prog->nkernels; i++)
        for (int v = 0; v < DVM_V_COUNT; v++) dvm_size_cache_free(&m->kernels[i].cache[v]);
    if (m->loaded) m->ctx->vt->unload(m->ctx->be, m->loaded);
    dvm_program_free(m->prog);
    m->prog = NULL;
    dvm_ctx_disown(m->ctx, m);
    dvm_handle_release(m); /* the kernels stay until the memory is reused (module_scrub) */
}

int dvm_module_kernel_count(const dvm_module *m) { return dvm_handle_live(m, DVM_HK_MODULE) ? (int)m->prog->nkernels : 0; }

const dvm_kernel *dvm_module_kernel(const dvm_module *m, int i) {
    return dvm_handle_live(m, DVM_HK_MODULE) && i >= 0 && (uint32_t)i < m->prog->nkernels ? &m->kernels[i] : NULL;
}

int dvm_kernel_live(const dvm_kernel *k) { return k && dvm_handle_live(k->m, DVM_HK_MODULE); }

typedef struct text_buf {
    char *s;
    size_t n, cap;
    int oom;
} text_buf;

static void text_line(void *p, const char *line) {
    text_buf *t = (text_buf *)p;
    size_t l = strlen(line);
    if (t->oom) return;
    if (t->n + l + 2 > t->cap) {
        size_t nc = (t->cap ? t->cap * 2 : 4096) + l;
        char *ns = (char *)realloc(t->s, nc);
        if (!ns) {
            t->oom = 1;
            return;
        }
        t->s = ns;
        t->cap = nc;
    }
    memcpy(t->s + t->n, line, l);
    t->n += l;
    t->s[t->n++] = '\n';
    t->s[t->n] = 0;
}

dvm_status dvm_module_disasm(dvm_context *ctx, const dvm_module *m, char **text) {
    if (text) *text = NULL;
    NEED_CTX(ctx);
    if (!m || !text) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_module_disasm: NULL argument");
    if (!dvm_handle_live(m, DVM_HK_MODULE)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_module_disasm: the module was destroyed");
    text_buf t = {NULL, 0, 0, 0};
    text_line(&t, "");
    t.n = 0;
    if (t.s) t.s[0] = 0;
    if (dvm_disasm(m->prog, text_line, &t) != 0 || t.oom || !t.s) {
        free(t.s);
        return dvm_fail(ctx, t.oom || !t.s ? DVM_ERR_NOMEM : DVM_ERR_BLOB, 0, "disassembly failed");
    }
    *text = t.s;
    return DVM_OK;
}

/* ---- kernels ---- */

dvm_status dvm_kernel_find(dvm_context *ctx, const dvm_module *m, const char *name, const dvm_kernel **out) {
    if (out) *out = NULL;
    NEED_CTX(ctx);
    if (!m || !name || !out) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_kernel_find: NULL argument");
    if (!dvm_handle_live(m, DVM_HK_MODULE)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_kernel_find: the module was destroyed");
    const dvm_program *p = m->prog;
    for (uint32_t i = 0; i < p->nkernels; i++)
        if (!strcmp(str_at(p, p->kernels[i].name), name)) {
            *out = &m->kernels[i];
            return DVM_OK;
        }
    char list[1024] = "";
    size_t n = 0;
    for (uint32_t i = 0; i < p->nkernels && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", str_at(p, p->kernels[i].name));
    return dvm_fail(ctx, DVM_ERR_ARG, 0, "%s has no kernel '%s' (%s%s)", str_at(p, p->source_name), name,
                    p->nkernels ? "kernels: " : "it has no kernels", list);
}

const char *dvm_kernel_name(const dvm_kernel *k) { return dvm_kernel_live(k) ? str_at(k->m->prog, k->kd->name) : ""; }
int dvm_kernel_param_count(const dvm_kernel *k) { return dvm_kernel_live(k) ? (int)k->kd->nparams : 0; }

void dvm_kernel_param(const dvm_kernel *k, int i, dvm_param_info *info) {
    if (!info) return;
    memset(info, 0, sizeof *info);
    if (!dvm_kernel_live(k) || i < 0 || (uint32_t)i >= k->kd->nparams) return;
    const dvm_program *p = k->m->prog;
    const dvm_param_desc *pd = &p->params[k->kd->param_begin + (uint32_t)i];
    info->name = str_at(p, pd->name);
    info->is_array = pd->is_array;
    info->dtype = pd->type == DVM_T_F32 ? DVM_F32 : DVM_I32;
    if (!pd->is_array) return;
    info->rank = pd->rank;
    for (int a = 0; a < pd->rank && a < DVM_MAX_RANK; a++) {
        if (pd->dim[a] >= 0) {
            info->literal_dims[a] = pd->dim[a];
        } else {
            uint32_t s = (uint32_t)(-(pd->dim[a] + 1));
            info->dims[a] = s < k->kd->nsyms ? str_at(p, p->syms[k->kd->sym_begin + s].name) : "?";
        }
    }
}

/* ---- arrays ---- */

/* Checks what dvm_array_create and dvm_array_wrap_host are given (fn names the call in
 * messages) and counts the elements. */
static dvm_status array_shape(dvm_context *ctx, const char *fn, dvm_dtype dtype, int rank, const int64_t *shape,
                              int64_t *count_out) {
    if (dtype != DVM_F32 && dtype != DVM_I32) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: bad dtype %d", fn, (int)dtype);
    if (rank < 1 || rank > DVM_MAX_RANK)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: rank %d is outside 1..%d", fn, rank, DVM_MAX_RANK);
    int64_t count = 1;
    for (int a = 0; a < rank; a++) {
        /* extents are i32 values in kernels (shape symbols) */
        if (shape[a] < 0 || shape[a] > INT32_MAX)
            return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: extent %lld of axis %d is outside 0..%d", fn, (long long)shape[a], a,
                            INT32_MAX);
        count *= shape[a];
        /* kernels index with i32 and the interpreters compute flat indices in 32 bits */
        if (count > INT32_MAX)
            return dvm_fail(ctx, DVM_ERR_USAGE, 0,
                            "%s: an array of more than %d elements (2^31 - 1) is not supported: "
                            "element indices are 32-bit", fn, INT32_MAX);
    }
    *count_out = count;
    return DVM_OK;
}

/* A new array handle over buf (owned by the handle from here on). */
static dvm_status array_handle(dvm_context *ctx, dvm_dtype dtype, int rank, const int64_t *shape, int64_t count,
                               dvm_buffer *buf, int host_owned, dvm_array **out) {
    dvm_array *a = (dvm_array *)dvm_handle_alloc(DVM_HK_ARRAY, sizeof *a, NULL);
    if (!a) {
        ctx->vt->free(ctx->be, buf);
        return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "out of memory for an array handle");
    }
    a->ctx = ctx;
    a->dtype = dtype;
    a->rank = rank;
    for (int k = 0; k < DVM_MAX_RANK; k++) a->shape[k] = k < rank ? shape[k] : 1;
    a->count = count;
    a->buf = buf;
    a->host_owned = host_owned;
    a->id = __atomic_fetch_add(&ctx->next_array_id, 1, __ATOMIC_RELAXED);
    dvm_ctx_adopt(ctx, a);
    *out = a;
    return DVM_OK;
}

dvm_status dvm_array_create(dvm_context *ctx, dvm_dtype dtype, int rank, const int64_t *shape, dvm_array **out) {
    if (out) *out = NULL;
    NEED_CTX(ctx);
    if (!out || (!shape && rank)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_create: NULL argument");
    int64_t count;
    dvm_status st = array_shape(ctx, "dvm_array_create", dtype, rank, shape, &count);
    if (st != DVM_OK) return st;
    char err[512] = "";
    dvm_buffer *buf;
    /* at least one word so that every array has a real buffer */
    if (ctx->vt->alloc(ctx->be, (size_t)(count ? count : 1) * 4, &buf, err, sizeof err) != 0)
        return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "cannot allocate an array of %lld elements: %s", (long long)count, err);
    return array_handle(ctx, dtype, rank, shape, count, buf, 0, out);
}

/* dvm_array_wrap_host and dvm_array_wrap_device: an array over caller-owned memory, through
 * the backend's hook (NULL where the backend's arrays live elsewhere: `needs` says where). */
static dvm_status array_wrap(dvm_context *ctx, const char *fn,
                             int (*wrap)(dvm_backend *, void *, size_t, dvm_buffer **, char *, size_t),
                             const char *needs, dvm_dtype dtype, int rank, const int64_t *shape, void *ptr,
                             dvm_array **out) {
    if (!out || !ptr || (!shape && rank)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: NULL argument", fn);
    if (!wrap) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: %s (this context runs on %s)", fn, needs, ctx->vt->name);
    if ((uintptr_t)ptr % 4 != 0)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: the memory at %p is not aligned to 4 bytes", fn, ptr);
    int64_t count;
    dvm_status st = array_shape(ctx, fn, dtype, rank, shape, &count);
    if (st != DVM_OK) return st;
    /* launches copy at least one element of every array (snapshots, tapes) */
    if (count == 0)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: an array of 0 elements has no memory to wrap (use dvm_array_create)",
                        fn);
    char err[512] = "";
    dvm_buffer *buf;
    if (wrap(ctx->be, ptr, (size_t)count * 4, &buf, err, sizeof err) != 0)
        return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "%s: %s", fn, err);
    return array_handle(ctx, dtype, rank, shape, count, buf, 1, out);
}

dvm_status dvm_array_wrap_host(dvm_context *ctx, dvm_dtype dtype, int rank, const int64_t *shape, void *ptr,
                               dvm_array **out) {
    if (out) *out = NULL;
    NEED_CTX(ctx);
    return array_wrap(ctx, "dvm_array_wrap_host", ctx->vt->wrap_host,
                      "wrapping host memory needs the cpu backend, whose arrays live in host memory (elsewhere use "
                      "dvm_array_create and dvm_array_write, or dvm_array_wrap_device on cuda and hip)",
                      dtype, rank, shape, ptr, out);
}

dvm_status dvm_array_wrap_device(dvm_context *ctx, dvm_dtype dtype, int rank, const int64_t *shape, void *ptr,
                                 dvm_array **out) {
    if (out) *out = NULL;
    NEED_CTX(ctx);
    return array_wrap(ctx, "dvm_array_wrap_device", ctx->vt->wrap_device,
                      "wrapping device memory needs the cuda or hip backend (on cpu use dvm_array_wrap_host; "
                      "vulkan cannot adopt memory it did not allocate)",
                      dtype, rank, shape, ptr, out);
}

void *dvm_array_data(const dvm_array *a) {
    return a && a->ctx->vt->data ? a->ctx->vt->data(a->ctx->be, a->buf) : NULL;
}

/* A second destroy finds the array dead and only says so in its context's message. */
void dvm_array_destroy(dvm_array *a) {
    if (!a) return;
    if (!dvm_handle_live(a, DVM_HK_ARRAY)) {
        if (dvm_handle_dead(a) && dvm_handle_live(a->ctx, DVM_HK_CONTEXT))
            dvm_fail(a->ctx, DVM_ERR_USAGE, 0, "dvm_array_destroy: the array was destroyed already (ignored)");
        return;
    }
    a->ctx->vt->free(a->ctx->be, a->buf);
    a->buf = NULL;
    dvm_ctx_disown(a->ctx, a);
    dvm_handle_release(a);
}

static int alive(const dvm_array *a) { return dvm_handle_live(a, DVM_HK_ARRAY); }
dvm_dtype dvm_array_dtype(const dvm_array *a) { return alive(a) ? a->dtype : DVM_F32; }
int dvm_array_rank(const dvm_array *a) { return alive(a) ? a->rank : 0; }
int64_t dvm_array_dim(const dvm_array *a, int axis) { return alive(a) && axis >= 0 && axis < a->rank ? a->shape[axis] : 0; }
int64_t dvm_array_count(const dvm_array *a) { return alive(a) ? a->count : 0; }

static dvm_status array_write(dvm_context *ctx, dvm_array *a, const void *src, int64_t count);
static dvm_status array_read(dvm_context *ctx, const dvm_array *a, void *dst, int64_t count);

/* Both detect a second thread inside the context (dvm_ctx_enter). */
dvm_status dvm_array_write(dvm_context *ctx, dvm_array *a, const void *src, int64_t count) {
    if (!dvm_handle_live(ctx, DVM_HK_CONTEXT)) return DVM_ERR_USAGE;
    if (dvm_ctx_enter(ctx) != 0) return DVM_ERR_USAGE;
    dvm_status st = array_write(ctx, a, src, count);
    dvm_ctx_leave(ctx);
    return st;
}

dvm_status dvm_array_read(dvm_context *ctx, const dvm_array *a, void *dst, int64_t count) {
    if (!dvm_handle_live(ctx, DVM_HK_CONTEXT)) return DVM_ERR_USAGE;
    if (dvm_ctx_enter(ctx) != 0) return DVM_ERR_USAGE;
    dvm_status st = array_read(ctx, a, dst, count);
    dvm_ctx_leave(ctx);
    return st;
}

static dvm_status array_write(dvm_context *ctx, dvm_array *a, const void *src, int64_t count) {
    NEED_CTX(ctx);
    if (!a || (!src && count)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_write: NULL argument");
    if (!alive(a)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_write: the array was destroyed");
    if (a->ctx != ctx) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_write: the array belongs to another context");
    if (count != a->count)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_write: %lld elements given, the array has %lld", (long long)count,
                        (long long)a->count);
    char err[512] = "";
    a->version++;
    if (count && ctx->vt->write(ctx->be, a->buf, 0, src, (size_t)count * 4, err, sizeof err) != 0)
        return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "dvm_array_write: %s", err);
    return DVM_OK;
}

static dvm_status array_read(dvm_context *ctx, const dvm_array *a, void *dst, int64_t count) {
    NEED_CTX(ctx);
    if (!a || (!dst && count)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_read: NULL argument");
    if (!alive(a)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_read: the array was destroyed");
    if (a->ctx != ctx) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_read: the array belongs to another context");
    if (count != a->count)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_array_read: %lld elements asked, the array has %lld", (long long)count,
                        (long long)a->count);
    char err[512] = "";
    if (count && ctx->vt->read(ctx->be, a->buf, 0, dst, (size_t)count * 4, err, sizeof err) != 0)
        return dvm_fail(ctx, DVM_ERR_BACKEND, 0, "dvm_array_read: %s", err);
    return DVM_OK;
}

/* ---- argument bindings ---- */

dvm_status dvm_args_create(dvm_context *ctx, const dvm_kernel *k, dvm_args **out) {
    if (out) *out = NULL;
    NEED_CTX(ctx);
    if (!k || !out) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_args_create: NULL argument");
    if (!dvm_kernel_live(k)) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_args_create: the kernel's module was destroyed");
    if (k->m->ctx != ctx) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_args_create: the kernel belongs to another context");
    uint32_t n = k->kd->nparams ? k->kd->nparams : 1;
    dvm_args *a = (dvm_args *)dvm_handle_alloc(DVM_HK_ARGS, sizeof *a, NULL);
    if (a) {
        a->arr = (dvm_array **)calloc(n, sizeof *a->arr);
        a->grad = (dvm_array **)calloc(n, sizeof *a->grad);
        a->dual = (dvm_array **)calloc(n, sizeof *a->dual);
        a->scratch = (dvm_array **)calloc(n, sizeof *a->scratch);
        a->scalar = (uint32_t *)calloc(n, sizeof *a->scalar);
        a->scalar_set = (uint8_t *)calloc(n, 1);
    }
    if (a) {
        a->ctx = ctx;
        dvm_ctx_adopt(ctx, a);
    }
    if (!a || !a->arr || !a->grad || !a->dual || !a->scratch || !a->scalar || !a->scalar_set) {
        dvm_args_destroy(a);
        return dvm_fail(ctx, DVM_ERR_NOMEM, 0, "dvm_args_create: out of memory");
    }
    a->k = k;
    a->nparams = k->kd->nparams;
    *out = a;
    return DVM_OK;
}

void dvm_args_destroy(dvm_args *args) {
    if (!dvm_handle_live(args, DVM_HK_ARGS)) return; /* NULL, or destroyed already */
    if (args->scratch)
        for (uint32_t i = 0; i < args->nparams; i++) dvm_array_destroy(args->scratch[i]);
    free(args->arr);
    free(args->grad);
    free(args->dual);
    free(args->scratch);
    free(args->scalar);
    free(args->scalar_set);
    dvm_ctx_disown(args->ctx, args);
    dvm_handle_release(args);
}

void dvm_param_decl(const dvm_kernel *k, uint32_t i, char *buf, size_t len) {
    dvm_param_info pi;
    dvm_kernel_param(k, (int)i, &pi);
    size_t n = (size_t)snprintf(buf, len, "%s: %s", pi.name ? pi.name : "?", dvm_dtype_name(pi.dtype));
    if (!pi.is_array || n >= len) return;
    for (int a = 0; a < pi.rank && n < len; a++) {
        if (pi.dims[a]) n += (size_t)snprintf(buf + n, len - n, "%s%s", a ? ", " : "[", pi.dims[a]);
        else n += (size_t)snprintf(buf + n, len - n, "%s%lld", a ? ", " : "[", (long long)pi.literal_dims[a]);
    }
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* Finds parameter `name`; on failure the message lists the kernel's parameters. */
static int find_param(dvm_context *ctx, const dvm_kernel *k, const char *name, uint32_t *idx) {
    const dvm_program *p = k->m->prog;
    for (uint32_t i = 0; i < k->kd->nparams; i++)
        if (!strcmp(str_at(p, p->params[k->kd->param_begin + i].name), name)) {
            *idx = i;
            return 0;
        }
    char list[1024] = "";
    size_t n = 0;
    for (uint32_t i = 0; i < k->kd->nparams && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", str_at(p, p->params[k->kd->param_begin + i].name));
    dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s' has no parameter '%s' (parameters: %s)", dvm_kernel_name(k), name,
             k->kd->nparams ? list : "none");
    return -1;
}

static const dvm_param_desc *param_desc(const dvm_kernel *k, uint32_t i) {
    return &k->m->prog->params[k->kd->param_begin + i];
}

void dvm_shape_str(const int64_t *shape, int rank, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int a = 0; a < rank && n < len; a++) n += (size_t)snprintf(buf + n, len - n, a ? ", %lld" : "%lld", (long long)shape[a]);
    if (n < len) snprintf(buf + n, len - n, rank == 1 ? ",)" : ")");
}

/* Checks dtype, rank and literal extents of `a` for array parameter i; what: "" for the
 * primal, ".grad" or ".dual". */
static dvm_status check_array(dvm_context *ctx, dvm_args *args, uint32_t i, const char *what, const dvm_array *a) {
    const dvm_kernel *k = args->k;
    const dvm_param_desc *pd = param_desc(k, i);
    const char *pname = str_at(k->m->prog, pd->name);
    char decl[256], sh[256];
    dvm_param_decl(k, i, decl, sizeof decl);
    if (!a) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "kernel '%s': argument '%s%s': NULL array", dvm_kernel_name(k), pname, what);
    if (!alive(a))
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "kernel '%s': argument '%s%s': the array was destroyed", dvm_kernel_name(k), pname, what);
    if (a->ctx != ctx)
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "kernel '%s': argument '%s%s': the array belongs to another context",
                        dvm_kernel_name(k), pname, what);
    if (!pd->is_array)
        return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s%s': expected a scalar (%s), got an array",
                        dvm_kernel_name(k), pname, what, decl);
    dvm_dtype want = pd->type == DVM_T_F32 ? DVM_F32 : DVM_I32;
    dvm_shape_str(a->shape, a->rank, sh, sizeof sh);
    if (a->dtype != want)
        return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s%s': expected an %s array (%s), got an %s array of shape %s",
                        dvm_kernel_name(k), pname, what, dvm_dtype_name(want), decl, dvm_dtype_name(a->dtype), sh);
    if (a->rank != pd->rank)
        return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s%s': expected rank %d (%s), got rank %d with shape %s",
                        dvm_kernel_name(k), pname, what, pd->rank, decl, a->rank, sh);
    for (int ax = 0; ax < pd->rank; ax++)
        if (pd->dim[ax] >= 0 && a->shape[ax] != pd->dim[ax])
            return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s%s': axis %d must have extent %d (%s), got shape %s",
                            dvm_kernel_name(k), pname, what, ax, pd->dim[ax], decl, sh);
    return DVM_OK;
}

dvm_status dvm_args_array(dvm_context *ctx, dvm_args *args, const char *name, dvm_array *a) {
    NEED_CTX(ctx);
    if (!args || !name) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_args_array: NULL argument");
    if (!dvm_handle_live(args, DVM_HK_ARGS) || !dvm_kernel_live(args->k))
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_args_array: the argument set (or its kernel's module) was destroyed");
    uint32_t i;
    if (find_param(ctx, args->k, name, &i)) return DVM_ERR_ARG;
    dvm_status st = check_array(ctx, args, i, "", a);
    if (st == DVM_OK) args->arr[i] = a;
    return st;
}

static dvm_status bind_deriv(dvm_context *ctx, dvm_args *args, const char *name, dvm_array *a, int dual) {
    NEED_CTX(ctx);
    const char *fn = dual ? "dvm_args_dual" : "dvm_args_grad", *what = dual ? ".dual" : ".grad";
    if (!args || !name) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: NULL argument", fn);
    if (!dvm_handle_live(args, DVM_HK_ARGS) || !dvm_kernel_live(args->k))
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "%s: the argument set (or its kernel's module) was destroyed", fn);
    uint32_t i;
    if (find_param(ctx, args->k, name, &i)) return DVM_ERR_ARG;
    const dvm_param_desc *pd = param_desc(args->k, i);
    if (!pd->is_array || pd->type != DVM_T_F32) {
        char decl[256];
        dvm_param_decl(args->k, i, decl, sizeof decl);
        return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s%s': only f32 array parameters have a %s (%s)",
                        dvm_kernel_name(args->k), name, what, dual ? "tangent" : "gradient", decl);
    }
    dvm_status st = check_array(ctx, args, i, what, a);
    if (st == DVM_OK) (dual ? args->dual : args->grad)[i] = a;
    return st;
}

dvm_status dvm_args_grad(dvm_context *ctx, dvm_args *args, const char *name, dvm_array *a) {
    return bind_deriv(ctx, args, name, a, 0);
}
dvm_status dvm_args_dual(dvm_context *ctx, dvm_args *args, const char *name, dvm_array *a) {
    return bind_deriv(ctx, args, name, a, 1);
}

static dvm_status bind_scalar(dvm_context *ctx, dvm_args *args, const char *name, int is_f32, float f, int32_t v) {
    NEED_CTX(ctx);
    if (!args || !name) return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_args_%s: NULL argument", is_f32 ? "f32" : "i32");
    if (!dvm_handle_live(args, DVM_HK_ARGS) || !dvm_kernel_live(args->k))
        return dvm_fail(ctx, DVM_ERR_USAGE, 0, "dvm_args_%s: the argument set (or its kernel's module) was destroyed",
                        is_f32 ? "f32" : "i32");
    uint32_t i;
    if (find_param(ctx, args->k, name, &i)) return DVM_ERR_ARG;
    const dvm_param_desc *pd = param_desc(args->k, i);
    char decl[256];
    dvm_param_decl(args->k, i, decl, sizeof decl);
    if (pd->is_array)
        return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s': expected an array (%s), got a scalar",
                        dvm_kernel_name(args->k), name, decl);
    uint32_t bits;
    if (pd->type == DVM_T_F32) {
        /* an f32 parameter accepts an integer too, converted */
        float x = is_f32 ? f : (float)v;
        memcpy(&bits, &x, 4);
    } else {
        if (is_f32)
            return dvm_fail(ctx, DVM_ERR_ARG, 0, "kernel '%s': argument '%s': expected an i32 (%s), got an f32 (use dvm_args_i32)",
                            dvm_kernel_name(args->k), name, decl);
        memcpy(&bits, &v, 4);
    }
    args->scalar[i] = bits;
    args->scalar_set[i] = 1;
    return DVM_OK;
}

dvm_status dvm_args_f32(dvm_context *ctx, dvm_args *args, const char *name, float v) {
    return bind_scalar(ctx, args, name, 1, v, 0);
}
dvm_status dvm_args_i32(dvm_context *ctx, dvm_args *args, const char *name, int32_t v) {
    return bind_scalar(ctx, args, name, 0, 0.0f, v);
}
