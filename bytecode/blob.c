/* blob.c: the portable blob writer and reader. Every field is written and read one by one
 * in little-endian order, so the format does not depend on struct padding or the host's
 * byte order. The reader checks the header, the lengths and the checksum before it
 * allocates, bounds every allocation by the blob's length, then runs the verifier.
 * The layout is documented in docs/bytecode.md; keep the two in step. */
#include "bytecode/blob.h"
#include "bytecode/hash.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sections in file order, with the size of one record in bytes (format version 4). */
enum { SEC_KERNELS, SEC_PARAMS, SEC_SYMS, SEC_SLOTS, SEC_TASKS, SEC_STACKS, SEC_NODES,
       SEC_LINES, SEC_COLS, SEC_CONSTS, SEC_STRINGS, SEC_COUNT };
static const char *const sec_name[SEC_COUNT] = {"kernels", "params", "syms", "slots", "tasks", "stacks",
                                                "nodes", "lines", "cols", "consts", "strings"};
static const uint32_t sec_rsize[SEC_COUNT] = {
    28 + DVM_V_COUNT * 32, /* kernel: 7 u32, then per variant 8 u32 */
    12 + 4 * DVM_MAX_RANK, /* param: name, is_array, type, rank, 0, uslot, 0, dim[4] */
    8,                     /* sym: name, uslot, 0 */
    4,                     /* slot: param, role, writes */
    40,                    /* task: u8 kind, ndim, u16 nregs, u32 code_begin, code_len, u16 ext_u[3],
                              start_u[3], idx_reg[3], body, u32 line, u16 stage, u8 phase, 0 */
    24,                    /* stack */
    DVM_BLOB_NODE_SIZE, 4, 2, 4, 1};

#define TRAILER_SIZE 8u /* the checksum */

_Static_assert(DVM_BLOB_NSECTIONS == SEC_COUNT, "section count");
_Static_assert(DVM_BLOB_HEADER_SIZE == 40 + 8 * SEC_COUNT, "header size");
_Static_assert(sizeof(dvm_node) == DVM_BLOB_NODE_SIZE, "node size");

