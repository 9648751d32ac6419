/* opt.c: dvm_optimize, the bytecode optimizer run on the emitter's finished program.
 *
 * Driven by the ops.def table only (format letters and DVM_F_SIDE / DVM_F_BRANCH). Per task:
 *   0. jumps to the next node go; a PUSH and the POP of the same stack later in its basic
 *      block become one MOV; a conditional jump to a conditional jump on the same register
 *      is threaded through it, and LTI + JZ on a dead register becomes JGEI;
 *   1. copy propagation and local CSE within each basic block (value = op, x and the read
 *      operands, valid while no operand register, uniform or the holder is redefined); a
 *      register known to hold -0.0 (the additive identity) turns FMAF into MULF and ADDF
 *      into a copy;
 *   2. global (strong) liveness over the task's CFG and deletion of side-effect-free nodes
 *      whose written registers are dead.
 * Per variant: 3. an adstack whose every POP writes a dead register loses its PUSH/POP nodes,
 * its descriptor and its size program. The passes repeat until nothing changes. Last, each
 * task's registers are renumbered by colouring an interference graph (regalloc_task).
 * Deleted nodes become NOP first; the final compaction drops them and remaps jumps (to the
 * next kept node), line/col, task and size-program ranges and stack ids.
 *
 * Registers are zeroed once per thread, not per iteration: the next iteration of the same
 * thread starts with what END left. So END's successor is node 0 (live-out(END) =
 * live-in(0)), which keeps the adjoint registers' resets before END. */
#include "compiler/compile.h"
#include "bytecode/hash.h"
#include <stdlib.h>
#include <string.h>

#define MAX_ROUNDS 16

static const char *fmt_of(const dvm_node *n) { return dvm_op_table[n->op].fmt; }
static uint32_t flags_of(const dvm_node *n) { return dvm_op_table[n->op].flags; }
static uint16_t opnd(const dvm_node *n, int j) { return j == 0 ? n->a : j == 1 ? n->b : n->c; }
static void set_opnd(dvm_node *n, int j, uint16_t v) {
    if (j == 0) n->a = v;
    else if (j == 1) n->b = v;
    else n->c = v;
}
static int is_reg(char f) { return f == 'w' || f == 'r' || f == 'm'; }
static int has_letter(const dvm_node *n, const char *set) {
    const char *f = fmt_of(n);
    for (int j = 0; j < 4; j++)
        if (strchr(set, f[j])) return 1;
    return 0;
}
/* A branch whose condition reads no register can only be unconditional (JMP). */
static int is_uncond_branch(const dvm_node *n) {
    return (flags_of(n) & DVM_F_BRANCH) && !has_letter(n, "rm");
}

/* Side-effect-free, non-branching ops that compute one register from their read operands:
 * the ones CSE may reuse (MOV is left to copy propagation). */
static int cse_able(const dvm_node *n) {
    if (n->op == DVM_OP_NOP || n->op == DVM_OP_MOV) return 0;
    if (flags_of(n) & (DVM_F_SIDE | DVM_F_BRANCH | DVM_F_SIZE)) return 0;
    const char *f = fmt_of(n);
    if (f[1] != 'w') return 0;
    for (int j = 2; j < 4; j++)
        if (f[j] == 'w' || f[j] == 'm' || f[j] == 'V' || f[j] == 'T') return 0;
    return 1;
}

/* ---- one task ---- */

typedef struct cse_ent {
    uint32_t stamp; /* block stamp: entries of earlier blocks are void */
    dvm_node key;   /* op, x, b, c (a = 0) */
    uint16_t holder;
    uint32_t hver, ver[2], uver;
} cse_ent;

typedef struct copy_ent {
    uint32_t stamp;
    uint16_t src;
    uint32_t dver, sver;
} copy_ent;

typedef struct topt {
    dvm_node *code;
    uint32_t len, nregs, words;
    uint8_t *leader;
    uint32_t *ver;
    copy_ent *copy;
    uint32_t *nz; /* per register: 2 words, the block stamp and version at which it holds -0.0 */
    cse_ent *tab;
    uint32_t tabcap;
    uint64_t *live; /* live-in per node, words each */
    uint64_t *tmp;
    const uint64_t *entry_def; /* registers the interpreter writes at node 0 (NULL: none) */
    uint32_t body;             /* where the thread's next iteration starts (the task's body) */
    int weak;                  /* liveness counts every read (register allocation) */
} topt;

static uint32_t key_hash(const dvm_node *k) {
    const uint32_t w[4] = {k->op, k->x, k->b, k->c};
    return (uint32_t)dvm_fnv1a(DVM_FNV_BASIS, w, sizeof w);
}

static int key_eq(const dvm_node *a, const dvm_node *b) {
    return a->op == b->op && a->x == b->x && a->b == b->b && a->c == b->c;
}

/* leader[i]: nonzero where a block starts. Bit 0: node 0 or a jump target; bit 1: the node
 * after a branch or END. A block with bit 1 alone, after a conditional branch, is entered only
 * by falling through from the block before it. */
#define LEAD_TARGET 1u
#define LEAD_AFTER 2u
static void find_leaders(topt *t) {
    memset(t->leader, 0, t->len);
    t->leader[0] = LEAD_TARGET;
    if (t->body < t->len) t->leader[t->body] |= LEAD_TARGET; /* entered from END too */
    for (uint32_t i = 0; i < t->len; i++) {
        const dvm_node *n = &t->code[i];
        const char *f = fmt_of(n);
        if (flags_of(n) & DVM_F_BRANCH) {
            for (int j = 0; j < 3; j++)
                if (f[j + 1] == 'J' && opnd(n, j) < t->len) t->leader[opnd(n, j)] |= LEAD_TARGET;
        }
        if (((flags_of(n) & DVM_F_BRANCH) || n->op == DVM_OP_END) && i + 1 < t->len) t->leader[i + 1] |= LEAD_AFTER;
    }
}
/* Whether node i starts a block whose only predecessor is the block before it (the fall-through
 * of a conditional branch): what held at the branch still holds there. */
static int fall_through_only(const topt *t, uint32_t i) {
    if (i == 0 || t->leader[i] != LEAD_AFTER) return 0;
    const dvm_node *p = &t->code[i - 1];
    return (flags_of(p) & DVM_F_BRANCH) && !is_uncond_branch(p);
}

/* Copy propagation and CSE, one pass over the blocks; a block entered only by falling through
 * a conditional branch goes on with the tables of the block before it (extended blocks: the
 * stencil's bounds tests each loaded 0 again). Returns 1 if a node changed. */
