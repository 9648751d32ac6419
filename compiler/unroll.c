/* unroll.c: dvm_unroll_loops, the optimizer's loop unrolling. dvm_optimize runs it once, on
 * compacted code after the other passes; when it changed a task, they run again over the
 * copies.
 *
 * An innermost counted loop, as the emitter writes `for v in range(lo, hi)` once the
 * optimizer has run over it:
 *       B:  body            straight line (no branch, no END, no library math), writes
 *                           neither c nor hi
 *       I:  INCLT c, hi, ->B
 * with no jump into the body past B, becomes (U: the factor; x, the loop tests' count, U - 1):
 *       JGEI  x, c, hi, ->R       fewer than U iterations left: only the original loop
 *   M:  body(c); ADDIK t, c, 1; body(t); ...; ADDIK t, c, U-1; body(t)
 *       INCLT x, c, hi, ->M       c += U; again while U more are left
 *       JGEI  c, hi, ->E          none left
 *   R:  body(c)
 *       INCLT  c, hi, ->R         the original loop: the last iterations (fewer than U)
 *   E:
 * t is one new register, there only when the body reads c; the copies keep the body's source
 * positions, the new nodes the INCLT's. Every entry into B runs the same iterations, with the
 * same counter values, in the same order, and leaves c as the original loop did: the main
 * part runs only while U iterations are left (so c + U cannot wrap), and the rest is the
 * original loop, entered with at least one iteration left or straight from B (which runs the
 * body once, as before).
 *
 * Why: the lane interpreters pay for a loop's back edge on every iteration; on CUDA an INCLT
 * costs about twice an FMA node (the count, the lanes that leave, their wait node), and
 * unrolling made the FMA loop 1.39x faster there. A body with library math (DVM_F_MATH) is left alone: its back edge is a
 * small part of an iteration, and on a GPU the threads of a warp that are in the main part and
 * those in the remainder run apart, each group's math in turn (the sin loop was 10% slower
 * unrolled). Nor is a body of one node that updates its own register (DVM_SELF_UPDATE, bc.h:
 * `v = v * rate + k`, `g = g * rate`, `s = s + x`): the interpreters run all of such a loop's
 * trips in its INCLT (interp_core.h), which copies would only delay (on an H200 the FMA loop
 * took 0.099 ms rolled against 0.131 unrolled). */
#include "compiler/compile.h"
#include <stdlib.h>
#include <string.h>

/* the largest body copied (nodes); bigger bodies gain little and cost code space (the GPU
 * lane kernels keep a task's nodes in shared memory) */
#define UNROLL_MAX_BODY 16

static const char *fmt_of(const dvm_node *n) { return dvm_op_table[n->op].fmt; }
static uint16_t field(const dvm_node *n, int j) { return j == 0 ? n->x : j == 1 ? n->a : j == 2 ? n->b : n->c; }
static void set_field(dvm_node *n, int j, uint16_t v) {
    if (j == 0) n->x = (uint8_t)v;
    else if (j == 1) n->a = v;
    else if (j == 2) n->b = v;
    else n->c = v;
}

/* Whether n writes register r. */
static int writes(const dvm_node *n, uint32_t r) {
    const char *f = fmt_of(n);
    for (int j = 0; j < 4; j++)
        if ((f[j] == 'w' || f[j] == 'm') && field(n, j) == r) return 1;
    return 0;
}
/* Whether n reads register r (an 'o' operand's register too). */
static int reads(const dvm_node *n, uint32_t r) {
    const char *f = fmt_of(n);
    for (int j = 0; j < 4; j++) {
        uint16_t v = field(n, j);
        if (((f[j] == 'r' || f[j] == 'm') && v == r) || (f[j] == 'o' && DVM_OFS_REG(v) == r)) return 1;
    }
    return 0;
}
/* n with its reads of register r made reads of s (r is never written in a body). */
static dvm_node renamed(dvm_node n, uint32_t r, uint32_t s) {
    const char *f = fmt_of(&n);
    for (int j = 0; j < 4; j++) {
        uint16_t v = field(&n, j);
        if (f[j] == 'r' && v == r) set_field(&n, j, (uint16_t)s);
        else if (f[j] == 'o' && DVM_OFS_REG(v) == r) set_field(&n, j, DVM_OFS_MAKE(s, DVM_OFS_OFF(v)));
    }
    return n;
}

