/* test_interp.c: hand-built bytecode through the CPU backend (exec and size): every
 * opcode's semantics with its edge cases, errors and their payloads, adstacks, parallel
 * iteration spaces, atomics under many threads, the sizer and the max-reducer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "vm/backend.h"
#include "vm/sizer.h"

#include "tests/check.h"

static int same_f(float a, float b) { return (isnan(a) && isnan(b)) || f2u(a) == f2u(b); }

#include "tests/progbuild.h"

/* ---- launching ---- */
static dvm_backend *be;
static const dvm_backend_vtbl *vt = &dvm_backend_cpu;
#define NARR 8
typedef struct arrays {
    uint32_t n;             /* slots used */
    uint32_t *data[NARR];   /* host copies, read back after exec */
    int64_t len[NARR];
    int32_t shape[NARR * DVM_MAX_RANK];
} arrays;

static dvm_program prog;
static dvm_variant_desc var;
static const volatile uint32_t *cancel_word; /* launch()'s exec cancel word (NULL: none) */
static dvm_heap heap;
static heap_be hb; /* the heap's allocator: the backend vt, be of the call (set before each) */
static const dvm_heap_mem hmem = {heap_be_alloc, heap_be_free, &hb};

static void make_prog(void) { pb_program(&prog, &var, 0, 0); }

/* Runs the variant; caps: per-stack capacities. Returns exec's status. */
static int launch(arrays *A, uint32_t *uni, uint32_t nuni, const int64_t *caps, dvm_rt_error *rt)
{
    char err[256] = "";
    make_prog();
    var.nslots = A->n;
    var.nuniforms = nuni;
    dvm_buffer *bufs[NARR] = {0};
    for (uint32_t i = 0; i < A->n; i++) {
        size_t bytes = (size_t)A->len[i] * 4;
        if (vt->alloc(be, bytes, &bufs[i], err, sizeof err) || vt->write(be, bufs[i], 0, A->data[i], bytes, err, sizeof err)) {
            printf("FAIL alloc/write: %s\n", err);
            exit(1);
        }
    }
    dvm_loaded *ld = NULL;
    vt->load(be, &prog, &ld, err, sizeof err);
    dvm_exec x;
    memset(&x, 0, sizeof x);
    x.prog = &prog;
    x.loaded = ld;
    x.var = &var;
    x.nslots = A->n;
    x.arrays = bufs;
    x.arr_len = A->len;
    x.arr_shape = A->shape;
    x.uniforms = uni;
    x.nuniforms = nuni;
    x.cancel = cancel_word;
    x.nthread_slots = vt->slots(be, &x);
    int64_t off[8];
    dvm_heap_layout L = {0, 0, 0, 0};
    if (ns) {
        hb.vt = vt;
        hb.be = be;
        if (dvm_heap_layout_compute(caps, ns, x.nthread_slots, off, &L, err, sizeof err) ||
            dvm_heap_reserve(&heap, &hmem, (size_t)L.total_words * 4, err, sizeof err)) {
            printf("FAIL heap: %s\n", err);
            exit(1);
        }
        x.heap = (dvm_buffer *)heap.buf;
        x.stride = L.stride;
        x.stack_off = off;
        x.stack_cap = caps;
        x.nstacks = ns;
    }
    int rc = vt->exec(be, &x, rt, err, sizeof err);
    if (rc < 0) printf("exec: %s\n", err);
    for (uint32_t i = 0; i < A->n; i++) {
        vt->read(be, bufs[i], 0, A->data[i], (size_t)A->len[i] * 4, err, sizeof err);
        vt->free(be, bufs[i]);
    }
    vt->unload(be, ld);
    return rc;
}

static void arr1(arrays *A, uint32_t slot, uint32_t *data, int64_t n)
{
    if (A->n <= slot) A->n = slot + 1;
    A->data[slot] = data;
    A->len[slot] = n;
    for (int d = 0; d < DVM_MAX_RANK; d++) A->shape[slot * DVM_MAX_RANK + d] = 1;
    A->shape[slot * DVM_MAX_RANK] = (int32_t)n;
}

/* Ends task t (an END, then end_task) and runs it with out[0..n) as array 0 and the uniforms
 * uni[0..nuni); the launch's status. */
static int end_and_run(dvm_task_desc *t, uint32_t *out, int64_t n, uint32_t *uni, uint32_t nuni, dvm_rt_error *rt)
{
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    arrays A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, out, n);
    memset(rt, 0, sizeof *rt);
    return launch(&A, uni, nuni, NULL, rt);
}

/* Ends the serial task t with a store of register 0 to out[0] (r3 = 0, ST) and runs it with a
 * one-element array; *res: out[0] afterwards (it starts as init). */
static int run_out0(dvm_task_desc *t, uint32_t init, uint32_t *res, dvm_rt_error *rt)
{
    CI(3, 0);
    N(DVM_OP_ST, 0, 3, 0, 0);
    uint32_t out[1] = {init};
    int rc = end_and_run(t, out, 1, NULL, 0, rt);
    *res = out[0];
    return rc;
}

/* One op on constant operands in a serial task; the result is stored to out[0]. */
static int op3(uint8_t op, uint32_t b, uint32_t c, uint32_t *res, dvm_rt_error *rt)
{
    reset();
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    CI(1, b);
    CI(2, c);
    CI(0, 0x5A5A5A5Au);
    N(op, 0, 0, 1, 2);
    return run_out0(t, 0, res, rt);
}
static uint32_t opu(uint8_t op, uint32_t b, uint32_t c)
{
    dvm_rt_error rt;
    uint32_t r;
    int rc = op3(op, b, c, &r, &rt);
    if (rc != 0) {
        fails++;
        printf("FAIL op %d(%u, %u): status %d code %d\n", op, b, c, rc, rt.code);
    }
    return r;
}
static float opf(uint8_t op, float b, float c) { return u2f(opu(op, f2u(b), f2u(c))); }
static int32_t opi(uint8_t op, int32_t b, int32_t c) { return (int32_t)opu(op, (uint32_t)b, (uint32_t)c); }