static int local_pass(topt *t) {
    int changed = 0;
    uint32_t stamp = 0, uver = 1;
    find_leaders(t);
    memset(t->ver, 0, sizeof *t->ver * t->nregs);
    memset(t->copy, 0, sizeof *t->copy * t->nregs);
    memset(t->nz, 0, sizeof *t->nz * 2 * t->nregs);
    memset(t->tab, 0, sizeof *t->tab * t->tabcap);
    for (uint32_t i = 0; i < t->len; i++) {
        dvm_node *n = &t->code[i];
        if (t->leader[i] && !fall_through_only(t, i)) stamp++;
        const char *f = fmt_of(n);
        /* reads of a copy's destination read its source; an 'm' node reads and writes in an
         * op-specific order, so none of its reads may be turned into its 'm' register */
        int mreg = -1;
        for (int j = 0; j < 3; j++)
            if (f[j + 1] == 'm') mreg = opnd(n, j);
        for (int j = 0; j < 3; j++) {
            if (f[j + 1] != 'r') continue;
            uint16_t r = opnd(n, j);
            const copy_ent *ce = &t->copy[r];
            if (ce->stamp != stamp || ce->dver != t->ver[r] || ce->sver != t->ver[ce->src]) continue;
            if ((int)ce->src == mreg) continue;
            set_opnd(n, j, ce->src);
            changed = 1;
        }
        if (n->op == DVM_OP_ADDIK && n->c == 0) { /* r[b] + 0: a copy */
            dvm_node mv = {DVM_OP_MOV, 0, n->a, n->b, 0};
            *n = mv;
            f = fmt_of(n);
            changed = 1;
        }
        /* -0.0 is the identity of f32 addition, exactly (x + -0 == x for every x, +0 and -0
         * included): the adjoint resets its accumulators to it (compiler/autodiff.c), so the
         * first contribution after a reset becomes a product or a copy. */
#define NEG_ZERO(r) (t->nz[2 * (r)] == stamp && t->nz[2 * (r) + 1] == t->ver[r])
        if (n->op == DVM_OP_FMAF && NEG_ZERO(n->a)) { /* r[b] * r[c] + -0 */
            n->op = DVM_OP_MULF;
            f = fmt_of(n);
            changed = 1;
        } else if (n->op == DVM_OP_ADDF && (NEG_ZERO(n->b) || NEG_ZERO(n->c))) {
            dvm_node mv = {DVM_OP_MOV, 0, n->a, NEG_ZERO(n->b) ? n->c : n->b, 0};
            *n = mv;
            f = fmt_of(n);
            changed = 1;
        }
#undef NEG_ZERO
        if (n->op == DVM_OP_MOV && n->a == n->b) {
            memset(n, 0, sizeof *n);
            changed = 1;
            continue;
        }
        cse_ent *slot = NULL;
        uint32_t pver[2] = {0, 0};
        if (cse_able(n)) {
            dvm_node key = *n;
            key.a = 0;
            uint32_t h = key_hash(&key) & (t->tabcap - 1);
            while (t->tab[h].stamp == stamp && !key_eq(&t->tab[h].key, &key)) h = (h + 1) & (t->tabcap - 1);
            cse_ent *e = &t->tab[h];
            int k = 0;
            for (int j = 1; j < 3; j++)
                if (f[j + 1] == 'r') pver[k++] = t->ver[opnd(n, j)];
            int usesu = strchr(f, 'U') != NULL;
            if (e->stamp == stamp && e->ver[0] == pver[0] && e->ver[1] == pver[1] && e->hver == t->ver[e->holder] &&
                (!usesu || e->uver == uver)) {
                if (e->holder == n->a) {
                    memset(n, 0, sizeof *n); /* the register already holds the value */
                    changed = 1;
                    continue;
                }
                dvm_node mv = {DVM_OP_MOV, 0, n->a, e->holder, 0};
                *n = mv;
                changed = 1;
                f = fmt_of(n);
            } else {
                slot = e;
                slot->stamp = stamp;
                slot->key = key;
                slot->uver = uver;
                slot->ver[0] = pver[0];
                slot->ver[1] = pver[1];
            }
        }
        for (int j = 0; j < 3; j++)
            if (f[j + 1] == 'w' || f[j + 1] == 'm') t->ver[opnd(n, j)]++;
        if (has_letter(n, "VT")) uver++;
        if (slot) {
            slot->holder = n->a;
            slot->hver = t->ver[n->a];
        }
        if ((n->op == DVM_OP_CONST && n->b == 0 && n->c == 0x8000u) || /* -0.0f, or a copy of it */
            (n->op == DVM_OP_MOV && t->nz[2 * n->b] == stamp && t->nz[2 * n->b + 1] == t->ver[n->b])) {
            t->nz[2 * n->a] = stamp;
            t->nz[2 * n->a + 1] = t->ver[n->a];
        }
        if (n->op == DVM_OP_MOV) {
            copy_ent *ce = &t->copy[n->a];
            ce->stamp = stamp;
            ce->src = n->b;
            ce->dver = t->ver[n->a];
            ce->sver = t->ver[n->b];
        }
    }
    return changed;
}

#define BIT(set, r) (((set)[(r) >> 6] >> ((r) & 63)) & 1u)

/* live-out of node i into out */
static void live_out(const topt *t, uint32_t i, uint64_t *out) {
    const dvm_node *n = &t->code[i];
    memset(out, 0, sizeof *out * t->words);
    uint32_t succ[4], ns = 0;
    if (n->op == DVM_OP_END) {
        succ[ns++] = t->body; /* the thread's next iteration starts with these registers */
        if (t->entry_def) { /* ... except the indices, written anew there */
            const uint64_t *in = t->live + (size_t)t->body * t->words;
            for (uint32_t w = 0; w < t->words; w++) out[w] = in[w] & ~t->entry_def[w];
            return;
        }
    } else {
        const char *f = fmt_of(n);
        if (flags_of(n) & DVM_F_BRANCH)
            for (int j = 0; j < 3; j++)
                if (f[j + 1] == 'J') succ[ns++] = opnd(n, j);
        if (!is_uncond_branch(n) && i + 1 < t->len) succ[ns++] = i + 1;
    }
    for (uint32_t s = 0; s < ns; s++) {
        const uint64_t *in = t->live + (size_t)succ[s] * t->words;
        for (uint32_t w = 0; w < t->words; w++) out[w] |= in[w];
    }
}

/* Strong liveness: a node's reads count only when the node is needed (a side effect, a
 * branch, or a written register live after it), so a register that only feeds its own
 * dead update (v = v * rate + 0.01 in a loop whose v nothing reads) is dead too. Iterated
 * up from empty sets: the least fixed point. */
static void liveness(topt *t) {
    memset(t->live, 0, sizeof *t->live * t->words * t->len);
    int changed = 1;
    while (changed) {
        changed = 0;
        for (uint32_t i = t->len; i-- > 0;) {
            const dvm_node *n = &t->code[i];
            const char *f = fmt_of(n);
            live_out(t, i, t->tmp);
            int needed = t->weak || (flags_of(n) & (DVM_F_SIDE | DVM_F_BRANCH)) != 0;
            for (int j = 0; j < 3; j++)
                if ((f[j + 1] == 'w' || f[j + 1] == 'm') && BIT(t->tmp, opnd(n, j))) needed = 1;
            for (int j = 0; j < 3; j++)
                if (f[j + 1] == 'w') t->tmp[opnd(n, j) >> 6] &= ~((uint64_t)1 << (opnd(n, j) & 63));
            for (int j = 0; j < 3 && needed; j++)
                if (f[j + 1] == 'r' || f[j + 1] == 'm') t->tmp[opnd(n, j) >> 6] |= (uint64_t)1 << (opnd(n, j) & 63);
            uint64_t *in = t->live + (size_t)i * t->words;
            if (memcmp(in, t->tmp, sizeof *in * t->words)) {
                memcpy(in, t->tmp, sizeof *in * t->words);
                changed = 1;
            }
        }
    }
}

/* Deletes side-effect-free nodes that write only dead registers. Needs fresh liveness. */
static int dce_pass(topt *t) {
    int changed = 0;
    for (uint32_t i = 0; i < t->len; i++) {
        dvm_node *n = &t->code[i];
        if (n->op == DVM_OP_NOP || (flags_of(n) & (DVM_F_SIDE | DVM_F_BRANCH))) continue;
        live_out(t, i, t->tmp);
        const char *f = fmt_of(n);
        int live = 0;
        for (int j = 0; j < 3; j++)
            if ((f[j + 1] == 'w' || f[j + 1] == 'm') && BIT(t->tmp, opnd(n, j))) live = 1;
        if (live) continue;
        memset(n, 0, sizeof *n);
        changed = 1;
    }
    return changed;
}