static int bfail(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int bfail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        int n = snprintf(err, errlen, "blob: ");
        if (n > 0 && (size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* The options word (bc.h, DVM_OPTS_*): known bits only, an unrolling factor from 1 to 256 but
 * not the default 4 (which is 0), and nothing beside NO_OPT. */
static int options_check(uint32_t o, char *err, size_t errlen) {
    const uint32_t unroll = (o & DVM_OPTS_UNROLL_MASK) >> DVM_OPTS_UNROLL_SHIFT;
    if (o & ~DVM_OPTS_ALL) return bfail(err, errlen, "header: compiler options 0x%x: unknown bits 0x%x", o, o & ~DVM_OPTS_ALL);
    if (unroll > 256 || unroll == 4)
        return bfail(err, errlen, "header: compiler options 0x%x: unroll %u is not 1 to 256 (the default 4 is 0)", o, unroll);
    if ((o & DVM_OPTS_NO_OPT) && o != DVM_OPTS_NO_OPT)
        return bfail(err, errlen, "header: compiler options 0x%x: no-opt with other options", o);
    return 0;
}

uint64_t dvm_blob_checksum(const void *data, size_t n) { return dvm_fnv1a(DVM_FNV_BASIS, data, n); }

int dvm_blob_is_blob(const void *data, size_t len) {
    return data && len >= 4 && !memcmp(data, DVM_BLOB_MAGIC, 4);
}

/* ---- writing ---- */
typedef struct wbuf { uint8_t *p; size_t off; } wbuf;
static void w8(wbuf *w, uint32_t v) { w->p[w->off++] = (uint8_t)v; }
static void w16(wbuf *w, uint32_t v) { w8(w, v & 0xFF); w8(w, v >> 8); }
static void w32(wbuf *w, uint32_t v) { w16(w, v & 0xFFFF); w16(w, v >> 16); }
static void w64(wbuf *w, uint64_t v) { w32(w, (uint32_t)v); w32(w, (uint32_t)(v >> 32)); }

static void prog_counts(const dvm_program *p, uint32_t n[SEC_COUNT]) {
    n[SEC_KERNELS] = p->nkernels; n[SEC_PARAMS] = p->nparams; n[SEC_SYMS] = p->nsyms;
    n[SEC_SLOTS] = p->nslots; n[SEC_TASKS] = p->ntasks; n[SEC_STACKS] = p->nstacks;
    n[SEC_NODES] = p->nnodes; n[SEC_LINES] = p->nnodes; n[SEC_COLS] = p->nnodes;
    n[SEC_CONSTS] = p->nconsts; n[SEC_STRINGS] = p->nstrings_bytes;
}

int dvm_blob_write(const dvm_program *p, void **out, size_t *len, char *err, size_t errlen) {
    *out = NULL;
    *len = 0;
    char verr[512];
    if (dvm_verify(p, verr, sizeof verr)) return bfail(err, errlen, "refusing to write an invalid program: %s", verr);
    if (options_check(p->options, err, errlen)) return -1;
    uint32_t cnt[SEC_COUNT];
    prog_counts(p, cnt);
    uint64_t total = DVM_BLOB_HEADER_SIZE + TRAILER_SIZE;
    for (int s = 0; s < SEC_COUNT; s++) total += (uint64_t)cnt[s] * sec_rsize[s];
    if (total > SIZE_MAX) return bfail(err, errlen, "program too large (%llu bytes)", (unsigned long long)total);
    wbuf w = {malloc((size_t)total), 0};
    if (!w.p) return bfail(err, errlen, "out of memory (%llu bytes)", (unsigned long long)total);

    memcpy(w.p, DVM_BLOB_MAGIC, 4);
    w.off = 4;
    w32(&w, DVM_BLOB_VERSION);
    w32(&w, DVM_BLOB_NODE_SIZE);
    w32(&w, SEC_COUNT);
    w64(&w, dvm_ops_hash());
    w64(&w, total);
    w32(&w, p->source_name);
    w32(&w, p->options);
    for (int s = 0; s < SEC_COUNT; s++) {
        w32(&w, cnt[s]);
        w32(&w, sec_rsize[s]);
    }
    for (uint32_t i = 0; i < p->nkernels; i++) {
        const dvm_kernel_desc *k = &p->kernels[i];
        w32(&w, k->name); w32(&w, k->line);
        w32(&w, k->param_begin); w32(&w, k->nparams);
        w32(&w, k->sym_begin); w32(&w, k->nsyms);
        w32(&w, k->no_adjoint);
        for (int v = 0; v < DVM_V_COUNT; v++) {
            const dvm_variant_desc *d = &k->v[v];
            w32(&w, d->task_begin); w32(&w, d->ntasks);
            w32(&w, d->stack_begin); w32(&w, d->nstacks);
            w32(&w, d->slot_begin); w32(&w, d->nslots);
            w32(&w, d->nuniforms); w32(&w, d->present);
        }
    }
    for (uint32_t i = 0; i < p->nparams; i++) {
        const dvm_param_desc *q = &p->params[i];
        w32(&w, q->name); w8(&w, q->is_array); w8(&w, q->type); w8(&w, q->rank); w8(&w, 0);
        w16(&w, q->uslot); w16(&w, 0);
        for (int d = 0; d < DVM_MAX_RANK; d++) w32(&w, (uint32_t)q->dim[d]);
    }
    for (uint32_t i = 0; i < p->nsyms; i++) {
        w32(&w, p->syms[i].name); w16(&w, p->syms[i].uslot); w16(&w, 0);
    }
    for (uint32_t i = 0; i < p->nslots; i++) {
        w16(&w, p->slots[i].param); w8(&w, p->slots[i].role); w8(&w, p->slots[i].writes);
    }
    for (uint32_t i = 0; i < p->ntasks; i++) {
        const dvm_task_desc *t = &p->tasks[i];
        w8(&w, t->kind); w8(&w, t->ndim); w16(&w, t->nregs);
        w32(&w, t->code_begin); w32(&w, t->code_len);
        for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) w16(&w, t->ext_u[d]);
        for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) w16(&w, t->start_u[d]);
        for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) w16(&w, t->idx_reg[d]);
        w16(&w, t->body);
        w32(&w, t->line);
        w16(&w, t->stage); w8(&w, t->phase); w8(&w, 0);
    }
    for (uint32_t i = 0; i < p->nstacks; i++) {
        const dvm_stack_desc *s = &p->stacks[i];
        w8(&w, s->type); w8(&w, s->sizing); w8(&w, s->serial); w8(&w, 0);
        w32(&w, s->name); w32(&w, s->line);
        w32(&w, s->size_begin); w32(&w, s->size_len); w32(&w, s->const_cap);
    }
    for (uint32_t i = 0; i < p->nnodes; i++) {
        const dvm_node *n = &p->nodes[i];
        w8(&w, n->op); w8(&w, n->x); w16(&w, n->a); w16(&w, n->b); w16(&w, n->c);
    }
    for (uint32_t i = 0; i < p->nnodes; i++) w32(&w, p->lines[i]);
    for (uint32_t i = 0; i < p->nnodes; i++) w16(&w, p->cols[i]);
    for (uint32_t i = 0; i < p->nconsts; i++) w32(&w, p->consts[i]);
    memcpy(w.p + w.off, p->strings, p->nstrings_bytes);
    w.off += p->nstrings_bytes;
    w64(&w, dvm_blob_checksum(w.p, w.off));
    if (w.off != total) { /* the record sizes above and sec_rsize disagree: a bug here */
        free(w.p);
        return bfail(err, errlen, "internal error: wrote %zu bytes, expected %llu", w.off, (unsigned long long)total);
    }
    *out = w.p;
    *len = (size_t)total;
    return 0;
}

