/* verify.c: the structural verifier. It is what makes a blob safe to run: after it accepts
 * a program, every index an interpreter follows (registers, constants, array slots, axes,
 * uniforms, stacks, jump targets, strings, size-program slots) lies inside its buffer.
 * Data-dependent accesses (array elements, stack depth) are checked at run time instead.
 * docs/bytecode.md lists the rules; each failure says where and what was expected. */
#include "bytecode/blob.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const variant_name[DVM_V_COUNT] = {"forward", "adjoint", "tangent"};

typedef struct vctx {
    const dvm_program *p;
    char *err;
    size_t errlen;
    /* the prefix of the next message, "kernel 'k' (adjoint) task 2": the kernel's part as text,
       the rest as numbers that only a failure formats (formatting each record's name on the
       way cost an eighth of a blob's verification) */
    char where[160];
    int variant;       /* -1, or the variant (variant_name) */
    int item;          /* ITEM_*: a record of the kernel or variant, item_i the index */
    uint32_t item_i;
    /* Every record and node belongs to one owner (a kernel's parameters and symbols, a
       variant's tasks, slots and stacks, a task's code, a stack's size program): each is then
       checked once, so verification is linear in the blob's size, however its ranges are
       laid out. One byte per record and node. */
    uint8_t *own_params, *own_syms, *own_slots, *own_tasks, *own_stacks, *own_nodes;
    /* check_flow's scratch, reused by every task: per node its place in the search and a
       register set (words of 64 registers); per uniform slot the last task (a stamp) that
       reads it and the last that adds to it atomically */
    dvm_flow_scratch flow;
    uint32_t *u_read, *u_add;
    uint32_t stamp;
} vctx;