/* An INCLT that jumps back to itself (over deleted nodes only) is a loop with an empty body:
 * it only counts r[a] up to r[b], and it always ends (r[a] grows by x + 1 while x + 1 more fit
 * below r[b] <= INT32_MAX, so it cannot wrap). When r[a] is dead where the loop exits, the
 * loop does nothing: delete it. (The adjoint's forward sweep leaves such loops once its pushes
 * are gone.) Needs fresh liveness. */
static int empty_loop_pass(topt *t) {
    int changed = 0;
    for (uint32_t i = 0; i + 1 < t->len; i++) {
        dvm_node *n = &t->code[i];
        if (n->op != DVM_OP_INCLT || n->c > i) continue;
        uint32_t k = n->c;
        while (k < i && t->code[k].op == DVM_OP_NOP) k++;
        if (k < i || BIT(t->live + (size_t)(i + 1) * t->words, n->a)) continue;
        memset(n, 0, sizeof *n);
        changed = 1;
    }
    return changed;
}

/* JMP/JZ/JNZ/JGEI to the next kept node does nothing (they have no other effect). */
static int jump_next_pass(topt *t) {
    int changed = 0;
    for (uint32_t i = 0; i < t->len; i++) {
        dvm_node *n = &t->code[i];
        if (n->op != DVM_OP_JMP && n->op != DVM_OP_JZ && n->op != DVM_OP_JNZ && n->op != DVM_OP_JGEI) continue;
        const char *f = fmt_of(n);
        uint32_t target = 0;
        for (int j = 0; j < 3; j++)
            if (f[j + 1] == 'J') target = opnd(n, j);
        if (target <= i) continue;
        uint32_t k = i + 1;
        while (k < target && t->code[k].op == DVM_OP_NOP) k++;
        if (k < target) continue;
        memset(n, 0, sizeof *n);
        changed = 1;
    }
    return changed;
}

/* The first kept node at or after i (deleted nodes are NOPs until compaction). */
static uint32_t next_kept(const topt *t, uint32_t i) {
    while (i < t->len && t->code[i].op == DVM_OP_NOP) i++;
    return i;
}

/* Jump threading: a JZ/JNZ on register r whose target is a JZ/JNZ on the same r knows that
 * node's outcome (nothing runs in between), so it goes straight to where that node would go.
 * An `a and b and c` evaluated into a register leaves such chains. A JMP to END is an END (the
 * end of an if's first branch when the else branch ends the task: one node fewer a point). */
static int thread_pass(topt *t) {
    int changed = 0;
    for (uint32_t i = 0; i < t->len; i++) {
        dvm_node *n = &t->code[i];
        if (n->op == DVM_OP_JMP) {
            uint32_t tg = next_kept(t, n->a);
            if (tg < t->len && t->code[tg].op == DVM_OP_END) {
                memset(n, 0, sizeof *n);
                n->op = DVM_OP_END;
                changed = 1;
            }
            continue;
        }
        if (n->op != DVM_OP_JZ && n->op != DVM_OP_JNZ) continue;
        for (int hop = 0; hop < 8; hop++) { /* bounded: a cycle of such jumps is left alone */
            uint32_t tg = next_kept(t, n->b);
            if (tg >= t->len || tg == i) break;
            const dvm_node *m = &t->code[tg];
            if ((m->op != DVM_OP_JZ && m->op != DVM_OP_JNZ) || m->a != n->a) break;
            /* n taken: r == 0 for JZ, r != 0 for JNZ; m then jumps iff its op is n's */
            uint32_t nt = m->op == n->op ? m->b : tg + 1;
            if (nt >= t->len || nt == n->b) break;
            n->b = (uint16_t)nt;
            changed = 1;
        }
    }
    return changed;
}

/* `LTI r, a, b` then `JZ r, T` (deleted nodes between them at most, its only predecessor
 * the LTI, r dead on both ways) is `JGEI a, b, T`: one node instead of two. The LTI goes, so a and b still hold its operands
 * when the JGEI reads them, even if one of them is r. Needs fresh liveness. */
static int cmp_branch_pass(topt *t) {
    int changed = 0;
    find_leaders(t);
    for (uint32_t i = 1; i < t->len; i++) {
        dvm_node *n = &t->code[i];
        if (n->op != DVM_OP_JZ) continue;
        uint32_t pv = i - 1, entered = t->leader[i];
        while (pv > 0 && t->code[pv].op == DVM_OP_NOP) entered |= t->leader[pv--];
        dvm_node *c = &t->code[pv];
        if (c->op != DVM_OP_LTI || c->a != n->a || entered) continue;
        live_out(t, i, t->tmp);
        if (BIT(t->tmp, n->a)) continue;
        dvm_node j = {DVM_OP_JGEI, 0, c->b, c->c, n->b};
        *n = j;
        memset(c, 0, sizeof *c);
        changed = 1;
    }
    return changed;
}

/* Within a basic block, PUSH s, rX ... POP rY, s with no other PUSH/POP of s and no write of
 * rX in between: the POP reads what the PUSH stored, so it becomes MOV rY, rX and the pair
 * leaves the stack as it was (the PUSH goes; a stack left without POPs dies afterwards). */
static int push_pop_pass(topt *t) {
    int changed = 0;
    find_leaders(t);
    for (uint32_t i = 0; i < t->len; i++) {
        dvm_node *push = &t->code[i];
        if (push->op != DVM_OP_PUSH) continue;
        uint16_t s = push->a, rx = push->b;
        for (uint32_t k = i + 1; k < t->len && !t->leader[k]; k++) {
            dvm_node *n = &t->code[k];
            int sj = -1, writes_rx = 0;
            const char *f = fmt_of(n);
            for (int j = 0; j < 3; j++) {
                if (f[j + 1] == 'S') sj = j;
                if ((f[j + 1] == 'w' || f[j + 1] == 'm') && opnd(n, j) == rx) writes_rx = 1;
            }
            if (sj >= 0 && opnd(n, sj) == s) {
                if (n->op == DVM_OP_POP) {
                    dvm_node mv = {DVM_OP_MOV, 0, n->a, rx, 0};
                    *n = mv;
                    memset(push, 0, sizeof *push);
                    changed = 1;
                }
                break;
            }
            if (writes_rx) break;
        }
    }
    return changed;
}


/* Every operand inside its range: otherwise the task is left alone. */
static int task_ok(const dvm_program *p, const dvm_task_desc *td, uint32_t nstacks) {
    if (!td->code_len || (uint64_t)td->code_begin + td->code_len > p->nnodes || td->nregs > DVM_MAX_REGS) return 0;
    for (uint32_t i = 0; i < td->code_len; i++) {
        const dvm_node *n = &p->nodes[td->code_begin + i];
        const char *f = fmt_of(n);
        if (!dvm_op_table[n->op].name || (flags_of(n) & DVM_F_SIZE)) return 0;
        for (int j = 0; j < 3; j++) {
            uint16_t v = opnd(n, j);
            if ((is_reg(f[j + 1]) && v >= td->nregs) || (f[j + 1] == 'J' && v >= td->code_len) ||
                (f[j + 1] == 'S' && v >= nstacks))
                return 0;
        }
    }
    const dvm_node *last = &p->nodes[td->code_begin + td->code_len - 1];
    return last->op == DVM_OP_END || is_uncond_branch(last);
}