#define EXPECT_F(op, b, c, want)                                                          \
    do {                                                                                  \
        float got_ = opf(DVM_OP_##op, (b), (c));                                          \
        CHECK(same_f(got_, (want)), #op "(%g, %g): expected %.9g, got %.9g", (double)(b),  \
              (double)(c), (double)(want), (double)got_);                                 \
    } while (0)
#define EXPECT_I(op, b, c, want)                                                          \
    do {                                                                                  \
        int32_t got_ = opi(DVM_OP_##op, (b), (c));                                        \
        CHECK(got_ == (int32_t)(want), #op "(%d, %d): expected %d, got %d", (int32_t)(b),   \
              (int32_t)(c), (int32_t)(want), got_);                                       \
    } while (0)
#define EXPECT_ERR(op, b, c, code_)                                                       \
    do {                                                                                  \
        dvm_rt_error rt_;                                                                 \
        uint32_t r_;                                                                      \
        int rc_ = op3(DVM_OP_##op, (uint32_t)(b), (uint32_t)(c), &r_, &rt_);              \
        CHECK(rc_ == 1 && rt_.code == (code_), #op ": expected runtime error %d, got status %d code %d", \
              (code_), rc_, rt_.code);                                                     \
        CHECK(r_ == 0, #op ": a failing op must stop before the store, got %u", r_);        \
    } while (0)

/* A two-sided bounds test (JOUTI lo, v, hi) in a serial task: 1 if it jumps (v outside the
 * open interval (lo, hi)), 0 if it falls through. */
static int jout_jumps(int32_t lo, int32_t v, int32_t hi)
{
    reset();
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    CI(1, (uint32_t)v);          /* 0 */
    CI(2, (uint32_t)hi);         /* 1 */
    CI(4, (uint32_t)lo);         /* 2 */
    CI(0, 1);                    /* 3 */
    N(DVM_OP_JOUTI, 4, 1, 2, 6); /* 4: out of bounds -> 6 */
    CI(0, 0);                    /* 5; 6: run_out0's store of r0 */
    uint32_t res = 7;
    dvm_rt_error rt;
    if (run_out0(t, 7, &res, &rt) != 0) {
        fails++;
        printf("FAIL JOUTI(%d, %d, %d): launch failed\n", lo, v, hi);
    }
    return (int)res;
}

/* JOUTI: signed, both bounds open, at both ends of the i32 range */
static void test_jout(void)
{
    const int32_t MIN = INT32_MIN, MAX = INT32_MAX;
    const int32_t c[][4] = {{0, 0, 5, 1},       {0, -5, 5, 1},      {0, MIN, 5, 1},     {0, 1, 5, 0},
                            {0, 4, 5, 0},       {0, 5, 5, 1},       {0, 6, 5, 1},       {0, 1, 0, 1},
                            {0, 1, MIN, 1},     {0, MAX, MAX, 1},   {0, MAX - 1, MAX, 0}, {-3, -2, 0, 0},
                            {-3, -3, 0, 1},     {MIN, MIN + 1, MAX, 0}, {MIN, MIN, MAX, 1}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        int j = jout_jumps(c[k][0], c[k][1], c[k][2]);
        CHECK(j == c[k][3], "JOUTI(%d, %d, %d): jumped %d, expected %d", c[k][0], c[k][1], c[k][2], j, c[k][3]);
    }
}

static void test_f32(void)
{
    float nan = NAN, inf = INFINITY;
    EXPECT_F(ADDF, 1.5f, 2.25f, 3.75f);
    EXPECT_F(SUBF, 1.5f, 2.25f, -0.75f);
    EXPECT_F(MULF, 1.5f, -2.0f, -3.0f);
    EXPECT_F(DIVF, 1.0f, 0.0f, inf);
    EXPECT_F(DIVF, 0.0f, 0.0f, nan);
    EXPECT_F(MINF, 1.0f, 2.0f, 1.0f);
    EXPECT_F(MINF, nan, 2.0f, nan);
    EXPECT_F(MINF, 2.0f, nan, 2.0f);
    EXPECT_F(MINF, -0.0f, 0.0f, -0.0f);
    EXPECT_F(MINF, 0.0f, -0.0f, 0.0f);
    EXPECT_F(MAXF, 1.0f, 2.0f, 2.0f);
    EXPECT_F(MAXF, nan, 2.0f, nan);
    EXPECT_F(MAXF, 2.0f, nan, 2.0f);
    EXPECT_F(MAXF, 0.0f, -0.0f, 0.0f);
    EXPECT_F(POWF, 2.0f, 10.0f, 1024.0f);
    EXPECT_F(ATAN2F, 1.0f, -1.0f, atan2f(1.0f, -1.0f));
    EXPECT_F(NEGF, 0.0f, 0, -0.0f);
    EXPECT_F(NEGF, -3.0f, 0, 3.0f);
    EXPECT_F(ABSF, -0.0f, 0, 0.0f);
    EXPECT_F(ABSF, -inf, 0, inf);
    float xs[] = {0.3f, -1.7f, 2.5f};
    for (int i = 0; i < 3; i++) {
        float v = xs[i];
        EXPECT_F(SIN, v, 0, sinf(v));
        EXPECT_F(COS, v, 0, cosf(v));
        EXPECT_F(TAN, v, 0, tanf(v));
        EXPECT_F(ATAN, v, 0, atanf(v));
        EXPECT_F(EXP, v, 0, expf(v));
        EXPECT_F(TANH, v, 0, tanhf(v));
        EXPECT_F(FLOOR, v, 0, floorf(v));
        EXPECT_F(CEIL, v, 0, ceilf(v));
        EXPECT_F(ASIN, v / 3, 0, asinf(v / 3));
        EXPECT_F(ACOS, v / 3, 0, acosf(v / 3));
        EXPECT_F(LOG, fabsf(v), 0, logf(fabsf(v)));
        EXPECT_F(SQRT, fabsf(v), 0, sqrtf(fabsf(v)));
        EXPECT_F(RSQRT, fabsf(v), 0, 1.0f / sqrtf(fabsf(v)));
    }
    EXPECT_F(SQRT, -1.0f, 0, nan);
    EXPECT_F(LOG, 0.0f, 0, -inf);
    /* Python float // and % */
    EXPECT_F(FFLOORDIV, 7.0f, 2.0f, 3.0f);
    EXPECT_F(FFLOORDIV, -7.0f, 2.0f, -4.0f);
    EXPECT_F(FFLOORDIV, 7.0f, -2.0f, -4.0f);
    EXPECT_F(FMODF, -7.0f, 2.0f, 1.0f);
    EXPECT_F(FMODF, 7.0f, -2.0f, -1.0f);
    EXPECT_F(FMODF, 7.5f, 2.0f, 1.5f);
    EXPECT_F(I2F, 0, 0, 0.0f);
    CHECK(u2f(opu(DVM_OP_I2F, (uint32_t)-5, 0)) == -5.0f, "I2F(-5)");
    CHECK(u2f(opu(DVM_OP_I2F, 16777217u, 0)) == 16777216.0f, "I2F rounds to nearest even");
}

static void test_i32(void)
{
    const int32_t MIN = INT32_MIN, MAX = INT32_MAX;
    EXPECT_I(ADDI, MAX, 1, MIN);
    EXPECT_I(SUBI, MIN, 1, MAX);
    EXPECT_I(MULI, 65536, 65536, 0);
    EXPECT_I(MULI, -7, 6, -42);
    /* Python floor division and modulo: sign of the divisor */
    EXPECT_I(DIVI, 7, 2, 3);
    EXPECT_I(DIVI, -7, 2, -4);
    EXPECT_I(DIVI, 7, -2, -4);
    EXPECT_I(DIVI, -7, -2, 3);
    EXPECT_I(DIVI, -8, 2, -4);
    EXPECT_I(DIVI, MIN, -1, MIN);
    EXPECT_I(DIVI, MIN, 1, MIN);
    EXPECT_I(MODI, 7, 2, 1);
    EXPECT_I(MODI, -7, 2, 1);
    EXPECT_I(MODI, 7, -2, -1);
    EXPECT_I(MODI, -7, -2, -1);
    EXPECT_I(MODI, -8, 2, 0);
    EXPECT_I(MODI, MIN, -1, 0);
    EXPECT_I(MODI, MIN, 3, 1); /* -2147483648 = 3 * -715827883 + 1 */
    EXPECT_ERR(DIVI, 5, 0, DVM_RT_DIVZERO);
    EXPECT_ERR(MODI, 5, 0, DVM_RT_DIVZERO);
    EXPECT_I(MINI, -3, 2, -3);
    EXPECT_I(MAXI, -3, 2, 2);
    EXPECT_I(NEGI, MIN, 0, MIN);
    EXPECT_I(NEGI, 5, 0, -5);
    EXPECT_I(ABSI, MIN, 0, MIN);
    EXPECT_I(ABSI, -9, 0, 9);
    EXPECT_I(POWI, 3, 4, 81);
    EXPECT_I(POWI, -2, 3, -8);
    EXPECT_I(POWI, 2, 31, MIN);
    EXPECT_I(POWI, 2, 32, 0);
    EXPECT_I(POWI, 0, 0, 1);
    EXPECT_I(POWI, 7, 0, 1);
    EXPECT_I(POWI, 3, 21, (int32_t)(uint32_t)10460353203ull);
    EXPECT_ERR(POWI, 2, -1, DVM_RT_NEGPOW);
    /* F2I: toward zero, NaN 0, saturating */
    EXPECT_I(F2I, (int32_t)f2u(3.7f), 0, 3);
    EXPECT_I(F2I, (int32_t)f2u(-3.7f), 0, -3);
    EXPECT_I(F2I, (int32_t)f2u(NAN), 0, 0);
    EXPECT_I(F2I, (int32_t)f2u(3e9f), 0, MAX);
    EXPECT_I(F2I, (int32_t)f2u(-3e9f), 0, MIN);
    EXPECT_I(F2I, (int32_t)f2u(INFINITY), 0, MAX);
    EXPECT_I(F2I, (int32_t)f2u(-INFINITY), 0, MIN);
    EXPECT_I(F2I, (int32_t)f2u(2147483648.0f), 0, MAX);
    EXPECT_I(F2I, (int32_t)f2u(-2147483648.0f), 0, MIN);
    EXPECT_I(F2I, (int32_t)f2u(2147483520.0f), 0, 2147483520);
    /* comparisons: bool 0/1, NaN unordered */
    uint32_t n = f2u(NAN), one = f2u(1.0f), two = f2u(2.0f);
    CHECK(opu(DVM_OP_LTF, one, two) == 1 && opu(DVM_OP_LTF, two, one) == 0 && opu(DVM_OP_LTF, n, one) == 0, "LTF");
    CHECK(opu(DVM_OP_LEF, one, one) == 1 && opu(DVM_OP_LEF, n, n) == 0, "LEF");
    CHECK(opu(DVM_OP_EQF, f2u(0.0f), f2u(-0.0f)) == 1 && opu(DVM_OP_EQF, n, n) == 0, "EQF");
    CHECK(opu(DVM_OP_NEF, n, n) == 1 && opu(DVM_OP_NEF, one, one) == 0, "NEF");
    CHECK(opu(DVM_OP_LTI, (uint32_t)-1, 0) == 1 && opu(DVM_OP_LTI, 0, (uint32_t)-1) == 0, "LTI is signed");
    CHECK(opu(DVM_OP_LEI, 5, 5) == 1 && opu(DVM_OP_LEI, 6, 5) == 0, "LEI");
    CHECK(opu(DVM_OP_EQI, 5, 5) == 1 && opu(DVM_OP_NEI, 5, 5) == 0 && opu(DVM_OP_NEI, 5, 6) == 1, "EQI/NEI");
    CHECK(opu(DVM_OP_NOT, 0, 0) == 1 && opu(DVM_OP_NOT, 1, 0) == 0, "NOT");
}

/* In the serial tasks below: stores register r at array 0's element r9, then r9 += 1. */
static void OUT(uint16_t r)
{
    N(DVM_OP_ST, 0, 9, r, 0);
    N(DVM_OP_ADDIK, 0, 9, 9, 1);
}

/* Moves, constants, uniforms, SEL, superinstructions and control flow in one task. */
static void test_misc(void)
{
    reset();
    uint16_t k5 = K(f2u(5.0f)), k2 = K(f2u(2.0f)), k01 = K(f2u(0.25f));
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    CI(9, 0);                         /* out index */
    N(DVM_OP_CONSTK, 0, 1, k5, 0);    /* r1 = 5.0 */
    OUT(1);                           /* 0: 5 */
    N(DVM_OP_MOV, 0, 2, 1, 0);
    OUT(2);                           /* 1: 5 */
    N(DVM_OP_ADDFK, 0, 3, 1, k2);
    OUT(3);                           /* 2: 7 */
    N(DVM_OP_MULFK, 0, 3, 1, k2);
    OUT(3);                           /* 3: 10 */
    N(DVM_OP_KSUBF, 0, 3, 1, k2);
    OUT(3);                           /* 4: 2 - 5 = -3 */
    N(DVM_OP_KDIVF, 0, 3, 1, k2);
    OUT(3);                           /* 5: 2 / 5 = 0.4 */
    CF(4, 3.0f);
    CF(5, 4.0f);
    CF(6, 1.0f);
    N(DVM_OP_FMAF, 0, 6, 4, 5);
    OUT(6);                           /* 6: 3*4+1 = 13 */
    N(DVM_OP_FMAFK, 0, 6, 4, k01);
    OUT(6);                           /* 7: 13*3+0.25 = 39.25 */
    N(DVM_OP_LDU, 0, 7, 0, 0);        /* r7 = U[0] (i32 40) */
    OUT(7);                           /* 8: 40 */
    N(DVM_OP_ADDIK, 0, 7, 7, (uint16_t)-50);
    OUT(7);                           /* 9: -10 */
    N(DVM_OP_STU, 0, 1, 7, 0);        /* U[1] = -10 */
    N(DVM_OP_ATOMADDU, 0, 2, 1, 0);   /* U[2] += 5.0 */
    CI(10, 1);
    CI(11, 111);
    CI(12, 222);
    N(DVM_OP_SEL, 0, 10, 11, 12);
    OUT(10);                          /* 10: 111 */
    CI(10, 0);
    N(DVM_OP_SEL, 0, 10, 11, 12);
    OUT(10);                          /* 11: 222 */
    /* sum of 0..9 with JGEI / INCLT: i = 0; s = 0; if i >= 10 goto done; loop: s += i; i++ <10 loop */
    CI(13, 0);
    CI(14, 0);
    CI(15, 10);
    uint16_t jge = rel(t);
    N(DVM_OP_JGEI, 0, 13, 15, 0);     /* patched */
    uint16_t loop = rel(t);
    N(DVM_OP_ADDI, 0, 14, 14, 13);
    N(DVM_OP_INCLT, 0, 13, 15, loop);
    nodes[t->code_begin + jge].c = rel(t);
    OUT(14);                          /* 12: 45 */
    /* JZ / JNZ / JMP: r16 = 7 if taken paths are right */
    CI(16, 0);
    CI(17, 0);
    uint16_t jz = rel(t);
    N(DVM_OP_JZ, 0, 17, 0, 0);        /* taken */
    CI(16, 99);
    nodes[t->code_begin + jz].b = rel(t);
    CI(17, 1);
    uint16_t jnz = rel(t);
    N(DVM_OP_JNZ, 0, 17, 0, 0);       /* taken */
    CI(16, 98);
    nodes[t->code_begin + jnz].b = rel(t);
    N(DVM_OP_JZ, 0, 17, 0, 0);        /* not taken (target 0 would loop) */
    N(DVM_OP_JNZ, 0, 16, 0, 0);       /* r16 == 0: not taken */
    uint16_t jmp = rel(t);
    N(DVM_OP_JMP, 0, 0, 0, 0);
    CI(16, 97);
    nodes[t->code_begin + jmp].a = rel(t);
    N(DVM_OP_ADDIK, 0, 16, 16, 7);
    OUT(16);                          /* 13: 7 */
    /* LDADDF and SHAPE: out[0] is 5.0 by now */
    CI(18, 0);
    CF(19, 0.5f);
    N(DVM_OP_LDADDF, 0, 19, 18, 0);
    OUT(19);                          /* 14: 5.5 */
    N(DVM_OP_SHAPE, 0, 20, 0, 0);
    OUT(20);                          /* 15: 16 */
    N(DVM_OP_NOP, 0, 0, 0, 0);
    CI(21, 1);
    N(DVM_OP_ASSERT, 0, 21, 1, 0);    /* passes */
    uint32_t out[16] = {0};
    uint32_t uni[3] = {40, 0, f2u(1.5f)};
    dvm_rt_error rt;
    int rc = end_and_run(t, out, 16, uni, 3, &rt);
    CHECK(rc == 0, "misc task: status %d code %d", rc, rt.code);
    float wf[] = {5, 5, 7, 10, -3, 0.4f, 13, 39.25f};
    for (int i = 0; i < 8; i++) CHECK(u2f(out[i]) == wf[i], "misc out[%d]: expected %g, got %g", i, (double)wf[i], (double)u2f(out[i]));
    int32_t wi[] = {40, -10, 111, 222, 45, 7};
    for (int i = 0; i < 6; i++) CHECK((int32_t)out[8 + i] == wi[i], "misc out[%d]: expected %d, got %d", 8 + i, wi[i], (int32_t)out[8 + i]);
    CHECK(u2f(out[14]) == 5.5f, "LDADDF: expected 5.5, got %g", (double)u2f(out[14]));
    CHECK(out[15] == 16, "SHAPE: expected 16, got %u", out[15]);
    CHECK((int32_t)uni[1] == -10, "STU: expected U[1] = -10, got %d", (int32_t)uni[1]);
    CHECK(u2f(uni[2]) == 6.5f, "ATOMADDU: expected U[2] = 6.5, got %g", (double)u2f(uni[2]));
}

/* A loop of one node: r[acc] = v0, r[o] = o0, the count r[cnt] = c0 and (unless it is acc) the
   bound r[bnd] = hi; the body FMAFK acc, o, K[k] or MULF acc, acc, o; then INCLT cnt, bnd. */
static void one_node_loop(dvm_task_desc *t, uint8_t op, uint16_t acc, float v0, uint16_t o, float o0, uint16_t k,
                          uint16_t cnt, uint32_t c0, uint16_t bnd, uint32_t hi)
{
    CF(acc, v0);
    CF(o, o0);
    CI(cnt, c0);
    if (bnd != acc) CI(bnd, hi);
    uint16_t l = rel(t);
    if (op == DVM_OP_MULF) N(op, 0, acc, acc, o);
    else N(op, 0, acc, o, k);
    N(DVM_OP_INCLT, 0, cnt, bnd, l);
}

/* Loops whose body is one self-update (DVM_SELF_UPDATE), which the interpreter runs in the
   INCLT (interp_run.h, ONE_NODE_LOOP_), and the cases it must leave to the plain back edge. */
static void test_one_node_loops(void)
{
    reset();
    const uint32_t B = f2u(1.0f), M = 1u << 23; /* halving a normal float takes M off its bits */
    uint16_t k1 = K(f2u(1.0f)), k0 = K(f2u(0.0f));
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    CI(9, 0); /* out index */
    /* 0, 1: v = v * 0.5 + 1 ten times from 1: 2 - 2^-10; the count ends at the bound */
    one_node_loop(t, DVM_OP_FMAFK, 1, 1.0f, 2, 0.5f, k1, 3, 0, 4, 10);
    OUT(1);
    OUT(3);
    /* 2: g = g * -0.0 three times from 1: -0.0, +0.0, -0.0 (the sign of every zero kept) */
    one_node_loop(t, DVM_OP_MULF, 5, 1.0f, 6, -0.0f, 0, 7, 0, 8, 3);
    OUT(5);
    /* 3: the bound is the accumulator (the loop's bits of v halve each trip): three trips, to
       0.125; trips counted from the bound at the first back edge would run 2^24 */
    one_node_loop(t, DVM_OP_FMAFK, 10, 1.0f, 11, 0.5f, k0, 12, B - 3u * M - 1u, 10, 0);
    OUT(10);
    /* 4: entered with the count past the bound: the body once, as a do-while */
    one_node_loop(t, DVM_OP_FMAFK, 13, 2.0f, 14, 0.5f, k0, 15, 5, 16, 3);
    OUT(13);
    OUT(15);
    /* 6: entered with the count at the bound: the body once too */
    one_node_loop(t, DVM_OP_FMAFK, 17, 2.0f, 14, 0.5f, k0, 18, 3, 19, 3);
    OUT(17);
    uint32_t out[8] = {0};
    dvm_rt_error rt;
    int rc = end_and_run(t, out, 8, NULL, 0, &rt);
    CHECK(rc == 0, "one-node loops: status %d code %d", rc, rt.code);
    CHECK(u2f(out[0]) == 2.0f - 1.0f / 1024.0f, "FMAFK loop: expected %.10g, got %.10g", 2.0 - 1.0 / 1024.0, (double)u2f(out[0]));
    CHECK(out[1] == 10, "FMAFK loop's count: expected 10, got %u", out[1]);
    CHECK(out[2] == 0x80000000u, "MULF loop by -0.0: expected -0.0 (0x80000000), got 0x%08x", out[2]);
    CHECK(u2f(out[3]) == 0.125f, "loop bounded by its accumulator: expected 0.125, got %g", (double)u2f(out[3]));
    CHECK(u2f(out[4]) == 1.0f && out[5] == 6, "loop entered past its bound: expected 1 and count 6, got %g and %u",
          (double)u2f(out[4]), out[5]);
    CHECK(u2f(out[6]) == 1.0f, "loop entered at its bound: expected 1, got %g", (double)u2f(out[6]));
}

/* A serial task whose node `fail` fails; checks the record. */
static void expect_rt(const char *what, int rc, const dvm_rt_error *rt, int code, uint32_t node, int64_t p0,
                      int64_t p1, int64_t p2, int64_t p3)
{
    CHECK(rc == 1 && rt->code == code, "%s: expected runtime error %d, got status %d code %d", what, code, rc, rt->code);
    CHECK(rt->node == node, "%s: expected node %u, got %u", what, node, rt->node);
    CHECK(rt->p[0] == p0 && rt->p[1] == p1 && rt->p[2] == p2 && rt->p[3] == p3,
          "%s: expected payload {%lld, %lld, %lld, %lld}, got {%lld, %lld, %lld, %lld}", what, (long long)p0,
          (long long)p1, (long long)p2, (long long)p3, (long long)rt->p[0], (long long)rt->p[1], (long long)rt->p[2],
          (long long)rt->p[3]);
}

static void test_bounds(void)
{
    /* slot 1 is a 3x4 array; slot 0 a 5-element one */
    uint32_t a0[5] = {0}, a1[12] = {0};
    struct { uint8_t op; int32_t i, j; int axis; int64_t idx, ext; } cases[] = {
        {DVM_OP_IDX, 3, 0, 0, 3, 3},   {DVM_OP_IDX, -1, 0, 0, -1, 3},
        {DVM_OP_IDXM, 1, 4, 1, 4, 4},  {DVM_OP_IDXM, 1, -2, 1, -2, 4},
    };
    for (int ci = 0; ci < 4; ci++) {
        reset();
        dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
        CI(1, (uint32_t)cases[ci].i);
        CI(2, (uint32_t)cases[ci].j);
        uint32_t failnode;
        if (cases[ci].op == DVM_OP_IDX) {
            failnode = nn;
            N(DVM_OP_IDX, 1, 3, 1, 0);
        } else {
            N(DVM_OP_IDX, 1, 3, 1, 0);
            failnode = nn;
            N(DVM_OP_IDXM, 1, 3, 2, 1);
        }
        N(DVM_OP_END, 0, 0, 0, 0);
        end_task(t);
        arrays A;
        memset(&A, 0, sizeof A);
        arr1(&A, 0, a0, 5);
        arr1(&A, 1, a1, 12);
        A.shape[1 * DVM_MAX_RANK + 0] = 3;
        A.shape[1 * DVM_MAX_RANK + 1] = 4;
        dvm_rt_error rt;
        int rc = launch(&A, NULL, 0, NULL, &rt);
        expect_rt("axis bounds", rc, &rt, DVM_RT_OOB, failnode, 1, cases[ci].axis, cases[ci].idx, cases[ci].ext);
        CHECK(rt.task == 0, "axis bounds: task %u", rt.task);
    }
    /* in-bounds IDX/IDXM: flat index 2*4+3 = 11 */
    {
        reset();
        dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
        CI(1, 2);
        CI(2, 3);
        N(DVM_OP_IDX, 1, 3, 1, 0);
        N(DVM_OP_IDXM, 1, 3, 2, 1);
        CI(4, 77);
        N(DVM_OP_ST, 1, 3, 4, 0);
        N(DVM_OP_END, 0, 0, 0, 0);
        end_task(t);
        arrays A;
        memset(&A, 0, sizeof A);
        memset(a1, 0, sizeof a1);
        arr1(&A, 0, a0, 5);
        arr1(&A, 1, a1, 12);
        A.shape[4] = 3;
        A.shape[5] = 4;
        dvm_rt_error rt;
        int rc = launch(&A, NULL, 0, NULL, &rt);
        CHECK(rc == 0 && a1[11] == 77, "IDX/IDXM flat index: expected a1[11] = 77, status %d, got %u", rc, a1[11]);
    }
    /* LD2/ST2/ATOMADDF2 (slot 1, 3x4): axis 0 checked first, then axis 1, with IDX/IDXM's payload */
    {
        struct { int32_t i, j; int axis; int64_t idx, ext; } c2[] = {
            {3, 0, 0, 3, 3}, {-1, 9, 0, -1, 3}, {INT32_MIN, 0, 0, INT32_MIN, 3}, {2, 4, 1, 4, 4}, {0, -2, 1, -2, 4},
        };
        static const char *const what2[3] = {"LD2 bounds", "ST2 bounds", "ATOMADDF2 bounds"};
        for (int st2 = 0; st2 < 3; st2++)
            for (int ci = 0; ci < 5; ci++) {
                reset();
                dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
                CI(1, (uint32_t)c2[ci].i);
                CI(2, (uint32_t)c2[ci].j);
                CI(4, 5);
                uint32_t failnode = nn;
                if (st2 == 2) N(DVM_OP_ATOMADDF2, 1, 1, 2, 4);
                else if (st2) N(DVM_OP_ST2, 1, 1, 2, 4);
                else N(DVM_OP_LD2, 1, 3, 1, 2);
                N(DVM_OP_END, 0, 0, 0, 0);
                end_task(t);
                arrays A;
                memset(&A, 0, sizeof A);
                memset(a1, 0, sizeof a1);
                arr1(&A, 0, a0, 5);
                arr1(&A, 1, a1, 12);
                A.shape[1 * DVM_MAX_RANK + 0] = 3;
                A.shape[1 * DVM_MAX_RANK + 1] = 4;
                dvm_rt_error rt;
                int rc = launch(&A, NULL, 0, NULL, &rt);
                expect_rt(what2[st2], rc, &rt, DVM_RT_OOB, failnode, 1, c2[ci].axis, c2[ci].idx,
                          c2[ci].ext);
                for (int k = 0; k < 12; k++) CHECK(a1[k] == 0, "%s: wrote a1[%d] = %u", what2[st2], k, a1[k]);
            }
        /* in bounds: ST2 a1[2, 3] = 77 (flat 11), LD2 reads a1[2, 3] back, ST to a1[0] */
        reset();
        dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
        CI(1, 2);
        CI(2, 3);
        CI(4, 77);
        CI(6, 0);
        N(DVM_OP_ST2, 1, 1, 2, 4);
        N(DVM_OP_LD2, 1, 5, 1, 2);
        N(DVM_OP_ST, 1, 6, 5, 0);
        /* ATOMADDF2 a1[1, 1] (flat 5) += 1.5, twice */
        CI(7, 1);
        CI(8, 0x3FC00000u);
        N(DVM_OP_ATOMADDF2, 1, 7, 7, 8);
        N(DVM_OP_ATOMADDF2, 1, 7, 7, 8);
        N(DVM_OP_END, 0, 0, 0, 0);
        end_task(t);
        arrays A;
        memset(&A, 0, sizeof A);
        memset(a1, 0, sizeof a1);
        arr1(&A, 0, a0, 5);
        arr1(&A, 1, a1, 12);
        A.shape[4] = 3;
        A.shape[5] = 4;
        dvm_rt_error rt;
        int rc = launch(&A, NULL, 0, NULL, &rt);
        CHECK(rc == 0 && a1[11] == 77 && a1[0] == 77, "ST2/LD2: expected a1[11] = a1[0] = 77, status %d, got %u, %u",
              rc, a1[11], a1[0]);
        CHECK(a1[5] == 0x40400000u, "ATOMADDF2: expected a1[5] = 3.0f (0x40400000), got 0x%08x", a1[5]);
    }
    /* flat checks of every array access */
    uint8_t flat_ops[] = {DVM_OP_LD, DVM_OP_ST, DVM_OP_ATOMADDF, DVM_OP_ATOMADDI, DVM_OP_ATOMMAXF,
                          DVM_OP_ATOMMINF, DVM_OP_ATOMMAXI, DVM_OP_ATOMMINI, DVM_OP_LDADDF};
    int32_t bad[] = {5, -1, INT32_MIN};
    for (unsigned oi = 0; oi < sizeof flat_ops; oi++)
        for (int bi = 0; bi < 3; bi++) {
            reset();
            dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
            CI(1, (uint32_t)bad[bi]);
            CI(2, 0);
            uint32_t failnode = nn;
            uint8_t op = flat_ops[oi];
            if (op == DVM_OP_LD || op == DVM_OP_LDADDF) N(op, 0, 2, 1, 0);
            else N(op, 0, 1, 2, 0);
            N(DVM_OP_END, 0, 0, 0, 0);
            end_task(t);
            arrays A;
            memset(&A, 0, sizeof A);
            arr1(&A, 0, a0, 5);
            dvm_rt_error rt;
            int rc = launch(&A, NULL, 0, NULL, &rt);
            char what[64];
            snprintf(what, sizeof what, "flat bounds op %d index %d", op, bad[bi]);
            expect_rt(what, rc, &rt, DVM_RT_OOB, failnode, 0, -1, bad[bi], 5);
        }
}

static void test_assert_and_stacks(void)
{
    /* assert with message "boom" at string offset 1 */
    reset();
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    CI(1, 0);
    uint32_t an = nn;
    N(DVM_OP_ASSERT, 0, 1, 1, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    arrays A;
    memset(&A, 0, sizeof A);
    dvm_rt_error rt;
    int rc = launch(&A, NULL, 0, NULL, &rt);
    expect_rt("assert", rc, &rt, DVM_RT_ASSERT, an, 1, 0, 0, 0);

    /* push 3 values on stack 1 (cap 3), pop them in reverse */
    for (int mode = 0; mode < 3; mode++) {
        reset();
        ns = 2;
        stacks[0].type = stacks[1].type = DVM_T_I32;
        t = task(DVM_TASK_SERIAL, 0);
        CI(9, 0);
        for (uint32_t v = 1; v <= 3; v++) {
            CI(1, v * 10);
            N(DVM_OP_PUSH, 0, 1, 1, 0);
        }
        N(DVM_OP_PUSH, 0, 0, 1, 0); /* stack 0 too */
        uint32_t failnode = nn;
        if (mode == 1) N(DVM_OP_PUSH, 0, 1, 1, 0); /* overflow */
        for (int k = 0; k < 3; k++) {
            N(DVM_OP_POP, 0, 2, 1, 0);
            N(DVM_OP_ST, 0, 9, 2, 0);
            N(DVM_OP_ADDIK, 0, 9, 9, 1);
        }
        N(DVM_OP_POP, 0, 2, 0, 0);
        N(DVM_OP_ST, 0, 9, 2, 0);
        if (mode == 2) {
            failnode = nn;
            N(DVM_OP_POP, 0, 2, 1, 0); /* underflow */
        }
        N(DVM_OP_END, 0, 0, 0, 0);
        end_task(t);
        uint32_t out[4] = {0};
        memset(&A, 0, sizeof A);
        arr1(&A, 0, out, 4);
        int64_t caps[2] = {1, 3};
        rc = launch(&A, NULL, 0, caps, &rt);
        if (mode == 0)
            CHECK(rc == 0 && out[0] == 30 && out[1] == 20 && out[2] == 10 && out[3] == 30,
                  "stacks: expected 30 20 10 30, status %d got %u %u %u %u", rc, out[0], out[1], out[2], out[3]);
        else if (mode == 1)
            expect_rt("adstack overflow", rc, &rt, DVM_RT_ADSTACK_OVERFLOW, failnode, 1, 3, 0, 0);
        else
            expect_rt("adstack underflow", rc, &rt, DVM_RT_ADSTACK_UNDERFLOW, failnode, 1, 0, 0, 0);
    }
}

/* Parallel tasks: uniforms from a serial task, 1-D with start, 2-D/3-D order, empty. */
static void test_parallel(void)
{
    /* serial: U[1] = U[0] + 3 ; parallel i in [U[2], U[1]): out[i] = i * 2 */
    reset();
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    N(DVM_OP_LDU, 0, 1, 0, 0);
    N(DVM_OP_ADDIK, 0, 1, 1, 3);
    N(DVM_OP_STU, 0, 1, 1, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 1;
    t->start_u[0] = 2;
    t->idx_reg[0] = 5;
    N(DVM_OP_ADDI, 0, 6, 5, 5);
    N(DVM_OP_ST, 0, 5, 6, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    uint32_t out[20000];
    for (int i = 0; i < 20000; i++) out[i] = 0xFFFFFFFFu;
    arrays A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, out, 20000);
    uint32_t uni[3] = {19990, 0, 7};
    dvm_rt_error rt;
    int rc = launch(&A, uni, 3, NULL, &rt);
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        uint32_t want = (i >= 7 && i < 19993) ? (uint32_t)(2 * i) : 0xFFFFFFFFu;
        if (out[i] != want && bad++ < 3) CHECK(0, "1-D with start: out[%d] expected %u, got %u", i, want, out[i]);
    }
    CHECK(rc == 0 && uni[1] == 19993, "uniform written by the serial task: expected 19993, got %u (status %d)", uni[1], rc);

    /* empty and negative extents: nothing runs */
    uni[0] = (uint32_t)-20;
    uni[2] = 0;
    for (int i = 0; i < 20000; i++) out[i] = 1;
    rc = launch(&A, uni, 3, NULL, &rt);
    bad = 0;
    for (int i = 0; i < 20000; i++) bad += out[i] != 1;
    CHECK(rc == 0 && bad == 0, "negative extent must run nothing: status %d, %d stores", rc, bad);

    /* 3-D: out[(i*4+j)*5+k] = i*100+j*10+k over a 3x4x5 space; and with one thread the
       visiting order is row-major: a register counter that survives iterations of a
       thread records it in out2. The task has no loop, so the CPU runs it in blocks of
       CPU_BLOCK iterations (vm/cpu/interp_cpu.c), each lane with its own registers: the
       counter then numbers the blocks, in row-major order. */
    const int block = 64; /* CPU_BLOCK */
    for (int dims = 2; dims <= 3; dims++) {
        reset();
        t = task(DVM_TASK_PARALLEL, dims);
        t->ext_u[0] = 0;
        t->ext_u[1] = 1;
        t->ext_u[2] = 2;
        t->idx_reg[0] = 1;
        t->idx_reg[1] = 2;
        t->idx_reg[2] = 3;
        CI(10, 100);
        CI(11, 10);
        N(DVM_OP_MULI, 0, 4, 1, 10);
        N(DVM_OP_MULI, 0, 5, 2, 11);
        N(DVM_OP_ADDI, 0, 4, 4, 5);
        if (dims == 3) N(DVM_OP_ADDI, 0, 4, 4, 3);
        N(DVM_OP_IDX, 0, 6, 1, 0);
        N(DVM_OP_IDXM, 0, 6, 2, 1);
        if (dims == 3) N(DVM_OP_IDXM, 0, 6, 3, 2);
        N(DVM_OP_ST, 0, 6, 4, 0);
        N(DVM_OP_ST, 1, 6, 20, 0);  /* out2[flat] = counter */
        N(DVM_OP_ADDIK, 0, 20, 20, 1);
        N(DVM_OP_END, 0, 0, 0, 0);
        end_task(t);
        uint32_t o3[60], o4[60];
        memset(o3, 0xFF, sizeof o3);
        memset(o4, 0xFF, sizeof o4);
        int n3 = dims == 3 ? 60 : 12;
        memset(&A, 0, sizeof A);
        arr1(&A, 0, o3, n3);
        arr1(&A, 1, o4, n3);
        A.shape[0] = 3;
        A.shape[1] = 4;
        A.shape[2] = dims == 3 ? 5 : 1;
        uint32_t u3[3] = {3, 4, 5};
        dvm_backend_opts one = {.threads = 1};
        char err[128];
        dvm_backend *saved = be;
        /* one.cpu_lanes is 0: blocks */
        be = vt->open(&one, err, sizeof err);
        rc = launch(&A, u3, 3, NULL, &rt);
        vt->close(be);
        be = saved;
        bad = 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < (dims == 3 ? 5 : 1); k++) {
                    int f = (i * 4 + j) * (dims == 3 ? 5 : 1) + k;
                    uint32_t want = (uint32_t)(i * 100 + j * 10 + (dims == 3 ? k : 0));
                    if ((o3[f] != want || o4[f] != (uint32_t)(f / block)) && bad++ < 3)
                        CHECK(0, "%d-D: at (%d,%d,%d) expected %u and block %d, got %u and %u", dims, i, j, k, want, f / block, o3[f], o4[f]);
                }
        CHECK(rc == 0, "%d-D: status %d code %d", dims, rc, rt.code);
    }
}

/* Starts on any dimension: dimension d over [lo[d], hi[d]) (has[d] = 0: no start, lo 0), the
 * index registers absolute. Each point writes out[flat(i + off0, j + off1, k + off2)] =
 * i*10000 + j*100 + k in an array of shape sh; every other element must keep its sentinel.
 * Run on the backend b (plain, or lanes with the cpu_lanes option). */
static void check_starts(const char *what, dvm_backend *b, int ndim, const int32_t lo[3], const int32_t hi[3],
                         const int has[3], const int32_t off[3], const int32_t sh[3])
{
    const uint32_t SENT = 0x7F7F7F7Fu;
    reset();
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, ndim);
    for (int d = 0; d < ndim; d++) {
        t->ext_u[d] = (uint16_t)d;
        t->idx_reg[d] = (uint16_t)(1 + d);
        if (has[d]) t->start_u[d] = (uint16_t)(3 + d);
    }
    if (ndim < 3) CI(3, 0); /* k = 0 (dimension 2 writes r3 otherwise) */
    CI(10, 10000);
    CI(11, 100);
    N(DVM_OP_MULI, 0, 4, 1, 10);
    if (ndim > 1) {
        N(DVM_OP_MULI, 0, 5, 2, 11);
        N(DVM_OP_ADDI, 0, 4, 4, 5);
    }
    if (ndim > 2) N(DVM_OP_ADDI, 0, 4, 4, 3);
    N(DVM_OP_ADDIK, 0, 7, 1, (uint16_t)off[0]);
    N(DVM_OP_IDX, 0, 6, 7, 0);
    if (ndim > 1) {
        N(DVM_OP_ADDIK, 0, 8, 2, (uint16_t)off[1]);
        N(DVM_OP_IDXM, 0, 6, 8, 1);
    }
    if (ndim > 2) {
        N(DVM_OP_ADDIK, 0, 9, 3, (uint16_t)off[2]);
        N(DVM_OP_IDXM, 0, 6, 9, 2);
    }
    N(DVM_OP_ST, 0, 6, 4, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    int64_t n = (int64_t)sh[0] * sh[1] * sh[2];
    uint32_t *out = malloc((size_t)n * 4);
    for (int64_t f = 0; f < n; f++) out[f] = SENT;
    arrays A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, out, n);
    for (int d = 0; d < 3; d++) A.shape[d] = sh[d];
    uint32_t uni[6];
    for (int d = 0; d < 3; d++) {
        uni[d] = (uint32_t)hi[d];
        uni[3 + d] = (uint32_t)lo[d];
    }
    dvm_rt_error rt;
    memset(&rt, 0, sizeof rt);
    dvm_backend *saved = be;
    be = b;
    int rc = launch(&A, uni, 6, NULL, &rt);
    be = saved;
    int bad = 0;
    for (int i = 0; i < sh[0]; i++)
        for (int j = 0; j < sh[1]; j++)
            for (int k = 0; k < sh[2]; k++) {
                /* the point this element belongs to, and whether it is in the space */
                int32_t p[3] = {i - off[0], j - off[1], k - off[2]};
                int in = 1;
                for (int d = 0; d < 3; d++) {
                    int32_t l = d < ndim && has[d] ? lo[d] : 0, h = d < ndim ? hi[d] : 1;
                    if (d >= ndim) in = in && p[d] == 0;
                    else in = in && p[d] >= l && p[d] < h;
                }
                uint32_t want = in ? (uint32_t)(p[0] * 10000 + p[1] * 100 + p[2]) : SENT;
                uint32_t got = out[((int64_t)i * sh[1] + j) * sh[2] + k];
                if (got != want && bad++ < 3)
                    CHECK(0, "%s: at (%d,%d,%d) expected %d, got %d", what, p[0], p[1], p[2], (int32_t)want, (int32_t)got);
            }
    CHECK(rc == 0, "%s: status %d code %d", what, rc, rt.code);
    free(out);
}

/* The cases of check_starts, on the plain backend and on the lanes (the cpu_lanes option). */
static void test_parallel_starts(void)
{
    char err[128];
    dvm_backend_opts o = {.cpu_lanes = 1};
    dvm_backend *lanes = vt->open(&o, err, sizeof err);
    CHECK(lanes != NULL, "open with cpu_lanes: %s", err);
    if (!lanes) return;
    CHECK(strstr(vt->device_name(lanes), "lanes") != NULL, "cpu_lanes: the device '%s' does not say lanes",
          vt->device_name(lanes));
    dvm_backend *bs[2] = {be, lanes};
    static const int all[3] = {1, 1, 1}, mid[3] = {0, 1, 0};
    static const int32_t zero[3] = {0, 0, 0};
    for (int w = 0; w < 2; w++) {
        char what[64];
        const char *kind = w ? "lanes" : "plain";
        /* 2-D [2,5) x [3,7) in an 8x8 array */
        static const int32_t lo2[3] = {2, 3, 0}, hi2[3] = {5, 7, 1}, sh2[3] = {8, 8, 1};
        snprintf(what, sizeof what, "2-D [2,5) x [3,7) (%s)", kind);
        check_starts(what, bs[w], 2, lo2, hi2, all, zero, sh2);
        /* 3-D [0,2) x [1,4) x [0,3): a start on the middle dimension only, in 3x5x4 */
        static const int32_t lo3[3] = {0, 1, 0}, hi3[3] = {2, 4, 3}, sh3[3] = {3, 5, 4};
        snprintf(what, sizeof what, "3-D [0,2) x [1,4) x [0,3) (%s)", kind);
        check_starts(what, bs[w], 3, lo3, hi3, mid, zero, sh3);
        /* empty: a stop below its start, and a stop equal to it */
        static const int32_t loe[3] = {0, 5, 0}, hie[3] = {3, 2, 1}, loz[3] = {1, 3, 0}, hiz[3] = {4, 3, 1};
        snprintf(what, sizeof what, "2-D [0,3) x [5,2), empty (%s)", kind);
        check_starts(what, bs[w], 2, loe, hie, all, zero, sh2);
        snprintf(what, sizeof what, "2-D [1,4) x [3,3), empty (%s)", kind);
        check_starts(what, bs[w], 2, loz, hiz, all, zero, sh2);
        /* a negative start: 1-D [-3, 2) writes x[i + 3] */
        static const int32_t lon[3] = {-3, 0, 0}, hin[3] = {2, 1, 1}, offn[3] = {3, 0, 0}, shn[3] = {6, 1, 1};
        snprintf(what, sizeof what, "1-D [-3,2) (%s)", kind);
        check_starts(what, bs[w], 1, lon, hin, all, offn, shn);
        /* large enough for many chunks and threads: 3-D with negative and positive starts */
        static const int32_t lob[3] = {-5, -2, 7}, hib[3] = {40, 30, 19}, offb[3] = {5, 2, -7}, shb[3] = {46, 33, 13};
        snprintf(what, sizeof what, "3-D [-5,40) x [-2,30) x [7,19) (%s)", kind);
        check_starts(what, bs[w], 3, lob, hib, all, offb, shb);
    }
    vt->close(lanes);
}

/* Atomics from many threads, and an error from every iteration (first one wins). */
static void test_atomics(void)
{
    dvm_backend_opts many = {.threads = 8};
    char err[128];
    dvm_backend *saved = be;
    be = vt->open(&many, err, sizeof err);
    reset();
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->idx_reg[0] = 1;
    CI(2, 0);
    CI(3, 1);
    CF(4, 1.0f);
    N(DVM_OP_ATOMADDF, 0, 2, 4, 0);  /* f[0] += 1 */
    N(DVM_OP_ATOMADDI, 1, 2, 3, 0);  /* i[0] += 1 */
    N(DVM_OP_I2F, 0, 5, 1, 0);
    N(DVM_OP_ATOMMAXF, 0, 3, 5, 0);  /* f[1] = max */
    CI(6, 2);
    N(DVM_OP_ATOMMINF, 0, 6, 5, 0);  /* f[2] = min */
    N(DVM_OP_NEGI, 0, 7, 1, 0);
    N(DVM_OP_ATOMMAXI, 1, 3, 1, 0);  /* i[1] = max i */
    N(DVM_OP_ATOMMINI, 1, 6, 7, 0);  /* i[2] = min -i */
    N(DVM_OP_ATOMADDU, 0, 1, 4, 0);  /* U[1] += 1 */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    const int n = 200000;
    uint32_t f[3] = {0, f2u(-1.0f), f2u(1e9f)}, iv[3] = {0, 0, 0};
    arrays A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, f, 3);
    arr1(&A, 1, iv, 3);
    uint32_t uni[2] = {(uint32_t)n, 0};
    dvm_rt_error rt;
    int rc = launch(&A, uni, 2, NULL, &rt);
    CHECK(rc == 0, "atomics: status %d", rc);
    CHECK(u2f(f[0]) == (float)n, "ATOMADDF: expected %d, got %g", n, (double)u2f(f[0]));
    CHECK(iv[0] == (uint32_t)n, "ATOMADDI: expected %d, got %u", n, iv[0]);
    CHECK(u2f(f[1]) == (float)(n - 1), "ATOMMAXF: expected %d, got %g", n - 1, (double)u2f(f[1]));
    CHECK(u2f(f[2]) == 0.0f, "ATOMMINF: expected 0, got %g", (double)u2f(f[2]));
    CHECK((int32_t)iv[1] == n - 1, "ATOMMAXI: expected %d, got %d", n - 1, (int32_t)iv[1]);
    CHECK((int32_t)iv[2] == -(n - 1), "ATOMMINI: expected %d, got %d", -(n - 1), (int32_t)iv[2]);
    CHECK(u2f(uni[1]) == (float)n, "ATOMADDU: expected %d, got %g", n, (double)u2f(uni[1]));

    /* every iteration fails at a different index: one record, consistent payload */
    reset();
    t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->idx_reg[0] = 1;
    N(DVM_OP_ADDIK, 0, 2, 1, 10);
    uint32_t fn = nn;
    N(DVM_OP_LD, 0, 3, 2, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    uint32_t small[10] = {0};
    memset(&A, 0, sizeof A);
    arr1(&A, 0, small, 10);
    uni[0] = 100000;
    rc = launch(&A, uni, 1, NULL, &rt);
    CHECK(rc == 1 && rt.code == DVM_RT_OOB && rt.node == fn && rt.p[0] == 0 && rt.p[1] == -1 && rt.p[2] >= 10 &&
              rt.p[2] < 100010 && rt.p[3] == 10,
          "parallel OOB: status %d code %d node %u payload {%lld %lld %lld %lld}", rc, rt.code, rt.node,
          (long long)rt.p[0], (long long)rt.p[1], (long long)rt.p[2], (long long)rt.p[3]);
    vt->close(be);
    be = saved;
}

/* ---- size programs ---- */
static int run_size(arrays *A, uint32_t *uni, uint32_t nuni, int64_t walk_cap, int64_t *caps, dvm_rt_error *rt)
{
    char err[256] = "";
    make_prog();
    dvm_buffer *bufs[NARR] = {0};
    for (uint32_t i = 0; i < A->n; i++) {
        vt->alloc(be, (size_t)A->len[i] * 4, &bufs[i], err, sizeof err);
        vt->write(be, bufs[i], 0, A->data[i], (size_t)A->len[i] * 4, err, sizeof err);
    }
    dvm_size_job j;
    memset(&j, 0, sizeof j);
    j.prog = &prog;
    j.var = &var;
    j.nslots = A->n;
    j.arrays = bufs;
    j.arr_len = A->len;
    j.arr_shape = A->shape;
    j.uniforms = uni;
    j.nuniforms = nuni;
    j.walk_cap = walk_cap;
    int rc = dvm_sizer_run(vt, be, &j, caps, rt, err, sizeof err);
    if (rc < 0) printf("size: %s\n", err);
    for (uint32_t i = 0; i < A->n; i++) vt->free(be, bufs[i]);
    return rc;
}

/* Nodes are appended to the global array; size-slot operands are relative to `base`. */
static uint32_t sz_base;
static uint16_t S(uint8_t op, uint8_t x, uint16_t a, uint16_t b, uint16_t c)
{
    N(op, x, a, b, c);
    return (uint16_t)(nn - 1 - sz_base);
}

static void test_size(void)
{
    /* stack 1: 5 + max over i in [0, n) of (max over j in [1, steps[i]) of (j*2 + i)) ;
       stack 0: constant sizing (untouched); stack 2: 10 - 20 clamps to 0, then times 2^40. */
    reset();
    ns = 3;
    stacks[0].sizing = DVM_SZ_CONSTANT;
    stacks[1].sizing = DVM_SZ_PROGRAM;
    sz_base = nn;
    uint16_t c0 = S(DVM_OP_SZ_CONST, 0, 0, 0, 0);
    uint16_t n = S(DVM_OP_SZ_PARAM, 0, 0, 0, 0);
    uint16_t r = S(DVM_OP_SZ_RANGE, 0, c0, n, 0); /* c patched */
    uint16_t i = S(DVM_OP_SZ_VAR, 0, 0, 0, 0);
    uint16_t st = S(DVM_OP_SZ_LOAD, 0, i, 0, 0);
    uint16_t one = S(DVM_OP_SZ_CONST, 0, 1, 0, 0);
    uint16_t r2 = S(DVM_OP_SZ_RANGE, 0, one, st, 0);
    uint16_t jv = S(DVM_OP_SZ_VAR, 0, 1, 0, 0);
    uint16_t two = S(DVM_OP_SZ_CONST, 0, 2, 0, 0);
    uint16_t m = S(DVM_OP_SZ_MUL, 0, jv, two, 0);
    uint16_t i2 = S(DVM_OP_SZ_VAR, 0, 0, 0, 0);
    S(DVM_OP_SZ_ADD, 0, m, i2, 0);
    nodes[sz_base + r2].c = (uint16_t)(nn - sz_base);
    nodes[sz_base + r].c = (uint16_t)(nn - sz_base);
    uint16_t five = S(DVM_OP_SZ_CONST, 0, 5, 0, 0);
    S(DVM_OP_SZ_ADD, 0, five, r, 0);
    stacks[1].size_begin = sz_base;
    stacks[1].size_len = nn - sz_base;

    stacks[2].sizing = DVM_SZ_PROGRAM;
    sz_base = nn;
    uint16_t ten = S(DVM_OP_SZ_CONST, 0, 10, 0, 0);
    uint16_t tw = S(DVM_OP_SZ_CONST, 0, 20, 0, 0);
    uint16_t sub = S(DVM_OP_SZ_SUB, 0, ten, tw, 0);     /* 0 */
    uint16_t sub2 = S(DVM_OP_SZ_SUB, 0, tw, ten, 0);    /* 10 */
    uint16_t big = S(DVM_OP_SZ_CONST, 0, 0, 0x100, 0);  /* 2^24 */
    uint16_t b2 = S(DVM_OP_SZ_MUL, 0, big, big, 0);     /* 2^48 -> 2^40 */
    uint16_t b3 = S(DVM_OP_SZ_ADD, 0, b2, big, 0);      /* saturates */
    uint16_t oob = S(DVM_OP_SZ_CONST, 0, 1000, 0, 0);
    uint16_t ld = S(DVM_OP_SZ_LOAD, 0, oob, 0, 0);      /* out of bounds -> 0 */
    uint16_t sh = S(DVM_OP_SZ_SHAPE, 0, 0, 0, 0);       /* 6 */
    uint16_t a1 = S(DVM_OP_SZ_ADD, 0, ld, sh, 0);
    uint16_t a2 = S(DVM_OP_SZ_ADD, 0, a1, sub, 0);
    uint16_t mx = S(DVM_OP_SZ_MAX, 0, a2, sub2, 0);     /* max(6, 10) = 10 */
    uint16_t nr = S(DVM_OP_SZ_RANGE, 0, tw, ten, 0);    /* empty: 0 */
    uint16_t nb = S(DVM_OP_SZ_CONST, 0, 99, 0, 0);
    (void)nb;
    nodes[sz_base + nr].c = (uint16_t)(nn - sz_base);
    S(DVM_OP_SZ_ADD, 0, mx, nr, 0);
    stacks[2].size_begin = sz_base;
    stacks[2].size_len = nn - sz_base;
    stacks[3].sizing = DVM_SZ_PROGRAM;
    sz_base = nn;
    big = S(DVM_OP_SZ_CONST, 0, 0, 0x100, 0);
    b2 = S(DVM_OP_SZ_MUL, 0, big, big, 0);
    S(DVM_OP_SZ_ADD, 0, b2, big, 0);
    stacks[3].size_begin = sz_base;
    stacks[3].size_len = nn - sz_base;
    (void)b3;
    ns = 4;

    int32_t steps[6] = {3, 0, 7, -2, 5, 1};
    uint32_t sd[6];
    memcpy(sd, steps, sizeof sd);
    arrays A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, sd, 6);
    uint32_t uni[1] = {6};
    int64_t caps[4] = {-7, -7, -7, -7};
    dvm_rt_error rt;
    int rc = run_size(&A, uni, 1, 1000000, caps, &rt);
    int64_t want = 0;
    for (int ii = 0; ii < 6; ii++)
        for (int j = 1; j < steps[ii]; j++)
            if (j * 2 + ii > want) want = j * 2 + ii;
    want += 5;
    CHECK(rc == 0, "size: status %d code %d", rc, rt.code);
    CHECK(caps[0] == -7, "size: a constant stack must be left alone, got %lld", (long long)caps[0]);
    CHECK(caps[1] == want, "size with nested ranges: expected %lld, got %lld", (long long)want, (long long)caps[1]);
    CHECK(caps[2] == 10, "size sub/max/load-oob/shape/empty range: expected 10, got %lld", (long long)caps[2]);
    CHECK(caps[3] == DVM_SIZE_SAT, "size saturation: expected %lld, got %lld", (long long)DVM_SIZE_SAT, (long long)caps[3]);

    /* n = 0: the outer range is empty, cap = 5 */
    uni[0] = 0;
    rc = run_size(&A, uni, 1, 1000000, caps, &rt);
    CHECK(rc == 0 && caps[1] == 5, "size with an empty range: expected 5, got %lld", (long long)caps[1]);

    /* walk cap: steps[2] = 1e6 makes the nested (serial) walk long */
    uni[0] = 6;
    steps[2] = 1000000;
    memcpy(sd, steps, sizeof sd);
    rc = run_size(&A, uni, 1, 5000, caps, &rt);
    CHECK(rc == 1 && rt.code == DVM_RT_SIZER_CAP && rt.p[0] == 1 && rt.p[1] == 5000,
          "walk cap: expected DVM_RT_SIZER_CAP {1, 5000}, got status %d code %d {%lld, %lld}", rc, rt.code,
          (long long)rt.p[0], (long long)rt.p[1]);
    rc = run_size(&A, uni, 1, 100000000, caps, &rt);
    CHECK(rc == 0 && caps[1] == 2 * 999999 + 2 + 5, "big nested walk: expected %d, got %lld (status %d)",
          2 * 999999 + 2 + 5, (long long)caps[1], rc);
}

/* The max-reducer over more than 2^24 elements: max over i in [0, n) of a[i]. */
static void test_max_reducer(void)
{
    reset();
    ns = 1;
    stacks[0].sizing = DVM_SZ_PROGRAM;
    sz_base = nn;
    uint16_t z = S(DVM_OP_SZ_CONST, 0, 0, 0, 0);
    uint16_t n = S(DVM_OP_SZ_SHAPE, 0, 0, 0, 0);
    uint16_t r = S(DVM_OP_SZ_RANGE, 0, z, n, 0);
    uint16_t v = S(DVM_OP_SZ_VAR, 0, 0, 0, 0);
    S(DVM_OP_SZ_LOAD, 0, v, 0, 0);
    nodes[sz_base + r].c = (uint16_t)(nn - sz_base);
    S(DVM_OP_SZ_ADD, 0, r, z, 0); /* the root: the range's value */
    stacks[0].size_begin = sz_base;
    stacks[0].size_len = nn - sz_base;
    const int64_t len = ((int64_t)1 << 24) + 5;
    uint32_t *a = malloc(sizeof(uint32_t) * (size_t)len);
    for (int64_t i = 0; i < len; i++) a[i] = (uint32_t)(i % 1000);
    a[len - 1] = 123456; /* the max sits past 2^24 */
    a[7] = (uint32_t)-5;
    arrays A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, a, len);
    int64_t caps[1] = {0};
    dvm_rt_error rt;
    /* the evaluations' steps, 2^25 in all, are within the max-reducer's budget of walk_cap * 64 */
    int rc = run_size(&A, NULL, 0, (int64_t)1 << 20, caps, &rt);
    CHECK(rc == 0 && caps[0] == 123456, "max-reducer over 2^24+5: expected 123456, got %lld (status %d)",
          (long long)caps[0], rc);
    /* all negative: the max is negative and the capacity clamps at 0 */
    for (int64_t i = 0; i < len; i++) a[i] = (uint32_t)-3;
    rc = run_size(&A, NULL, 0, (int64_t)1 << 20, caps, &rt);
    CHECK(rc == 0 && caps[0] == 0, "max-reducer, all negative: expected 0, got %lld", (long long)caps[0]);
    free(a);
}

/* A crafted size program: max over v in [0, 2^40) of v. The max-reducer counts the steps of
   all its evaluations against walk_cap * DVM_SIZER_REDUCE_FACTOR and stops there (it had run
   2^40 evaluations: hours), as the serial walk stops at walk_cap. */
static void test_max_reducer_cap(void)
{
    reset();
    ns = 1;
    stacks[0].sizing = DVM_SZ_PROGRAM;
    sz_base = nn;
    uint16_t z = S(DVM_OP_SZ_CONST, 0, 0, 0, 0);
    uint16_t big = S(DVM_OP_SZ_CONST, 0, 0, 0x10, 0); /* 2^20 */
    uint16_t hi = S(DVM_OP_SZ_MUL, 0, big, big, 0);   /* 2^40 */
    uint16_t r = S(DVM_OP_SZ_RANGE, 0, z, hi, 0);
    S(DVM_OP_SZ_VAR, 0, 0, 0, 0);
    nodes[sz_base + r].c = (uint16_t)(nn - sz_base);
    stacks[0].size_begin = sz_base;
    stacks[0].size_len = nn - sz_base;
    arrays A;
    memset(&A, 0, sizeof A);
    int64_t caps[1] = {-7};
    dvm_rt_error rt;
    int rc = run_size(&A, NULL, 0, 1000, caps, &rt);
    CHECK(rc == 1 && rt.code == DVM_RT_SIZER_CAP && rt.p[0] == 0 && rt.p[1] == 1000 * DVM_SIZER_REDUCE_FACTOR && caps[0] == -7,
          "max-reducer over 2^40 values: expected DVM_RT_SIZER_CAP {0, %d}, got status %d code %d {%lld, %lld}",
          1000 * DVM_SIZER_REDUCE_FACTOR, rc, rt.code, (long long)rt.p[0], (long long)rt.p[1]);
}

/* Cancel points: a task's backward jumps read the exec's cancel word; a task without a loop
   has none and runs to its end. */
static void test_cancel_points(void)
{
    /* serial: r1 = 0; loop: r1 += 1; jump back (forever) */
    reset();
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    CI(1, 0);
    CI(2, 1);
    uint16_t top = rel(t);
    N(DVM_OP_ADDI, 0, 1, 1, 2);
    N(DVM_OP_JMP, 0, top, 0, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    /* parallel, no loop: y[i] = 2 */
    dvm_task_desc *p = task(DVM_TASK_PARALLEL, 1);
    p->ext_u[0] = 0;
    CF(1, 2.0f);
    N(DVM_OP_ST, 0, 0, 1, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(p);
    uint32_t y[4] = {0, 0, 0, 0};
    arrays A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, y, 4);
    uint32_t uni[1] = {4};
    volatile uint32_t word = 1;
    dvm_rt_error rt;
    /* the loop-free task alone, cancel set: it runs */
    dvm_task_desc saved = tasks[0];
    tasks[0] = tasks[1];
    nt = 1;
    cancel_word = &word;
    int rc = launch(&A, uni, 1, NULL, &rt);
    CHECK(rc == 0 && u2f(A.data[0][3]) == 2.0f, "a task without a loop must ignore the cancel word: status %d code %d", rc, rt.code);
    tasks[0] = saved;
    nt = 2;
    rc = launch(&A, uni, 1, NULL, &rt);
    CHECK(rc == 1 && rt.code == DVM_RT_CANCELLED && rt.task == 0, "an endless loop with the cancel word set: expected "
          "DVM_RT_CANCELLED in task 0, got status %d code %d task %u", rc, rt.code, rt.task);
    cancel_word = NULL;
}

/* The CPU's blocks (CPU_BLOCK = 64 lanes) on every path: a plain task (atomic add, max and min
 * into elements of its own row and into shared bins, index registers in arithmetic), a masked
 * one (a branch per lane), a 2-D one whose rows cross blocks, a start on the last dimension, a
 * data-dependent loop (masked lanes with their own trip counts, the loop fused); run
 * on one thread (the atomics plain: dvm_run_*_alone), on one thread without the AVX2 copy, on 3
 * threads (atomics) and with cpu_lanes, each against the same result computed here. */
static void test_blocks(void)
{
    enum { S = 3, HI = 1003, R = 5, C0 = 3, C = 150 }; /* 1-D over [S, HI); 2-D over [0, R) x [C0, C) */
    reset();
    /* task 0 (plain): x[i] += (float)i, bins[i % 7] += 1, mx[i % 7] max= i, mx[7 + i % 7] min= i,
       o3[i] = 3 * i */
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->start_u[0] = 2;
    t->idx_reg[0] = 0;
    CI(10, 7);
    CI(11, 1);
    CI(12, 3);
    N(DVM_OP_I2F, 0, 5, 0, 0);
    N(DVM_OP_ATOMADDF, 0, 0, 5, 0);
    N(DVM_OP_MODI, 0, 6, 0, 10);
    N(DVM_OP_ATOMADDI, 1, 6, 11, 0);
    N(DVM_OP_ATOMMAXF, 2, 6, 5, 0);
    N(DVM_OP_ADDIK, 0, 7, 6, 7);
    N(DVM_OP_ATOMMINF, 2, 7, 5, 0);
    N(DVM_OP_MULI, 0, 8, 0, 12);
    N(DVM_OP_ST, 3, 0, 8, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    /* task 1 (masked): odd i only, o4[i] = i + 5 */
    t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->start_u[0] = 2;
    t->idx_reg[0] = 0;
    CI(10, 2);
    N(DVM_OP_MODI, 0, 6, 0, 10);
    const uint16_t jz = rel(t);
    N(DVM_OP_JZ, 0, 6, 0, 0);
    N(DVM_OP_ADDIK, 0, 7, 0, 5);
    N(DVM_OP_ST, 4, 0, 7, 0);
    nodes[t->code_begin + jz].b = rel(t);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    /* task 2 (2-D, plain): o5[i, j] = i * 1000 + j, g[i, j] += 1.5 */
    t = task(DVM_TASK_PARALLEL, 2);
    t->ext_u[0] = 3;
    t->ext_u[1] = 4;
    t->start_u[1] = 5;
    t->idx_reg[0] = 0;
    t->idx_reg[1] = 1;
    CI(10, 1000);
    CF(11, 1.5f);
    N(DVM_OP_MULI, 0, 2, 0, 10);
    N(DVM_OP_ADDI, 0, 2, 2, 1);
    N(DVM_OP_ST2, 5, 0, 1, 2);
    N(DVM_OP_ATOMADDF2, 6, 0, 1, 11);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    /* task 3 (a data-dependent loop, masked lanes): v = 0; i % 5 times v = v * 2 + 1 (a
       one-node loop, fused); o7[i] = v */
    t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->start_u[0] = 2;
    t->idx_reg[0] = 0;
    CI(10, 5);
    CI(2, 0);
    CF(6, 2.0f);
    const uint16_t one = K(f2u(1.0f));
    N(DVM_OP_MODI, 0, 3, 0, 10);
    CF(4, 0.0f);
    const uint16_t jg = rel(t);
    N(DVM_OP_JGEI, 0, 2, 3, 0);
    N(DVM_OP_MOV, 0, 5, 2, 0);
    const uint16_t body = rel(t);
    N(DVM_OP_FMAFK, 0, 4, 6, one);
    N(DVM_OP_INCLT, 0, 5, 3, body);
    nodes[t->code_begin + jg].c = rel(t);
    N(DVM_OP_ST, 7, 0, 4, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);

    static uint32_t x[HI], bins[7], mx[14], o3[HI], o4[HI], o5[R * C], g[R * C], o7[HI];
    static uint32_t wx[HI], wbins[7], wmx[14], wo3[HI], wo4[HI], wo5[R * C], wg[R * C], wo7[HI];
    const uint32_t SENT = 0xDEADBEEFu;
    for (int i = 0; i < HI; i++) {
        wx[i] = f2u(0.5f * (float)i + (i >= S ? (float)i : 0.0f));
        wo3[i] = i >= S ? (uint32_t)(3 * i) : SENT;
        wo4[i] = i >= S && (i & 1) ? (uint32_t)(i + 5) : SENT;
        wo7[i] = i >= S ? f2u((float)((1 << (i % 5)) - 1)) : SENT;
    }
    memset(wbins, 0, sizeof wbins);
    for (int b = 0; b < 7; b++) wmx[b] = f2u(-1.0f), wmx[7 + b] = f2u(1e9f);
    for (int i = S; i < HI; i++) {
        wbins[i % 7]++;
        if ((float)i > u2f(wmx[i % 7])) wmx[i % 7] = f2u((float)i);
        if ((float)i < u2f(wmx[7 + i % 7])) wmx[7 + i % 7] = f2u((float)i);
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            wo5[i * C + j] = j >= C0 ? (uint32_t)(i * 1000 + j) : SENT;
            wg[i * C + j] = f2u(j >= C0 ? 2.5f : 1.0f);
        }

    static const struct { const char *what; dvm_backend_opts o; } runs[] = {
        {"1 thread", {.threads = 1}},
        {"1 thread, no AVX2", {.threads = 1, .cpu_no_avx2 = 1}},
        {"3 threads", {.threads = 3}},
        {"cpu_lanes", {.threads = 1, .cpu_lanes = 1}},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        for (int i = 0; i < HI; i++) x[i] = f2u(0.5f * (float)i), o3[i] = o4[i] = o7[i] = SENT;
        memset(bins, 0, sizeof bins);
        for (int b = 0; b < 7; b++) mx[b] = f2u(-1.0f), mx[7 + b] = f2u(1e9f);
        for (int i = 0; i < R * C; i++) o5[i] = SENT, g[i] = f2u(1.0f);
        arrays A;
        memset(&A, 0, sizeof A);
        arr1(&A, 0, x, HI);
        arr1(&A, 1, bins, 7);
        arr1(&A, 2, mx, 14);
        arr1(&A, 3, o3, HI);
        arr1(&A, 4, o4, HI);
        arr1(&A, 5, o5, R * C);
        A.shape[5 * DVM_MAX_RANK] = R, A.shape[5 * DVM_MAX_RANK + 1] = C;
        arr1(&A, 6, g, R * C);
        A.shape[6 * DVM_MAX_RANK] = R, A.shape[6 * DVM_MAX_RANK + 1] = C;
        arr1(&A, 7, o7, HI);
        uint32_t uni[6] = {HI, 0, S, R, C, C0};
        char err[128];
        dvm_backend *saved = be;
        be = vt->open(&runs[r].o, err, sizeof err);
        CHECK(be != NULL, "%s: open: %s", runs[r].what, err);
        if (!be) {
            be = saved;
            continue;
        }
        dvm_rt_error rt;
        memset(&rt, 0, sizeof rt);
        const int rc = launch(&A, uni, 6, NULL, &rt);
        vt->close(be);
        be = saved;
        CHECK(rc == 0, "blocks, %s: status %d code %d", runs[r].what, rc, rt.code);
        const struct { const char *name; const uint32_t *got, *want; int n; } cmp[] = {
            {"x (ATOMADDF)", x, wx, HI}, {"bins (ATOMADDI)", bins, wbins, 7}, {"max/min", mx, wmx, 14},
            {"o3 (ST of 3 * i)", o3, wo3, HI}, {"o4 (masked ST)", o4, wo4, HI},
            {"o5 (2-D ST2)", o5, wo5, R * C}, {"g (ATOMADDF2)", g, wg, R * C}, {"o7 (loop)", o7, wo7, HI}};
        for (size_t k = 0; k < sizeof cmp / sizeof cmp[0]; k++)
            for (int i = 0; i < cmp[k].n; i++)
                if (cmp[k].got[i] != cmp[k].want[i]) {
                    CHECK(0, "blocks, %s: %s[%d] expected 0x%08x, got 0x%08x", runs[r].what, cmp[k].name, i,
                          cmp[k].want[i], cmp[k].got[i]);
                    break;
                }
    }
}

int main(void)
{
    char err[256];
    dvm_backend_opts o = {0};
    be = vt->open(&o, err, sizeof err);
    if (!be) {
        printf("FAIL open: %s\n", err);
        return 1;
    }
    char probe[512] = "";
    CHECK(vt->probe(probe, sizeof probe) == 1 && strncmp(probe, "cpu: ", 5) == 0, "probe: got '%s'", probe);
    test_f32();
    test_i32();
    test_misc();
    test_jout();
    test_one_node_loops();
    test_bounds();
    test_assert_and_stacks();
    test_parallel();
    test_parallel_starts();
    test_atomics();
    test_blocks();
    test_size();
    test_max_reducer();
    test_max_reducer_cap();
    test_cancel_points();
    hb.vt = vt;
    hb.be = be;
    dvm_heap_release(&heap, &hmem);
    vt->close(be);
    if (fails) {
        printf("%d check(s) failed\n", fails);
        return 1;
    }
    printf("test_interp: all passed\n");
    return 0;
}