/* ---- reading ---- */
/* The lengths were checked against the blob's size before any record is read, so these
 * never run past the end. */
typedef struct rbuf { const uint8_t *p; size_t off; } rbuf;
static uint32_t r8(rbuf *r) { return r->p[r->off++]; }
static uint32_t r16(rbuf *r) { uint32_t lo = r8(r); return lo | r8(r) << 8; }
static uint32_t r32(rbuf *r) { uint32_t lo = r16(r); return lo | r16(r) << 16; }
static uint64_t r64(rbuf *r) { uint64_t lo = r32(r); return lo | (uint64_t)r32(r) << 32; }

static void *alloc_n(uint32_t n, size_t size) { return n ? calloc(n, size) : NULL; }

int dvm_blob_read(const void *data, size_t len, dvm_program **out, char *err, size_t errlen) {
    *out = NULL;
    if (err && errlen) err[0] = 0;
    if (!data) return bfail(err, errlen, "no data");
    if (!dvm_blob_is_blob(data, len)) return bfail(err, errlen, "not a dvm blob (the magic \"DVMB\" is missing)");
    if (len < DVM_BLOB_HEADER_SIZE + TRAILER_SIZE)
        return bfail(err, errlen, "truncated: %zu bytes, a blob has at least %u", len,
                     DVM_BLOB_HEADER_SIZE + TRAILER_SIZE);
    rbuf r = {data, 4};
    uint32_t version = r32(&r);
    if (version != DVM_BLOB_VERSION)
        return bfail(err, errlen, "header: format version %u, this build reads version %u", version, DVM_BLOB_VERSION);
    uint32_t node_size = r32(&r);
    if (node_size != DVM_BLOB_NODE_SIZE)
        return bfail(err, errlen, "header: node size %u, this build uses %u", node_size, DVM_BLOB_NODE_SIZE);
    uint32_t nsec = r32(&r);
    uint64_t hash = r64(&r);
    if (hash != dvm_ops_hash())
        return bfail(err, errlen, "blob built for a different opcode table (ops hash %016llx, this build has %016llx)",
                     (unsigned long long)hash, (unsigned long long)dvm_ops_hash());
    uint64_t total = r64(&r);
    if (total != len)
        return bfail(err, errlen, "length mismatch: the header says %llu bytes, the blob has %zu",
                     (unsigned long long)total, len);
    uint64_t sum = dvm_blob_checksum(data, len - TRAILER_SIZE);
    rbuf tr = {data, len - TRAILER_SIZE};
    uint64_t stored = r64(&tr);
    if (sum != stored)
        return bfail(err, errlen, "checksum mismatch (stored %016llx, computed %016llx): the blob is corrupt",
                     (unsigned long long)stored, (unsigned long long)sum);
    if (nsec != SEC_COUNT)
        return bfail(err, errlen, "header: %u sections, format version %u has %u", nsec, DVM_BLOB_VERSION, SEC_COUNT);
    uint32_t source_name = r32(&r);
    uint32_t options = r32(&r);
    if (options_check(options, err, errlen)) return -1;
    uint32_t cnt[SEC_COUNT];
    uint64_t body = 0;
    for (int s = 0; s < SEC_COUNT; s++) {
        cnt[s] = r32(&r);
        uint32_t rs = r32(&r);
        if (rs != sec_rsize[s])
            return bfail(err, errlen, "section '%s': record size %u, expected %u", sec_name[s], rs, sec_rsize[s]);
        body += (uint64_t)cnt[s] * rs; /* < 2^39 each: no overflow */
    }
    if (cnt[SEC_LINES] != cnt[SEC_NODES] || cnt[SEC_COLS] != cnt[SEC_NODES])
        return bfail(err, errlen, "sections 'lines' (%u) and 'cols' (%u) must have one entry per node (%u)",
                     cnt[SEC_LINES], cnt[SEC_COLS], cnt[SEC_NODES]);
    if (cnt[SEC_STRINGS] < 1) return bfail(err, errlen, "section 'strings' is empty (it starts with a NUL)");
    if (body != len - DVM_BLOB_HEADER_SIZE - TRAILER_SIZE)
        return bfail(err, errlen, "the sections hold %llu bytes, but %zu lie between header and checksum",
                     (unsigned long long)body, len - DVM_BLOB_HEADER_SIZE - TRAILER_SIZE);

    /* Every count is now bounded by len / record size: the allocations below are too. */
    dvm_program *p = calloc(1, sizeof *p);
    if (!p) return bfail(err, errlen, "out of memory");
    p->source_name = source_name;
    p->options = options;
    p->nkernels = cnt[SEC_KERNELS]; p->nparams = cnt[SEC_PARAMS]; p->nsyms = cnt[SEC_SYMS];
    p->nslots = cnt[SEC_SLOTS]; p->ntasks = cnt[SEC_TASKS]; p->nstacks = cnt[SEC_STACKS];
    p->nnodes = cnt[SEC_NODES]; p->nconsts = cnt[SEC_CONSTS]; p->nstrings_bytes = cnt[SEC_STRINGS];
    p->kernels = alloc_n(p->nkernels, sizeof *p->kernels);
    p->params = alloc_n(p->nparams, sizeof *p->params);
    p->syms = alloc_n(p->nsyms, sizeof *p->syms);
    p->slots = alloc_n(p->nslots, sizeof *p->slots);
    p->tasks = alloc_n(p->ntasks, sizeof *p->tasks);
    p->stacks = alloc_n(p->nstacks, sizeof *p->stacks);
    p->nodes = alloc_n(p->nnodes, sizeof *p->nodes);
    p->lines = alloc_n(p->nnodes, sizeof *p->lines);
    p->cols = alloc_n(p->nnodes, sizeof *p->cols);
    p->consts = alloc_n(p->nconsts, sizeof *p->consts);
    p->strings = alloc_n(p->nstrings_bytes, 1);
    if ((p->nkernels && !p->kernels) || (p->nparams && !p->params) || (p->nsyms && !p->syms) ||
        (p->nslots && !p->slots) || (p->ntasks && !p->tasks) || (p->nstacks && !p->stacks) ||
        (p->nnodes && (!p->nodes || !p->lines || !p->cols)) || (p->nconsts && !p->consts) || !p->strings) {
        dvm_program_free(p);
        return bfail(err, errlen, "out of memory");
    }

    const char *bad = NULL; /* a reserved field that is not 0 */
    uint32_t bad_i = 0;
    for (uint32_t i = 0; i < p->nkernels; i++) {
        dvm_kernel_desc *k = &p->kernels[i];
        k->name = r32(&r); k->line = r32(&r);
        k->param_begin = r32(&r); k->nparams = r32(&r);
        k->sym_begin = r32(&r); k->nsyms = r32(&r);
        k->no_adjoint = r32(&r);
        for (int v = 0; v < DVM_V_COUNT; v++) {
            dvm_variant_desc *d = &k->v[v];
            d->task_begin = r32(&r); d->ntasks = r32(&r);
            d->stack_begin = r32(&r); d->nstacks = r32(&r);
            d->slot_begin = r32(&r); d->nslots = r32(&r);
            d->nuniforms = r32(&r); d->present = r32(&r);
        }
    }
    for (uint32_t i = 0; i < p->nparams; i++) {
        dvm_param_desc *q = &p->params[i];
        q->name = r32(&r); q->is_array = (uint8_t)r8(&r); q->type = (uint8_t)r8(&r); q->rank = (uint8_t)r8(&r);
        if (r8(&r) && !bad) { bad = "params"; bad_i = i; }
        q->uslot = (uint16_t)r16(&r);
        if (r16(&r) && !bad) { bad = "params"; bad_i = i; }
        for (int d = 0; d < DVM_MAX_RANK; d++) q->dim[d] = (int32_t)r32(&r);
    }
    for (uint32_t i = 0; i < p->nsyms; i++) {
        p->syms[i].name = r32(&r);
        p->syms[i].uslot = (uint16_t)r16(&r);
        if (r16(&r) && !bad) { bad = "syms"; bad_i = i; }
    }
    for (uint32_t i = 0; i < p->nslots; i++) {
        p->slots[i].param = (uint16_t)r16(&r);
        p->slots[i].role = (uint8_t)r8(&r);
        p->slots[i].writes = (uint8_t)r8(&r);
    }
    for (uint32_t i = 0; i < p->ntasks; i++) {
        dvm_task_desc *t = &p->tasks[i];
        t->kind = (uint8_t)r8(&r); t->ndim = (uint8_t)r8(&r); t->nregs = (uint16_t)r16(&r);
        t->code_begin = r32(&r); t->code_len = r32(&r);
        for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) t->ext_u[d] = (uint16_t)r16(&r);
        for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) t->start_u[d] = (uint16_t)r16(&r);
        for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) t->idx_reg[d] = (uint16_t)r16(&r);
        t->body = (uint16_t)r16(&r);
        t->line = r32(&r);
        t->stage = (uint16_t)r16(&r); t->phase = (uint8_t)r8(&r);
        if (r8(&r) && !bad) { bad = "tasks"; bad_i = i; }
    }
    for (uint32_t i = 0; i < p->nstacks; i++) {
        dvm_stack_desc *s = &p->stacks[i];
        s->type = (uint8_t)r8(&r); s->sizing = (uint8_t)r8(&r); s->serial = (uint8_t)r8(&r);
        if (r8(&r) && !bad) { bad = "stacks"; bad_i = i; }
        s->name = r32(&r); s->line = r32(&r);
        s->size_begin = r32(&r); s->size_len = r32(&r); s->const_cap = r32(&r);
    }
    for (uint32_t i = 0; i < p->nnodes; i++) {
        dvm_node *n = &p->nodes[i];
        n->op = (uint8_t)r8(&r); n->x = (uint8_t)r8(&r);
        n->a = (uint16_t)r16(&r); n->b = (uint16_t)r16(&r); n->c = (uint16_t)r16(&r);
    }
    for (uint32_t i = 0; i < p->nnodes; i++) p->lines[i] = r32(&r);
    for (uint32_t i = 0; i < p->nnodes; i++) p->cols[i] = (uint16_t)r16(&r);
    for (uint32_t i = 0; i < p->nconsts; i++) p->consts[i] = r32(&r);
    memcpy(p->strings, r.p + r.off, p->nstrings_bytes);
    r.off += p->nstrings_bytes;

    if (bad) {
        dvm_program_free(p);
        return bfail(err, errlen, "section '%s' record %u: a reserved field is not 0", bad, bad_i);
    }
    char verr[512];
    if (dvm_verify(p, verr, sizeof verr)) {
        dvm_program_free(p);
        return bfail(err, errlen, "invalid program: %s", verr);
    }
    *out = p;
    return 0;
}
