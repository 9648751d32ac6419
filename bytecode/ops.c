/* ops.c: the opcode info table and its hash, generated from ops.def. */
#include "bytecode/bc.h"
#include "bytecode/hash.h"
#include <string.h>

const dvm_op_info dvm_op_table[256] = {
#define DVM_OP(name, num, fmt, flags, props, doc) [num] = {#name, fmt, (flags), (props), doc},
#define DVM_DOP(name, num, fmt, flags, props, doc) [num] = {#name, fmt, (flags) | DVM_F_DIFF, (props), doc},
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
};

/* Every row names exactly one effect class (ops.def, PROPS): a row without one, or with two
 * OR-ed together, fails the build here rather than defaulting to one silently. */
#define DVM_OP(name, num, fmt, flags, props, doc)                                                  \
    _Static_assert(((props) & DVM_E_MASK) >= DVM_E_PURE && ((props) & DVM_E_MASK) <= DVM_E_ATOMIC, \
                   "ops.def: opcode " #name " names no effect class (DVM_E_PURE ... DVM_E_ATOMIC)");  \
    _Static_assert(!((props) & DVM_P_F32) || !((props) & DVM_P_I32), "ops.def: opcode " #name " names two element types"); \
    _Static_assert(((props) & (DVM_P_F32 | DVM_P_I32 | DVM_P_RANK2 | DVM_P_ROW_A | DVM_P_ROW_B | DVM_P_ROW_C)) == 0 || \
                       ((props) & DVM_E_MASK) >= DVM_E_LOAD,                                      \
                   "ops.def: opcode " #name " has array properties but is no array access");
#define DVM_DOP DVM_OP
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP

/* FNV-1a 64 over each row in ops.def order: number (4 bytes LE), name, format, flags (4
 * bytes LE), props (4 bytes LE). The doc text is left out so that rewording a comment keeps
 * blobs valid. */
static uint64_t fnv_u32(uint64_t h, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    return dvm_fnv1a(h, b, 4);
}

/* Every blob load compares it: computed once (threads that race compute the same value). */
static uint64_t ops_hash_now(void);
uint64_t dvm_ops_hash(void) {
    static uint64_t cached;
    uint64_t h = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (!h) {
        h = ops_hash_now();
        __atomic_store_n(&cached, h, __ATOMIC_RELAXED);
    }
    return h;
}

static uint64_t ops_hash_now(void) {
    uint64_t h = DVM_FNV_BASIS;
#define DVM_OP(name, num, fmt, flags, props, doc)                                                      \
    h = fnv_u32(h, (uint32_t)(num));                                                            \
    h = dvm_fnv1a(h, #name, sizeof #name);                                                      \
    h = dvm_fnv1a(h, fmt, sizeof fmt);                                                          \
    h = fnv_u32(h, (uint32_t)(flags));                                                          \
    h = fnv_u32(h, (uint32_t)(props));
#define DVM_DOP(name, num, fmt, flags, props, doc) DVM_OP(name, num, fmt, (flags) | DVM_F_DIFF, props, doc)
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
    return h;
}

int dvm_node_array(const dvm_node *n, int *writes, int *reads) {
    const dvm_op_info *o = &dvm_op_table[n->op];
    *writes = *reads = 0;
    const uint32_t e = o->props & DVM_E_MASK;
    /* IDX, IDXM and SHAPE read the shape alone (DVM_E_FAILS, DVM_E_PURE) */
    if (!o->name || (o->flags & DVM_F_SIZE) || e < DVM_E_LOAD) return -1;
    *writes = e == DVM_E_STORE || e == DVM_E_ATOMIC;
    *reads = e != DVM_E_STORE; /* atomics read what they update */
    return n->x;
}

dvm_task_flow dvm_task_flow_of(const dvm_node *nodes, const dvm_task_desc *t) {
    dvm_task_flow f = {0, 0, t->kind == DVM_TASK_PARALLEL};
    for (uint32_t d = 0; d < t->ndim && d < DVM_MAX_PAR_DIMS; d++) f.fixed_idx &= t->idx_reg[d] == d;
    for (uint32_t i = 0; i < t->code_len; i++) {
        const dvm_node *n = &nodes[t->code_begin + i];
        const dvm_op_info *o = &dvm_op_table[n->op];
        if (!o->name) continue;
        /* a register written (format w or m, fields x a b c) below ndim */
        const uint32_t fld[4] = {n->x, n->a, n->b, n->c};
        for (int k = 0; k < 4; k++)
            if ((o->fmt[k] == 'w' || o->fmt[k] == 'm') && fld[k] < t->ndim) f.fixed_idx = 0;
        if (!(o->flags & DVM_F_BRANCH)) continue;
        /* the target is the operand the format marks 'J' (fields x a b c) */
        const char *j = strchr(o->fmt, 'J');
        const uint32_t tgt = !j ? UINT32_MAX : j - o->fmt == 1 ? n->a : j - o->fmt == 2 ? n->b : n->c;
        f.cond += n->op != DVM_OP_JMP;
        /* an unrolled loop's main part (INCLT with x > 0) is not counted: its remainder loop,
           right after it, is */
        f.loops += n->op == DVM_OP_INCLT ? n->x == 0 : tgt <= i;
    }
    return f;
}

int dvm_task_uniform_only(const dvm_node *nodes, const dvm_task_desc *t, const uint8_t *known, uint32_t nuniforms) {
    if (t->kind != DVM_TASK_SERIAL) return 0;
    for (uint32_t i = 0; i < t->code_len; i++) {
        const dvm_node *n = &nodes[t->code_begin + i];
        const dvm_op_info *o = &dvm_op_table[n->op];
        if (!o->name || (o->flags & (DVM_F_SIZE | DVM_F_MATH))) return 0;
        const uint32_t fld[4] = {n->x, n->a, n->b, n->c};
        for (int k = 0; k < 4; k++) {
            switch (o->fmt[k]) {
            case '-': case 'w': case 'r': case 'm': case 'k': case 'i': case 'n': case 'o': case 'V': case 'E':
                break;
            case 'U':
                if (fld[k] >= nuniforms || !known[fld[k]]) return 0;
                break;
            case 'J':
                if (fld[k] <= i) return 0;
                break;
            default: /* arrays, axes, stacks, atomics on uniforms, size-program operands */
                return 0;
            }
        }
    }
    return 1;
}

int dvm_task_may_fail(const dvm_node *nodes, const dvm_task_desc *t, const int64_t *lo, const int64_t *hi,
                      const int64_t *arr_len, const int32_t *arr_shape, uint32_t nslots) {
    /* Per register (the verifier keeps them below DVM_MAX_REGS; the checks below too):
       whether some node writes it, whether the prologue does, and whether it holds an index
       plus a constant at the node being looked at (dim >= 0: that dimension's, plus off). */
    enum { MAXR = DVM_MAX_REGS };
    struct { uint8_t written, in_prologue; int8_t dim; int64_t off; } reg[MAXR];
    memset(reg, 0, sizeof reg);
    int branch_free = 1;
    for (uint32_t i = 0; i < t->code_len; i++) {
        const dvm_node *n = &nodes[t->code_begin + i];
        const dvm_op_info *o = &dvm_op_table[n->op];
        if (!o->name) return 1;
        if (o->flags & DVM_F_BRANCH) branch_free = 0;
        const uint32_t fld[4] = {n->x, n->a, n->b, n->c};
        for (int k = 0; k < 4; k++)
            if ((o->fmt[k] == 'w' || o->fmt[k] == 'm') && fld[k] < MAXR) {
                reg[fld[k]].written = 1;
                reg[fld[k]].in_prologue |= i < t->body;
            }
    }
    for (int r = 0; r < MAXR; r++) reg[r].dim = -1;
    if (t->kind == DVM_TASK_PARALLEL)
        for (uint32_t d = 0; d < t->ndim && d < DVM_MAX_PAR_DIMS; d++)
            if (hi[d] <= lo[d]) return 0; /* no iteration runs a node */
    for (uint32_t i = 0; i < t->code_len; i++) {
        const dvm_node *n = &nodes[t->code_begin + i];
        const dvm_op_info *o = &dvm_op_table[n->op];
        const uint32_t fld[4] = {n->x, n->a, n->b, n->c};
        /* Where the iterations start (each writes its indices into the index registers): a
           task with branches keeps only the index registers no node writes; one without runs
           its nodes in order, so a register then follows the ADDIKs from an index (the
           register allocator may reuse a dead index's register: ADDIK r0, r0, -1, then an
           access, as for `v[i - 1] = ...`, since no ST or ST2 form takes an offset). A
           prologue's nodes run before the first iteration's indices are known here. */
        if (t->kind == DVM_TASK_PARALLEL && i == t->body)
            for (uint32_t d = 0; d < t->ndim && d < DVM_MAX_PAR_DIMS; d++) {
                const uint32_t r = t->idx_reg[d];
                if (r < MAXR && (branch_free ? !reg[r].in_prologue : !reg[r].written)) {
                    reg[r].dim = (int8_t)d;
                    reg[r].off = 0;
                }
            }
        if (!dvm_op_never_fails(n->op)) {
            int nidx = 0, first = -1;
            for (int k = 1; k < 4; k++)
                if (dvm_row_index_operand(n->op, k)) {
                    nidx++;
                    if (first < 0) first = k;
                }
            if (nidx == 0 || n->x >= nslots) return 1;
            /* an access: each index a register that holds an index plus a constant (plus the
               node's own offset), in its axis (a rank-2 access) or in the array (a flat one)
               at both ends of the index's range */
            for (int k = first; k < first + nidx; k++) {
                int64_t off = 0;
                uint32_t r = fld[k];
                if (o->fmt[k] == 'o') { /* LD2O, LDADDF2O, ATOMADDF2O: a register and an offset */
                    r = DVM_OFS_REG(fld[k]);
                    off = DVM_OFS_OFF(fld[k]);
                } else if (o->fmt[3] == 'i') { /* LDO, LDADDFO, ATOMADDFO: the index plus c */
                    off = (int16_t)n->c;
                }
                if (r >= MAXR || reg[r].dim < 0) return 1;
                const int d = reg[r].dim;
                off += reg[r].off;
                const int64_t ext = nidx == 2 ? (int64_t)arr_shape[(size_t)n->x * DVM_MAX_RANK + (size_t)(k - first)]
                                              : arr_len[n->x];
                if (lo[d] + off < 0 || hi[d] - 1 + off >= ext) return 1;
            }
        }
        if (!branch_free) continue;
        /* the node's writes: an ADDIK of an index plus a constant is one too; the rest, not */
        if (n->op == DVM_OP_ADDIK && n->a < MAXR && n->b < MAXR && reg[n->b].dim >= 0) {
            reg[n->a].off = reg[n->b].off + (int16_t)n->c;
            reg[n->a].dim = reg[n->b].dim;
            continue;
        }
        for (int k = 0; k < 4; k++)
            if ((o->fmt[k] == 'w' || o->fmt[k] == 'm') && fld[k] < MAXR) reg[fld[k]].dim = -1;
    }
    return 0;
}