static int topt_init(topt *t, dvm_node *code, uint32_t len, uint32_t nregs, uint32_t body) {
    memset(t, 0, sizeof *t);
    t->code = code;
    t->len = len;
    t->body = body < len ? body : 0;
    t->nregs = nregs ? nregs : 1;
    t->words = (t->nregs + 63) / 64;
    t->tabcap = 16;
    while (t->tabcap < 2 * len) t->tabcap *= 2;
    t->leader = malloc(len);
    t->ver = malloc(sizeof *t->ver * t->nregs);
    t->copy = malloc(sizeof *t->copy * t->nregs);
    t->nz = malloc(sizeof *t->nz * 2 * t->nregs);
    t->tab = malloc(sizeof *t->tab * t->tabcap);
    t->live = malloc(sizeof *t->live * t->words * len);
    t->tmp = malloc(sizeof *t->tmp * t->words);
    return t->leader && t->ver && t->copy && t->nz && t->tab && t->live && t->tmp;
}

static void topt_free(topt *t) {
    free(t->leader);
    free(t->ver);
    free(t->copy);
    free(t->nz);
    free(t->tab);
    free(t->live);
    free(t->tmp);
}

/* ---- register allocation ----
 * Interference over the task's CFG with weak liveness (every read counts): a written
 * register interferes with everything live after its node (a MOV's destination not with its
 * source: they hold one value). The parallel indices are written at node 0 (each iteration):
 * they interfere with each other and with whatever is live into node 0. A register read
 * before any write is live from node 0 (through END), so nothing sharing its colour is
 * written before that read and it still reads the per-thread zero. An 'm' operand also
 * interferes with the node's other read operands: like copy propagation, this does not rely
 * on the order in which INCLT, SEL, FMAF... read and write. Greedy colouring in order of first appearance, a MOV's destination
 * preferring its source's colour; MOVs whose two sides get one colour go. */
static uint32_t ctz64(uint64_t v) { return (uint32_t)__builtin_ctzll(v); }

static void add_edge(uint64_t *adj, uint32_t words, uint32_t a, uint32_t b) {
    if (a == b) return;
    adj[(size_t)a * words + (b >> 6)] |= (uint64_t)1 << (b & 63);
    adj[(size_t)b * words + (a >> 6)] |= (uint64_t)1 << (a & 63);
}

/* Renumbers the task's registers; returns -1 when out of memory. */
static int regalloc_task(dvm_program *p, dvm_task_desc *td) {
    topt t;
    uint32_t nr = td->nregs ? td->nregs : 1;
    int rc = -1;
    uint64_t *adj = NULL, *entry = NULL, *forbid = NULL;
    uint16_t *colour = NULL, *order = NULL, *pref = NULL;
    uint8_t *used = NULL;
    if (!topt_init(&t, p->nodes + td->code_begin, td->code_len, nr, td->body)) goto out;
    adj = calloc((size_t)nr * t.words, sizeof *adj);
    entry = calloc(t.words, sizeof *entry);
    forbid = malloc(sizeof *forbid * t.words);
    colour = malloc(sizeof *colour * nr);
    order = malloc(sizeof *order * nr);
    pref = malloc(sizeof *pref * nr);
    used = calloc(nr, 1);
    if (!adj || !entry || !forbid || !colour || !order || !pref || !used) goto out;
    uint32_t ndim = td->kind == DVM_TASK_PARALLEL ? td->ndim : 0;
    if (ndim > DVM_MAX_PAR_DIMS) ndim = DVM_MAX_PAR_DIMS;
    for (uint32_t d = 0; d < ndim; d++)
        if (td->idx_reg[d] >= nr) goto out_keep; /* the verifier refuses it; leave it */
    uint32_t norder = 0;
    for (uint32_t d = 0; d < ndim; d++) {
        uint16_t r = td->idx_reg[d];
        entry[r >> 6] |= (uint64_t)1 << (r & 63);
        if (!used[r]) used[r] = 1, order[norder++] = r;
    }
    for (uint32_t i = 0; i < t.len; i++) {
        const dvm_node *n = &t.code[i];
        const char *f = fmt_of(n);
        for (int j = 0; j < 3; j++)
            if (is_reg(f[j + 1]) && !used[opnd(n, j)]) used[opnd(n, j)] = 1, order[norder++] = opnd(n, j);
    }
    t.entry_def = ndim ? entry : NULL;
    t.weak = 1;
    liveness(&t);
    for (uint32_t i = 0; i < t.len; i++) {
        const dvm_node *n = &t.code[i];
        const char *f = fmt_of(n);
        live_out(&t, i, t.tmp);
        for (int j = 0; j < 3; j++) {
            if (f[j + 1] != 'w' && f[j + 1] != 'm') continue;
            uint32_t d = opnd(n, j);
            for (uint32_t w = 0; w < t.words; w++)
                for (uint64_t bits = t.tmp[w]; bits; bits &= bits - 1) {
                    uint32_t x = w * 64 + ctz64(bits);
                    if (n->op == DVM_OP_MOV && x == n->b) continue;
                    add_edge(adj, t.words, d, x);
                }
            if (f[j + 1] == 'm')
                for (int k = 0; k < 3; k++)
                    if (f[k + 1] == 'r') add_edge(adj, t.words, d, opnd(n, k));
        }
    }
    for (uint32_t d = 0; d < ndim; d++) { /* written at node 0, and at the body for later iterations */
        uint32_t r = td->idx_reg[d];
        const uint64_t *body_in = t.live + (size_t)t.body * t.words;
        for (uint32_t e = 0; e < ndim; e++) add_edge(adj, t.words, r, td->idx_reg[e]);
        /* the prologue never writes an index register (the verifier's rule), even with a
           temporary that is dead by the body while the index itself is never read */
        for (uint32_t i = 0; i < t.body && i < t.len; i++) {
            const char *f = fmt_of(&t.code[i]);
            for (int j = 0; j < 3; j++)
                if (f[j + 1] == 'w' || f[j + 1] == 'm') add_edge(adj, t.words, r, opnd(&t.code[i], j));
        }
        for (uint32_t w = 0; w < t.words; w++)
            for (uint64_t bits = t.live[w] | body_in[w]; bits; bits &= bits - 1) add_edge(adj, t.words, r, w * 64 + ctz64(bits));
    }
    /* A value the prologue computed holds for every later iteration, so no node at or after
       the body may write its register (the verifier's rule). END going on at body keeps it
       live through the body, but not where END is unreachable (a `while True`): there the
       body's own writes would take its colour, so every one interferes with it. */
    if (t.body && t.body <= t.len) {
        uint64_t *pro = forbid; /* scratch until colouring: the prologue's registers */
        memset(pro, 0, sizeof *pro * t.words);
        for (uint32_t i = 0; i < t.body; i++) {
            const char *f = fmt_of(&t.code[i]);
            for (int j = 0; j < 3; j++)
                if (f[j + 1] == 'w' || f[j + 1] == 'm') pro[opnd(&t.code[i], j) >> 6] |= (uint64_t)1 << (opnd(&t.code[i], j) & 63);
        }
        for (uint32_t i = t.body; i < t.len; i++) {
            const char *f = fmt_of(&t.code[i]);
            for (int j = 0; j < 3; j++) {
                if (f[j + 1] != 'w' && f[j + 1] != 'm') continue;
                for (uint32_t w = 0; w < t.words; w++)
                    for (uint64_t bits = pro[w]; bits; bits &= bits - 1) add_edge(adj, t.words, opnd(&t.code[i], j), w * 64 + ctz64(bits));
            }
        }
    }
    /* colour preference: a MOV's destination takes its source's colour when it can */
    for (uint32_t r = 0; r < nr; r++) pref[r] = 0xFFFFu;
    for (uint32_t i = 0; i < t.len; i++)
        if (t.code[i].op == DVM_OP_MOV && pref[t.code[i].a] == 0xFFFFu) pref[t.code[i].a] = t.code[i].b;
    uint32_t ncol = 0;
    for (uint32_t r = 0; r < nr; r++) colour[r] = 0xFFFFu;
    for (uint32_t o = 0; o < norder; o++) {
        uint32_t r = order[o];
        memset(forbid, 0, sizeof *forbid * t.words);
        const uint64_t *row = adj + (size_t)r * t.words;
        for (uint32_t w = 0; w < t.words; w++)
            for (uint64_t bits = row[w]; bits; bits &= bits - 1) {
                uint16_t c = colour[w * 64 + ctz64(bits)];
                if (c != 0xFFFFu) forbid[c >> 6] |= (uint64_t)1 << (c & 63);
            }
        uint32_t c = 0;
        if (pref[r] != 0xFFFFu && colour[pref[r]] != 0xFFFFu && !BIT(forbid, colour[pref[r]])) {
            c = colour[pref[r]];
        } else {
            while (BIT(forbid, c)) c++;
        }
        colour[r] = (uint16_t)c;
        if (c + 1 > ncol) ncol = c + 1;
    }
    for (uint32_t i = 0; i < t.len; i++) {
        dvm_node *n = &t.code[i];
        const char *f = fmt_of(n);
        for (int j = 0; j < 3; j++)
            if (is_reg(f[j + 1])) set_opnd(n, j, colour[opnd(n, j)]);
        if (n->op == DVM_OP_MOV && n->a == n->b) memset(n, 0, sizeof *n);
    }
    for (uint32_t d = 0; d < ndim; d++) td->idx_reg[d] = colour[td->idx_reg[d]];
    td->nregs = (uint16_t)(ncol ? ncol : 1);
    jump_next_pass(&t); /* a deleted MOV may leave a jump to the next node */
out_keep:
    rc = 0;
out:
    topt_free(&t);
    free(adj);
    free(entry);
    free(forbid);
    free(colour);
    free(order);
    free(pref);
    free(used);
    return rc;
}

