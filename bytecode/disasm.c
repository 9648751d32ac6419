/* disasm.c: a human-readable listing of a program, driven by the operand formats of
 * ops.def: every operand is shown by its letter (r5, K3=1.5, A1 'x', axis 0, U2 'n',
 * stack 1 'v', ->17, "msg", s4). Node indices are relative to their task or size program,
 * like jump targets; the task header gives the absolute range. The program should be
 * verified; indices that are out of range anyway print as '?' rather than being followed. */
#include "bytecode/blob.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct dctx {
    const dvm_program *p;
    void (*out)(void *, const char *);
    void *ctx;
} dctx;

typedef struct line { char b[1024]; size_t n; } line;

static void add(line *l, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void add(line *l, const char *fmt, ...) {
    if (l->n >= sizeof l->b - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->b + l->n, sizeof l->b - l->n, fmt, ap);
    va_end(ap);
    if (n > 0) l->n += (size_t)n;
    if (l->n > sizeof l->b - 1) l->n = sizeof l->b - 1;
}

static void emit_line(dctx *d, line *l) {
    d->out(d->ctx, l->b);
    l->n = 0;
    l->b[0] = 0;
}

static const char *dstr(const dvm_program *p, uint32_t off) {
    return p->strings && off < p->nstrings_bytes ? p->strings + off : "?";
}

/* A string as a C literal, cut at 60 characters. */
static void add_quoted(line *l, const char *s) {
    add(l, "\"");
    for (int i = 0; s[i] && i < 60; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') add(l, "\\%c", ch);
        else if (ch == '\n') add(l, "\\n");
        else if (ch < 32 || ch > 126) add(l, "\\x%02x", ch);
        else add(l, "%c", ch);
        if (i == 59 && s[i + 1]) add(l, "...");
    }
    add(l, "\"");
}

/* A constant-pool word: tiny denormals are almost always i32 patterns, so show those as ints. */
static void add_word(line *l, uint32_t w) {
    float f;
    memcpy(&f, &w, sizeof f);
    if ((w & 0x7F800000u) == 0 && (w & 0x007FFFFFu) != 0) add(l, "i%d", (int32_t)w);
    else add(l, "%.9g", (double)f);
}

static const char *const vname[DVM_V_COUNT] = {"forward", "adjoint", "tangent"};
static const char *const role_name[3] = {"primal", "grad", "dual"};

static const char *tname(uint32_t t) {
    switch (t) {
    case DVM_T_F32: return "f32";
    case DVM_T_I32: return "i32";
    case DVM_T_BOOL: return "bool";
    default: return "?";
    }
}

static const dvm_param_desc *slot_param(const dvm_program *p, const dvm_kernel_desc *k,
                                        const dvm_variant_desc *v, uint32_t slot) {
    if (slot >= v->nslots || (uint64_t)v->slot_begin + slot >= p->nslots) return NULL;
    const dvm_slot_desc *s = &p->slots[v->slot_begin + slot];
    if (s->param >= k->nparams || (uint64_t)k->param_begin + s->param >= p->nparams) return NULL;
    return &p->params[k->param_begin + s->param];
}

static void add_slot(line *l, const dvm_program *p, const dvm_kernel_desc *k, const dvm_variant_desc *v, uint32_t slot) {
    const dvm_param_desc *pa = slot_param(p, k, v, slot);
    add(l, "A%u", slot);
    if (!pa) { add(l, " ?"); return; }
    uint8_t role = p->slots[v->slot_begin + slot].role;
    add(l, " '%s'%s%s", dstr(p, pa->name), role ? "." : "", role == 1 ? "grad" : role == 2 ? "dual" : "");
}

/* The uniform slot's meaning when it belongs to a parameter or shape symbol. */
static void add_uniform(line *l, const dvm_program *p, const dvm_kernel_desc *k, uint32_t u) {
    add(l, "U%u", u);
    for (uint32_t i = 0; i < k->nparams && (uint64_t)k->param_begin + i < p->nparams; i++) {
        const dvm_param_desc *pa = &p->params[k->param_begin + i];
        if (!pa->is_array && pa->uslot == u) { add(l, " '%s'", dstr(p, pa->name)); return; }
    }
    for (uint32_t i = 0; i < k->nsyms && (uint64_t)k->sym_begin + i < p->nsyms; i++)
        if (p->syms[k->sym_begin + i].uslot == u) { add(l, " '%s'", dstr(p, p->syms[k->sym_begin + i].name)); return; }
}

static void add_node(line *l, const dvm_program *p, const dvm_kernel_desc *k, const dvm_variant_desc *v,
                     uint32_t rel, const dvm_node *n) {
    const dvm_op_info *info = &dvm_op_table[n->op];
    add(l, "%5u: ", rel);
    if (!info->name) { add(l, "?op%u %u %u %u %u", n->op, n->x, n->a, n->b, n->c); return; }
    add(l, "%-9s", info->name);
    uint32_t val[4] = {n->x, n->a, n->b, n->c};
    int first = 1;
    for (int i = 0; i < 4; i++) {
        char c = info->fmt[i];
        uint32_t x = val[i];
        if (c == '-' || (c == 'n' && x == 0)) continue; /* a loop test's count: shown when not 0 */
        add(l, first ? " " : ", ");
        first = 0;
        switch (c) {
        case 'w': case 'r': case 'm': add(l, "r%u", x); break;
        case 'o':
            add(l, "r%u", DVM_OFS_REG(x));
            if (DVM_OFS_OFF(x)) add(l, "%+d", DVM_OFS_OFF(x));
            break;
        case 'k':
            add(l, "K%u", x);
            if (x < p->nconsts && p->consts) { add(l, "="); add_word(l, p->consts[x]); }
            break;
        case 'i': add(l, "#%u", x); break;
        case 'n': add(l, "x%u", x); break;
        case 'A': add_slot(l, p, k, v, x); break;
        case 'X': add(l, "axis %u", x); break;
        case 'U': case 'V': case 'T': add_uniform(l, p, k, x); break;
        case 'S':
            add(l, "stack %u", x);
            if (x < v->nstacks && (uint64_t)v->stack_begin + x < p->nstacks)
                add(l, " '%s'", dstr(p, p->stacks[v->stack_begin + x].name));
            break;
        case 'J': add(l, "->%u", x); break;
        case 'E': add_quoted(l, dstr(p, x)); break;
        case 's': add(l, "s%u", x); break;
        case 'e': add(l, "end %u", x); break;
        case 'd': add(l, "depth %u", x); break;
        default: add(l, "?%u", x); break;
        }
    }
    if (n->op == DVM_OP_CONST) {
        add(l, "  ; ");
        add_word(l, (uint32_t)n->b | (uint32_t)n->c << 16);
    } else if (n->op == DVM_OP_SZ_CONST) {
        add(l, "  ; %u", (uint32_t)n->a | (uint32_t)n->b << 16);
    }
}

/* Nodes [begin, begin+len), with the source position beside each node whose line changes. */
static void list_nodes(dctx *d, const dvm_kernel_desc *k, const dvm_variant_desc *v, uint32_t begin, uint32_t len,
                       const char *indent) {
    const dvm_program *p = d->p;
    line l = {{0}, 0};
    uint32_t last_line = 0;
    for (uint32_t j = 0; j < len && (uint64_t)begin + j < p->nnodes; j++) {
        uint32_t g = begin + j;
        add(&l, "%s", indent);
        add_node(&l, p, k, v, j, &p->nodes[g]);
        uint32_t ln = p->lines ? p->lines[g] : 0;
        if (ln && ln != last_line) {
            while (l.n < 56) add(&l, " ");
            add(&l, " ; line %u:%u", ln, p->cols ? p->cols[g] : 0);
            last_line = ln;
        }
        emit_line(d, &l);
    }
}

static void list_variant(dctx *d, const dvm_kernel_desc *k, int vi) {
    const dvm_program *p = d->p;
    const dvm_variant_desc *v = &k->v[vi];
    line l = {{0}, 0};
    add(&l, "  variant %s: %u tasks, %u stacks, %u array slots, %u uniforms", vname[vi], v->ntasks, v->nstacks,
        v->nslots, v->nuniforms);
    emit_line(d, &l);
    for (uint32_t i = 0; i < v->nslots && (uint64_t)v->slot_begin + i < p->nslots; i++) {
        const dvm_slot_desc *s = &p->slots[v->slot_begin + i];
        add(&l, "    slot A%u: ", i);
        add_slot(&l, p, k, v, i);
        add(&l, " %s%s", s->role < 3 ? role_name[s->role] : "?", s->writes ? " (written)" : "");
        emit_line(d, &l);
    }
    for (uint32_t i = 0; i < v->nstacks && (uint64_t)v->stack_begin + i < p->nstacks; i++) {
        const dvm_stack_desc *s = &p->stacks[v->stack_begin + i];
        add(&l, "    stack %u '%s' %s%s (line %u): ", i, dstr(p, s->name), tname(s->type),
            s->serial ? " serial" : "", s->line);
        if (s->sizing == DVM_SZ_CONSTANT) add(&l, "capacity %u", s->const_cap);
        else if (s->sizing == DVM_SZ_DEFAULT) add(&l, "default capacity (no formula)");
        else if (s->sizing == DVM_SZ_PROGRAM) add(&l, "size program, nodes %u..%u", s->size_begin,
                                                 s->size_begin + s->size_len - 1);
        else add(&l, "sizing %u?", s->sizing);
        emit_line(d, &l);
        if (s->sizing == DVM_SZ_PROGRAM) list_nodes(d, k, v, s->size_begin, s->size_len, "      ");
    }
    for (uint32_t i = 0; i < v->ntasks && (uint64_t)v->task_begin + i < p->ntasks; i++) {
        const dvm_task_desc *t = &p->tasks[v->task_begin + i];
        add(&l, "    task %u: ", i);
        if (t->kind == DVM_TASK_PARALLEL) {
            add(&l, "parallel over (");
            for (uint32_t dd = 0; dd < t->ndim && dd < DVM_MAX_PAR_DIMS; dd++) {
                if (dd) add(&l, ", ");
                if (t->start_u[dd] != DVM_NO_SLOT) {
                    add(&l, "[");
                    add_uniform(&l, p, k, t->start_u[dd]);
                    add(&l, ", ");
                } else {
                    add(&l, "[0, ");
                }
                add_uniform(&l, p, k, t->ext_u[dd]);
                add(&l, ") -> r%u", t->idx_reg[dd]);
            }
            add(&l, ")");
        } else if (t->kind == DVM_TASK_REPEAT) {
            add(&l, "repeat the next %u tasks for ", t->body);
            add_uniform(&l, p, k, t->ext_u[1]);
            add(&l, " in [");
            if (t->start_u[0] != DVM_NO_SLOT) add_uniform(&l, p, k, t->start_u[0]);
            else add(&l, "0");
            add(&l, ", ");
            add_uniform(&l, p, k, t->ext_u[0]);
            add(&l, ")%s", t->phase ? ", last trip first" : "");
        } else {
            add(&l, "serial");
        }
        if (t->phase || t->stage) add(&l, ", stage %u%s", t->stage, t->phase ? " reverse" : "");
        add(&l, ", %u regs, nodes %u..%u (line %u)", t->nregs, t->code_begin, t->code_begin + t->code_len - 1,
            t->line);
        if (t->body && t->kind != DVM_TASK_REPEAT) add(&l, ", prologue 0..%u (once per thread), body from %u", t->body - 1u, t->body);
        emit_line(d, &l);
        list_nodes(d, k, v, t->code_begin, t->code_len, "      ");
    }
}

int dvm_disasm(const dvm_program *p, void (*out)(void *, const char *), void *ctx) {
    if (!p || !out) return -1;
    dctx d = {p, out, ctx};
    line l = {{0}, 0};
    add(&l, "program '%s': %u kernels, %u nodes, %u constants, %u string bytes", dstr(p, p->source_name),
        p->nkernels, p->nnodes, p->nconsts, p->nstrings_bytes);
    emit_line(&d, &l);
    /* the compiler's switches, as the `dvm` options that give them (docs/cli.md) */
    const uint32_t unroll = (p->options & DVM_OPTS_UNROLL_MASK) >> DVM_OPTS_UNROLL_SHIFT;
    add(&l, "compiler options:%s%s", p->options ? "" : " default", p->options & DVM_OPTS_NO_OPT ? " --no-opt" : "");
    if (p->options & DVM_OPTS_NO_PARTITION) add(&l, " --no-partition");
    if (unroll) add(&l, " --unroll %u", unroll);
    emit_line(&d, &l);
    for (uint32_t ki = 0; ki < p->nkernels && p->kernels; ki++) {
        const dvm_kernel_desc *k = &p->kernels[ki];
        add(&l, "kernel '%s' (line %u): %u parameters, %u shape symbols", dstr(p, k->name), k->line, k->nparams,
            k->nsyms);
        emit_line(&d, &l);
        for (uint32_t i = 0; i < k->nparams && (uint64_t)k->param_begin + i < p->nparams; i++) {
            const dvm_param_desc *pa = &p->params[k->param_begin + i];
            add(&l, "  param %u '%s': %s", i, dstr(p, pa->name), tname(pa->type));
            if (pa->is_array) {
                add(&l, "[");
                for (uint32_t dd = 0; dd < pa->rank && dd < DVM_MAX_RANK; dd++) {
                    int32_t v = pa->dim[dd];
                    if (dd) add(&l, ", ");
                    if (v >= 0) add(&l, "%d", v);
                    else {
                        int64_t s = -(int64_t)v - 1;
                        add(&l, "%s", s < k->nsyms && (uint64_t)k->sym_begin + (uint64_t)s < p->nsyms
                                          ? dstr(p, p->syms[k->sym_begin + (uint32_t)s].name) : "?");
                    }
                }
                add(&l, "]");
            } else {
                add(&l, " scalar in U%u", pa->uslot);
            }
            emit_line(&d, &l);
        }
        for (uint32_t i = 0; i < k->nsyms && (uint64_t)k->sym_begin + i < p->nsyms; i++) {
            add(&l, "  shape symbol %u '%s' in U%u", i, dstr(p, p->syms[k->sym_begin + i].name),
                p->syms[k->sym_begin + i].uslot);
            emit_line(&d, &l);
        }
        for (int vi = 0; vi < DVM_V_COUNT; vi++)
            if (k->v[vi].present) list_variant(&d, k, vi);
    }
    return 0;
}
