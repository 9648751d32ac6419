/* ptx_brx.c: turns the CUDA interpreter's marked dispatch switches, in PTX, into jump tables.
 *
 * Why: nvcc never emits a jump table for a C switch. It lowers the interpreter's dispatch
 * switch (about 100 opcodes) to a binary tree of compares and branches, about 6 levels deep,
 * which every node pays for. PTX has an indexed branch, `brx.idx %r, $table;` through a
 * `.branchtargets` list, that ptxas assembles to one indirect jump. This host tool (C11, libc
 * only) rewrites nvcc's PTX (`nvcc -ptx -DDVM_GPU_BRX`) between nvcc and ptxas.
 *
 * The markers: with DVM_GPU_BRX, interp_cuda.cu plants comments through inline asm:
 *   // dvm-switch NAME %rN;   before the switch. %rN holds the opcode (0..255); the asm takes
 *                             it as "+r", so nvcc's compare tree compares exactly %rN;
 *   // dvm-case NAME NUM;     at the head of each case (NUM decimal), `default` for the default.
 *
 * What it does, per marked switch: it runs the compare tree on each of the 256 opcode values
 * (setp, integer mov/add/sub/and/or/xor/shl/shr, branches) from the marker until control enters
 * a block holding a case marker. Value v must reach case v, or the default when no value
 * reaches a case v. Then it inserts in front of the tree's first branch
 *     $dvm_btK: .branchtargets L0, L1, ..., L255;
 *     brx.idx %rN, $dvm_btK;
 * The old tree stays in the text, unreachable (ptxas drops it); everything else is copied byte
 * for byte. A case block that starts without a label (reached by falling through) gets one,
 * `$dvm_cLINE:` (LINE: its 0-based line index in the input).
 *
 * Exactness: for each opcode value the same instructions run as through the tree, minus the
 * branches and the tree-only setps (those whose predicate nothing but the tree's branches
 * reads; none are left out when code outside the tree can enter one of its blocks, since then
 * the tree stays reachable). Any other instruction the tree ran on the way (a phi copy nvcc
 * placed there, such as `mov.f32 %f538, 0f3F800000;`) runs in a trampoline, `$dvm_tK:` + those
 * lines + `bra.uni CASE;`, appended before the function's closing `}`, which the table points
 * at. A switch the tool cannot follow exactly (a compare it cannot evaluate, a predicated
 * instruction, a value reaching the wrong case...) stays a compare tree, and the tool says why.
 * `.loc` lines (-lineinfo) are skipped. New labels are `$dvm_...` unless the input already uses
 * that prefix (e.g. the tool's own output): then `$dvm1_...`, and so on, so they stay unique.
 *
 * usage: ptx_brx IN.ptx OUT.ptx [--report FILE]
 * Prints one line per switch and `ptx_brx: N of M switches rewritten` (--report: that line to
 * FILE too). Exit 0: OUT written (even if some switches stay compares); 1: I/O error or
 * malformed input; 2: usage error.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bytecode/hash.h"

#define NVAL 256        /* opcode values: the table's length */
#define MAX_STEPS 5000  /* lines one value's run may take before the switch is given up */

/* ---------------------------------------------------------------- memory, messages */

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ptx_brx: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *xrealloc(void *p, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) die("out of memory");
    void *q = realloc(p, n && size ? n * size : 1);
    if (!q) die("out of memory");
    return q;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die("out of memory");
    return p;
}

/* Makes room for element `cnt` of a growing array. */
#define GROW(arr, cnt, cap)                                                  \
    do {                                                                     \
        if ((size_t)(cnt) >= (cap)) {                                        \
            (cap) = (cap) ? 2 * (cap) : 16;                                  \
            (arr) = xrealloc((arr), (cap), sizeof *(arr));                   \
        }                                                                    \
    } while (0)

typedef struct {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) {
            if (cap > SIZE_MAX / 2) die("out of memory");
            cap *= 2;
        }
        b->p = xrealloc(b->p, cap, 1);
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) die("formatting failed");
    if ((size_t)n < sizeof tmp) {
        sb_add(b, tmp, (size_t)n);
        return;
    }
    char *big = xrealloc(NULL, (size_t)n + 1, 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_add(b, big, (size_t)n);
    free(big);
}

/* ---------------------------------------------------------------- a string -> int map */

typedef struct {
    const char *k; /* points into the input; NULL: empty slot */
    size_t n;
    int v;
} ment;
typedef struct {
    ment *e;
    size_t cap, cnt; /* cap: a power of two */
} smap;

static uint64_t hash_bytes(const char *s, size_t n) {
    const uint64_t h = dvm_fnv1a(DVM_FNV_BASIS, s, n);
    return h ^ (h >> 29);
}

static int *smap_find(const smap *m, const char *k, size_t n) {
    if (!m->cap) return NULL;
    size_t i = (size_t)hash_bytes(k, n) & (m->cap - 1);
    for (;;) {
        ment *e = &m->e[i];
        if (!e->k) return NULL;
        if (e->n == n && memcmp(e->k, k, n) == 0) return &e->v;
        i = (i + 1) & (m->cap - 1);
    }
}

