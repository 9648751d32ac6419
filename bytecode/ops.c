/* ops.c: the opcode info table and its hash, generated from ops.def. */
#include "bytecode/bc.h"
#include "bytecode/hash.h"
#include <string.h>

const dvm_op_info dvm_op_table[256] = {
#define DVM_OP(name, num, fmt, flags, doc) [num] = {#name, fmt, (flags), doc},
#define DVM_DOP(name, num, fmt, flags, doc) [num] = {#name, fmt, (flags) | DVM_F_DIFF, doc},
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
};

/* FNV-1a 64 over each row in ops.def order: number (4 bytes LE), name, format, flags (4
 * bytes LE). The doc text is left out so that rewording a comment keeps blobs valid. */
static uint64_t fnv_u32(uint64_t h, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    return dvm_fnv1a(h, b, 4);
}

uint64_t dvm_ops_hash(void) {
    uint64_t h = DVM_FNV_BASIS;
#define DVM_OP(name, num, fmt, flags, doc)                                                      \
    h = fnv_u32(h, (uint32_t)(num));                                                            \
    h = dvm_fnv1a(h, #name, sizeof #name);                                                      \
    h = dvm_fnv1a(h, fmt, sizeof fmt);                                                          \
    h = fnv_u32(h, (uint32_t)(flags));
#define DVM_DOP(name, num, fmt, flags, doc) DVM_OP(name, num, fmt, (flags) | DVM_F_DIFF, doc)
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
    return h;
}

int dvm_slot_write_op(uint32_t op) {
    switch (op) {
    case DVM_OP_ST: case DVM_OP_ST2: case DVM_OP_ATOMADDF: case DVM_OP_ATOMADDF2: case DVM_OP_ATOMADDI: case DVM_OP_ATOMMAXF:
    case DVM_OP_ATOMMINF: case DVM_OP_ATOMMAXI: case DVM_OP_ATOMMINI: case DVM_OP_ATOMADDFO: case DVM_OP_ATOMADDF2O:
        return 1;
    default:
        return 0;
    }
}

int dvm_node_array(const dvm_node *n, int *writes, int *reads) {
    const dvm_op_info *o = &dvm_op_table[n->op];
    *writes = *reads = 0;
    if (!o->name || (o->flags & DVM_F_SIZE) || o->fmt[0] != 'A') return -1;
    if (n->op == DVM_OP_IDX || n->op == DVM_OP_IDXM || n->op == DVM_OP_SHAPE) return -1; /* the shape alone */
    *writes = dvm_slot_write_op(n->op);
    *reads = n->op != DVM_OP_ST && n->op != DVM_OP_ST2; /* atomics read what they update */
    return n->x;
}

int dvm_row_index_operand(uint32_t op, int k) {
    switch (op) {
    case DVM_OP_LD: case DVM_OP_LDO: case DVM_OP_LDADDF: case DVM_OP_LDADDFO:
        return k == 2; /* b */
    case DVM_OP_ST: case DVM_OP_ATOMADDF: case DVM_OP_ATOMADDFO:
        return k == 1; /* a */
    case DVM_OP_LD2: case DVM_OP_LD2O: case DVM_OP_LDADDF2O:
        return k == 2 || k == 3; /* b, c */
    case DVM_OP_ST2: case DVM_OP_ATOMADDF2: case DVM_OP_ATOMADDF2O:
        return k == 1 || k == 2; /* a, b */
    default:
        return 0;
    }
}

dvm_task_flow dvm_task_flow_of(const dvm_node *nodes, const dvm_task_desc *t) {
    dvm_task_flow f = {0, 0, t->kind == DVM_TASK_PARALLEL, 0};
    uint32_t other_reads = 0; /* index registers read other than as row-path indices */
    for (uint32_t d = 0; d < t->ndim && d < DVM_MAX_PAR_DIMS; d++) f.fixed_idx &= t->idx_reg[d] == d;
    for (uint32_t i = 0; i < t->code_len; i++) {
        const dvm_node *n = &nodes[t->code_begin + i];
        const dvm_op_info *o = &dvm_op_table[n->op];
        if (!o->name) continue;
        /* a register written (format w or m, fields x a b c) below ndim */
        const uint32_t fld[4] = {n->x, n->a, n->b, n->c};
        for (int k = 0; k < 4; k++) {
            if ((o->fmt[k] == 'w' || o->fmt[k] == 'm') && fld[k] < t->ndim) f.fixed_idx = 0;
            const uint32_t r = o->fmt[k] == 'o' ? DVM_OFS_REG(fld[k]) : fld[k];
            if ((o->fmt[k] == 'r' || o->fmt[k] == 'm' || o->fmt[k] == 'o') && r < t->ndim &&
                !dvm_row_index_operand(n->op, k))
                other_reads++;
        }
        if (!(o->flags & DVM_F_BRANCH)) continue;
        /* the target is the operand the format marks 'J' (fields x a b c) */
        const char *j = strchr(o->fmt, 'J');
        const uint32_t tgt = !j ? UINT32_MAX : j - o->fmt == 1 ? n->a : j - o->fmt == 2 ? n->b : n->c;
        f.cond += n->op != DVM_OP_JMP;
        /* an unrolled loop's main part (INCLT with x > 0) is not counted: its remainder loop,
           right after it, is */
        f.loops += n->op == DVM_OP_INCLT ? n->x == 0 : tgt <= i;
    }
    f.idx_as_index = f.fixed_idx && other_reads == 0;
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

/* Opcodes that never record a runtime error: every FAIL in interp_core.h belongs to an array
 * access, an index check (IDX, IDXM), an integer division or modulo, an i32 power, ASSERT or
 * an adstack push or pop. A list of the safe ones, so that an opcode added later counts as one
 * that may fail until it is listed here. */
static int op_never_fails(uint32_t op) {
    switch (op) {
    case DVM_OP_NOP: case DVM_OP_CONST: case DVM_OP_CONSTK: case DVM_OP_MOV: case DVM_OP_LDU: case DVM_OP_STU:
    case DVM_OP_ATOMADDU:
    case DVM_OP_ADDF: case DVM_OP_SUBF: case DVM_OP_MULF: case DVM_OP_DIVF: case DVM_OP_MINF: case DVM_OP_MAXF:
    case DVM_OP_POWF: case DVM_OP_ATAN2F: case DVM_OP_NEGF: case DVM_OP_ABSF: case DVM_OP_SIN: case DVM_OP_COS:
    case DVM_OP_TAN: case DVM_OP_ASIN: case DVM_OP_ACOS: case DVM_OP_ATAN: case DVM_OP_EXP: case DVM_OP_LOG:
    case DVM_OP_SQRT: case DVM_OP_RSQRT: case DVM_OP_TANH: case DVM_OP_FLOOR: case DVM_OP_CEIL:
    case DVM_OP_ADDI: case DVM_OP_SUBI: case DVM_OP_MULI: case DVM_OP_MINI: case DVM_OP_MAXI: case DVM_OP_NEGI:
    case DVM_OP_ABSI: case DVM_OP_ADDIK: case DVM_OP_I2F: case DVM_OP_F2I: case DVM_OP_FFLOORDIV: case DVM_OP_FMODF:
    case DVM_OP_LTF: case DVM_OP_LEF: case DVM_OP_EQF: case DVM_OP_NEF: case DVM_OP_LTI: case DVM_OP_LEI:
    case DVM_OP_EQI: case DVM_OP_NEI: case DVM_OP_NOT: case DVM_OP_SEL:
    case DVM_OP_JMP: case DVM_OP_JZ: case DVM_OP_JNZ: case DVM_OP_JGEI: case DVM_OP_INCLT: case DVM_OP_JOUTI:
    case DVM_OP_END: case DVM_OP_SHAPE:
    case DVM_OP_ADDFK: case DVM_OP_MULFK: case DVM_OP_KSUBF: case DVM_OP_KDIVF: case DVM_OP_FMAF: case DVM_OP_FMAFK:
        return 1;
    default:
        return 0;
    }
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
        if (!op_never_fails(n->op)) {
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
