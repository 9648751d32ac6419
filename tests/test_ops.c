/* test_ops.c: every task opcode's PROPS in bytecode/ops.def against what the CPU interpreter
 * does with it. Each opcode runs alone in a serial task, many times, on fuzzed operands and on
 * guarded arrays (array 0 the one it names, array 1 the register dump, array 2 a guard no node
 * names), and the test fails when
 *   - an opcode of effect DVM_E_PURE records an error, or one of another class never does;
 *   - an opcode changes array 0 without DVM_E_STORE or DVM_E_ATOMIC, or never changes it with
 *     one of them; or anything changes the guard;
 *   - what it leaves depends on array 0's contents without DVM_E_LOAD or DVM_E_ATOMIC, or never
 *     with one of them;
 *   - an access with two index operands (each out of bounds fails) lacks DVM_P_RANK2, or has it
 *     with one; or a DVM_P_ROW_ operand is not an index operand;
 *   - an atomic or load-and-add computes on the elements as f32 without DVM_P_F32, as i32 without
 *     DVM_P_I32, or the flag is there and the arithmetic is not.
 * So a new store opcode added to ops.def without DVM_E_STORE (or with DVM_E_PURE) fails here, as
 * does one whose element type or rank is not declared. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "vm/backend.h"

#include "tests/check.h"
#include "tests/progbuild.h"

static dvm_backend *be;
static const dvm_backend_vtbl *vt = &dvm_backend_cpu;
static dvm_heap heap;
static heap_be hb; /* the heap's allocator: the cpu backend (set in main) */
static const dvm_heap_mem hmem = {heap_be_alloc, heap_be_free, &hb};

enum { ELEMS = 16, DUMP = 4, GUARD = 8, REG0 = 10, IDXREG0 = 40, NUNI = 4 };
#define NO_OP 0xFFFFu

/* One run: the node (op, fields), the operand registers' values, array 0's contents, the
 * stack's capacity. What came: the status and error, the arrays afterwards. */
typedef struct trial {
    uint8_t op;
    uint16_t fld[4];
    uint32_t reg[4];      /* values of registers REG0 + k (operand k's register, if it names one) */
    uint32_t elem[ELEMS]; /* array 0, shape [4, 4] */
    int64_t cap;          /* stack 0's capacity */
    /* results */
    int rc;
    dvm_rt_error rt;
    uint32_t out[ELEMS], dump[DUMP], guard[GUARD];
} trial;