/* Whether the loop closed by the INCLT at i can be unrolled; *uses_c: the body reads the counter. */
static int unrollable(const dvm_node *code, const uint8_t *target, uint32_t i, uint32_t body, int *uses_c) {
    const dvm_node *inc = &code[i];
    const uint32_t b = inc->c;
    if (inc->op != DVM_OP_INCLT || inc->x || b >= i || i - b > UNROLL_MAX_BODY || b < body || inc->a == inc->b) return 0;
    /* a body of one self-update runs all its trips in one step of the interpreters */
    if (i - b == 1 && DVM_SELF_UPDATE(code[b].op, code[b].a, code[b].b, code[b].c)) return 0;
    *uses_c = 0;
    for (uint32_t k = b; k < i; k++) {
        const dvm_node *n = &code[k];
        const uint32_t fl = dvm_op_table[n->op].flags;
        if ((fl & (DVM_F_BRANCH | DVM_F_SIZE | DVM_F_MATH)) || n->op == DVM_OP_END || n->op == DVM_OP_NOP) return 0;
        if ((k > b && target[k]) || writes(n, inc->a) || writes(n, inc->b)) return 0;
        *uses_c |= reads(n, inc->a);
    }
    return !target[i]; /* a jump to the INCLT itself is a `continue` from outside the body's straight line */
}