/* Optimizes one task in place; then records in stack_live which stacks have a live POP.
 * Returns 1 if it changed something, -1 when out of memory. */
static int opt_task(dvm_program *p, const dvm_task_desc *td, uint8_t *stack_live) {
    topt t;
    int changed = 0;
    if (!topt_init(&t, p->nodes + td->code_begin, td->code_len, td->nregs, td->body)) {
        topt_free(&t);
        return -1;
    }
    for (int round = 0; round < MAX_ROUNDS; round++) {
        int c = jump_next_pass(&t);
        c |= push_pop_pass(&t);
        c |= local_pass(&t);
        c |= thread_pass(&t);
        liveness(&t);
        c |= dce_pass(&t);
        c |= empty_loop_pass(&t);
        liveness(&t);
        c |= cmp_branch_pass(&t);
        changed |= c;
        if (!c) break;
    }
    liveness(&t);
    for (uint32_t i = 0; i < t.len; i++) {
        const dvm_node *n = &t.code[i];
        const char *f = fmt_of(n);
        int sj = -1, wj = -1;
        for (int j = 0; j < 3; j++) {
            if (f[j + 1] == 'S') sj = j;
            if (f[j + 1] == 'w' || f[j + 1] == 'm') wj = j;
        }
        if (sj < 0 || wj < 0) continue; /* only pops make a stack live */
        live_out(&t, i, t.tmp);
        if (BIT(t.tmp, opnd(n, wj))) stack_live[opnd(n, sj)] = 1;
    }
    topt_free(&t);
    return changed;
}

/* ---- the prologue ----
 * A parallel task's thread runs iteration after iteration, each from node 0, with the same
 * registers. A node whose value is the same in every iteration (a uniform, a constant, a shape,
 * pure arithmetic on these: the stencil's n - 1 and m - 1) need run only once per thread: it
 * moves to the task's prologue, nodes [0, body), and later iterations start at body. Such a
 * node: pure and unable to fail (cse_able: no side effect, no error, no branch), every register
 * it reads already hoisted, its register written by it alone (or by copies of it: the same
 * op and operands, as a 0 loaded in both branches of an if; the copies go) and read after a
 * write on every path (not live into node 0: so no read ever saw another value), not an
 * index, and for LDU a uniform that the task does not write. The value then holds from the prologue on (register
 * allocation sees END go on at body, so the register stays live and reserved). Jumps to a moved
 * node land on the next node that stays. Returns 1 if nodes moved, 0 if not, -1 when out of
 * memory. */
static int hoist_task(dvm_program *p, dvm_task_desc *td) {
    if (td->kind != DVM_TASK_PARALLEL || td->body || td->ndim > DVM_MAX_PAR_DIMS) return 0;
    topt t;
    uint32_t nr = td->nregs ? td->nregs : 1, len = td->code_len;
    int rc = -1;
    uint32_t *ndef = calloc(nr, sizeof *ndef), *order = malloc(sizeof *order * len), *first = malloc(sizeof *first * nr);
    uint32_t *next = malloc(sizeof *next * (len + 1)), *pos = malloc(sizeof *pos * len);
    /* uw: the uniforms the task writes, sized by the highest one (a fixed 64 KiB per task
       made a source of many small kernels cost gigabytes of memset) */
    uint32_t nuw = 1;
    for (uint32_t i = 0; i < len; i++) {
        const dvm_node *n = &p->nodes[td->code_begin + i];
        const char *f = fmt_of(n);
        for (int j = 0; j < 3; j++)
            if ((f[j + 1] == 'V' || f[j + 1] == 'T') && (uint32_t)opnd(n, j) + 1 > nuw) nuw = (uint32_t)opnd(n, j) + 1;
    }
    uint8_t *inv = calloc(nr, 1), *idx = calloc(nr, 1), *moved = calloc(len, 1), *uw = calloc(nuw, 1);
    uint64_t *entry = calloc((nr + 63) / 64, sizeof *entry);
    dvm_node *code = malloc(sizeof *code * len);
    uint32_t *lines = malloc(sizeof *lines * len);
    uint16_t *cols = malloc(sizeof *cols * len);
    if (!topt_init(&t, p->nodes + td->code_begin, len, nr, 0) || !ndef || !order || !first || !next || !pos || !inv || !idx ||
        !moved || !uw || !entry || !code || !lines || !cols)
        goto out;
    for (uint32_t d = 0; d < td->ndim; d++) {
        if (td->idx_reg[d] >= nr) { rc = 0; goto out; } /* the verifier refuses it */
        idx[td->idx_reg[d]] = 1;
        entry[td->idx_reg[d] >> 6] |= (uint64_t)1 << (td->idx_reg[d] & 63);
    }
    /* ndef[r]: the writes of r, counting copies of its first writer (first[r]) once */
    for (uint32_t r = 0; r < nr; r++) first[r] = UINT32_MAX;
    for (uint32_t i = 0; i < len; i++) {
        const dvm_node *n = &t.code[i];
        const char *f = fmt_of(n);
        for (int j = 0; j < 3; j++) {
            if (f[j + 1] == 'w' || f[j + 1] == 'm') {
                uint16_t r = opnd(n, j);
                if (first[r] == UINT32_MAX) first[r] = i, ndef[r] = 1;
                else if (!(f[j + 1] == 'w' && !memcmp(n, &t.code[first[r]], sizeof *n))) ndef[r]++;
            }
            if (f[j + 1] == 'V' || f[j + 1] == 'T') uw[opnd(n, j)] = 1;
        }
    }
    t.entry_def = entry;
    t.weak = 1;
    liveness(&t); /* t.live (node 0's live-in): the registers some path reads before writing */
    uint32_t nh = 0;
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t i = 0; i < len; i++) {
            const dvm_node *n = &t.code[i];
            if (moved[i] || !cse_able(n) || (n->op == DVM_OP_LDU && n->b < nuw && uw[n->b])) continue;
            const char *f = fmt_of(n);
            int ok = 1;
            for (int j = 0; j < 3; j++)
                if ((f[j + 1] == 'r' && !inv[opnd(n, j)]) || f[j + 1] == 'o') ok = 0;
            uint16_t w = n->a; /* cse_able: the written register is a */
            if (!ok || ndef[w] != 1 || first[w] != i || idx[w] || BIT(t.live, w)) continue;
            for (uint32_t c = i + 1; c < len; c++) /* its copies: NOPs (compact() drops them) */
                if (!memcmp(&t.code[c], n, sizeof *n)) memset(&t.code[c], 0, sizeof t.code[c]);
            moved[i] = 1;
            inv[w] = 1;
            order[nh++] = i;
            changed = 1;
        }
    }
    if (nh == 0 || nh == len) {
        rc = 0;
        goto out;
    }
    /* new order: the moved nodes (in the order found: each after what it reads), then the rest */
    uint32_t k = nh;
    next[len] = len;
    for (uint32_t i = len; i-- > 0;) next[i] = moved[i] ? next[i + 1] : i;
    for (uint32_t i = 0; i < len; i++)
        if (!moved[i]) pos[i] = k++;
    for (uint32_t h = 0; h < nh; h++) {
        code[h] = t.code[order[h]];
        lines[h] = p->lines[td->code_begin + order[h]];
        cols[h] = p->cols[td->code_begin + order[h]];
    }
    for (uint32_t i = 0; i < len; i++)
        if (!moved[i]) {
            code[pos[i]] = t.code[i];
            lines[pos[i]] = p->lines[td->code_begin + i];
            cols[pos[i]] = p->cols[td->code_begin + i];
        }
    for (uint32_t i = 0; i < len; i++) {
        dvm_node *n = &code[i];
        const char *f = fmt_of(n);
        for (int j = 0; j < 3; j++)
            if (f[j + 1] == 'J' && opnd(n, j) < len) set_opnd(n, j, (uint16_t)pos[next[opnd(n, j)]]);
    }
    memcpy(t.code, code, sizeof *code * len);
    memcpy(p->lines + td->code_begin, lines, sizeof *lines * len);
    memcpy(p->cols + td->code_begin, cols, sizeof *cols * len);
    td->body = (uint16_t)nh;
    rc = 1;