static int vfail(vctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
enum { ITEM_NONE, ITEM_PARAM, ITEM_SYM, ITEM_STACK, ITEM_TASK };
static const char *const item_name[] = {"", " parameter", " shape symbol", " stack", " task"};

static int vfail(vctx *c, const char *fmt, ...) {
    if (c->err && c->errlen) {
        char vn[40] = "", it[40] = "";
        if (c->variant >= 0) snprintf(vn, sizeof vn, " (%s)", variant_name[c->variant]);
        if (c->item != ITEM_NONE) snprintf(it, sizeof it, "%s %u", item_name[c->item], c->item_i);
        int n = snprintf(c->err, c->errlen, "%s%s%s%s", c->where, vn, it, c->where[0] ? ": " : "");
        if (n < 0) n = 0;
        if ((size_t)n < c->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* Marks [begin, begin + n) of a table as owned (the range is already in bounds). */
static int claim(vctx *c, uint8_t *own, uint32_t begin, uint32_t n, const char *what) {
    for (uint32_t i = 0; i < n; i++) {
        if (own[begin + i])
            return vfail(c, "%s %u..%u overlap(s) another owner's (record %u): every range must be its own",
                         what, begin, begin + n - 1, begin + i);
        own[begin + i] = 1;
    }
    return 0;
}

/* Only valid after the string table has been checked: every offset below nstrings_bytes
 * then starts a NUL-terminated string. */
static const char *vstr(const dvm_program *p, uint32_t off) {
    return off < p->nstrings_bytes ? p->strings + off : "?";
}

static int range_ok(uint32_t begin, uint32_t n, uint32_t total) {
    return (uint64_t)begin + n <= total;
}

/* What the operand checks need to know about the code being checked. */
/* "node 3 (LD)" in a task, "size node 3 (SZ_LOAD)" in a size program. */
#define NODE_FMT "%snode %u (%s)"
#define NODE_ARGS(o, name) (o)->t ? "" : "size ", (o)->node, (name)

typedef struct opctx {
    const dvm_kernel_desc *k;
    const dvm_variant_desc *v;
    const dvm_task_desc *t; /* NULL in a size program */
    uint32_t node;          /* index within the task or size program */
    uint32_t len;           /* length of the task or size program */
} opctx;

static const dvm_param_desc *slot_param(const dvm_program *p, const dvm_kernel_desc *k,
                                        const dvm_variant_desc *v, uint32_t slot) {
    return &p->params[k->param_begin + p->slots[v->slot_begin + slot].param];
}

static const char operand_name[4] = {'x', 'a', 'b', 'c'};

/* Checks the operands that both tasks and size programs share (not J, s, e, d). Returns 1
 * if the letter was handled here, 0 if the caller handles it, -1 on failure. */
static int check_common(vctx *c, const opctx *o, const dvm_node *n, int i, char letter,
                        uint32_t val, int aslot) {
    const dvm_program *p = c->p;
    const char *opname = dvm_op_table[n->op].name;
    char on = operand_name[i];
    switch (letter) {
    case '-':
        if (val != 0)
            return vfail(c, NODE_FMT ": unused operand %c must be 0, got %u", NODE_ARGS(o, opname), on, val);
        return 1;
    case 'i':
        return 1;
    case 'n': /* any count (an 8-bit field) */
        return 1;
    case 'A':
        if (val >= o->v->nslots)
            return vfail(c, NODE_FMT ": operand %c: array slot %u is not < the variant's %u slots",
                         NODE_ARGS(o, opname), on, val, o->v->nslots);
        return 1;
    case 'X': {
        if (aslot < 0 || (uint32_t)aslot >= o->v->nslots)
            return vfail(c, NODE_FMT ": operand %c: axis without a valid array slot", NODE_ARGS(o, opname), on);
        const dvm_param_desc *pa = slot_param(p, o->k, o->v, (uint32_t)aslot);
        if (val >= pa->rank)
            return vfail(c, NODE_FMT ": operand %c: axis %u is not < rank %u of '%s'", NODE_ARGS(o, opname), on, val, pa->rank, vstr(p, pa->name));
        return 1;
    }
    case 'U':
    case 'T':
    case 'V':
        if (val >= o->v->nuniforms)
            return vfail(c, NODE_FMT ": operand %c: uniform slot %u is not < the variant's %u uniforms",
                         NODE_ARGS(o, opname), on, val, o->v->nuniforms);
        if (letter == 'V' && (!o->t || o->t->kind != DVM_TASK_SERIAL))
            return vfail(c, NODE_FMT ": writes uniform %u outside a serial task", NODE_ARGS(o, opname), val);
        return 1;
    default:
        return 0;
    }
}

static int find_aslot(const dvm_node *n, const char *fmt) {
    uint32_t v[4] = {n->x, n->a, n->b, n->c};
    for (int i = 0; i < 4; i++)
        if (fmt[i] == 'A') return (int)v[i];
    return -1;
}

static int check_task_node(vctx *c, const opctx *o, const dvm_node *n) {
    const dvm_program *p = c->p;
    const dvm_op_info *info = &dvm_op_table[n->op];
    if (!info->name) return vfail(c, "node %u: unknown opcode %u", o->node, n->op);
    if (info->flags & DVM_F_SIZE)
        return vfail(c, "node %u (%s): a size-program opcode inside a task", o->node, info->name);
    uint32_t v[4] = {n->x, n->a, n->b, n->c};
    int aslot = find_aslot(n, info->fmt);
    for (int i = 0; i < 4; i++) {
        char l = info->fmt[i];
        int r = check_common(c, o, n, i, l, v[i], aslot);
        if (r < 0) return -1;
        if (r) continue;
        switch (l) {
        case 'w': case 'r': case 'm':
            if (v[i] >= o->t->nregs)
                return vfail(c, "node %u (%s): operand %c: register %u is not < nregs %u", o->node,
                             info->name, operand_name[i], v[i], o->t->nregs);
            break;
        case 'o':
            if (DVM_OFS_REG(v[i]) >= o->t->nregs)
                return vfail(c, "node %u (%s): operand %c: register %u (with offset %d) is not < nregs %u", o->node,
                             info->name, operand_name[i], DVM_OFS_REG(v[i]), DVM_OFS_OFF(v[i]), o->t->nregs);
            break;
        case 'k':
            if (v[i] >= p->nconsts)
                return vfail(c, "node %u (%s): operand %c: constant %u is not < nconsts %u", o->node,
                             info->name, operand_name[i], v[i], p->nconsts);
            break;
        case 'S':
            if (v[i] >= o->v->nstacks)
                return vfail(c, "node %u (%s): operand %c: stack %u is not < the variant's %u stacks",
                             o->node, info->name, operand_name[i], v[i], o->v->nstacks);
            break;
        case 'J':
            if (v[i] >= o->len)
                return vfail(c, "node %u (%s): operand %c: jump target %u is not < the task's %u nodes",
                             o->node, info->name, operand_name[i], v[i], o->len);
            if (v[i] < o->t->body)
                return vfail(c, "node %u (%s): operand %c: jump target %u is inside the prologue (nodes 0..%u)",
                             o->node, info->name, operand_name[i], v[i], o->t->body - 1u);
            break;
        case 'E':
            if (v[i] >= p->nstrings_bytes)
                return vfail(c, "node %u (%s): operand %c: string offset %u is not < %u", o->node,
                             info->name, operand_name[i], v[i], p->nstrings_bytes);
            break;
        default:
            return vfail(c, "node %u (%s): operand letter '%c' is not allowed in a task", o->node,
                         info->name, l);
        }
    }
    if (aslot >= 0) {
        const dvm_slot_desc *s = &p->slots[o->v->slot_begin + (uint32_t)aslot];
        const dvm_param_desc *pa = slot_param(p, o->k, o->v, (uint32_t)aslot);
        if (dvm_op_rank2(n->op) && pa->rank != 2)
            return vfail(c, "node %u (%s): array slot %u ('%s') has rank %u, expected 2", o->node, info->name,
                         (unsigned)aslot, vstr(p, pa->name), pa->rank);
        if (dvm_slot_write_op(n->op) && s->writes != 1)
            return vfail(c, "node %u (%s): writes array slot %u ('%s') whose writes flag is 0", o->node,
                         info->name, (unsigned)aslot, vstr(p, pa->name));
        /* the element type the opcode needs (ops.def): not a memory-safety rule, but a wrong
           type here means the emitter is broken, so catch it before it runs */
        int need = dvm_op_elem_type(n->op);
        if (need && pa->type != need)
            return vfail(c, "node %u (%s): array slot %u ('%s') has element type %s, expected %s", o->node,
                         info->name, (unsigned)aslot, vstr(p, pa->name), pa->type == DVM_T_F32 ? "f32" : "i32",
                         need == DVM_T_F32 ? "f32" : "i32");
    }
    return 0;
}

/* ---- what a task computes: registers, its prologue, uniforms ----
 * Every register a node reads is written on every path from the task's start; a parallel
 * task's prologue computes only what every iteration would compute alike; and a parallel task
 * never reads a uniform that it adds to (its extent and start included). Then what a task
 * computes depends neither on what a backend leaves in its registers, nor on how it deals
 * iterations to threads and lanes, nor on the order in which they run.
 *
 * Registers: a must-written dataflow over the task's control flow graph (fall through unless
 * END or JMP; a branch to its J operand), solved in one pass over the nodes reachable from node
 * 0 in reverse postorder of a depth-first search. A node's set is the intersection of what its
 * predecessors that come earlier in that order leave; a retreating edge (a loop's back edge) must
 * leave every register of its target's set. The sets then satisfy every edge, so by induction
 * along any path a register in a node's set was written on that path (writes only add to a
 * set). Every loop entered only through its head passes (the back edge's source is reached only
 * through the head, so it has at least the head's registers): the compiler's loops, rotated
 * ones included. A parallel task starts with nothing written, its prologue (straight through)
 * adds what it computes, and `body` has the index registers and those of the prologue's that no
 * node from body on writes: exactly what a later iteration, started at body with the registers
 * as the one before left them, surely holds with the same values (a prologue's register that a
 * later node writes must be written again before each read, like any other).
 * Cost: O(code_len x nregs / 64) word operations (at most 16 words a node, 3 edges' worth) and
 * code_len x nregs / 8 bytes of sets, reused by the next task. */
#define SET_WORDS DVM_REG_WORDS
#define SET_HAS(s, r) (((s)[(r) >> 6] >> ((r)&63u)) & 1u)
#define SET_ADD(s, r) ((s)[(r) >> 6] |= (uint64_t)1 << ((r)&63u))

/* The node's jump target (its 'J' operand), or UINT32_MAX. */
static uint32_t jump_target(const dvm_node *n) {
    const char *f = dvm_op_table[n->op].fmt;
    const uint32_t v[4] = {n->x, n->a, n->b, n->c};
    for (int i = 0; i < 4; i++)
        if (f[i] == 'J') return v[i];
    return UINT32_MAX;
}

/* Whether the next node may run after n: not after END, nor after a branch whose condition
 * reads no register (JMP: the optimizer's rule too). */
static int falls_through(const dvm_node *n) {
    const dvm_op_info *o = &dvm_op_table[n->op];
    if (n->op == DVM_OP_END) return 0;
    return !(o->flags & DVM_F_BRANCH) || strpbrk(o->fmt, "rmo") != NULL;
}

/* Successor k (0: the next node, 1: the jump target) of node j, or UINT32_MAX. */
static uint32_t successor(const dvm_node *code, uint32_t len, uint32_t j, int k) {
    if (k == 0) return j + 1 < len && falls_through(&code[j]) ? j + 1 : UINT32_MAX;
    return (dvm_op_table[code[j].op].flags & DVM_F_BRANCH) ? jump_target(&code[j]) : UINT32_MAX;
}

static uint32_t first_bit(const uint64_t *s, uint32_t words) {
    for (uint32_t w = 0; w < words; w++)
        for (uint32_t b = 0; b < 64; b++)
            if ((s[w] >> b) & 1u) return w * 64 + b;
    return 0;
}

/* The rules that do not follow the jumps, in node order: the prologue's nodes and the
 * uniforms a parallel task reads and adds to. */
static int check_invariants(vctx *c, const dvm_task_desc *t, const uint64_t *idx) {
    const dvm_node *code = c->p->nodes + t->code_begin;
    const int par = t->kind == DVM_TASK_PARALLEL;
    const uint32_t stamp = ++c->stamp;
    for (uint32_t d = 0; par && d < t->ndim; d++) {
        c->u_read[t->ext_u[d]] = stamp;
        if (t->start_u[d] != DVM_NO_SLOT) c->u_read[t->start_u[d]] = stamp;
    }
    for (uint32_t j = 0; j < t->code_len; j++) {
        const dvm_node *n = &code[j];
        const dvm_op_info *o = &dvm_op_table[n->op];
        const uint32_t v[4] = {n->x, n->a, n->b, n->c};
        const int in_pro = j < t->body;
        if (in_pro && (o->flags & (DVM_F_SIDE | DVM_F_BRANCH)))
            return vfail(c, "node %u (%s) is in the prologue (nodes before body %u), which may only compute registers "
                            "from uniforms, constants and shapes (no memory, stack or uniform write, nothing that can "
                            "fail, no branch or END)", j, o->name, t->body);
        for (int i = 0; i < 4; i++) {
            const char l = o->fmt[i];
            if (par && l == 'U') {
                if (c->u_add[v[i]] == stamp)
                    return vfail(c, "node %u (%s): reads uniform %u, which the task adds to (ATOMADDU): what it "
                                    "reads would depend on the order its iterations run in", j, o->name, v[i]);
                c->u_read[v[i]] = stamp;
            } else if (par && l == 'T') {
                for (uint32_t d = 0; d < t->ndim; d++)
                    if (t->ext_u[d] == v[i] || t->start_u[d] == v[i])
                        return vfail(c, "node %u (%s): adds to uniform %u, the task's own %s (%s_u[%u]): nothing may "
                                        "change a task's extent while it runs", j, o->name, v[i],
                                     t->ext_u[d] == v[i] ? "stop" : "start", t->ext_u[d] == v[i] ? "ext" : "start", d);
                if (c->u_read[v[i]] == stamp)
                    return vfail(c, "node %u (%s): adds to uniform %u, which the task reads: what it reads would depend "
                                    "on the order its iterations run in", j, o->name, v[i]);
                c->u_add[v[i]] = stamp;
            } else if (in_pro && (l == 'r' || l == 'm' || l == 'o')) {
                const uint32_t r = l == 'o' ? DVM_OFS_REG(v[i]) : v[i];
                if (SET_HAS(idx, r))
                    return vfail(c, "node %u (%s): operand %c reads index register %u in the prologue (nodes before "
                                    "body %u), which runs once per thread, not once per iteration", j, o->name,
                                 operand_name[i], r, t->body);
            }
        }
        for (int i = 0; i < 4; i++) {
            const char l = o->fmt[i];
            if (l != 'w' && l != 'm') continue;
            if (in_pro && SET_HAS(idx, v[i]))
                return vfail(c, "node %u (%s): operand %c writes index register %u in the prologue (nodes before body "
                                "%u): later iterations would see their index instead", j, o->name, operand_name[i],
                             v[i], t->body);
        }
    }
    return 0;
}

/* Grows the scratch for a task of len nodes and words words of registers. */
static int flow_scratch(dvm_flow_scratch *f, uint32_t len, uint32_t words) {
    if (len > f->len) {
        uint32_t *o = realloc(f->order, (size_t)len * sizeof *o);
        if (o) f->order = o;
        uint32_t *nm = realloc(f->num, (size_t)len * sizeof *nm);
        if (nm) f->num = nm;
        uint32_t *st = realloc(f->dfs, (size_t)len * sizeof *st);
        if (st) f->dfs = st;
        uint32_t *sc = realloc(f->succ, (size_t)len * 2 * sizeof *sc);
        if (sc) f->succ = sc;
        if (!o || !nm || !st || !sc) return -1;
        f->len = len;
    }
    if ((uint64_t)len * words > f->sets_cap) {
        uint64_t *s = realloc(f->sets, (size_t)len * words * sizeof *s);
        if (!s) return -1;
        f->sets = s;
        f->sets_cap = (uint64_t)len * words;
    }
    return 0;
}

void dvm_flow_scratch_free(dvm_flow_scratch *f) {
    free(f->order);
    free(f->num);
    free(f->dfs);
    free(f->succ);
    free(f->sets);
    memset(f, 0, sizeof *f);
}

/* One offence: node j's operand k (-1: its jump to node s) lacks register r. Returns 1 to stop
   (the verifier's first), 0 to go on with r counted as written (the emitter's need). */
static int flow_offence(dvm_flow_fail *fail, uint64_t *need, uint32_t j, int k, uint32_t r, uint32_t s) {
    if (fail && fail->node == UINT32_MAX) *fail = (dvm_flow_fail){j, k, r, s};
    if (!need) return 1;
    SET_ADD(need, r);
    return 0;
}

/* Per opcode, the operands (bit k: field x a b c) that the flow pass reads ('r', 'm', 'o'),
   that are register-plus-offset ('o') and that it writes ('w', 'm'), from the format letters,
   made once: the letters' tests per operand were a third of the pass. Threads that race fill
   the same bytes (relaxed atomics). */
static uint8_t flow_rd[256], flow_ofs[256], flow_wr[256];
static int flow_ready;
static void flow_masks(void) {
    if (__atomic_load_n(&flow_ready, __ATOMIC_ACQUIRE)) return;
    for (int op = 0; op < 256; op++) {
        const char *f = dvm_op_table[op].fmt;
        uint8_t rd = 0, of = 0, wr = 0;
        for (int k = 0; f && k < 4 && f[k]; k++) {
            if (f[k] == 'r' || f[k] == 'm' || f[k] == 'o') rd |= (uint8_t)(1u << k);
            if (f[k] == 'o') of |= (uint8_t)(1u << k);
            if (f[k] == 'w' || f[k] == 'm') wr |= (uint8_t)(1u << k);
        }
        __atomic_store_n(&flow_rd[op], rd, __ATOMIC_RELAXED);
        __atomic_store_n(&flow_ofs[op], of, __ATOMIC_RELAXED);
        __atomic_store_n(&flow_wr[op], wr, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&flow_ready, 1, __ATOMIC_RELEASE);
}
#define FLOW_MASK(tab, op) __atomic_load_n(&(tab)[op], __ATOMIC_RELAXED)

int dvm_flow_regs(const dvm_node *code, const dvm_task_desc *t, dvm_flow_scratch *f, dvm_flow_fail *fail, uint64_t *need) {
    const uint32_t len = t->code_len, W = t->nregs ? (t->nregs + 63u) / 64u : 1; /* a word even for none */
    const int par = t->kind == DVM_TASK_PARALLEL;
    uint64_t full[SET_WORDS], idx[SET_WORDS], later[SET_WORDS], out[SET_WORDS], miss[SET_WORDS];
    memset(full, 0, sizeof full);
    memset(idx, 0, sizeof idx);
    memset(later, 0, sizeof later);
    if (fail) fail->node = UINT32_MAX;
    if (!len || t->nregs > DVM_MAX_REGS || t->body >= len) return -1;
    if (flow_scratch(f, len, W)) return -1;
    for (uint32_t w = 0; w < W; w++) /* registers 0 .. nregs - 1 */
        full[w] = t->nregs >= 64 * (w + 1) ? ~(uint64_t)0 : ((uint64_t)1 << (t->nregs - 64 * w)) - 1;
    for (uint32_t d = 0; par && d < t->ndim && d < DVM_MAX_PAR_DIMS; d++)
        if (t->idx_reg[d] < t->nregs) SET_ADD(idx, t->idx_reg[d]);
    /* what the nodes from body on write: a prologue's register they write is not the prologue's
       value in a later iteration, so it counts as written at body only if none does */
    flow_masks();
    for (uint32_t j = t->body; par && t->body && j < len; j++) {
        const uint32_t v[4] = {code[j].x, code[j].a, code[j].b, code[j].c};
        for (uint32_t m = FLOW_MASK(flow_wr, code[j].op); m; m &= m - 1) {
            const uint32_t r = v[__builtin_ctz(m)];
            if (r < t->nregs) SET_ADD(later, r);
        }
    }
    /* depth-first from node 0: num[j] is UNSEEN (not reached) or the next successor to follow
       (DONE: none left), then its place in reverse postorder; order lists them in postorder */
    enum { UNSEEN = 0xFFFFFFFFu, DONE = 2 };
    uint32_t *num = f->num, *order = f->order, *stk = f->dfs, *succ = f->succ, sp = 0, npost = 0;
    for (uint32_t j = 0; j < len; j++) {
        num[j] = UNSEEN;
        succ[2 * j] = successor(code, len, j, 0);
        succ[2 * j + 1] = successor(code, len, j, 1);
    }
    num[0] = 0;
    stk[sp++] = 0;
    while (sp) {
        const uint32_t u = stk[sp - 1];
        if (num[u] == DONE) {
            sp--;
            order[npost++] = u;
            continue;
        }
        const uint32_t s = succ[2 * u + num[u]++];
        if (s < len && num[s] == UNSEEN) {
            num[s] = 0;
            stk[sp++] = s;
        }
    }
    for (uint32_t i = 0; i < npost; i++) num[order[i]] = npost - 1 - i;
    /* the sets, in reverse postorder; node 0 starts with the index registers only without a
       prologue (the prologue reads none) */
    uint64_t *sets = f->sets;
    for (uint32_t i = 0; i < npost; i++) memcpy(sets + (size_t)order[i] * W, full, W * sizeof *full);
    memcpy(sets, idx, W * sizeof *sets);
    if (t->body) memset(sets, 0, W * sizeof *sets);
    int bad = 0;
    for (uint32_t i = npost; i-- > 0;) {
        const uint32_t j = order[i];
        const dvm_node *n = &code[j];
        const uint32_t v[4] = {n->x, n->a, n->b, n->c};
        memcpy(out, sets + (size_t)j * W, W * sizeof *out);
        const uint32_t ofs = FLOW_MASK(flow_ofs, n->op);
        for (uint32_t m = FLOW_MASK(flow_rd, n->op); m; m &= m - 1) { /* reads first: an m operand reads, then writes */
            const int k = __builtin_ctz(m);
            const uint32_t r = (ofs >> k) & 1u ? DVM_OFS_REG(v[k]) : v[k];
            if (r >= t->nregs || SET_HAS(out, r)) continue;
            bad = 1;
            if (flow_offence(fail, need, j, k, r, 0)) return 1;
            SET_ADD(out, r);
        }
        for (uint32_t m = FLOW_MASK(flow_wr, n->op); m; m &= m - 1) {
            const uint32_t r = v[__builtin_ctz(m)];
            if (r < t->nregs) SET_ADD(out, r);
        }
        for (int k = 0; k < 2; k++) {
            const uint32_t s = succ[2 * j + (uint32_t)k];
            if (s >= len) continue;
            uint64_t *in = sets + (size_t)s * W;
            if (num[s] > num[j]) {
                if (par && t->body && s == t->body && j + 1 == s) /* the prologue's end */
                    for (uint32_t w = 0; w < W; w++) in[w] &= (out[w] & ~later[w]) | idx[w];
                else
                    for (uint32_t w = 0; w < W; w++) in[w] &= out[w];
                continue;
            }
            uint64_t any = 0;
            for (uint32_t w = 0; w < W; w++) any |= miss[w] = in[w] & ~out[w];
            if (!any) continue;
            bad = 1;
            if (flow_offence(fail, need, j, -1, first_bit(miss, W), s)) return 1;
            for (uint32_t w = 0; w < W; w++) need[w] |= miss[w];
        }
    }
    return bad;
}

/* The task has passed check_task_node: every operand is in range. */
static int check_flow(vctx *c, const dvm_task_desc *t) {
    const int par = t->kind == DVM_TASK_PARALLEL;
    uint64_t idx[SET_WORDS];
    memset(idx, 0, sizeof idx);
    for (uint32_t d = 0; par && d < t->ndim; d++) SET_ADD(idx, t->idx_reg[d]);
    if (check_invariants(c, t, idx)) return -1;
    dvm_flow_fail e;
    const int rc = dvm_flow_regs(c->p->nodes + t->code_begin, t, &c->flow, &e, NULL);
    if (rc < 0) return vfail(c, "out of memory");
    if (rc == 0) return 0;
    const char *name = dvm_op_table[c->p->nodes[t->code_begin + e.node].op].name;
    if (e.operand < 0)
        return vfail(c, "node %u (%s): jumps back to node %u without register %u, which every other way into node "
                        "%u writes (a loop must be entered through its head)", e.node, name, e.target, e.reg, e.target);
    return vfail(c, "node %u (%s): operand %c reads register %u, which is not written on every path from the task's "
                    "start%s", e.node, name, operand_name[e.operand], e.reg,
                 par ? " (an iteration starts with its index registers, and with what the prologue computed and no "
                       "later node writes)" : "");
}

static int check_task(vctx *c, const dvm_kernel_desc *k, const dvm_variant_desc *v, const dvm_task_desc *t) {
    const dvm_program *p = c->p;
    if (t->kind != DVM_TASK_SERIAL && t->kind != DVM_TASK_PARALLEL && t->kind != DVM_TASK_REPEAT)
        return vfail(c, "kind %u is neither serial (0), parallel (1) nor repeat (2)", t->kind);
    if (t->kind == DVM_TASK_REPEAT) {
        /* the host reads its bounds and sets its variable; its body follows it, in its phase,
           with no REPEAT inside */
        const uint32_t ti = (uint32_t)(t - &p->tasks[v->task_begin]);
        if (t->code_len != 1 || !range_ok(t->code_begin, 1, p->nnodes) || p->nodes[t->code_begin].op != DVM_OP_END)
            return vfail(c, "a repeat task's code is one END");
        if (claim(c, c->own_nodes, t->code_begin, 1, "code nodes")) return -1;
        if (t->ext_u[0] >= v->nuniforms || t->ext_u[1] >= v->nuniforms ||
            (t->start_u[0] != DVM_NO_SLOT && t->start_u[0] >= v->nuniforms))
            return vfail(c, "a repeat task's uniform slots (stop %u, start %u, variable %u) are not < the variant's %u uniforms",
                         t->ext_u[0], t->start_u[0], t->ext_u[1], v->nuniforms);
        if ((uint64_t)ti + 1 + t->body > v->ntasks)
            return vfail(c, "a repeat task's body of %u tasks runs past the variant's %u tasks", t->body, v->ntasks);
        for (uint32_t j = ti + 1; j <= ti + t->body; j++) {
            const dvm_task_desc *b = &p->tasks[v->task_begin + j];
            if (b->kind == DVM_TASK_REPEAT) return vfail(c, "a repeat task inside the body of another (task %u)", j);
            if (b->phase != t->phase) return vfail(c, "task %u of a repeat task's body is in another phase", j);
        }
        return 0;
    }
    if (t->nregs < 1 || t->nregs > DVM_MAX_REGS)
        return vfail(c, "nregs %u is not in 1..%d", t->nregs, DVM_MAX_REGS);
    if (t->kind == DVM_TASK_PARALLEL) {
        if (t->ndim < 1 || t->ndim > DVM_MAX_PAR_DIMS)
            return vfail(c, "ndim %u is not in 1..%d", t->ndim, DVM_MAX_PAR_DIMS);
        for (uint32_t d = 0; d < t->ndim; d++) {
            if (t->ext_u[d] >= v->nuniforms)
                return vfail(c, "ext_u[%u] = %u is not < the variant's %u uniforms", d, t->ext_u[d], v->nuniforms);
            if (t->idx_reg[d] >= t->nregs)
                return vfail(c, "idx_reg[%u] = %u is not < nregs %u", d, t->idx_reg[d], t->nregs);
        }
    }
    /* a start is optional on each dimension of a parallel task, and absent elsewhere */
    for (uint32_t d = 0; d < DVM_MAX_PAR_DIMS; d++) {
        if (t->start_u[d] == DVM_NO_SLOT) continue;
        if (t->kind != DVM_TASK_PARALLEL)
            return vfail(c, "start_u[%u] = %u is set on a serial task (0xFFFF expected)", d, t->start_u[d]);
        if (d >= t->ndim)
            return vfail(c, "start_u[%u] = %u is set on a %u-D task (dimension %u does not exist)", d, t->start_u[d],
                         t->ndim, d);
        if (t->start_u[d] >= v->nuniforms)
            return vfail(c, "start_u[%u] = %u is not < the variant's %u uniforms", d, t->start_u[d], v->nuniforms);
    }
    if (t->code_len < 1 || t->code_len > DVM_MAX_TASK_NODES)
        return vfail(c, "code_len %u is not in 1..%d", t->code_len, DVM_MAX_TASK_NODES);
    if (!range_ok(t->code_begin, t->code_len, p->nnodes))
        return vfail(c, "code nodes %u..%u are outside the %u nodes", t->code_begin,
                     t->code_begin + t->code_len - 1, p->nnodes);
    if (claim(c, c->own_nodes, t->code_begin, t->code_len, "code nodes")) return -1;
    /* the prologue (nodes before body) runs once per thread, straight through into the body */
    if (t->body && t->kind != DVM_TASK_PARALLEL)
        return vfail(c, "body %u on a serial task (a prologue is for parallel tasks only)", t->body);
    if (t->body >= t->code_len)
        return vfail(c, "body %u is not < code_len %u", t->body, t->code_len);
    opctx o = {k, v, t, 0, t->code_len};
    for (uint32_t j = 0; j < t->code_len; j++) {
        o.node = j;
        const dvm_node *n = &p->nodes[t->code_begin + j];
        if (check_task_node(c, &o, n)) return -1;
    }
    uint8_t last = p->nodes[t->code_begin + t->code_len - 1].op;
    if (last != DVM_OP_END && last != DVM_OP_JMP)
        return vfail(c, "the last node %u is %s, expected END or JMP (execution must not run off the end)",
                     t->code_len - 1, dvm_op_table[last].name);
    return check_flow(c, t);
}

/* A size program is a post-order tree: an `s` operand names a node of the same scope (the
 * top level, or the innermost SZ_RANGE body being read) that comes earlier. A body never
 * reads outside itself, so the sizer can evaluate it alone (DVM_SZ_PASS_BODY). */
static int check_size_program(vctx *c, const dvm_kernel_desc *k, const dvm_variant_desc *v,
                              uint32_t begin, uint32_t len) {
    const dvm_program *p = c->p;
    if (len < 1 || len > DVM_MAX_TASK_NODES)
        return vfail(c, "size program length %u is not in 1..%d", len, DVM_MAX_TASK_NODES);
    if (!range_ok(begin, len, p->nnodes))
        return vfail(c, "size program nodes %u..%u are outside the %u nodes", begin, begin + len - 1, p->nnodes);
    /* scope[j]: the range node whose body directly holds node j, or UINT32_MAX at top level. */
    uint32_t *scope = malloc((size_t)len * sizeof *scope);
    if (!scope) return vfail(c, "out of memory");
    uint32_t open_node[DVM_MAX_SIZE_DEPTH], open_end[DVM_MAX_SIZE_DEPTH];
    int depth = 0, rc = -1;
    opctx o = {k, v, NULL, 0, len};
    for (uint32_t j = 0; j < len; j++) {
        o.node = j;
        while (depth > 0 && open_end[depth - 1] == j) { /* close the bodies that end here */
            if (scope[j - 1] != open_node[depth - 1]) {
                vfail(c, "size node %u (SZ_RANGE): the body's last node %u (its value) lies in a nested body",
                      open_node[depth - 1], j - 1);
                goto done;
            }
            depth--;
        }
        uint32_t cur = depth ? open_node[depth - 1] : UINT32_MAX;
        uint32_t scope_end = depth ? open_end[depth - 1] : len;
        scope[j] = cur;
        const dvm_node *n = &p->nodes[begin + j];
        const dvm_op_info *info = &dvm_op_table[n->op];
        if (!info->name) { vfail(c, "size node %u: unknown opcode %u", j, n->op); goto done; }
        if (!(info->flags & DVM_F_SIZE)) {
            vfail(c, "size node %u (%s): not a size-program opcode", j, info->name);
            goto done;
        }
        uint32_t val[4] = {n->x, n->a, n->b, n->c};
        int aslot = find_aslot(n, info->fmt);
        for (int i = 0; i < 4; i++) {
            char l = info->fmt[i];
            int r = check_common(c, &o, n, i, l, val[i], aslot);
            if (r < 0) goto done;
            if (r) continue;
            switch (l) {
            case 's':
                if (val[i] >= j) {
                    vfail(c, "size node %u (%s): operand %c: slot %u is not < the node's own index", j,
                          info->name, operand_name[i], val[i]);
                    goto done;
                }
                if (scope[val[i]] != cur) {
                    vfail(c, "size node %u (%s): operand %c: slot %u lies outside the node's scope "
                             "(inside a finished range body, or outside the current body)",
                          j, info->name, operand_name[i], val[i]);
                    goto done;
                }
                break;
            case 'e':
                if (val[i] < j + 2 || val[i] > scope_end) {
                    vfail(c, "size node %u (%s): operand %c: range end %u must be in %u..%u (a non-empty "
                             "body inside the enclosing one)", j, info->name, operand_name[i], val[i], j + 2, scope_end);
                    goto done;
                }
                break;
            case 'd':
                if (val[i] >= (uint32_t)depth) {
                    vfail(c, "size node %u (%s): operand %c: bound-variable depth %u is not < the nesting %d",
                          j, info->name, operand_name[i], val[i], depth);
                    goto done;
                }
                break;
            default:
                vfail(c, "size node %u (%s): operand letter '%c' is not allowed in a size program", j,
                      info->name, l);
                goto done;
            }
        }
        if (aslot >= 0 && p->slots[v->slot_begin + (uint32_t)aslot].role != DVM_ROLE_PRIMAL) {
            vfail(c, "size node %u (%s): array slot %d is not a primal slot", j, info->name, aslot);
            goto done;
        }
        if (n->op == DVM_OP_SZ_RANGE) {
            if (depth >= DVM_MAX_SIZE_DEPTH) {
                vfail(c, "size node %u (SZ_RANGE): nesting deeper than %d", j, DVM_MAX_SIZE_DEPTH);
                goto done;
            }
            open_node[depth] = j;
            open_end[depth] = n->c;
            depth++;
        }
    }
    if (scope[len - 1] != UINT32_MAX) {
        vfail(c, "size program: the last node %u is inside a range body (it must be at depth 0)", len - 1);
        goto done;
    }
    rc = 0;
done:
    free(scope);
    return rc;
}

static int check_param(vctx *c, const dvm_kernel_desc *k, const dvm_param_desc *pa) {
    const dvm_program *p = c->p;
    if (pa->name >= p->nstrings_bytes || !p->strings[pa->name])
        return vfail(c, "name offset %u is not a non-empty string", pa->name);
    if (pa->is_array > 1) return vfail(c, "is_array %u is not 0 or 1", pa->is_array);
    if (pa->type != DVM_T_F32 && pa->type != DVM_T_I32)
        return vfail(c, "type %u is neither f32 (%d) nor i32 (%d)", pa->type, DVM_T_F32, DVM_T_I32);
    if (pa->is_array) {
        if (pa->rank < 1 || pa->rank > DVM_MAX_RANK)
            return vfail(c, "rank %u is not in 1..%d", pa->rank, DVM_MAX_RANK);
        for (uint32_t d = 0; d < pa->rank; d++) {
            int32_t dim = pa->dim[d];
            if (dim < 0 && (uint64_t)(-(int64_t)dim - 1) >= k->nsyms)
                return vfail(c, "dim[%u] = %d names shape symbol %lld, not < the kernel's %u symbols", d, dim,
                             (long long)(-(int64_t)dim - 1), k->nsyms);
        }
    }
    return 0;
}

static int check_variant(vctx *c, const dvm_kernel_desc *k, int vi) {
    const dvm_program *p = c->p;
    const dvm_variant_desc *v = &k->v[vi];
    if (!range_ok(v->task_begin, v->ntasks, p->ntasks))
        return vfail(c, "tasks %u..+%u are outside the %u tasks", v->task_begin, v->ntasks, p->ntasks);
    if (!range_ok(v->stack_begin, v->nstacks, p->nstacks))
        return vfail(c, "stacks %u..+%u are outside the %u stacks", v->stack_begin, v->nstacks, p->nstacks);
    if (!range_ok(v->slot_begin, v->nslots, p->nslots))
        return vfail(c, "slots %u..+%u are outside the %u slots", v->slot_begin, v->nslots, p->nslots);
    if (v->nuniforms > DVM_MAX_UNIFORMS)
        return vfail(c, "nuniforms %u exceeds %d", v->nuniforms, DVM_MAX_UNIFORMS);
    if (v->nslots > DVM_MAX_ARRAY_SLOTS)
        return vfail(c, "nslots %u exceeds %d", v->nslots, DVM_MAX_ARRAY_SLOTS);
    if (v->nstacks > DVM_MAX_STACKS)
        return vfail(c, "nstacks %u exceeds %d", v->nstacks, DVM_MAX_STACKS);
    if (claim(c, c->own_tasks, v->task_begin, v->ntasks, "tasks") || claim(c, c->own_slots, v->slot_begin, v->nslots, "slots") ||
        claim(c, c->own_stacks, v->stack_begin, v->nstacks, "stacks"))
        return -1;
    for (uint32_t i = 0; i < k->nparams; i++) {
        const dvm_param_desc *pa = &p->params[k->param_begin + i];
        if (!pa->is_array && pa->uslot >= v->nuniforms)
            return vfail(c, "scalar parameter '%s' has uniform slot %u, not < the variant's %u uniforms",
                         vstr(p, pa->name), pa->uslot, v->nuniforms);
    }
    for (uint32_t i = 0; i < k->nsyms; i++) {
        const dvm_sym_desc *s = &p->syms[k->sym_begin + i];
        if (s->uslot >= v->nuniforms)
            return vfail(c, "shape symbol '%s' has uniform slot %u, not < the variant's %u uniforms",
                         vstr(p, s->name), s->uslot, v->nuniforms);
    }
    for (uint32_t i = 0; i < v->nslots; i++) {
        const dvm_slot_desc *s = &p->slots[v->slot_begin + i];
        if (s->param >= k->nparams)
            return vfail(c, "slot %u: parameter %u is not < the kernel's %u parameters", i, s->param, k->nparams);
        const dvm_param_desc *pa = &p->params[k->param_begin + s->param];
        if (!pa->is_array) return vfail(c, "slot %u: parameter '%s' is not an array", i, vstr(p, pa->name));
        if (s->role > DVM_ROLE_DUAL) return vfail(c, "slot %u: role %u is not primal, grad or dual", i, s->role);
        if (s->role == DVM_ROLE_GRAD && vi != DVM_V_ADJOINT)
            return vfail(c, "slot %u: a grad slot outside the adjoint variant", i);
        if (s->role == DVM_ROLE_DUAL && vi != DVM_V_TANGENT)
            return vfail(c, "slot %u: a dual slot outside the tangent variant", i);
        if (s->role != DVM_ROLE_PRIMAL && pa->type != DVM_T_F32)
            return vfail(c, "slot %u: a %s slot of the non-f32 parameter '%s'", i,
                         s->role == DVM_ROLE_GRAD ? "grad" : "dual", vstr(p, pa->name));
        if (s->writes > 1) return vfail(c, "slot %u: writes flag %u is not 0 or 1", i, s->writes);
    }
    for (uint32_t i = 0; i < v->nstacks; i++) {
        const dvm_stack_desc *s = &p->stacks[v->stack_begin + i];
        c->item = ITEM_STACK;
        c->item_i = i;
        if (s->type != DVM_T_F32 && s->type != DVM_T_I32 && s->type != DVM_T_BOOL)
            return vfail(c, "type %u is not f32, i32 or bool", s->type);
        if (s->serial > 1) return vfail(c, "serial flag %u is not 0 or 1", s->serial);
        if (s->name >= p->nstrings_bytes) return vfail(c, "name offset %u is not < %u", s->name, p->nstrings_bytes);
        if (s->sizing > DVM_SZ_DEFAULT) return vfail(c, "sizing %u is not constant, program or default", s->sizing);
        if (s->sizing == DVM_SZ_PROGRAM && range_ok(s->size_begin, s->size_len, p->nnodes) &&
            claim(c, c->own_nodes, s->size_begin, s->size_len, "size program nodes"))
            return -1;
        if (s->sizing == DVM_SZ_PROGRAM && check_size_program(c, k, v, s->size_begin, s->size_len)) return -1;
    }
    for (uint32_t i = 0; i < v->ntasks; i++) {
        c->item = ITEM_TASK;
        c->item_i = i;
        if (check_task(c, k, v, &p->tasks[v->task_begin + i])) return -1;
        /* stages: phase 0 in non-decreasing order, then (adjoints only) phase 1 in
           non-increasing order; the host's stage engine relies on nothing else */
        const dvm_task_desc *t = &p->tasks[v->task_begin + i], *prev = i ? t - 1 : NULL;
        if (t->phase > 1 || (t->phase == 1 && vi != DVM_V_ADJOINT))
            return vfail(c, "phase %u is not 0%s", t->phase, vi == DVM_V_ADJOINT ? " or 1" : "");
        if (prev && prev->phase > t->phase) return vfail(c, "a phase-0 task after a phase-1 task");
        if (prev && prev->phase == t->phase && (t->phase ? t->stage > prev->stage : t->stage < prev->stage))
            return vfail(c, "stage %u after stage %u in phase %u", t->stage, prev->stage, t->phase);
    }
    c->item = ITEM_NONE;
    return 0;
}

static int check_kernel(vctx *c, uint32_t ki) {
    const dvm_program *p = c->p;
    const dvm_kernel_desc *k = &p->kernels[ki];
    c->variant = -1;
    c->item = ITEM_NONE;
    snprintf(c->where, sizeof c->where, "kernel %u", ki);
    if (k->name >= p->nstrings_bytes || !p->strings[k->name])
        return vfail(c, "name offset %u is not a non-empty string", k->name);
    snprintf(c->where, sizeof c->where, "kernel '%.100s'", vstr(p, k->name));
    if (k->no_adjoint >= p->nstrings_bytes)
        return vfail(c, "no_adjoint offset %u is not < %u", k->no_adjoint, p->nstrings_bytes);
    if (k->no_adjoint && k->v[DVM_V_ADJOINT].present)
        return vfail(c, "an adjoint variant and a reason why there is none");
    if (!range_ok(k->param_begin, k->nparams, p->nparams))
        return vfail(c, "parameters %u..+%u are outside the %u parameters", k->param_begin, k->nparams, p->nparams);
    if (!range_ok(k->sym_begin, k->nsyms, p->nsyms))
        return vfail(c, "shape symbols %u..+%u are outside the %u symbols", k->sym_begin, k->nsyms, p->nsyms);
    if (claim(c, c->own_params, k->param_begin, k->nparams, "parameters") ||
        claim(c, c->own_syms, k->sym_begin, k->nsyms, "shape symbols"))
        return -1;
    for (uint32_t i = 0; i < k->nparams; i++) {
        c->item = ITEM_PARAM;
        c->item_i = i;
        if (check_param(c, k, &p->params[k->param_begin + i])) return -1;
    }
    for (uint32_t i = 0; i < k->nsyms; i++) {
        c->item = ITEM_SYM;
        c->item_i = i;
        const dvm_sym_desc *s = &p->syms[k->sym_begin + i];
        if (s->name >= p->nstrings_bytes || !p->strings[s->name])
            return vfail(c, "name offset %u is not a non-empty string", s->name);
    }
    c->item = ITEM_NONE;
    if (k->v[DVM_V_FORWARD].present != 1) return vfail(c, "the forward variant is absent");
    for (int vi = 0; vi < DVM_V_COUNT; vi++) {
        c->variant = vi;
        if (k->v[vi].present > 1) return vfail(c, "present flag %u is not 0 or 1", k->v[vi].present);
        if (k->v[vi].present && check_variant(c, k, vi)) return -1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int dvm_verify(const dvm_program *p, char *err, size_t errlen) {
    vctx c;
    memset(&c, 0, sizeof c);
    c.variant = -1;
    c.p = p;
    c.err = err;
    c.errlen = errlen;
    if (err && errlen) err[0] = 0;
    if (!p) return vfail(&c, "no program");
    struct { const char *name; uint32_t n; const void *ptr; } arrays[] = {
        {"kernels", p->nkernels, p->kernels}, {"params", p->nparams, p->params},
        {"syms", p->nsyms, p->syms},          {"slots", p->nslots, p->slots},
        {"tasks", p->ntasks, p->tasks},       {"stacks", p->nstacks, p->stacks},
        {"nodes", p->nnodes, p->nodes},       {"lines", p->nnodes, p->lines},
        {"cols", p->nnodes, p->cols},         {"consts", p->nconsts, p->consts},
        {"strings", p->nstrings_bytes, p->strings},
    };
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        if (arrays[i].n && !arrays[i].ptr) return vfail(&c, "%s: %u entries but no array", arrays[i].name, arrays[i].n);
    if (p->nstrings_bytes < 1 || p->strings[0] != 0)
        return vfail(&c, "strings: the table must start with the empty string (offset 0)");
    if (p->strings[p->nstrings_bytes - 1] != 0)
        return vfail(&c, "strings: the table (%u bytes) does not end with a NUL", p->nstrings_bytes);
    if (p->source_name >= p->nstrings_bytes)
        return vfail(&c, "source_name offset %u is not < %u", p->source_name, p->nstrings_bytes);
    c.own_params = calloc((size_t)p->nparams + 1, 1);
    c.own_syms = calloc((size_t)p->nsyms + 1, 1);
    c.own_slots = calloc((size_t)p->nslots + 1, 1);
    c.own_tasks = calloc((size_t)p->ntasks + 1, 1);
    c.own_stacks = calloc((size_t)p->nstacks + 1, 1);
    c.own_nodes = calloc((size_t)p->nnodes + 1, 1);
    /* the uniform marks, as many as the largest variant has uniforms (a variant with more than
       DVM_MAX_UNIFORMS is refused before its nodes are read; every uniform operand is checked
       below its variant's count first): 512 KiB zeroed on every load cost a small blob's
       verification half its time */
    uint32_t nu = 0;
    for (uint32_t ki = 0; p->kernels && ki < p->nkernels; ki++)
        for (int vi = 0; vi < DVM_V_COUNT; vi++)
            if (p->kernels[ki].v[vi].nuniforms > nu) nu = p->kernels[ki].v[vi].nuniforms;
    if (nu > DVM_MAX_UNIFORMS) nu = DVM_MAX_UNIFORMS;
    c.u_read = calloc((size_t)nu + 1, sizeof *c.u_read);
    c.u_add = calloc((size_t)nu + 1, sizeof *c.u_add);
    int bad = !c.own_params || !c.own_syms || !c.own_slots || !c.own_tasks || !c.own_stacks || !c.own_nodes || !c.u_read ||
              !c.u_add;
    if (bad) vfail(&c, "out of memory");
    for (uint32_t ki = 0; ki < p->nkernels && !bad; ki++) bad = check_kernel(&c, ki) != 0;
    free(c.own_params);
    free(c.own_syms);
    free(c.own_slots);
    free(c.own_tasks);
    free(c.own_stacks);
    free(c.own_nodes);
    dvm_flow_scratch_free(&c.flow);
    free(c.u_read);
    free(c.u_add);
    if (bad) return -1;
    /* Kernel names are how the host finds a kernel: two with one name is an emitter bug.
     * Sorted, so a blob with many kernels costs n log n, not n^2. */
    if (p->nkernels > 1) {
        const char **names = malloc((size_t)p->nkernels * sizeof *names);
        if (!names) return vfail(&c, "out of memory");
        for (uint32_t i = 0; i < p->nkernels; i++) names[i] = vstr(p, p->kernels[i].name);
        qsort(names, p->nkernels, sizeof *names, cmp_str);
        for (uint32_t i = 1; i < p->nkernels; i++)
            if (!strcmp(names[i - 1], names[i])) {
                vfail(&c, "kernels: two kernels are named '%.100s'", names[i]);
                free(names);
                return -1;
            }
        free(names);
    }
    return 0;
}