/* Unrolls the task's loops; returns the nodes it adds (0: none), or -1 when out of memory. */
static int64_t unroll_task(dvm_program *p, uint32_t ti, unsigned factor) {
    dvm_task_desc *td = &p->tasks[ti];
    const uint32_t len = td->code_len, U = factor;
    const dvm_node *code = p->nodes + td->code_begin;
    /* at each chosen loop's first node: its INCLT's index + 1 (0: none), and whether its body
       reads the counter */
    uint32_t *close = calloc(len ? len : 1, sizeof *close);
    uint8_t *target = calloc(len ? len : 1, 1), *uses = calloc(len ? len : 1, 1);
    if (!close || !target || !uses) {
        free(close), free(target), free(uses);
        return -1;
    }
    for (uint32_t i = 0; i < len; i++) {
        const char *f = fmt_of(&code[i]);
        if (dvm_op_table[code[i].op].flags & DVM_F_BRANCH)
            for (int j = 0; j < 4; j++)
                if (f[j] == 'J' && field(&code[i], j) < len) target[field(&code[i], j)] = 1;
    }
    uint64_t newlen = len;
    int need_t = 0;
    for (uint32_t i = 0; i < len; i++) {
        int uses_c;
        if (!unrollable(code, target, i, td->body, &uses_c)) continue;
        const uint64_t add = (uint64_t)(i - code[i].c) * U + (uses_c ? U - 1 : 0) + 3;
        if (newlen + add > DVM_MAX_TASK_NODES || (uses_c && td->nregs >= DVM_MAX_REGS)) continue;
        newlen += add;
        close[code[i].c] = i + 1;
        uses[code[i].c] = (uint8_t)uses_c;
        need_t |= uses_c;
    }
    if (newlen == len) {
        free(close), free(target), free(uses);
        return 0;
    }
    const uint32_t t = td->nregs; /* the copies' counter (one register for every loop) */
    dvm_node *nn = malloc(sizeof *nn * newlen);
    uint32_t *nl = malloc(sizeof *nl * newlen), *newpos = malloc(sizeof *newpos * ((size_t)len + 1));
    uint16_t *nc = malloc(sizeof *nc * newlen);
    uint8_t *remap = malloc(newlen); /* 1: an old node whose jump targets are old positions */
    if (!nn || !nl || !nc || !newpos || !remap) {
        free(nn), free(nl), free(nc), free(newpos), free(remap), free(close), free(target), free(uses);
        return -1;
    }
    const uint32_t *ol = p->lines + td->code_begin;
    const uint16_t *oc = p->cols + td->code_begin;
    uint32_t o = 0;
#define PUT(node, from, rm) (nn[o] = (node), nl[o] = ol[from], nc[o] = oc[from], remap[o] = (rm), o++)
    for (uint32_t i = 0; i < len; i++) {
        newpos[i] = o;
        if (!close[i]) {
            PUT(code[i], i, 1);
            continue;
        }
        const uint32_t e = close[i] - 1; /* a chosen loop starts here; its INCLT */
        const dvm_node inc = code[e];
        const uint32_t c = inc.a, hi = inc.b, blen = e - i;
        const int uses_c = uses[i];
        const uint32_t at = o, m = at + 1;
        const uint32_t mlen = blen * U + (uses_c ? U - 1 : 0);
        const uint32_t r = m + mlen + 2, end = r + blen + 1;
        PUT(((dvm_node){DVM_OP_JGEI, (uint8_t)(U - 1), (uint16_t)c, (uint16_t)hi, (uint16_t)r}), e, 0);
        for (uint32_t k = 0; k < U; k++) {
            if (k && uses_c) PUT(((dvm_node){DVM_OP_ADDIK, 0, (uint16_t)t, (uint16_t)c, (uint16_t)k}), e, 0);
            for (uint32_t j = i; j < e; j++) PUT(k && uses_c ? renamed(code[j], c, t) : code[j], j, 0);
        }
        PUT(((dvm_node){DVM_OP_INCLT, (uint8_t)(U - 1), (uint16_t)c, (uint16_t)hi, (uint16_t)m}), e, 0);
        PUT(((dvm_node){DVM_OP_JGEI, 0, (uint16_t)c, (uint16_t)hi, (uint16_t)end}), e, 0);
        for (uint32_t j = i; j < e; j++) PUT(code[j], j, 0);
        PUT(((dvm_node){DVM_OP_INCLT, 0, (uint16_t)c, (uint16_t)hi, (uint16_t)r}), e, 0);
        for (uint32_t j = i + 1; j <= e; j++) newpos[j] = at; /* no jump lands there */
        i = e;
    }
#undef PUT
    newpos[len] = o;
    for (uint32_t k = 0; k < o; k++) {
        if (!remap[k]) continue;
        const char *f = fmt_of(&nn[k]);
        for (int j = 0; j < 4; j++)
            if (f[j] == 'J' && field(&nn[k], j) < len) set_field(&nn[k], j, (uint16_t)newpos[field(&nn[k], j)]);
    }
    /* splice: the task's nodes replaced, every later range moved by the difference */
    const uint32_t begin = td->code_begin, grow = o - len;
    dvm_node *pn = realloc(p->nodes, sizeof *pn * ((size_t)p->nnodes + grow));
    if (pn) p->nodes = pn;
    uint32_t *pl = pn ? realloc(p->lines, sizeof *pl * ((size_t)p->nnodes + grow)) : NULL;
    if (pl) p->lines = pl;
    uint16_t *pc = pl ? realloc(p->cols, sizeof *pc * ((size_t)p->nnodes + grow)) : NULL;
    if (pc) p->cols = pc;
    int64_t rc = -1;
    if (pc) {
        const size_t tail = (size_t)p->nnodes - begin - len;
        memmove(p->nodes + begin + o, p->nodes + begin + len, sizeof *pn * tail);
        memmove(p->lines + begin + o, p->lines + begin + len, sizeof *pl * tail);
        memmove(p->cols + begin + o, p->cols + begin + len, sizeof *pc * tail);
        memcpy(p->nodes + begin, nn, sizeof *nn * o);
        memcpy(p->lines + begin, nl, sizeof *nl * o);
        memcpy(p->cols + begin, nc, sizeof *nc * o);
        p->nnodes += grow;
        for (uint32_t k = 0; k < p->ntasks; k++)
            if (k != ti && p->tasks[k].code_begin >= begin + len) p->tasks[k].code_begin += grow;
        for (uint32_t s = 0; s < p->nstacks; s++)
            if (p->stacks[s].sizing == DVM_SZ_PROGRAM && p->stacks[s].size_begin >= begin + len) p->stacks[s].size_begin += grow;
        if (td->body) td->body = (uint16_t)newpos[td->body];
        td->code_len = o;
        if (need_t) td->nregs++;
        rc = grow;
    }
    free(nn), free(nl), free(nc), free(newpos), free(remap), free(close), free(target), free(uses);
    return rc;
}

int dvm_unroll_loops(dvm_program *p, unsigned factor) {
    if (factor < 2 || factor > 256 || !p->lines || !p->cols) return 0;
    int n = 0;
    for (uint32_t ti = 0; ti < p->ntasks; ti++) {
        const dvm_task_desc *td = &p->tasks[ti];
        if (!td->code_len || (uint64_t)td->code_begin + td->code_len > p->nnodes) continue;
        int64_t g = unroll_task(p, ti, factor);
        if (g < 0) return -1;
        n += g > 0;
    }
    return n;
}