out:
    topt_free(&t);
    free(ndef);
    free(order);
    free(first);
    free(next);
    free(pos);
    free(inv);
    free(idx);
    free(moved);
    free(uw);
    free(entry);
    free(code);
    free(lines);
    free(cols);
    return rc;
}

/* The node after i over the NOPs that earlier fusions left, if no jump lands on it or between
 * (it runs right after i, and only then); t->len if not. Needs find_leaders. */
static uint32_t next_unentered(const topt *t, uint32_t i) {
    uint32_t j = i + 1;
    while (j < t->len && t->code[j].op == DVM_OP_NOP && !(t->leader[j] & LEAD_TARGET)) j++;
    return j < t->len && !(t->leader[j] & LEAD_TARGET) ? j : t->len;
}

/* Whether k fits the offset of an 'o' operand. */
static int ofs_fits(int32_t k) { return k >= DVM_OFS_MIN && k <= DVM_OFS_MAX; }

/* ADDIK t, i, k right before an array access whose index is t, with t read nowhere after it:
 * the access takes i and k itself (LD -> LDO, ATOMADDF -> ATOMADDFO, LD2 -> LD2O, ATOMADDF2
 * -> ATOMADDF2O, LDADDF -> LDADDFO) and the ADDIK goes (x[i - 1], u[i, j + 1] and their
 * adjoints' += : the 5-point stencil's four neighbours were 8 nodes, now 4). The index is the
 * same i32 sum, checked as before, so the errors are the same. Needs fresh liveness. */
static int offset_pass(topt *t) {
    int fused = 0;
    for (uint32_t i = 0; i + 1 < t->len; i++) {
        dvm_node *ad = &t->code[i], *n = &t->code[i + 1];
        if (ad->op != DVM_OP_ADDIK || t->leader[i + 1]) continue;
        if (n->op != DVM_OP_LD && n->op != DVM_OP_ATOMADDF && n->op != DVM_OP_LD2 && n->op != DVM_OP_ATOMADDF2 &&
            n->op != DVM_OP_LDADDF)
            continue;
        const uint16_t r = ad->a, src = ad->b;
        const int32_t k = (int16_t)ad->c;
        live_out(t, i + 1, t->tmp);
        const int writes_r = (n->op == DVM_OP_LD || n->op == DVM_OP_LD2) && n->a == r;
        if (BIT(t->tmp, r) && !writes_r) continue; /* the sum is read later */
        const int small = ofs_fits(k);
        dvm_node f = *n;
        switch (n->op) {
        case DVM_OP_LD: /* x a=dst b=index */
            if (n->b != r) continue;
            f.op = DVM_OP_LDO, f.b = src, f.c = (uint16_t)k;
            break;
        case DVM_OP_ATOMADDF: /* x a=index b=value */
            if (n->a != r || n->b == r) continue;
            f.op = DVM_OP_ATOMADDFO, f.a = src, f.c = (uint16_t)k;
            break;
        case DVM_OP_LDADDF: /* x a=sum (read and written) b=index */
            if (n->b != r || n->a == r) continue;
            f.op = DVM_OP_LDADDFO, f.b = src, f.c = (uint16_t)k;
            break;
        case DVM_OP_LD2: /* x a=dst b, c=indices */
            if (!small || (n->b == r) == (n->c == r)) continue;
            f.op = DVM_OP_LD2O;
            f.b = n->b == r ? DVM_OFS_MAKE(src, k) : DVM_OFS_MAKE(n->b, 0);
            f.c = n->c == r ? DVM_OFS_MAKE(src, k) : DVM_OFS_MAKE(n->c, 0);
            break;
        case DVM_OP_ATOMADDF2: /* x a, b=indices c=value */
            if (!small || (n->a == r) == (n->b == r) || n->c == r) continue;
            f.op = DVM_OP_ATOMADDF2O;
            f.a = n->a == r ? DVM_OFS_MAKE(src, k) : DVM_OFS_MAKE(n->a, 0);
            f.b = n->b == r ? DVM_OFS_MAKE(src, k) : DVM_OFS_MAKE(n->b, 0);
            break;
        default:
            continue;
        }
        if (f.op == DVM_OP_LD2O || f.op == DVM_OP_ATOMADDF2O) {
            /* the other index by an ADDIK right before: both go (u[i + 1, j + 1]). Not when the
               first ADDIK reads its result, the value is it, or a jump enters between them. */
            const int ld = f.op == DVM_OP_LD2O;
            uint16_t *of = ld ? (n->b == r ? &f.c : &f.b) : (n->a == r ? &f.b : &f.a);
            const uint16_t other = ld ? (n->b == r ? n->c : n->b) : (n->a == r ? n->b : n->a);
            dvm_node *ad2 = i > 0 ? &t->code[i - 1] : NULL;
            if (ad2 && ad2->op == DVM_OP_ADDIK && !t->leader[i] && ad2->a == other && src != other &&
                (ld || n->c != other)) {
                const int32_t k2 = (int16_t)ad2->c;
                const int dead2 = !BIT(t->tmp, other) || (ld && n->a == other);
                if (ofs_fits(k2) && dead2) {
                    *of = DVM_OFS_MAKE(ad2->b, k2);
                    memset(ad2, 0, sizeof *ad2);
                    fused++;
                }
            }
        }
        *n = f;
        memset(ad, 0, sizeof *ad); /* a NOP: compact() drops it */
        fused++;
        i++;
    }
    return fused;
}