static void run(trial *T)
{
    char err[256] = "";
    reset();
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    for (int k = 0; k < 4; k++) CI((uint16_t)(REG0 + k), T->reg[k]);
    for (int k = 0; k < DUMP; k++) CI((uint16_t)(IDXREG0 + k), (uint32_t)k);
    consts[nk++] = T->reg[3]; /* K[0] for 'k' operands */
    const uint32_t at = nn - t->code_begin;
    dvm_node node = {T->op, (uint8_t)T->fld[0], T->fld[1], T->fld[2], T->fld[3]};
    /* a jump lands on the dump, the node right after: taken or not, the same path */
    const char *fmt = dvm_op_table[T->op].fmt;
    uint16_t *f3[3] = {&node.a, &node.b, &node.c};
    for (int k = 1; k < 4; k++)
        if (fmt[k] == 'J') *f3[k - 1] = (uint16_t)(at + 1);
    nodes[nn++] = node;
    for (int k = 0; k < DUMP; k++) N(DVM_OP_ST, 1, (uint16_t)(IDXREG0 + k), (uint16_t)(REG0 + k), 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    stacks[0].type = DVM_T_F32;
    ns = 1;

    dvm_program prog;
    dvm_variant_desc var;
    pb_program(&prog, &var, 3, NUNI);

    uint32_t *data[3] = {T->out, T->dump, T->guard};
    int64_t len[3] = {ELEMS, DUMP, GUARD};
    int32_t shape[3 * DVM_MAX_RANK] = {4, 4, 1, 1, DUMP, 1, 1, 1, GUARD, 1, 1, 1};
    memcpy(T->out, T->elem, sizeof T->out);
    for (int k = 0; k < DUMP; k++) T->dump[k] = 0xD0D0D0D0u;
    for (int k = 0; k < GUARD; k++) T->guard[k] = 0x6A6A6A6Au + (uint32_t)k;
    uint32_t uni[NUNI] = {1, 2, 3, 4};
    dvm_buffer *bufs[3] = {0};
    for (int i = 0; i < 3; i++)
        if (vt->alloc(be, (size_t)len[i] * 4, &bufs[i], err, sizeof err) ||
            vt->write(be, bufs[i], 0, data[i], (size_t)len[i] * 4, err, sizeof err)) {
            printf("FAIL alloc/write: %s\n", err);
            exit(1);
        }
    dvm_loaded *ld = NULL;
    if (vt->load(be, &prog, &ld, err, sizeof err)) {
        printf("FAIL load: %s\n", err);
        exit(1);
    }
    dvm_exec x;
    memset(&x, 0, sizeof x);
    x.prog = &prog;
    x.loaded = ld;
    x.var = &var;
    x.nslots = 3;
    x.arrays = bufs;
    x.arr_len = len;
    x.arr_shape = shape;
    x.uniforms = uni;
    x.nuniforms = NUNI;
    x.nthread_slots = vt->slots(be, &x);
    int64_t off[1], caps[1] = {T->cap};
    dvm_heap_layout L = {0, 0, 0, 0};
    if (dvm_heap_layout_compute(caps, 1, x.nthread_slots, off, &L, err, sizeof err) ||
        dvm_heap_reserve(&heap, &hmem, (size_t)L.total_words * 4, err, sizeof err)) {
        printf("FAIL heap: %s\n", err);
        exit(1);
    }
    x.heap = heap.buf;
    x.stride = L.stride;
    x.stack_off = off;
    x.stack_cap = caps;
    x.nstacks = 1;
    memset(&T->rt, 0, sizeof T->rt);
    T->rc = vt->exec(be, &x, &T->rt, err, sizeof err);
    if (T->rc < 0) {
        printf("FAIL exec of %s: %s\n", dvm_op_table[T->op].name, err);
        exit(1);
    }
    for (int i = 0; i < 3; i++) {
        vt->read(be, bufs[i], 0, data[i], (size_t)len[i] * 4, err, sizeof err);
        vt->free(be, bufs[i]);
    }
    vt->unload(be, ld);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static uint32_t fuzz_value(void)
{
    static const uint32_t pool[] = {0, 1, 2, 3, 4, 15, 16, 0xFFFFFFFFu, 0xFFFFFFFEu, 1000, 0x7FFFFFFFu, 0x80000000u,
                                    0x3F800000u /* 1.0f */, 0xBF800000u /* -1.0f */, 0x40000000u, 0x7FC00000u /* nan */};
    return rnd() % 3 ? pool[rnd() % (sizeof pool / sizeof pool[0])] : rnd();
}

/* Operand fields for format letter l at field k, fuzzed. */
static uint16_t fuzz_field(char l, int k)
{
    switch (l) {
    case 'w': case 'r': case 'm': return (uint16_t)(REG0 + k);
    case 'o': return DVM_OFS_MAKE(REG0 + k, (int)(rnd() % 5) - 2);
    case 'i': return rnd() % 2 ? (uint16_t)rnd() : (uint16_t)(rnd() % 5 - 2);
    case 'A': return 0;
    case 'X': return (uint16_t)(rnd() % 2);
    case 'U': case 'V': case 'T': return (uint16_t)(rnd() % NUNI);
    case 'E': return 1; /* "boom" */
    default: return 0; /* '-', 'k' (K[0]), 'S' (stack 0), 'n', 'J' (run() sets it) */
    }
}

/* The operand fields that name a register (r, m, o; w too), by field. */
static int names_reg(char l) { return l == 'r' || l == 'm' || l == 'o' || l == 'w'; }

static void fuzz(trial *T, uint8_t op)
{
    const char *fmt = dvm_op_table[op].fmt;
    memset(T, 0, sizeof *T);
    T->op = op;
    for (int k = 0; k < 4; k++) {
        T->fld[k] = fuzz_field(fmt[k], k);
        T->reg[k] = fuzz_value();
        /* an index in bounds more often than not */
        if (rnd() % 2) T->reg[k] = rnd() % 5;
    }
    for (int i = 0; i < ELEMS; i++) T->elem[i] = fuzz_value();
    T->cap = rnd() % 2;
}

static int same_arr(const uint32_t *a, const uint32_t *b, int n) { return memcmp(a, b, (size_t)n * 4) == 0; }

/* Operand k (1..3) of access op is an index: out of bounds there (the rest 0), the node fails
 * with an out-of-bounds error. Returns the axis the error names (-1 flat) or -2 when none. */
static int index_axis(uint8_t op, int k)
{
    const char *fmt = dvm_op_table[op].fmt;
    if (!names_reg(fmt[k]) || fmt[k] == 'w') return -2;
    trial T;
    memset(&T, 0, sizeof T);
    T.op = op;
    for (int j = 0; j < 4; j++) T.fld[j] = fmt[j] == 'o' ? DVM_OFS_MAKE(REG0 + j, 0) : names_reg(fmt[j]) ? (uint16_t)(REG0 + j) : 0;
    T.reg[k] = 1000;
    T.cap = 1;
    run(&T);
    return T.rc == 1 && T.rt.code == DVM_RT_OOB ? (int)T.rt.p[1] : -2;
}

/* The element arithmetic of an access op whose indices are all 0: elements e, value registers
 * v. Returns its result: element 0 afterwards for a write, r[a] for a load. */
static uint32_t apply(uint8_t op, uint32_t e, uint32_t v, int store)
{
    const char *fmt = dvm_op_table[op].fmt;
    trial T;
    memset(&T, 0, sizeof T);
    T.op = op;
    for (int j = 0; j < 4; j++) {
        T.fld[j] = fmt[j] == 'o' ? DVM_OFS_MAKE(REG0 + j, 0) : names_reg(fmt[j]) ? (uint16_t)(REG0 + j) : 0;
        T.reg[j] = j > 0 && index_axis(op, j) != -2 ? 0 : v;
    }
    for (int i = 0; i < ELEMS; i++) T.elem[i] = e;
    T.cap = 1;
    run(&T);
    if (T.rc != 0) return 0xDEADBEEFu;
    return store ? T.out[0] : T.dump[1];
}

static float fu(uint32_t u) { return u2f(u); }
/* the candidate element arithmetics: f32 and i32 add, max, min */
static uint32_t arith(int typed_f32, int which, uint32_t e, uint32_t v)
{
    if (typed_f32) {
        float a = fu(e), b = fu(v);
        return f2u(which == 0 ? a + b : which == 1 ? (a > b ? a : b) : (a < b ? a : b));
    }
    int32_t a = (int32_t)e, b = (int32_t)v;
    return which == 0 ? (uint32_t)a + (uint32_t)b : (uint32_t)(which == 1 ? (a > b ? a : b) : (a < b ? a : b));
}

/* Whether op's element arithmetic is one of f32's (typed_f32) or i32's add, max, min on three
 * probes that tell them and plain copies apart. */
static int explained(uint8_t op, int typed_f32, int store)
{
    static const float probe[3][2] = {{-1.0f, -2.0f}, {1.0f, 2.0f}, {2.0f, 1.0f}};
    for (int which = 0; which < 3; which++) {
        int all = 1;
        for (int p = 0; p < 3 && all; p++) {
            uint32_t e = f2u(probe[p][0]), v = f2u(probe[p][1]);
            all = apply(op, e, v, store) == arith(typed_f32, which, e, v);
        }
        if (all) return 1;
    }
    return 0;
}

static void test_op(uint8_t op)
{
    const dvm_op_info *o = &dvm_op_table[op];
    const uint32_t eff = o->props & DVM_E_MASK;
    const int access = eff == DVM_E_LOAD || eff == DVM_E_STORE || eff == DVM_E_ATOMIC;
    int failed = 0, wrote = 0, read = 0, guard_hit = 0, nonbool = 0, ran = 0;
    for (int i = 0; i < 300; i++) {
        trial A, B;
        fuzz(&A, op);
        B = A;
        for (int e = 0; e < ELEMS; e++) B.elem[e] = A.elem[e] ^ (0x00010001u + (uint32_t)e * 0x01000000u);
        run(&A);
        run(&B);
        failed |= A.rc != 0 || B.rc != 0;
        for (const trial *T = &A; T; T = T == &A ? &B : NULL) {
            wrote |= !same_arr(T->out, T->elem, ELEMS);
            uint32_t g[GUARD];
            for (int k = 0; k < GUARD; k++) g[k] = 0x6A6A6A6Au + (uint32_t)k;
            guard_hit |= !same_arr(T->guard, g, GUARD);
        }
        /* a value r[a] (register REG0 + 1, dumped to dump[1]): 0 or 1 */
        if (o->fmt[1] == 'w')
            for (const trial *T = &A; T; T = T == &A ? &B : NULL)
                if (T->rc == 0) {
                    ran = 1;
                    nonbool |= T->dump[1] > 1u;
                }
        /* what it left depends on array 0's contents: the dump, or an element it changed */
        if (A.rc == 0 && B.rc == 0) {
            read |= !same_arr(A.dump, B.dump, DUMP);
            for (int e = 0; e < ELEMS; e++)
                if ((A.out[e] != A.elem[e] || B.out[e] != B.elem[e]) && A.out[e] != B.out[e]) read = 1;
        }
    }
    CHECK(eff >= DVM_E_PURE && eff <= DVM_E_ATOMIC, "%s: effect class %u is none of DVM_E_PURE..DVM_E_ATOMIC", o->name, eff);
    CHECK(!guard_hit, "%s: changed an array that no node names", o->name);
    if (eff == DVM_E_PURE)
        CHECK(!failed, "%s is DVM_E_PURE (never fails) in ops.def, but a run recorded an error", o->name);
    else
        CHECK(failed, "%s may fail by ops.def (effect %u), but no fuzzed run recorded an error: DVM_E_PURE?", o->name, eff);
    const int w = eff == DVM_E_STORE || eff == DVM_E_ATOMIC, r = eff == DVM_E_LOAD || eff == DVM_E_ATOMIC;
    CHECK(wrote == w, "%s: %s array memory, but its ops.def effect class (%u) says it %s", o->name,
          wrote ? "writes" : "never wrote", eff, w ? "writes (DVM_E_STORE, DVM_E_ATOMIC)" : "does not (want DVM_E_STORE or DVM_E_ATOMIC)");
    CHECK(read == r, "%s: %s array elements, but its ops.def effect class (%u) says it %s", o->name,
          read ? "reads" : "never read", eff, r ? "reads (DVM_E_LOAD, DVM_E_ATOMIC)" : "does not (want DVM_E_LOAD or DVM_E_ATOMIC)");
    /* the result type: a bool is 0 or 1, and a pure value opcode that gave nothing else is a
       bool (a comparison without DVM_P_RES_BOOL would type its result f32 in the compiler) */
    const int rbool = (o->props & DVM_P_RES_BOOL) != 0;
    if (rbool) CHECK(ran && !nonbool, "%s is DVM_P_RES_BOOL in ops.def, but a run left r[a] neither 0 nor 1", o->name);
    if (ran && eff == DVM_E_PURE && !(o->flags & DVM_F_SIDE))
        CHECK(rbool || nonbool, "%s: every run left r[a] 0 or 1, but ops.def lacks DVM_P_RES_BOOL", o->name);
    CHECK(!(rbool && (o->props & DVM_P_RES_I32)), "%s: both DVM_P_RES_BOOL and DVM_P_RES_I32", o->name);
    if (!access) {
        CHECK(!(o->props & ~(DVM_E_MASK | (7u << DVM_SU_SHIFT) | DVM_P_RES_I32 | DVM_P_RES_BOOL)),
              "%s: array properties on an opcode that is no access", o->name);
        return;
    }
    /* index operands, rank 2, row operands */
    int nidx = 0, axis_seen = 0;
    for (int k = 1; k < 4; k++) {
        int ax = index_axis(op, k);
        if (ax != -2) {
            nidx++;
            axis_seen |= ax >= 0;
        }
        if (o->props & (DVM_P_ROW_A << (k - 1)))
            CHECK(ax != -2, "%s: operand %c is DVM_P_ROW_ in ops.def but no index", o->name, "xabc"[k]);
    }
    const int rank2 = (o->props & DVM_P_RANK2) != 0;
    CHECK(nidx == (rank2 ? 2 : 1), "%s: %d index operands, but ops.def %s DVM_P_RANK2", o->name, nidx, rank2 ? "has" : "lacks");
    CHECK(axis_seen == rank2, "%s: out-of-bounds errors name %s, but ops.def %s DVM_P_RANK2", o->name,
          axis_seen ? "an axis" : "no axis", rank2 ? "has" : "lacks");
    /* element type: a load into a register it writes (w) copies; the rest compute on it */
    const int store = eff != DVM_E_LOAD;
    const int as_f = explained(op, 1, store), as_i = explained(op, 0, store);
    const int flag_f = (o->props & DVM_P_F32) != 0, flag_i = (o->props & DVM_P_I32) != 0;
    CHECK(as_f == flag_f, "%s: its elements %s f32 arithmetic, but ops.def %s DVM_P_F32", o->name, as_f ? "take" : "take no",
          flag_f ? "has" : "lacks");
    CHECK(as_i == flag_i, "%s: its elements %s i32 arithmetic, but ops.def %s DVM_P_I32", o->name, as_i ? "take" : "take no",
          flag_i ? "has" : "lacks");
}

int main(void)
{
    char err[256];
    dvm_backend_opts opts = {.device = 0};
    be = vt->open(&opts, err, sizeof err);
    if (!be) {
        printf("FAIL open: %s\n", err);
        return 1;
    }
    hb.vt = vt;
    hb.be = be;
    int n = 0;
    for (int op = 0; op < 256; op++) {
        const dvm_op_info *o = &dvm_op_table[op];
        if (!o->name || (o->flags & DVM_F_SIZE)) continue; /* size opcodes run in no task */
        test_op((uint8_t)op);
        n++;
    }
    CHECK(n > 60, "only %d task opcodes", n);
    dvm_heap_release(&heap, &hmem);
    vt->close(be);
    printf("%d task opcodes checked against their ops.def properties%s\n", n, fails ? "" : ": all agree");
    return fails != 0;
}