/* The value of k; when absent, k is added with value v (replace: overwrite when present). */
static int smap_put(smap *m, const char *k, size_t n, int v, bool replace) {
    if ((m->cnt + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        if (cap < m->cap) die("out of memory");
        ment *e = xcalloc(cap, sizeof *e);
        for (size_t j = 0; j < m->cap; j++) {
            if (!m->e[j].k) continue;
            size_t i = (size_t)hash_bytes(m->e[j].k, m->e[j].n) & (cap - 1);
            while (e[i].k) i = (i + 1) & (cap - 1);
            e[i] = m->e[j];
        }
        free(m->e);
        m->e = e;
        m->cap = cap;
    }
    size_t i = (size_t)hash_bytes(k, n) & (m->cap - 1);
    for (;;) {
        ment *e = &m->e[i];
        if (!e->k) {
            e->k = k;
            e->n = n;
            e->v = v;
            m->cnt++;
            return v;
        }
        if (e->n == n && memcmp(e->k, k, n) == 0) {
            if (replace) e->v = v;
            return e->v;
        }
        i = (i + 1) & (m->cap - 1);
    }
}

/* ---------------------------------------------------------------- the input's lines */

static const char *in_name;
static char *src;       /* the whole input */
static size_t src_n;
static size_t *loff;    /* line i starts at src + loff[i]; lines are split at '\n' */
static int nlines;      /* count of '\n' + 1, as a split at '\n' gives */

/* Line i without its '\n' (the bytes written back). */
static const char *line_raw(int i, size_t *n) {
    size_t end = i + 1 < nlines ? loff[i + 1] - 1 : src_n;
    *n = end - loff[i];
    return src + loff[i];
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_idc(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '$'; }
static bool is_id0(char c) { return is_alpha(c) || c == '_' || c == '$'; }
static bool is_regc(char c) { return is_idc(c) || c == '.'; } /* %tid.x */

/* Line i for parsing: without leading and trailing white space (a '\r' included). */
static const char *line_text(int i, size_t *n, size_t *col) {
    size_t len;
    const char *s = line_raw(i, &len);
    size_t a = 0;
    while (a < len && is_ws(s[a])) a++;
    while (len > a && is_ws(s[len - 1])) len--;
    *n = len - a;
    if (col) *col = a;
    return s + a;
}

static bool starts(const char *s, const char *e, const char *w) {
    size_t n = strlen(w);
    return (size_t)(e - s) >= n && memcmp(s, w, n) == 0;
}

static const char *skip_ws(const char *s, const char *e) {
    while (s < e && is_ws(*s)) s++;
    return s;
}

/* ---------------------------------------------------------------- parsed lines */

enum { K_BLANK, K_CASE, K_LABEL, K_BRANCH, K_INSN, K_OTHER };
enum { O_UNK, O_SETP, O_MOV, O_ARITH, O_STOP };
enum { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE };
enum { A_ADD, A_SUB, A_AND, A_OR, A_XOR, A_SHL, A_SHR };
enum { V_UNKNOWN, V_REG, V_IMM };

typedef struct {
    uint8_t kind;
    int reg;
    uint64_t imm;
} opnd;

typedef struct {
    uint8_t kind;       /* K_* */
    uint8_t op;         /* K_INSN: O_* */
    uint8_t sub;        /* O_SETP: C_*; O_ARITH: A_* */
    uint8_t tcls;       /* the type: 's', 'u', 'b', 'p' (pred) */
    uint8_t width;      /* 1 (pred), 8, 16, 32, 64 */
    bool neg;           /* @!%p */
    bool setp;          /* a setp of any form: its first operand's registers are definitions */
    int guard;          /* the guard's register id, -1: none */
    int target;         /* K_BRANCH: the target label's line, -1: not in the function */
    const char *name;   /* K_LABEL: the label; K_BRANCH: the target; K_CASE: the switch name */
    size_t name_n;
    int casenum;        /* K_CASE: 0..255, -1 default, -2 anything else */
    const char *num;    /* K_CASE: the number's text */
    size_t num_n;
    int dst, ndst;      /* registers its first operand names: F->dpool[dst .. dst+ndst) */
    int setp_pred;      /* a setp with one destination: that register, else -1 */
    size_t ops_col, fo_end; /* K_INSN: columns of the operands and of the first one's end */
    opnd a, b;          /* O_SETP, O_MOV, O_ARITH: the sources */
} pline;

typedef struct {
    int id;             /* $dvm_tID */
    int bs;             /* the case block's start line */
    int *rec;           /* the lines it repeats */
    int nrec;
    uint64_t h;
} tramp;

typedef struct {
    int hdr, open, close; /* the header line, the `{` line, the `}` line */
    bool ready;
    int base, n;          /* the parsed lines: [base, base + n) = (open, close) */
    pline *pl;
    smap labels;          /* label -> line */
    smap regs;            /* register -> id */
    int nregs;
    int *dpool;
    size_t dpool_n, dpool_cap;
    int *bcase;           /* block_case memo: -2 not yet */
    int *visit, *enter;   /* per line: the last switch (stamp) whose runs took that branch / entered that label */
    int stamp;
    int *entered;         /* the labels the current switch's runs entered */
    size_t nentered, entered_cap;
    bool term;            /* the last code line before `}` never falls through */
    bool reads_ready;     /* reads of setp predicates: pr_start[reg] .. pr_start[reg+1] in pr_lines */
    int *pr_start, *pr_lines;
    bool refs_ready;      /* references to labels: lr_start[line-base] .. in lr_lines */
    int *lr_start, *lr_lines;
    tramp *tr;
    size_t ntr, trcap;
} func_t;

static func_t *funcs;
static size_t nfuncs, funcs_cap;

static pline *PL(func_t *F, int li) { return &F->pl[li - F->base]; }

static int reg_id(func_t *F, const char *s, size_t n) {
    int id = smap_put(&F->regs, s, n, F->nregs, false);
    if (id == F->nregs) {
        if (F->nregs == INT32_MAX) die("%s: too many registers", in_name);
        F->nregs++;
    }
    return id;
}

/* A register token at s: '%' and identifier characters; returns its end, or s. */
static const char *reg_end(const char *s, const char *e) {
    if (s >= e || *s != '%') return s;
    const char *t = s + 1;
    while (t < e && is_regc(*t)) t++;
    return t - s > 1 ? t : s;
}

/* A PTX integer literal, all of [s, e): [-](0x.. | 0b.. | 0[0-7]* | [1-9][0-9]*)[U]. */
static bool parse_int(const char *s, const char *e, uint64_t *out) {
    bool neg = false;
    if (s < e && *s == '-') {
        neg = true;
        s++;
    }
    if (s < e && e[-1] == 'U') e--;
    if (s >= e || !is_digit(*s)) return false;
    unsigned base = 10;
    if (*s == '0' && e - s > 1) {
        if (s[1] == 'x' || s[1] == 'X') base = 16, s += 2;
        else if (s[1] == 'b' || s[1] == 'B') base = 2, s += 2;
        else base = 8, s += 1;
        if (s >= e) return false;
    }
    uint64_t v = 0;
    for (; s < e; s++) {
        unsigned d;
        char c = *s;
        if (is_digit(c)) d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
        else return false;
        if (d >= base) return false;
        if (v > (UINT64_MAX - d) / base) return false;
        v = v * base + d;
    }
    *out = neg ? (uint64_t)0 - v : v;
    return true;
}

static opnd parse_opnd(func_t *F, const char *s, const char *e) {
    opnd o = {V_UNKNOWN, -1, 0};
    if (s < e && *s == '%') {
        if (reg_end(s, e) == e) {
            o.kind = V_REG;
            o.reg = reg_id(F, s, (size_t)(e - s));
        }
    } else if (parse_int(s, e, &o.imm)) {
        o.kind = V_IMM;
    }
    return o;
}

/* A type suffix: s8..s64, u8..u64, b8..b64, pred. */
static bool parse_type(const char *s, const char *e, uint8_t *cls, uint8_t *width) {
    if (e - s == 4 && memcmp(s, "pred", 4) == 0) {
        *cls = 'p';
        *width = 1;
        return true;
    }
    if (e - s < 2 || (*s != 's' && *s != 'u' && *s != 'b')) return false;
    size_t n = (size_t)(e - s - 1);
    int w;
    if (n == 1 && s[1] == '8') w = 8;
    else if (n == 2 && memcmp(s + 1, "16", 2) == 0) w = 16;
    else if (n == 2 && memcmp(s + 1, "32", 2) == 0) w = 32;
    else if (n == 2 && memcmp(s + 1, "64", 2) == 0) w = 64;
    else return false;
    *cls = (uint8_t)*s;
    *width = (uint8_t)w;
    return true;
}

static bool word_is(const char *s, const char *e, const char *w) {
    return (size_t)(e - s) == strlen(w) && memcmp(s, w, (size_t)(e - s)) == 0;
}

/* `// dvm-KIND NAME ARG;` -> NAME and ARG; false if the comment is not one. */
static bool parse_marker(const char *s, const char *e, const char *kind, const char **name, size_t *name_n,
                         const char **arg, size_t *arg_n) {
    if (!starts(s, e, "//")) return false;
    s = skip_ws(s + 2, e);
    if (!starts(s, e, kind)) return false;
    s += strlen(kind);
    if (s >= e || !is_ws(*s)) return false;
    s = skip_ws(s, e);
    const char *n0 = s;
    while (s < e && !is_ws(*s)) s++;
    *name = n0;
    *name_n = (size_t)(s - n0);
    s = skip_ws(s, e);
    const char *a0 = s;
    while (s < e && !is_ws(*s) && *s != ';') s++;
    *arg = a0;
    *arg_n = (size_t)(s - a0);
    if (!*name_n || !*arg_n || s >= e || *s != ';') return false;
    return true;
}

static bool is_marker_comment(const char *s, const char *e, const char *kind) {
    if (!starts(s, e, "//")) return false;
    s = skip_ws(s + 2, e);
    return starts(s, e, kind) && (s + strlen(kind) == e || is_ws(s[strlen(kind)]));
}

static void parse_line(func_t *F, int li) {
    pline *p = PL(F, li);
    memset(p, 0, sizeof *p);
    p->guard = p->target = p->setp_pred = -1;
    p->a.reg = p->b.reg = -1;
    size_t n, col;
    const char *s = line_text(li, &n, &col), *e = s + n, *line0 = s - col;
    if (s == e) return; /* K_BLANK */
    if (starts(s, e, "//")) {
        const char *nm, *num;
        size_t nm_n, num_n;
        if (parse_marker(s, e, "dvm-case", &nm, &nm_n, &num, &num_n)) {
            p->kind = K_CASE;
            p->name = nm;
            p->name_n = nm_n;
            p->num = num;
            p->num_n = num_n;
            p->casenum = -2;
            if (word_is(num, num + num_n, "default")) {
                p->casenum = -1;
            } else if (num_n <= 3 && is_digit(num[0]) && (num[0] != '0' || num_n == 1)) {
                int v = 0;
                size_t j = 0;
                while (j < num_n && is_digit(num[j])) v = v * 10 + (num[j++] - '0');
                if (j == num_n && v < NVAL) p->casenum = v;
            }
        } else if (is_marker_comment(s, e, "dvm-case")) { /* malformed: a case of no switch */
            p->kind = K_CASE;
            p->casenum = -2;
            p->num = "?";
            p->num_n = 1;
        }
        return;
    }
    /* .loc (debug line info, -lineinfo): no effect on what runs */
    if (starts(s, e, ".loc") && (e - s == 4 || is_ws(s[4]))) return;
    if (is_id0(*s)) { /* a label alone on its line */
        const char *t = s;
        while (t < e && is_idc(*t)) t++;
        if (t < e && *t == ':') {
            const char *u = skip_ws(t + 1, e);
            if (u == e || starts(u, e, "//")) {
                p->kind = K_LABEL;
                p->name = s;
                p->name_n = (size_t)(t - s);
                return;
            }
        }
    }
    p->kind = K_OTHER;
    const char *t = s;
    if (*t == '@') { /* the guard */
        t++;
        if (t < e && *t == '!') {
            p->neg = true;
            t++;
        }
        const char *r = reg_end(t, e);
        if (r == t || r >= e || !is_ws(*r)) return;
        p->guard = reg_id(F, t, (size_t)(r - t));
        t = skip_ws(r, e);
    }
    if (t >= e || !(*t >= 'a' && *t <= 'z')) return;
    const char *op0 = t;
    while (t < e && (is_idc(*t) || *t == '.')) t++;
    const char *op1 = t;
    const char *semi = memchr(t, ';', (size_t)(e - t));
    if (!semi) return;
    const char *after = skip_ws(semi + 1, e);
    if (after != e && !starts(after, e, "//")) return; /* a second statement on the line */
    if (t < semi && !is_ws(*t)) return;                 /* `add.s32%r1` */
    const char *ops = skip_ws(t, semi), *ope = semi;
    while (ope > ops && is_ws(ope[-1])) ope--;

    if (word_is(op0, op1, "bra") || word_is(op0, op1, "bra.uni")) {
        const char *l = ops;
        while (l < ope && is_idc(*l)) l++;
        if (ops == ope || l != ope || !is_id0(*ops)) return; /* K_OTHER */
        p->kind = K_BRANCH;
        p->name = ops;
        p->name_n = (size_t)(ope - ops);
        return;
    }
    p->kind = K_INSN;
    p->op = O_UNK;
    p->ops_col = (size_t)(ops - line0);

    /* the operands, split at the commas outside {} [] () */
    const char *ob[4] = {0}, *oe[4] = {0};
    int nops = 0, depth = 0;
    const char *o = ops;
    for (const char *c = ops; c <= ope; c++) {
        if (c == ope || (*c == ',' && depth == 0)) {
            if (nops < 4) {
                const char *x = o, *y = c;
                x = skip_ws(x, y);
                while (y > x && is_ws(y[-1])) y--;
                ob[nops] = x;
                oe[nops] = y;
            }
            nops++;
            o = c + 1;
        } else if (*c == '{' || *c == '[' || *c == '(') {
            depth++;
        } else if ((*c == '}' || *c == ']' || *c == ')') && depth > 0) {
            depth--;
        }
    }
    if (ops == ope) nops = 0;
    p->fo_end = nops ? (size_t)(oe[0] - line0) : p->ops_col;

    /* the first operand's registers: what the instruction writes (for an instruction that
       does not, such as a store, its first operand is an address in [], or nothing) */
    p->dst = (int)F->dpool_n;
    if (nops && ob[0] < oe[0] && *ob[0] != '[' && *ob[0] != '(') {
        for (const char *c = ob[0]; c < oe[0];) {
            const char *r = reg_end(c, oe[0]);
            if (r == c) {
                c++;
                continue;
            }
            GROW(F->dpool, F->dpool_n, F->dpool_cap);
            F->dpool[F->dpool_n++] = reg_id(F, c, (size_t)(r - c));
            p->ndst++;
            c = r;
        }
    }
    bool one_dst = p->ndst == 1 && reg_end(ob[0], oe[0]) == oe[0];

    /* the opcode's parts */
    const char *part[4] = {0}, *parte[4] = {0};
    int np = 0;
    for (const char *c = op0, *start = op0; c <= op1; c++) {
        if (c == op1 || *c == '.') {
            if (np < 4) {
                part[np] = start;
                parte[np] = c;
            }
            np++;
            start = c + 1;
        }
    }
    const char *b0 = part[0], *b1 = parte[0];
    if (word_is(b0, b1, "ret") || word_is(b0, b1, "exit") || word_is(b0, b1, "trap") || word_is(b0, b1, "brx")) {
        p->op = O_STOP;
        return;
    }
    if (word_is(b0, b1, "setp")) {
        p->setp = true;
        if (one_dst) p->setp_pred = F->dpool[p->dst];
        static const char *const cmps[] = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"};
        if (np != 3 || nops != 3 || !one_dst) return;
        int c = -1;
        for (int k = 0; k < 10; k++)
            if (word_is(part[1], parte[1], cmps[k])) c = k;
        if (c < 0 || !parse_type(part[2], parte[2], &p->tcls, &p->width) || p->tcls == 'p') return;
        p->sub = (uint8_t)(c < 6 ? c : c - 4); /* lo ls hi hs: lt le gt ge (unsigned types) */
        p->op = O_SETP;
        p->a = parse_opnd(F, ob[1], oe[1]);
        p->b = parse_opnd(F, ob[2], oe[2]);
        return;
    }
    if (np != 2 || !one_dst || !parse_type(part[1], parte[1], &p->tcls, &p->width)) return;
    if (word_is(b0, b1, "mov")) {
        if (nops != 2) return;
        p->op = O_MOV;
        p->a = parse_opnd(F, ob[1], oe[1]);
        return;
    }
    static const char *const ariths[] = {"add", "sub", "and", "or", "xor", "shl", "shr"};
    int a = -1;
    for (int k = 0; k < 7; k++)
        if (word_is(b0, b1, ariths[k])) a = k;
    if (a < 0 || nops != 3) return;
    if (p->tcls == 'p' && a != A_AND && a != A_OR && a != A_XOR) return;
    if (p->width == 8) return; /* no 8-bit arithmetic in PTX */
    p->op = O_ARITH;
    p->sub = (uint8_t)a;
    p->a = parse_opnd(F, ob[1], oe[1]);
    p->b = parse_opnd(F, ob[2], oe[2]);
}

/* Parses a function's body once it holds a switch. */
static void analyse(func_t *F) {
    if (F->ready) return;
    F->ready = true;
    F->base = F->open + 1;
    F->n = F->close - F->base;
    F->pl = xcalloc((size_t)F->n, sizeof *F->pl);
    F->bcase = xcalloc((size_t)F->n, sizeof *F->bcase);
    F->visit = xcalloc((size_t)F->n, sizeof *F->visit);
    F->enter = xcalloc((size_t)F->n, sizeof *F->enter);
    for (int li = F->base; li < F->close; li++) {
        parse_line(F, li);
        F->bcase[li - F->base] = -2;
        pline *p = PL(F, li);
        if (p->kind == K_LABEL) smap_put(&F->labels, p->name, p->name_n, li, true);
    }
    for (int li = F->base; li < F->close; li++) {
        pline *p = PL(F, li);
        if (p->kind != K_BRANCH) continue;
        int *t = smap_find(&F->labels, p->name, p->name_n);
        p->target = t ? *t : -1;
    }
    F->term = false;
    for (int li = F->close - 1; li >= F->base; li--) {
        pline *p = PL(F, li);
        if (p->kind == K_BLANK || p->kind == K_CASE) continue;
        F->term = p->guard < 0 && (p->kind == K_BRANCH || (p->kind == K_INSN && p->op == O_STOP));
        break;
    }
}

/* The lines that read each setp-defined predicate (any mention but a setp's destination). */
static void build_reads(func_t *F) {
    if (F->reads_ready) return;
    F->reads_ready = true;
    int nr = F->nregs;
    bool *isdef = xcalloc((size_t)nr, sizeof *isdef);
    for (int li = F->base; li < F->close; li++) {
        pline *p = PL(F, li);
        if (p->kind == K_INSN && p->setp)
            for (int k = 0; k < p->ndst; k++) isdef[F->dpool[p->dst + k]] = true;
    }
    F->pr_start = xcalloc((size_t)nr + 1, sizeof *F->pr_start);
    for (int pass = 0; pass < 2; pass++) {
        int *fill = NULL;
        if (pass == 1) {
            for (int r = 0; r < nr; r++) F->pr_start[r + 1] += F->pr_start[r];
            F->pr_lines = xcalloc((size_t)F->pr_start[nr] + 1, sizeof *F->pr_lines);
            fill = xcalloc((size_t)nr + 1, sizeof *fill);
            memcpy(fill, F->pr_start, (size_t)nr * sizeof *fill);
        }
        for (int li = F->base; li < F->close; li++) {
            pline *p = PL(F, li);
            size_t n;
            const char *s = line_raw(li, &n), *e = s + n;
            for (const char *c = s; c < e;) {
                const char *r = reg_end(c, e);
                if (r == c) {
                    c++;
                    continue;
                }
                int *id = smap_find(&F->regs, c, (size_t)(r - c));
                size_t at = (size_t)(c - s);
                c = r;
                if (!id || !isdef[*id]) continue;
                if (p->kind == K_INSN && p->setp && at >= p->ops_col && at < p->fo_end) continue; /* a definition */
                if (pass == 0) {
                    if (F->pr_start[*id + 1] == INT32_MAX) die("%s: too many predicate uses", in_name);
                    F->pr_start[*id + 1]++;
                } else {
                    F->pr_lines[fill[*id]++] = li;
                }
            }
        }
        free(fill);
    }
    free(isdef);
}

/* Every line that names each label (its own line aside), comments aside. */
static void build_refs(func_t *F) {
    if (F->refs_ready) return;
    F->refs_ready = true;
    int n = F->n;
    F->lr_start = xcalloc((size_t)n + 1, sizeof *F->lr_start);
    for (int pass = 0; pass < 2; pass++) {
        int *fill = NULL;
        if (pass == 1) {
            for (int k = 0; k < n; k++) F->lr_start[k + 1] += F->lr_start[k];
            F->lr_lines = xcalloc((size_t)F->lr_start[n] + 1, sizeof *F->lr_lines);
            fill = xcalloc((size_t)n + 1, sizeof *fill);
            memcpy(fill, F->lr_start, (size_t)n * sizeof *fill);
        }
        for (int li = F->base; li < F->close; li++) {
            size_t len;
            const char *s = line_raw(li, &len), *e = s + len;
            for (const char *c = s; c < e;) {
                if (c + 1 < e && c[0] == '/' && c[1] == '/') break;
                if (*c == '%' || *c == '.' || is_digit(*c)) { /* a register, a directive, a number */
                    c++;
                    while (c < e && is_regc(*c)) c++;
                    continue;
                }
                if (!is_id0(*c)) {
                    c++;
                    continue;
                }
                const char *t = c;
                while (t < e && is_idc(*t)) t++;
                int *L = smap_find(&F->labels, c, (size_t)(t - c));
                c = t;
                if (!L || *L == li) continue;
                if (pass == 0) {
                    if (F->lr_start[*L - F->base + 1] == INT32_MAX) die("%s: too many label uses", in_name);
                    F->lr_start[*L - F->base + 1]++;
                } else {
                    F->lr_lines[fill[*L - F->base]++] = li;
                }
            }
        }
        free(fill);
    }
}

/* The case marker of the block starting at line i (a label line or the line after a
   branch), before its first branch or next label; -1: none. */
static int block_case(func_t *F, int i) {
    if (i < F->base || i >= F->close) return -1;
    int *memo = &F->bcase[i - F->base];
    if (*memo != -2) return *memo;
    int j = i + (PL(F, i)->kind == K_LABEL), r = -1;
    for (; j < F->close; j++) {
        pline *p = PL(F, j);
        if (p->kind == K_LABEL || p->kind == K_BRANCH) break;
        if (p->kind == K_CASE) {
            r = j;
            break;
        }
        if (p->kind == K_INSN && p->op == O_STOP) break;
    }
    return *memo = r;
}

/* ---------------------------------------------------------------- running the tree */

typedef struct {
    int mark;      /* the case marker's line */
    int bs;        /* the case block's start line */
    int rec, nrec; /* the lines run after `first`: recs[rec .. rec+nrec) */
} leaf_t;

typedef struct {
    uint64_t *val;
    uint32_t *gen;
    uint32_t cur;
    int *recs;
    size_t nrecs, recs_cap;
} simst;

static uint64_t mask_of(int w) { return w >= 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1; }

static int64_t sext(uint64_t x, int w) {
    x &= mask_of(w);
    uint64_t sign = (uint64_t)1 << (w - 1);
    if (!(x & sign)) return (int64_t)x;
    uint64_t mag = (~x & mask_of(w)) + 1; /* |x|, up to 2^(w-1) */
    return mag == ((uint64_t)1 << 63) ? INT64_MIN : -(int64_t)mag;
}

static bool get(const simst *S, opnd o, uint64_t *v) {
    if (o.kind == V_IMM) {
        *v = o.imm;
        return true;
    }
    if (o.kind == V_REG && S->gen[o.reg] == S->cur) {
        *v = S->val[o.reg];
        return true;
    }
    return false;
}

static void set(simst *S, int r, uint64_t v) {
    S->val[r] = v;
    S->gen[r] = S->cur;
}

/* Runs one instruction on the known values; what it writes becomes unknown unless computed. */
static void exec_insn(func_t *F, simst *S, const pline *p) {
    uint64_t a, b;
    int w = p->width;
    uint64_t m = mask_of(w);
    switch (p->op) {
    case O_SETP:
        if (get(S, p->a, &a) && get(S, p->b, &b)) {
            bool r;
            if (p->tcls == 's') {
                int64_t x = sext(a, w), y = sext(b, w);
                r = p->sub == C_EQ ? x == y : p->sub == C_NE ? x != y : p->sub == C_LT ? x < y
                  : p->sub == C_LE ? x <= y : p->sub == C_GT ? x > y : x >= y;
            } else {
                uint64_t x = a & m, y = b & m;
                r = p->sub == C_EQ ? x == y : p->sub == C_NE ? x != y : p->sub == C_LT ? x < y
                  : p->sub == C_LE ? x <= y : p->sub == C_GT ? x > y : x >= y;
            }
            set(S, F->dpool[p->dst], r);
            return;
        }
        break;
    case O_MOV:
        if (get(S, p->a, &a)) {
            set(S, F->dpool[p->dst], p->tcls == 'p' ? a != 0 : a & m);
            return;
        }
        break;
    case O_ARITH:
        if (get(S, p->a, &a) && get(S, p->b, &b)) {
            uint64_t r;
            if (p->tcls == 'p') {
                a = a != 0;
                b = b != 0;
                m = 1;
            }
            uint64_t sh = b & 0xFFFFFFFFu; /* shift amounts are .u32, clamped to the width */
            switch (p->sub) {
            case A_ADD: r = a + b; break;
            case A_SUB: r = a - b; break;
            case A_AND: r = a & b; break;
            case A_OR: r = a | b; break;
            case A_XOR: r = a ^ b; break;
            case A_SHL: r = sh >= (uint64_t)w ? 0 : a << sh; break;
            default: /* A_SHR */
                if (p->tcls == 's') {
                    uint64_t x = a & m;
                    bool negv = (x >> (w - 1)) & 1;
                    if (sh >= (uint64_t)w) sh = (uint64_t)w - 1;
                    r = x >> sh;
                    if (negv) r |= ~(m >> sh) & m;
                } else {
                    r = sh >= (uint64_t)w ? 0 : (a & m) >> sh;
                }
                break;
            }
            set(S, F->dpool[p->dst], r & m);
            return;
        }
        break;
    default:
        break;
    }
    for (int k = 0; k < p->ndst; k++) S->gen[F->dpool[p->dst + k]] = 0;
}

static void quote_line(char *out, size_t outn, int li) {
    size_t n;
    const char *s = line_text(li, &n, NULL);
    if (n > 60) snprintf(out, outn, "%.57s...", s);
    else snprintf(out, outn, "%.*s", (int)n, s);
}

/* Runs the tree on value v from the line after the marker; false + why when it cannot. */
static bool simulate(func_t *F, simst *S, int mline, int first, int opreg, unsigned v, leaf_t *leaf, char *why,
                     size_t whyn) {
    char q[80];
    if (++S->cur == 0) {
        memset(S->gen, 0, (size_t)F->nregs * sizeof *S->gen);
        S->cur = 1;
    }
    set(S, opreg, v);
    leaf->rec = (int)S->nrecs;
    leaf->nrec = 0;
    int k = mline + 1, bstart = -1;
    bool past = false;
    for (int steps = 0; steps < MAX_STEPS; steps++) {
        if (k == first) past = true;
        if (past && bstart >= 0) {
            int c = block_case(F, bstart);
            if (c >= 0) {
                leaf->mark = c;
                leaf->bs = bstart;
                return true;
            }
            bstart = -1;
        }
        if (k < F->base || k >= F->close) {
            snprintf(why, whyn, "value %u runs off the end of the function", v);
            return false;
        }
        pline *p = PL(F, k);
        switch (p->kind) {
        case K_BLANK:
        case K_CASE:
            k++;
            continue;
        case K_LABEL:
            if (past) {
                int c = block_case(F, k);
                if (c >= 0) {
                    leaf->mark = c;
                    leaf->bs = k;
                    return true;
                }
                if (F->enter[k - F->base] != F->stamp) {
                    F->enter[k - F->base] = F->stamp;
                    GROW(F->entered, F->nentered, F->entered_cap);
                    F->entered[F->nentered++] = k;
                }
            }
            k++;
            continue;
        case K_BRANCH: {
            if (past) F->visit[k - F->base] = F->stamp;
            bool take = true;
            if (p->guard >= 0) {
                if (S->gen[p->guard] != S->cur) {
                    size_t n;
                    const char *s = line_text(k, &n, NULL);
                    const char *g = memchr(s, '%', n), *ge = g ? reg_end(g, s + n) : NULL;
                    snprintf(why, whyn, "value %u: predicate %.*s not known at line %d", v, g ? (int)(ge - g) : 1,
                             g ? g : "?", k + 1);
                    return false;
                }
                take = (S->val[p->guard] != 0) != p->neg;
            }
            if (take) {
                if (p->target < 0) {
                    snprintf(why, whyn, "no label %.*s (line %d) in the function", (int)p->name_n, p->name, k + 1);
                    return false;
                }
                k = p->target;
            } else {
                k++;
                bstart = k;
            }
            continue;
        }
        case K_INSN:
            if (p->guard >= 0) {
                quote_line(q, sizeof q, k);
                snprintf(why, whyn, "value %u: predicated instruction at line %d: %s", v, k + 1, q);
                return false;
            }
            if (p->op == O_STOP) {
                quote_line(q, sizeof q, k);
                snprintf(why, whyn, "value %u reaches `%s` at line %d", v, q, k + 1);
                return false;
            }
            if (past) {
                GROW(S->recs, S->nrecs, S->recs_cap);
                S->recs[S->nrecs++] = k;
                leaf->nrec++;
            }
            exec_insn(F, S, p);
            k++;
            continue;
        default:
            quote_line(q, sizeof q, k);
            snprintf(why, whyn, "value %u: cannot follow line %d: %s", v, k + 1, q);
            return false;
        }
    }
    snprintf(why, whyn, "value %u reaches no case within %d steps", v, MAX_STEPS);
    return false;
}

/* Control enters every tree block (label) that the runs entered only from the tree's own
   branches: then, once the brx is in, the tree is unreachable, and its branches with it. */
static bool tree_closed(func_t *F) {
    build_refs(F);
    for (size_t e = 0; e < F->nentered; e++) {
        int li = F->entered[e], i = li - F->base;
        for (int r = F->lr_start[i]; r < F->lr_start[i + 1]; r++) {
            int from = F->lr_lines[r];
            if (PL(F, from)->kind != K_BRANCH || F->visit[from - F->base] != F->stamp) return false;
        }
        int j = li - 1; /* falling into the label from the line before */
        while (j >= F->base && (PL(F, j)->kind == K_BLANK || PL(F, j)->kind == K_CASE)) j--;
        if (j < F->base) return false;
        pline *p = PL(F, j);
        bool falls = !(p->guard < 0 && (p->kind == K_BRANCH || (p->kind == K_INSN && p->op == O_STOP)));
        if (falls && !(p->kind == K_BRANCH && F->visit[j - F->base] == F->stamp)) return false;
    }
    return true;
}

/* A setp the trampolines need not repeat: only the tree's branches read its predicate. */
static bool droppable(func_t *F, int li) {
    pline *p = PL(F, li);
    if (p->kind != K_INSN || !p->setp || p->setp_pred < 0) return false;
    build_reads(F);
    int r = p->setp_pred;
    for (int k = F->pr_start[r]; k < F->pr_start[r + 1]; k++) {
        int at = F->pr_lines[k];
        if (at < F->base || at >= F->close || F->visit[at - F->base] != F->stamp) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- output */

static char *prefix;      /* of every new label: "$dvm_" unless the input already uses it */
static sbuf *ins_at;      /* per line: text to insert before it (lazily allocated) */
static bool *clabel_at;   /* per line: gets a $dvm_cLINE label */
static func_t **close_at; /* per line: the function it closes, for its trampolines */
static int bt_count, tr_count;

static void label_name(sbuf *b, func_t *F, int bs) {
    pline *p = PL(F, bs);
    if (p->kind == K_LABEL) sb_add(b, p->name, p->name_n);
    else sb_printf(b, "%sc%d", prefix, bs);
}

static bool same_text(int a, int b) {
    size_t na, nb;
    const char *sa = line_raw(a, &na), *sb = line_raw(b, &nb);
    return na == nb && memcmp(sa, sb, na) == 0;
}

static int get_tramp(func_t *F, int bs, const int *rec, int nrec) {
    uint64_t h = hash_bytes((const char *)&bs, sizeof bs);
    for (int k = 0; k < nrec; k++) {
        size_t n;
        const char *s = line_raw(rec[k], &n);
        h = (h * 31) ^ hash_bytes(s, n);
    }
    for (size_t t = 0; t < F->ntr; t++) {
        tramp *T = &F->tr[t];
        if (T->h != h || T->bs != bs || T->nrec != nrec) continue;
        int k = 0;
        while (k < nrec && same_text(T->rec[k], rec[k])) k++;
        if (k == nrec) return T->id;
    }
    GROW(F->tr, F->ntr, F->trcap);
    tramp *T = &F->tr[F->ntr++];
    if (tr_count == INT32_MAX) die("%s: too many trampolines", in_name);
    T->id = tr_count++;
    T->bs = bs;
    T->nrec = nrec;
    T->h = h;
    T->rec = xcalloc((size_t)nrec, sizeof *T->rec);
    memcpy(T->rec, rec, (size_t)nrec * sizeof *rec);
    return T->id;
}

/* ---------------------------------------------------------------- one switch */

static func_t *func_of(int li) {
    size_t lo = 0, hi = nfuncs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (funcs[mid].close <= li) lo = mid + 1;
        else hi = mid;
    }
    if (lo < nfuncs && funcs[lo].open < li && li < funcs[lo].close) return &funcs[lo];
    return NULL;
}

static bool name_eq(const char *a, size_t an, const char *b, size_t bn) { return an == bn && memcmp(a, b, an) == 0; }

/* Rewrites the switch marked at line m; false + why when it stays a compare tree. */
/* The table covers 0..255: the opcode register must be the low 8 bits of something, set in the
   marker's block (`and.b32 %rN, X, 255`, as N_OP is), or a larger value would jump past the
   table (brx.idx: undefined) where the tree sent it to the default. */
static bool masked_to_byte(func_t *F, int m, int opreg) {
    for (int k = m - 1; k > F->open; k--) {
        const pline *p = PL(F, k);
        if (p->kind == K_LABEL || p->kind == K_BRANCH) return false;
        if (p->kind != K_INSN && p->kind != K_OTHER) continue;
        for (int j = 0; j < p->ndst; j++)
            if (F->dpool[p->dst + j] == opreg)
                return p->kind == K_INSN && p->op == O_ARITH && p->sub == A_AND && p->width == 32 && p->guard < 0 &&
                       ((p->b.kind == V_IMM && p->b.imm == 255) || (p->a.kind == V_IMM && p->a.imm == 255));
    }
    return false;
}

static bool do_switch(int m, const char *name, size_t name_n, const char *reg, size_t reg_n, int *ncases, int *ntramps,
                      char *why, size_t whyn) {
    func_t *F = func_of(m);
    if (!F) {
        snprintf(why, whyn, "the marker is not inside a function body");
        return false;
    }
    analyse(F);
    if (reg_end(reg, reg + reg_n) != reg + reg_n) {
        snprintf(why, whyn, "malformed marker (no register)");
        return false;
    }
    int first = -1;
    for (int k = m + 1; k < F->close && first < 0; k++) {
        pline *p = PL(F, k);
        size_t n;
        const char *t = line_text(k, &n, NULL), *e = t + n;
        const char *dot = memchr(t, '.', n);
        if ((p->kind == K_INSN && p->op == O_STOP && starts(t, e, "brx")) ||
            (dot && starts(dot, e, ".branchtargets"))) {
            snprintf(why, whyn, "already a jump table (line %d)", k + 1);
            return false;
        }
        if (p->kind == K_BRANCH) first = k;
        else if (p->kind == K_LABEL) {
            snprintf(why, whyn, "label %.*s (line %d) comes before the tree's first branch", (int)p->name_n, p->name,
                     k + 1);
            return false;
        }
    }
    if (first < 0) {
        snprintf(why, whyn, "no branch after the marker");
        return false;
    }
    int opreg = reg_id(F, reg, reg_n);
    if (!masked_to_byte(F, m, opreg)) {
        snprintf(why, whyn, "%.*s is not set by `and.b32 %.*s, X, 255` before the marker", (int)reg_n, reg, (int)reg_n,
                 reg);
        return false;
    }
    if (F->stamp == INT32_MAX) die("%s: too many switches", in_name);
    F->stamp++;
    F->nentered = 0;

    simst S = {0};
    S.val = xcalloc((size_t)F->nregs, sizeof *S.val);
    S.gen = xcalloc((size_t)F->nregs, sizeof *S.gen);
    leaf_t leaf[NVAL];
    bool ok = true;
    for (unsigned v = 0; v < NVAL && ok; v++) ok = simulate(F, &S, m, first, opreg, v, &leaf[v], why, whyn);

    /* value v must reach case v, or the default when no value reaches a case v */
    bool have[NVAL] = {false}, have_default = false;
    for (unsigned v = 0; v < NVAL && ok; v++) {
        pline *c = PL(F, leaf[v].mark);
        if (!c->name) {
            snprintf(why, whyn, "value %u reaches a malformed case marker (line %d)", v, leaf[v].mark + 1);
            ok = false;
        } else if (!name_eq(c->name, c->name_n, name, name_n)) {
            snprintf(why, whyn, "value %u reaches a case of switch %.*s (line %d)", v, (int)c->name_n, c->name,
                     leaf[v].mark + 1);
            ok = false;
        } else if (c->casenum >= 0) {
            have[c->casenum] = true;
        } else if (c->casenum == -1) {
            have_default = true;
        }
    }
    for (unsigned v = 0; v < NVAL && ok; v++) {
        pline *c = PL(F, leaf[v].mark);
        if (c->casenum == (int)v || (c->casenum == -1 && !have[v])) continue;
        snprintf(why, whyn, "value %u reaches case %.*s (line %d)", v, (int)c->num_n, c->num, leaf[v].mark + 1);
        ok = false;
    }
    if (ok && !have_default) {
        snprintf(why, whyn, "no value reaches a default case");
        ok = false;
    }

    /* drop the tree-only setps, when the tree is unreachable once the brx is in */
    if (ok) {
        bool closed = tree_closed(F);
        bool need_tr = false;
        for (unsigned v = 0; v < NVAL; v++) {
            if (!leaf[v].nrec) continue;
            int *r = S.recs + leaf[v].rec, n = 0;
            for (int k = 0; k < leaf[v].nrec; k++)
                if (!closed || !droppable(F, r[k])) r[n++] = r[k];
            leaf[v].nrec = n;
            need_tr |= n > 0;
        }
        if (need_tr && !F->term) {
            snprintf(why, whyn, "needs trampolines, but the function's last line (%d) is not a branch or return",
                     F->close);
            ok = false;
        }
    }

    if (ok) {
        sbuf tb = {0};
        int *used = xcalloc(NVAL, sizeof *used);
        int nused = 0;
        if (bt_count == INT32_MAX) die("%s: too many switches", in_name);
        int bt = bt_count++;
        sb_printf(&tb, "\t%sbt%d: .branchtargets ", prefix, bt);
        *ncases = have_default;
        for (unsigned v = 0; v < NVAL; v++) *ncases += have[v];
        for (unsigned v = 0; v < NVAL; v++) {
            int bs = leaf[v].bs;
            if (PL(F, bs)->kind != K_LABEL) clabel_at[bs] = true;
            if (v) sb_str(&tb, ", ");
            if (leaf[v].nrec) {
                int id = get_tramp(F, bs, S.recs + leaf[v].rec, leaf[v].nrec);
                sb_printf(&tb, "%st%d", prefix, id);
                int k = 0;
                while (k < nused && used[k] != id) k++;
                if (k == nused) used[nused++] = id;
            } else {
                label_name(&tb, F, bs);
            }
        }
        sb_printf(&tb, ";\n\tbrx.idx %.*s, %sbt%d;\n", (int)reg_n, reg, prefix, bt);
        sb_add(&ins_at[first], tb.p, tb.n);
        close_at[F->close] = F;
        *ntramps = nused;
        free(used);
        free(tb.p);
    }
    free(S.val);
    free(S.gen);
    free(S.recs);
    return ok;
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *f) {
    fputs("usage: ptx_brx IN.ptx OUT.ptx [--report FILE]\n"
          "  rewrites each switch marked `// dvm-switch NAME %rN;` in IN (its compare tree) into\n"
          "  one brx.idx through a 256-entry .branchtargets table; writes OUT, one line per switch\n"
          "  and `ptx_brx: N of M switches rewritten` (--report: that line to FILE too)\n",
          f);
}

static bool is_func_header(int li) {
    size_t n;
    const char *s = line_raw(li, &n), *e = s + n;
    for (;;) {
        if (s >= e || *s != '.') return false;
        const char *t = s;
        while (t < e && !is_ws(*t) && *t != '(') t++;
        if (word_is(s, t, ".entry") || word_is(s, t, ".func")) return true;
        if (!word_is(s, t, ".visible") && !word_is(s, t, ".weak") && !word_is(s, t, ".extern")) return false;
        s = skip_ws(t, e);
    }
}

static void find_functions(void) {
    for (int i = 0; i < nlines; i++) {
        if (!is_func_header(i)) continue;
        int j = i, open = -1;
        for (; j < nlines; j++) {
            size_t n;
            const char *t = line_text(j, &n, NULL);
            if (n == 1 && t[0] == '{') {
                open = j;
                break;
            }
            if (n && t[n - 1] == ';') break; /* a declaration */
            if (j > i && is_func_header(j))
                die("%s:%d: the function header at line %d has no body", in_name, j + 1, i + 1);
        }
        if (open < 0) {
            if (j >= nlines) die("%s:%d: the function header has no body", in_name, i + 1);
            i = j;
            continue;
        }
        int k = open + 1;
        for (; k < nlines; k++) {
            size_t n;
            const char *s = line_raw(k, &n);
            while (n && is_ws(s[n - 1])) n--;
            if (n == 1 && s[0] == '}') break;
        }
        if (k >= nlines) die("%s:%d: the function body opened here has no `}` at column 0", in_name, open + 1);
        GROW(funcs, nfuncs, funcs_cap);
        func_t *F = &funcs[nfuncs++];
        memset(F, 0, sizeof *F);
        F->hdr = i;
        F->open = open;
        F->close = k;
        i = k;
    }
}

static bool contains(const char *needle) {
    size_t n = strlen(needle);
    for (const char *p = src; (size_t)(src + src_n - p) >= n; p++) {
        p = memchr(p, needle[0], (size_t)(src + src_n - p));
        if (!p || (size_t)(src + src_n - p) < n) return false;
        if (memcmp(p, needle, n) == 0) return true;
    }
    return false;
}

static bool write_failed;

static void write_all(FILE *f, const char *s, size_t n) {
    if (n && fwrite(s, 1, n, f) != n) write_failed = true;
}

int main(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *report = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--report") == 0) {
            if (i + 1 >= argc || report) {
                fprintf(stderr, "ptx_brx: --report needs one FILE\n");
                usage(stderr);
                return 2;
            }
            report = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ptx_brx: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!in) {
            in = argv[i];
        } else if (!out) {
            out = argv[i];
        } else {
            fprintf(stderr, "ptx_brx: too many arguments (%s)\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!in || !out) {
        usage(stderr);
        return 2;
    }
    in_name = in;

    /* read */
    FILE *f = fopen(in, "rb");
    if (!f) die("cannot open %s: %s", in, strerror(errno));
    size_t cap = 1 << 16;
    src = xrealloc(NULL, cap, 1);
    for (;;) {
        if (src_n == cap) {
            if (cap > SIZE_MAX / 2) die("%s: too large", in);
            cap *= 2;
            src = xrealloc(src, cap, 1);
        }
        size_t got = fread(src + src_n, 1, cap - src_n, f);
        src_n += got;
        if (got == 0) break;
    }
    if (ferror(f)) die("cannot read %s: %s", in, strerror(errno));
    fclose(f);
    if (src_n >= (size_t)INT32_MAX) die("%s: too large (2 GB or more)", in);

    size_t lcap = 0;
    GROW(loff, 0, lcap);
    loff[0] = 0;
    nlines = 1;
    for (const char *p = src; (p = memchr(p, '\n', (size_t)(src + src_n - p))) != NULL; p++) {
        GROW(loff, nlines, lcap);
        loff[nlines++] = (size_t)(p - src) + 1;
    }
    find_functions();

    /* new labels: a prefix that nothing in the input uses, so that they are unique */
    prefix = xrealloc(NULL, 32, 1);
    snprintf(prefix, 32, "$dvm_");
    for (int k = 1; contains(prefix); k++) snprintf(prefix, 32, "$dvm%d_", k);

    ins_at = xcalloc((size_t)nlines, sizeof *ins_at);
    clabel_at = xcalloc((size_t)nlines, sizeof *clabel_at);
    close_at = xcalloc((size_t)nlines, sizeof *close_at);

    int nsw = 0, nok = 0;
    for (int i = 0; i < nlines; i++) {
        size_t n;
        const char *s = line_text(i, &n, NULL), *e = s + n;
        if (!is_marker_comment(s, e, "dvm-switch")) continue;
        nsw++;
        const char *name = "?", *reg = "";
        size_t name_n = 1, reg_n = 0;
        char why[512];
        int ncases = 0, ntramps = 0;
        bool ok;
        if (!parse_marker(s, e, "dvm-switch", &name, &name_n, &reg, &reg_n)) {
            snprintf(why, sizeof why, "malformed marker (expected `// dvm-switch NAME %%rN;`)");
            ok = false;
        } else {
            ok = do_switch(i, name, name_n, reg, reg_n, &ncases, &ntramps, why, sizeof why);
        }
        if (ok) {
            nok++;
            printf("ptx_brx: %.*s (line %d): jump table, %d cases, %d trampoline%s\n", (int)name_n, name, i + 1, ncases,
                   ntramps, ntramps == 1 ? "" : "s");
        } else {
            printf("ptx_brx: %.*s (line %d): left as compares: %s\n", (int)name_n, name, i + 1, why);
        }
    }

    /* write */
    FILE *o = fopen(out, "wb");
    if (!o) die("cannot write %s: %s", out, strerror(errno));
    sbuf tmp = {0};
    for (int i = 0; i < nlines; i++) {
        if (ins_at[i].n) write_all(o, ins_at[i].p, ins_at[i].n);
        if (clabel_at[i]) {
            tmp.n = 0;
            sb_printf(&tmp, "%sc%d:\n", prefix, i);
            write_all(o, tmp.p, tmp.n);
        }
        if (close_at[i]) {
            func_t *F = close_at[i];
            for (size_t t = 0; t < F->ntr; t++) {
                tramp *T = &F->tr[t];
                tmp.n = 0;
                sb_printf(&tmp, "%st%d:\n", prefix, T->id);
                for (int k = 0; k < T->nrec; k++) {
                    size_t n;
                    const char *s = line_raw(T->rec[k], &n);
                    sb_add(&tmp, s, n);
                    sb_str(&tmp, "\n");
                }
                sb_str(&tmp, "\tbra.uni \t");
                label_name(&tmp, F, T->bs);
                sb_str(&tmp, ";\n");
                write_all(o, tmp.p, tmp.n);
            }
        }
        size_t n;
        const char *s = line_raw(i, &n);
        write_all(o, s, n);
        if (i + 1 < nlines) write_all(o, "\n", 1);
    }
    bool werr = write_failed || ferror(o) != 0;
    if (fclose(o) != 0) werr = true;
    if (werr) {
        int err = errno;
        remove(out);
        die("cannot write %s: %s", out, strerror(err));
    }

    printf("ptx_brx: %d of %d switches rewritten\n", nok, nsw);
    if (report) {
        FILE *r = fopen(report, "w");
        if (!r) die("cannot write %s: %s", report, strerror(errno));
        fprintf(r, "ptx_brx: %d of %d switches rewritten\n", nok, nsw);
        bool rerr = ferror(r) != 0;
        if (fclose(r) != 0 || rerr) die("cannot write %s", report);
    }
    if (fflush(stdout) != 0) die("cannot write the standard output");

    /* tidy up (for the leak checkers) */
    for (size_t k = 0; k < nfuncs; k++) {
        func_t *F = &funcs[k];
        free(F->pl);
        free(F->labels.e);
        free(F->regs.e);
        free(F->dpool);
        free(F->bcase);
        free(F->visit);
        free(F->enter);
        free(F->entered);
        free(F->pr_start);
        free(F->pr_lines);
        free(F->lr_start);
        free(F->lr_lines);
        for (size_t t = 0; t < F->ntr; t++) free(F->tr[t].rec);
        free(F->tr);
    }
    for (int i = 0; i < nlines; i++) free(ins_at[i].p);
    free(funcs);
    free(ins_at);
    free(clabel_at);
    free(close_at);
    free(tmp.p);
    free(prefix);
    free(loff);
    free(src);
    return 0;
}