/* A load whose value only an add right after it reads: `LD t; ADDF d, d, t` (either order of
 * the add) becomes `LDADDF d` (LDO -> LDADDFO, LD2 and LD2O -> LDADDF2O), f32 arrays only
 * (f32[slot]): the stencil's sum of four neighbours was 7 nodes, now 4. The add is the same
 * IEEE sum, and a failing load fails as before. Needs fresh liveness. */
static int ldadd_pass(topt *t, const uint8_t *f32) {
    int fused = 0;
    for (uint32_t i = 0; i < t->len; i++) {
        dvm_node *ld = &t->code[i];
        if (ld->op != DVM_OP_LD && ld->op != DVM_OP_LDO && ld->op != DVM_OP_LD2 && ld->op != DVM_OP_LD2O) continue;
        if (!f32[ld->x]) continue;
        const uint32_t j = next_unentered(t, i);
        if (j >= t->len) continue;
        dvm_node *ad = &t->code[j];
        const uint16_t r = ld->a, d = ad->a;
        if (ad->op != DVM_OP_ADDF || d == r || !((ad->b == d && ad->c == r) || (ad->c == d && ad->b == r))) continue;
        live_out(t, j, t->tmp);
        if (BIT(t->tmp, r)) continue; /* the load's value is read later */
        dvm_node f = *ld;
        f.a = d;
        if (ld->op == DVM_OP_LD) f.op = DVM_OP_LDADDF;
        else if (ld->op == DVM_OP_LDO) f.op = DVM_OP_LDADDFO;
        else f.op = DVM_OP_LDADDF2O;
        if (ld->op == DVM_OP_LD2) f.b = DVM_OFS_MAKE(ld->b, 0), f.c = DVM_OFS_MAKE(ld->c, 0);
        *ld = f;
        memset(ad, 0, sizeof *ad);
        fused++;
    }
    return fused;
}

/* A negation that only an add or a subtraction right after it reads: `NEGF t, s; ADDF d, x, t`
 * (either order of the add) becomes `SUBF d, x, s`, and `NEGF t, s; SUBF d, x, t` becomes
 * `ADDF d, x, s`. IEEE defines x - s as x + (-s), so the result is the same (NaNs aside, whose
 * sign no result depends on). The adjoints of subtractions and of sin * cos are where they
 * come from. Needs fresh liveness. */
static int neg_pass(topt *t) {
    int fused = 0;
    for (uint32_t i = 0; i < t->len; i++) {
        dvm_node *ng = &t->code[i];
        if (ng->op != DVM_OP_NEGF) continue;
        const uint32_t j = next_unentered(t, i);
        if (j >= t->len) continue;
        dvm_node *ad = &t->code[j];
        const uint16_t r = ng->a;
        uint16_t x;
        uint8_t op;
        if (ad->op == DVM_OP_ADDF && ad->b == r && ad->c != r) x = ad->c, op = DVM_OP_SUBF;
        else if (ad->op == DVM_OP_ADDF && ad->c == r && ad->b != r) x = ad->b, op = DVM_OP_SUBF;
        else if (ad->op == DVM_OP_SUBF && ad->c == r && ad->b != r) x = ad->b, op = DVM_OP_ADDF;
        else continue;
        live_out(t, j, t->tmp);
        if (BIT(t->tmp, r)) continue; /* the negation is read later */
        *ad = (dvm_node){op, 0, ad->a, x, ng->b};
        memset(ng, 0, sizeof *ng);
        fused++;
    }
    return fused;
}

/* A two-sided bounds test: `JGEI lo, v, T` and `JGEI v, hi, T` one after the other (either
 * order, no jump landing on the second) are `JOUTI lo, v, hi, T` (lo in the 8-bit x field: a
 * register below 256): `if i > 0 and i < n - 1` is one node, not two. */
static int bounds_pass(topt *t) {
    int fused = 0;
    for (uint32_t i = 0; i < t->len; i++) {
        dvm_node *g1 = &t->code[i];
        if (g1->op != DVM_OP_JGEI || g1->x) continue;
        const uint32_t j = next_unentered(t, i);
        if (j >= t->len) continue;
        dvm_node *g2 = &t->code[j];
        if (g2->op != DVM_OP_JGEI || g2->x || g2->c != g1->c) continue;
        uint16_t lo, v, hi;
        if (g1->b == g2->a) /* lo >= v, then v >= hi */
            lo = g1->a, v = g1->b, hi = g2->b;
        else if (g2->b == g1->a) /* v >= hi, then lo >= v */
            lo = g2->a, v = g1->a, hi = g1->b;
        else
            continue;
        if (lo > 255) continue; /* the x field */
        *g1 = (dvm_node){DVM_OP_JOUTI, (uint8_t)lo, v, hi, g1->c};
        memset(g2, 0, sizeof *g2);
        fused++;
        i = j;
    }
    return fused;
}

/* The fusions that make operands no other pass reads ('o', JOUTI's x register): run last,
 * after register allocation. Returns the nodes fused, or -1 (out of memory). */
static int fuse_task(dvm_program *p, const dvm_task_desc *td, const uint8_t *f32) {
    topt t;
    if (!topt_init(&t, p->nodes + td->code_begin, td->code_len, td->nregs, td->body)) {
        topt_free(&t);
        return -1;
    }
    t.weak = 1; /* every read counts */
    find_leaders(&t);
    liveness(&t);
    int fused = offset_pass(&t);
    liveness(&t);
    fused += ldadd_pass(&t, f32);
    liveness(&t);
    fused += neg_pass(&t);
    fused += bounds_pass(&t);
    topt_free(&t);
    return fused;
}

/* ---- one variant ---- */

static int stack_operand(const dvm_node *n) {
    const char *f = fmt_of(n);
    for (int j = 0; j < 3; j++)
        if (f[j + 1] == 'S') return j;
    return -1;
}

/* Optimizes the variant's tasks; marks its dead stacks in stack_dead (program-wide ids). */
/* What opt_variant runs: the passes to a fixed point (and the dead stacks), then the last steps. */
enum { OPT_ROUNDS = 1, OPT_FINAL = 2 };

