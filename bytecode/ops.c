/* ops.c: the opcode info table and its hash, generated from ops.def. */
#include "bc.h"
#include <string.h>

const dvm_op_info dvm_op_table[256] = {
#define DVM_OP(name, num, fmt, flags, doc) [num] = {#name, fmt, (flags), doc},
#define DVM_DOP(name, num, fmt, flags, doc) [num] = {#name, fmt, (flags) | DVM_F_DIFF, doc},
#include "ops.def"
#undef DVM_OP
#undef DVM_DOP
};

/* FNV-1a 64 over each row in ops.def order: number (4 bytes LE), name, format, flags (4
 * bytes LE). The doc text is left out so that rewording a comment keeps blobs valid. */
static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fnv_u32(uint64_t h, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    return fnv_bytes(h, b, 4);
}

uint64_t dvm_ops_hash(void) {
    uint64_t h = 0xcbf29ce484222325ull;
#define DVM_OP(name, num, fmt, flags, doc)                                                      \
    h = fnv_u32(h, (uint32_t)(num));                                                            \
    h = fnv_bytes(h, #name, sizeof #name);                                                      \
    h = fnv_bytes(h, fmt, sizeof fmt);                                                          \
    h = fnv_u32(h, (uint32_t)(flags));
#define DVM_DOP(name, num, fmt, flags, doc) DVM_OP(name, num, fmt, (flags) | DVM_F_DIFF, doc)
#include "ops.def"
#undef DVM_OP
#undef DVM_DOP
    return h;
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