static int opt_variant(dvm_program *p, const dvm_kernel_desc *kd, const dvm_variant_desc *vd, uint8_t *stack_dead,
                       int what) {
    if ((uint64_t)vd->task_begin + vd->ntasks > p->ntasks || (uint64_t)vd->stack_begin + vd->nstacks > p->nstacks ||
        (uint64_t)vd->slot_begin + vd->nslots > p->nslots)
        return 0;
    uint8_t f32[256] = {0}; /* per array slot (an 8-bit operand): f32 elements */
    for (uint32_t s = 0; s < vd->nslots && s < 256; s++) {
        uint32_t pi = p->slots[vd->slot_begin + s].param;
        f32[s] = pi < kd->nparams && (uint64_t)kd->param_begin + pi < p->nparams &&
                 p->params[kd->param_begin + pi].type == DVM_T_F32;
    }
    for (uint32_t t = 0; t < vd->ntasks; t++)
        if (!task_ok(p, &p->tasks[vd->task_begin + t], vd->nstacks)) return 0;
    uint8_t *live = malloc(vd->nstacks ? vd->nstacks : 1);
    uint8_t *dead = calloc(vd->nstacks ? vd->nstacks : 1, 1);
    if (!live || !dead) {
        free(live);
        free(dead);
        return -1;
    }
    int rc = 0;
    for (int round = 0; round < MAX_ROUNDS && (what & OPT_ROUNDS); round++) {
        memset(live, 0, vd->nstacks ? vd->nstacks : 1);
        for (uint32_t t = 0; t < vd->ntasks && rc >= 0; t++) {
            int c = opt_task(p, &p->tasks[vd->task_begin + t], live);
            if (c < 0) rc = -1;
        }
        if (rc < 0) break;
        /* a stack no live POP reads: its PUSH/POP nodes go (their overflow and underflow
         * checks guard storage that nothing reads) */
        int newly = 0;
        for (uint32_t s = 0; s < vd->nstacks; s++)
            if (!live[s] && !dead[s]) dead[s] = newly = 1;
        if (!newly) break;
        for (uint32_t t = 0; t < vd->ntasks; t++) {
            const dvm_task_desc *td = &p->tasks[vd->task_begin + t];
            for (uint32_t i = 0; i < td->code_len; i++) {
                dvm_node *n = &p->nodes[td->code_begin + i];
                int sj = stack_operand(n);
                if (sj >= 0 && dead[opnd(n, sj)]) memset(n, 0, sizeof *n);
            }
        }
    }
    for (uint32_t t = 0; t < vd->ntasks && rc >= 0 && (what & OPT_FINAL); t++) {
        dvm_task_desc *td = &p->tasks[vd->task_begin + t];
        int h = hoist_task(p, td);
        if (h > 0 && opt_task(p, td, live) < 0) h = -1; /* the prologue's own CSE and DCE */
        if (h < 0 || regalloc_task(p, td) < 0 || fuse_task(p, td, f32) < 0) rc = -1;
    }
    if (rc >= 0) {
        /* renumber the surviving stacks */
        uint16_t *newid = malloc(sizeof *newid * (vd->nstacks ? vd->nstacks : 1));
        if (!newid) {
            rc = -1;
        } else {
            uint16_t k = 0;
            for (uint32_t s = 0; s < vd->nstacks; s++) {
                newid[s] = k;
                if (!dead[s]) k++;
                stack_dead[vd->stack_begin + s] = dead[s];
            }
            for (uint32_t t = 0; t < vd->ntasks; t++) {
                const dvm_task_desc *td = &p->tasks[vd->task_begin + t];
                for (uint32_t i = 0; i < td->code_len; i++) {
                    dvm_node *n = &p->nodes[td->code_begin + i];
                    int sj = stack_operand(n);
                    if (sj >= 0) set_opnd(n, sj, newid[opnd(n, sj)]);
                }
            }
            free(newid);
        }
    }
    free(live);
    free(dead);
    return rc;
}

/* ---- compaction ---- */

static int compact(dvm_program *p, const uint8_t *stack_dead) {
    int rc = -1;
    uint8_t *keep = malloc(p->nnodes ? p->nnodes : 1);
    uint32_t *newpos = malloc(sizeof *newpos * ((size_t)p->nnodes + 1));
    uint32_t *newstack = malloc(sizeof *newstack * ((size_t)p->nstacks + 1));
    if (!keep || !newpos || !newstack) goto out;
    memset(keep, 1, p->nnodes);
    for (uint32_t t = 0; t < p->ntasks; t++) {
        const dvm_task_desc *td = &p->tasks[t];
        if ((uint64_t)td->code_begin + td->code_len > p->nnodes) continue;
        for (uint32_t i = 0; i < td->code_len; i++)
            if (p->nodes[td->code_begin + i].op == DVM_OP_NOP) keep[td->code_begin + i] = 0;
    }
    for (int pass = 0; pass < 2; pass++) /* a size program any kept stack uses stays */
        for (uint32_t s = 0; s < p->nstacks; s++) {
            const dvm_stack_desc *sd = &p->stacks[s];
            if (sd->sizing != DVM_SZ_PROGRAM || (uint64_t)sd->size_begin + sd->size_len > p->nnodes) continue;
            if ((pass == 0) == (stack_dead[s] != 0))
                memset(keep + sd->size_begin, pass == 0 ? 0 : 1, sd->size_len);
        }
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->nnodes; i++) {
        newpos[i] = k;
        k += keep[i];
    }
    newpos[p->nnodes] = k;
    /* jumps: a target that goes lands on the next kept node (the task's last node stays) */
    for (uint32_t t = 0; t < p->ntasks; t++) {
        dvm_task_desc *td = &p->tasks[t];
        if ((uint64_t)td->code_begin + td->code_len > p->nnodes) continue;
        for (uint32_t i = 0; i < td->code_len; i++) {
            dvm_node *n = &p->nodes[td->code_begin + i];
            const char *f = fmt_of(n);
            for (int j = 0; j < 3 && f; j++)
                if (f[j + 1] == 'J' && opnd(n, j) < td->code_len)
                    set_opnd(n, j, (uint16_t)(newpos[td->code_begin + opnd(n, j)] - newpos[td->code_begin]));
        }
        uint32_t nb = newpos[td->code_begin];
        if (td->body && td->body < td->code_len) td->body = (uint16_t)(newpos[td->code_begin + td->body] - nb);
        td->code_len = newpos[td->code_begin + td->code_len] - nb;
        td->code_begin = nb;
    }
    uint32_t ks = 0;
    for (uint32_t s = 0; s < p->nstacks; s++) {
        newstack[s] = ks;
        if (stack_dead[s]) continue;
        dvm_stack_desc sd = p->stacks[s];
        if (sd.sizing == DVM_SZ_PROGRAM && (uint64_t)sd.size_begin + sd.size_len <= p->nnodes)
            sd.size_begin = newpos[sd.size_begin];
        p->stacks[ks++] = sd;
    }
    newstack[p->nstacks] = ks;
    for (uint32_t kk = 0; kk < p->nkernels; kk++)
        for (int v = 0; v < DVM_V_COUNT; v++) {
            dvm_variant_desc *vd = &p->kernels[kk].v[v];
            if ((uint64_t)vd->stack_begin + vd->nstacks > p->nstacks) continue;
            uint32_t b = newstack[vd->stack_begin];
            vd->nstacks = newstack[vd->stack_begin + vd->nstacks] - b;
            vd->stack_begin = b;
        }
    p->nstacks = ks;
    for (uint32_t i = 0; i < p->nnodes; i++) {
        if (!keep[i]) continue;
        p->nodes[newpos[i]] = p->nodes[i];
        p->lines[newpos[i]] = p->lines[i];
        p->cols[newpos[i]] = p->cols[i];
    }
    p->nnodes = k;
    rc = 0;
out:
    free(keep);
    free(newpos);
    free(newstack);
    return rc;
}

/* Every variant's passes (OPT_ROUNDS) and last steps (OPT_FINAL: the prologue, the register
 * allocation and the last fusions), then the compaction. */
static int optimize_all(dvm_program *p, int what) {
    uint8_t *stack_dead = calloc(p->nstacks ? p->nstacks : 1, 1);
    int rc = stack_dead ? 0 : -1;
    for (uint32_t k = 0; k < p->nkernels && rc == 0; k++)
        for (int v = 0; v < DVM_V_COUNT && rc == 0; v++)
            if (p->kernels[k].v[v].present && opt_variant(p, &p->kernels[k], &p->kernels[k].v[v], stack_dead, what) < 0) rc = -1;
    if (rc == 0) rc = compact(p, stack_dead);
    free(stack_dead);
    return rc;
}

/* The loops are unrolled (unroll.c) once the passes have run, on code with its dead loops
 * gone; when that changed a task, the passes run again over the copies (CSE across them, the
 * counter's ADDIKs into index offsets). */
int dvm_optimize(dvm_program *p, dvm_diags *d, unsigned unroll) {
    int rc = optimize_all(p, OPT_ROUNDS), n = 0;
    if (rc == 0 && unroll > 1 && (n = dvm_unroll_loops(p, unroll)) < 0) rc = -1;
    if (rc == 0) rc = optimize_all(p, (n > 0 ? OPT_ROUNDS : 0) | OPT_FINAL);
    if (rc) dvm_diag(d, 0, 0, "out of memory while optimizing bytecode");
    return rc ? 1 : 0;
}
