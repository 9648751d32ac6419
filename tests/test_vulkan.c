/* test_vulkan.c: the Vulkan backend against the CPU backend. Hand-built programs run on both
 * and are compared: i32 results and f32 results of exact operations (+ - * min max abs neg
 * floor ceil compares conversions) bit for bit; other f32 results within a relative 2e-5 or
 * absolute 1e-6 (Vulkan leaves the precision of transcendental functions and division to
 * the driver); error records field by field. Also: device limits (largest allocation), the
 * pipeline cache (cold, warm, corrupt), probe. Exits 77 (ctest SKIP) when no Vulkan device
 * is found. tests/vulkan.cmake runs it as it is and with each of its flags, which set the
 * backend's options: --no-int64 (vk_no_int64), --no-float-atomics (vk_no_float_atomics),
 * --gpu-threads N (gpu_threads), --vk-lanes N (vk_lanes; with it, launches pass each parallel
 * task's iteration count, which four lanes need). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytecode/hash.h"
#include "heap/heap.h"
#include "vm/backend.h"
#include "vm/sizer.h"

#include "tests/check.h"


#include "tests/progbuild.h"

/* The backend's four SPIR-V images, under names of this test's own (the library defines the
 * originals): the pipeline cache's file is named after the FNV-1a 64 of the image it holds. */
#define dvm_spv_i0_f0 test_spv_i0_f0
#define dvm_spv_i0_f1 test_spv_i0_f1
#define dvm_spv_i1_f0 test_spv_i1_f0
#define dvm_spv_i1_f1 test_spv_i1_f1
#include "dvm_spv_i0_f0.h"
#include "dvm_spv_i0_f1.h"
#include "dvm_spv_i1_f0.h"
#include "dvm_spv_i1_f1.h"

/* 1 when the one cache file in dir is named vk-UUID-DRIVER-HASH.bin with HASH the FNV-1a 64 of
 * one of the images. */
static int cache_name_is_image_hash(const char *dir, char *name, size_t n)
{
    const uint64_t h[4] = {dvm_fnv1a(DVM_FNV_BASIS, test_spv_i0_f0, sizeof test_spv_i0_f0),
                           dvm_fnv1a(DVM_FNV_BASIS, test_spv_i0_f1, sizeof test_spv_i0_f1),
                           dvm_fnv1a(DVM_FNV_BASIS, test_spv_i1_f0, sizeof test_spv_i1_f0),
                           dvm_fnv1a(DVM_FNV_BASIS, test_spv_i1_f1, sizeof test_spv_i1_f1)};
    DIR *d = opendir(dir);
    if (!d) return 0;
    int ok = 0;
    snprintf(name, n, "(none)");
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 21 || strncmp(e->d_name, "vk-", 3) || strcmp(e->d_name + len - 4, ".bin")) continue;
        snprintf(name, n, "%s", e->d_name);
        unsigned long long v = strtoull(e->d_name + len - 20, NULL, 16);
        for (int i = 0; i < 4; i++) ok |= v == h[i];
    }
    closedir(d);
    return ok;
}

static dvm_program prog;
static dvm_variant_desc var;

static void make_prog(uint32_t nslots, uint32_t nuni) { pb_program(&prog, &var, nslots, nuni); }

#define NARR 5
typedef struct run_in {
    uint32_t n;
    uint32_t *data[NARR];
    int64_t len[NARR];
    int32_t shape[NARR * DVM_MAX_RANK];
    uint32_t uni[8];
    uint32_t nuni;
    int64_t caps[4];
    /* > 0: every parallel task's iteration count, known to the host as vm/launch.c passes it
       (dvm_exec.total): the backend dispatches that many threads. 0: unknown, as for an extent
       a serial task computes: it dispatches its thread cap (2^18 on a CPU device such as
       lavapipe, where 2^18 threads for 1024 iterations take over a second a launch). */
    int64_t total;
} run_in;

typedef struct run_out {
    int rc;
    dvm_rt_error rt;
    uint32_t *data[NARR];
    uint32_t uni[8];
    char err[256];
} run_out;

static void arr1(run_in *A, uint32_t slot, uint32_t *data, int64_t n)
{
    if (A->n <= slot) A->n = slot + 1;
    A->data[slot] = data;
    A->len[slot] = n;
    for (int d = 0; d < DVM_MAX_RANK; d++) A->shape[slot * DVM_MAX_RANK + d] = 1;
    A->shape[slot * DVM_MAX_RANK] = (int32_t)n;
}

/* --vk-lanes: the launches that pass no iteration count (run_in.total) pass each parallel task's,
   as dvm_launch does where the uniforms that bound it are inputs (no serial task), so that four
   lanes (vk_lanes) run them too. */
static int pass_totals;

/* Runs the current program on one backend; out->data are fresh copies (free them). */
static void launch(const dvm_backend_vtbl *vt, dvm_backend *be, const run_in *A, run_out *o)
{
    memset(o, 0, sizeof *o);
    make_prog(A->n, A->nuni);
    dvm_buffer *bufs[NARR] = {0};
    for (uint32_t i = 0; i < A->n; i++) {
        size_t bytes = (size_t)A->len[i] * 4;
        if (vt->alloc(be, bytes, &bufs[i], o->err, sizeof o->err) || vt->write(be, bufs[i], 0, A->data[i], bytes, o->err, sizeof o->err)) {
            printf("FAIL %s alloc/write: %s\n", vt->name, o->err);
            exit(1);
        }
    }
    dvm_loaded *ld = NULL;
    if (vt->load(be, &prog, &ld, o->err, sizeof o->err)) { printf("FAIL %s load: %s\n", vt->name, o->err); exit(1); }
    memcpy(o->uni, A->uni, sizeof o->uni);
    dvm_exec x;
    memset(&x, 0, sizeof x);
    x.prog = &prog; x.loaded = ld; x.var = &var; x.nslots = A->n; x.arrays = bufs;
    x.arr_len = A->len; x.arr_shape = A->shape; x.uniforms = o->uni; x.nuniforms = A->nuni;
    int64_t total[64];
    if (A->total > 0 && var.ntasks <= 64) {
        for (uint32_t t = 0; t < var.ntasks; t++)
            total[t] = prog.tasks[var.task_begin + t].kind == DVM_TASK_PARALLEL ? A->total : -1;
        x.total = total;
    } else if (pass_totals && var.ntasks <= 64) {
        /* --vk-lanes: every launch without a serial task passes its counts from its uniforms */
        int serial = 0;
        for (uint32_t t = 0; t < var.ntasks; t++) serial |= prog.tasks[var.task_begin + t].kind == DVM_TASK_SERIAL;
        for (uint32_t t = 0; t < var.ntasks && !serial; t++) {
            const dvm_task_desc *td = &prog.tasks[var.task_begin + t];
            total[t] = 1;
            for (uint32_t d = 0; d < td->ndim; d++) {
                const int64_t stop = (int32_t)o->uni[td->ext_u[d]];
                const int64_t start = td->start_u[d] != DVM_NO_SLOT ? (int32_t)o->uni[td->start_u[d]] : 0;
                total[t] *= stop > start ? stop - start : 0;
            }
        }
        if (!serial) x.total = total;
    }
    x.nthread_slots = vt->slots(be, &x);
    int64_t off[4];
    dvm_heap heap = {0, 0, 0};
    heap_be hb = {vt, be};
    const dvm_heap_mem hmem = {heap_be_alloc, heap_be_free, &hb};
    if (ns) {
        dvm_heap_layout L;
        if (dvm_heap_layout_compute(A->caps, ns, x.nthread_slots, off, &L, o->err, sizeof o->err) ||
            dvm_heap_reserve(&heap, &hmem, (size_t)L.total_words * 4, o->err, sizeof o->err)) {
            printf("FAIL %s heap: %s\n", vt->name, o->err);
            exit(1);
        }
        x.heap = (dvm_buffer *)heap.buf; x.stride = L.stride; x.stack_off = off; x.stack_cap = A->caps; x.nstacks = ns;
    }
    o->rc = vt->exec(be, &x, &o->rt, o->err, sizeof o->err);
    for (uint32_t i = 0; i < A->n; i++) {
        o->data[i] = calloc((size_t)A->len[i] + 1, 4);
        vt->read(be, bufs[i], 0, o->data[i], (size_t)A->len[i] * 4, o->err + strlen(o->err), 1);
        vt->free(be, bufs[i]);
    }
    dvm_heap_release(&heap, &hmem);
    vt->unload(be, ld);
}

static dvm_backend *cpu, *vk;
static const dvm_backend_opts *opts_main; /* main's options */
static const dvm_backend_vtbl *VC = &dvm_backend_cpu, *VV = &dvm_backend_vulkan;

/* EXACT: bit for bit (i32); EXACTF: f32 bit for bit except that any NaN matches any NaN
   (drivers differ in NaN payloads); LOOSE: f32 within the tolerance above; UNSET: not compared
   (what iterations of a failed launch wrote before it stopped: the backends stop at different
   points, and vm/launch.c puts back what a failed launch wrote). */
enum { EXACT = 0, LOOSE = 1, EXACTF = 2, UNSET = 3 };
/* Runs the program on both and compares every array word (kind[slot]: EXACT or LOOSE f32). */
static void both(const char *what, const run_in *A, const int *kind)
{
    run_out c, v;
    launch(VC, cpu, A, &c);
    launch(VV, vk, A, &v);
    CHECK(c.rc == v.rc, "%s: cpu status %d (%s), vulkan status %d (%s)", what, c.rc, c.err, v.rc, v.err);
    if (c.rc == 1 && v.rc == 1)
        CHECK(c.rt.code == v.rt.code && c.rt.task == v.rt.task && c.rt.node == v.rt.node && c.rt.p[0] == v.rt.p[0] &&
                  c.rt.p[1] == v.rt.p[1] && c.rt.p[2] == v.rt.p[2] && c.rt.p[3] == v.rt.p[3],
              "%s: error record cpu {%d task %u node %u p %lld %lld %lld %lld} vulkan {%d task %u node %u p %lld %lld %lld %lld}",
              what, c.rt.code, c.rt.task, c.rt.node, (long long)c.rt.p[0], (long long)c.rt.p[1], (long long)c.rt.p[2],
              (long long)c.rt.p[3], v.rt.code, v.rt.task, v.rt.node, (long long)v.rt.p[0], (long long)v.rt.p[1],
              (long long)v.rt.p[2], (long long)v.rt.p[3]);
    for (uint32_t s = 0; s < A->n; s++) {
        int bad = 0;
        for (int64_t i = 0; i < A->len[s] && !(kind && kind[s] == UNSET); i++) {
            uint32_t a = c.data[s][i], b = v.data[s][i];
            if (a == b) continue;
            if (kind && kind[s] == EXACTF && isnan(u2f(a)) && isnan(u2f(b))) continue;
            if (kind && kind[s] == LOOSE) {
                float fa = u2f(a), fb = u2f(b);
                if (isnan(fa) && isnan(fb)) continue;
                if (fabsf(fa - fb) <= 1e-6f || fabsf(fa - fb) <= 2e-5f * fabsf(fa)) continue;
                if (isinf(fa) && fa == fb) continue;
            }
            if (bad++ < 4)
                CHECK(0, "%s: slot %u [%lld]: cpu 0x%08x (%.9g) vulkan 0x%08x (%.9g)", what, s, (long long)i, a, (double)u2f(a), b,
                      (double)u2f(b));
        }
        free(c.data[s]);
        free(v.data[s]);
    }
    if (c.rc == 0 && v.rc == 0)
        CHECK(memcmp(c.uni, v.uni, sizeof c.uni) == 0, "%s: uniforms written back differ", what);
}

/* ---- programs ---- */
#define NE 1024
static uint32_t X[NE], Y[NE], O[NE];

/* out[i] = op(x[i], y[i]) over a parallel 1-D task with n = U[0], which the host knows
   (run_in.total) unless ew_total is 0. */
static int64_t ew_total = NE;
static void elementwise(uint8_t op, int isf, int arity)
{
    reset();
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->idx_reg[0] = 1;
    N(DVM_OP_LD, 0, 2, 1, 0);
    N(DVM_OP_LD, 1, 3, 1, 0);
    if (op == DVM_OP_SEL) N(DVM_OP_MOV, 0, 4, 2, 0), N(DVM_OP_SEL, 0, 4, 3, 2);
    else N(op, 0, 4, 2, arity == 2 ? 3 : 0);
    N(DVM_OP_ST, 2, 1, 4, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, X, NE);
    arr1(&A, 1, Y, NE);
    memset(O, 0, sizeof O);
    arr1(&A, 2, O, NE);
    A.uni[0] = NE;
    A.nuni = 1;
    A.total = ew_total;
    int kind[3] = {EXACT, EXACT, isf};
    char what[64];
    snprintf(what, sizeof what, "op %u", op);
    both(what, &A, kind);
}

static void test_ops(void)
{
    srand(7);
    /* f32 inputs: a spread of magnitudes and signs, plus specials */
    static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.5f, 3.0f, 1e30f, -1e-30f, INFINITY, -INFINITY, NAN, 2.0f, 1e-3f, 100.0f, -7.0f};
    for (int i = 0; i < NE; i++) {
        float a = (float)((rand() % 20000) - 10000) / 1000.0f, b = (float)((rand() % 20000) - 10000) / 997.0f;
        if (i < 16) a = special[i];
        if (i >= 16 && i < 32) b = special[i - 16];
        X[i] = f2u(a);
        Y[i] = f2u(b);
    }
    static const uint8_t exact2[] = {DVM_OP_ADDF, DVM_OP_SUBF, DVM_OP_MULF, DVM_OP_MINF, DVM_OP_MAXF, DVM_OP_LTF, DVM_OP_LEF, DVM_OP_EQF, DVM_OP_NEF};
    static const uint8_t loose2[] = {DVM_OP_DIVF, DVM_OP_POWF, DVM_OP_ATAN2F, DVM_OP_FFLOORDIV, DVM_OP_FMODF};
    static const uint8_t exact1[] = {DVM_OP_NEGF, DVM_OP_ABSF, DVM_OP_FLOOR, DVM_OP_CEIL, DVM_OP_MOV};
    static const uint8_t loose1[] = {DVM_OP_SIN, DVM_OP_COS, DVM_OP_TAN, DVM_OP_ATAN, DVM_OP_EXP, DVM_OP_LOG, DVM_OP_SQRT, DVM_OP_RSQRT, DVM_OP_TANH};
    for (size_t i = 0; i < sizeof exact2; i++) elementwise(exact2[i], EXACTF, 2);
    for (size_t i = 0; i < sizeof loose2; i++) elementwise(loose2[i], LOOSE, 2);
    for (size_t i = 0; i < sizeof exact1; i++) elementwise(exact1[i], EXACTF, 1);
    elementwise(DVM_OP_F2I, EXACT, 1);
    X[7] = f2u(1e3f); /* beyond |x| = 1e5 sin/cos/tan use the driver's builtin (docs/backends.md) */
    X[8] = f2u(-31415.9f);
    for (size_t i = 0; i < sizeof loose1; i++) elementwise(loose1[i], LOOSE, 1);
    /* asin/acos need [-1, 1]; pow with integral exponents of negative bases */
    for (int i = 0; i < NE; i++) { X[i] = f2u((float)(i - NE / 2) / (NE / 2)); Y[i] = f2u((float)(i % 7 - 3)); }
    elementwise(DVM_OP_ASIN, LOOSE, 1);
    elementwise(DVM_OP_ACOS, LOOSE, 1);
    elementwise(DVM_OP_POWF, LOOSE, 2);
    /* i32: edge values; divisors never 0 here */
    static const int32_t ie[] = {0, 1, -1, 2, -2, 7, -7, 2147483647, (int32_t)0x80000000, 13, -13, 3, 100000, -100000, 65536, 31};
    for (int i = 0; i < NE; i++) {
        int32_t a = (rand() % 2001) - 1000, b = (rand() % 41) - 20;
        if (i < 256) { a = ie[i % 16]; b = ie[i / 16]; }
        if (b == 0) b = 3;
        X[i] = (uint32_t)a;
        Y[i] = (uint32_t)b;
    }
    static const uint8_t iops2[] = {DVM_OP_ADDI, DVM_OP_SUBI, DVM_OP_MULI, DVM_OP_DIVI, DVM_OP_MODI, DVM_OP_MINI, DVM_OP_MAXI,
                                    DVM_OP_LTI, DVM_OP_LEI, DVM_OP_EQI, DVM_OP_NEI, DVM_OP_SEL};
    static const uint8_t iops1[] = {DVM_OP_NEGI, DVM_OP_ABSI, DVM_OP_I2F, DVM_OP_NOT};
    for (size_t i = 0; i < sizeof iops2; i++) elementwise(iops2[i], EXACT, 2);
    for (size_t i = 0; i < sizeof iops1; i++) elementwise(iops1[i], EXACT, 1);
    for (int i = 0; i < NE; i++) { X[i] = (uint32_t)((i % 9) - 4); Y[i] = (uint32_t)(i % 13); }
    elementwise(DVM_OP_POWI, EXACT, 2);
    /* an extent the host does not know: the thread cap's threads, most without an iteration */
    ew_total = 0;
    elementwise(DVM_OP_ADDI, EXACT, 2);
    ew_total = NE;
}

/* A serial task computes a hidden extent (U[1] = n * 2 - 3) and a loop sum into U[2]; a 2-D
   parallel task over (U[1] / 8, 8) pushes and pops an adstack and writes with IDX/IDXM;
   constants and fused ops along the way. */
static void test_control(void)
{
    reset();
    consts[nk++] = f2u(1.5f);
    consts[nk++] = f2u(-0.25f);
    ns = 1;
    stacks[0].type = DVM_T_F32;
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    N(DVM_OP_LDU, 0, 1, 0, 0);     /* r1 = n */
    N(DVM_OP_ADDI, 0, 2, 1, 1);    /* r2 = 2n */
    N(DVM_OP_ADDIK, 0, 2, 2, (uint16_t)-3);
    N(DVM_OP_STU, 0, 1, 2, 0);     /* U[1] = 2n - 3 */
    CI(3, 0);                      /* i */
    CI(4, 0);                      /* sum */
    uint16_t top = rel(t);
    N(DVM_OP_JGEI, 0, 3, 1, 0);    /* patched */
    uint32_t jge = nn - 1;
    N(DVM_OP_MULI, 0, 5, 3, 3);
    N(DVM_OP_ADDI, 0, 4, 4, 5);
    N(DVM_OP_PUSH, 0, 0, 4, 0);
    N(DVM_OP_ADDIK, 0, 3, 3, 1);
    N(DVM_OP_JMP, 0, top, 0, 0);
    nodes[jge].c = rel(t);
    N(DVM_OP_POP, 0, 6, 0, 0);
    N(DVM_OP_STU, 0, 2, 6, 0);     /* U[2] = last pushed sum */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);

    t = task(DVM_TASK_PARALLEL, 2);
    t->ext_u[0] = 3; /* U[3] = U[1] / 8 computed below? no: host fills it (known extent) */
    t->ext_u[1] = 4;
    t->idx_reg[0] = 1;
    t->idx_reg[1] = 2;
    N(DVM_OP_IDX, 0, 3, 1, 0);
    N(DVM_OP_IDXM, 0, 3, 2, 1);    /* flat */
    N(DVM_OP_I2F, 0, 4, 3, 0);
    N(DVM_OP_MULFK, 0, 5, 4, 0);   /* *1.5 */
    N(DVM_OP_FMAFK, 0, 5, 5, 1);   /* *r5 - 0.25 */
    N(DVM_OP_ADDFK, 0, 5, 5, 1);
    CI(7, 0);
    uint16_t lp = rel(t);
    N(DVM_OP_PUSH, 0, 0, 5, 0);
    N(DVM_OP_INCLT, 0, 7, 2, lp);   /* push idx1 + 1 times */
    CI(8, 0);
    CI(9, 0);
    uint16_t lp2 = rel(t);
    N(DVM_OP_POP, 0, 10, 0, 0);
    N(DVM_OP_ADDF, 0, 9, 9, 10);
    N(DVM_OP_INCLT, 0, 8, 7, lp2);
    N(DVM_OP_LDADDF, 0, 9, 3, 0);
    N(DVM_OP_ST, 0, 3, 9, 0);
    N(DVM_OP_SHAPE, 1, 11, 0, 0);
    N(DVM_OP_ST, 1, 3, 11, 0);
    N(DVM_OP_LDU, 0, 12, 2, 0);
    N(DVM_OP_ATOMADDI, 2, 8, 12, 0); /* r8 = idx1+1 after the loop: cells 1..8 */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);

    static uint32_t a0[64], a1[64], a2[16];
    for (int i = 0; i < 64; i++) a0[i] = f2u((float)i * 0.5f);
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, a0, 64);
    A.shape[0] = 8;
    A.shape[1] = 8;
    arr1(&A, 1, a1, 64);
    arr1(&A, 2, a2, 16);
    A.uni[0] = 20;
    A.uni[3] = 8;
    A.uni[4] = 8;
    A.nuni = 5;
    A.caps[0] = 40;
    int kind[3] = {LOOSE, EXACT, EXACT};
    both("control, stacks, 2-D", &A, kind);
    /* a capacity too small: adstack overflow in the serial task */
    A.caps[0] = 5;
    both("adstack overflow", &A, kind);
}

/* One parallel task whose iterations take 0..8 trips (so an invocation's four lanes part and
   meet again): push x, x * 1.5, .. then pop and sum them, then a one-node loop (a self-update
   that the interpreters fuse); with --vk-lanes 4 it runs on four lanes, the stack nodes and
   the fused loop in pipelines of their own. Then a capacity too small for some lanes only. */
static void test_lane_loops(void)
{
    reset();
    ns = 1;
    stacks[0].type = DVM_T_F32;
    const uint16_t k15 = K(f2u(1.5f)), k25 = K(f2u(0.25f));
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->idx_reg[0] = 1;
    N(DVM_OP_LD, 0, 2, 1, 0);       /* r2 = trips[i] */
    N(DVM_OP_LD, 1, 3, 1, 0);       /* r3 = x[i] */
    CI(4, 0);
    N(DVM_OP_JGEI, 0, 4, 2, 0);     /* patched: no trips */
    uint32_t j1 = nn - 1;
    uint16_t lp = rel(t);
    N(DVM_OP_PUSH, 0, 0, 3, 0);
    N(DVM_OP_MULFK, 0, 3, 3, k15);
    N(DVM_OP_INCLT, 0, 4, 2, lp);
    nodes[j1].c = rel(t);
    CI(5, 0);
    CI(6, 0);
    N(DVM_OP_JGEI, 0, 5, 2, 0);
    uint32_t j2 = nn - 1;
    uint16_t lp2 = rel(t);
    N(DVM_OP_POP, 0, 7, 0, 0);
    N(DVM_OP_ADDF, 0, 6, 6, 7);
    N(DVM_OP_INCLT, 0, 5, 2, lp2);
    nodes[j2].c = rel(t);
    CI(8, 0);
    N(DVM_OP_JGEI, 0, 8, 2, 0);
    uint32_t j3 = nn - 1;
    uint16_t lp3 = rel(t);
    N(DVM_OP_FMAFK, 0, 6, 3, k25);  /* r6 = r6 * r3 + 0.25: a one-node loop */
    N(DVM_OP_INCLT, 0, 8, 2, lp3);
    nodes[j3].c = rel(t);
    N(DVM_OP_ST, 2, 1, 6, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);

    static uint32_t trips[NE], x[NE], o[NE];
    for (int i = 0; i < NE; i++) trips[i] = (uint32_t)((i * 7 + i / 5) % 9), x[i] = f2u(0.5f + (float)(i % 13) * 0.03125f);
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, trips, NE);
    arr1(&A, 1, x, NE);
    memset(o, 0, sizeof o);
    arr1(&A, 2, o, NE);
    A.uni[0] = NE;
    A.nuni = 1;
    A.total = NE;
    A.caps[0] = 8;
    int kind[3] = {EXACT, EXACT, LOOSE};
    both("lanes: stacks and a fused loop", &A, kind);
    A.caps[0] = 6;
    kind[2] = UNSET;
    both("lanes: adstack overflow in some lanes", &A, kind);
}

/* Counted one-node loops on plain lanes (interp.comp, OP_JGEI; vulkan_backend.c, vk_plain_loop):
   a task whose only branches are such loops, one with the counter copied first (MOV) and one
   that counts in its bound's partner itself (a `while` with a counter), runs each lane's trips
   at the loop's head. Lane by lane the trip counts differ, some lanes have none (hi <= lo, the
   counters then keep their values) and the last round has lanes without an iteration; the
   counters' final values are stored too. */
static void test_plain_loops(void)
{
    enum { PL = 1001 };
    reset();
    const uint16_t k25 = K(f2u(0.25f));
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->idx_reg[0] = 0;
    N(DVM_OP_LD, 0, 1, 0, 0);       /* r1 = hi[i] */
    N(DVM_OP_LD, 1, 2, 0, 0);       /* r2 = lo[i] */
    N(DVM_OP_LD, 2, 3, 0, 0);       /* r3 = x[i] */
    CI(4, f2u(0.75f));
    CI(5, 77);
    N(DVM_OP_JGEI, 0, 2, 1, 0);     /* patched: past the loop */
    uint32_t j1 = nn - 1;
    N(DVM_OP_MOV, 0, 5, 2, 0);      /* cnt = lo */
    uint16_t lp = rel(t);
    N(DVM_OP_FMAFK, 0, 3, 4, k25);  /* x = x * 0.75 + 0.25 */
    N(DVM_OP_INCLT, 0, 5, 1, lp);
    nodes[j1].c = rel(t);
    N(DVM_OP_JGEI, 0, 2, 1, 0);     /* the same bounds, lo itself the counter */
    uint32_t j2 = nn - 1;
    uint16_t lp2 = rel(t);
    N(DVM_OP_MULF, 0, 3, 3, 4);     /* x = x * 0.75 */
    N(DVM_OP_INCLT, 0, 2, 1, lp2);
    nodes[j2].c = rel(t);
    N(DVM_OP_ST, 3, 0, 3, 0);       /* o[i] = x */
    CI(6, 256);
    N(DVM_OP_MULI, 0, 6, 5, 6);
    N(DVM_OP_ADDI, 0, 6, 6, 2);
    N(DVM_OP_ST, 4, 0, 6, 0);       /* c[i] = 256 cnt + lo after its loop */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    static uint32_t hi[PL], lo[PL], x[PL], o[PL], c[PL];
    for (int i = 0; i < PL; i++) {
        lo[i] = (uint32_t)((i % 5) - 2);
        hi[i] = (uint32_t)((i * 7 + i / 3) % 13 - 3);
        x[i] = f2u(0.5f + (float)(i % 11) * 0.0625f);
    }
    memset(o, 0xFF, sizeof o);
    memset(c, 0xFF, sizeof c);
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, hi, PL);
    arr1(&A, 1, lo, PL);
    arr1(&A, 2, x, PL);
    arr1(&A, 3, o, PL);
    arr1(&A, 4, c, PL);
    A.uni[0] = PL;
    A.nuni = 1;
    A.total = PL;
    int kind[5] = {EXACT, EXACT, EXACT, LOOSE, EXACT};
    both("plain lanes: counted one-node loops, run at their heads", &A, kind);
}

/* An 'o' operand: register r plus offset k (-32..31). */
static uint16_t OF(uint16_t r, int k) { return (uint16_t)(r | (((unsigned)k & 63u) << 10)); }

/* The four lanes' row path (interp.comp, row1 and row2): a 2-D task over [1, n - 1) x [1, m - 1)
   whose index registers are r0 and r1 and never written, its array nodes at the indices plus
   constants (LD2O, LDADDF2O, LDO, ST2, ATOMADDF2O, ATOMADDFO). m = 700 puts rows across a
   workgroup's 256 iterations a round, so some rounds take the row path and some (those that
   straddle two rows, and the last) the usual one. Every value is a small integer, so the
   atomic sums are exact in any order. Then the same with the columns up to m: u[i, j + 1] is
   out of bounds at j = m - 1 only, which the row path leaves to the usual one to report. */
static void test_rows(void)
{
    enum { RN = 9, RM = 700 };
    reset();
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 2);
    t->ext_u[0] = 0; t->start_u[0] = 2;
    t->ext_u[1] = 1; t->start_u[1] = 3;
    t->idx_reg[0] = 0;
    t->idx_reg[1] = 1;
    N(DVM_OP_LD2O, 0, 2, OF(0, -1), OF(1, 0));     /* r2 = u[i - 1, j] */
    N(DVM_OP_LDADDF2O, 0, 2, OF(0, 1), OF(1, 0));  /* + u[i + 1, j] */
    N(DVM_OP_LDADDF2O, 0, 2, OF(0, 0), OF(1, -1)); /* + u[i, j - 1] */
    N(DVM_OP_LDADDF2O, 0, 2, OF(0, 0), OF(1, 1));  /* + u[i, j + 1] */
    N(DVM_OP_LD2, 0, 3, 0, 1);                   /* r3 = u[i, j] */
    N(DVM_OP_SUBF, 0, 2, 2, 3);
    N(DVM_OP_LDO, 1, 4, 1, 5);                   /* r4 = w[j + 5] */
    N(DVM_OP_ADDF, 0, 2, 2, 4);
    N(DVM_OP_ST2, 2, 0, 1, 2);                   /* out[i, j] = r2 */
    N(DVM_OP_ATOMADDF2O, 3, OF(0, 1), OF(1, -1), 3); /* acc[i + 1, j - 1] += u[i, j] */
    N(DVM_OP_ATOMADDFO, 4, 1, 3, (uint16_t)-1);  /* col[j - 1] += u[i, j] */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);

    static uint32_t u[RN * RM], w[RM + 8], out[RN * RM], acc[RN * RM], col[RM];
    for (int i = 0; i < RN * RM; i++) u[i] = f2u((float)((i * 7 + i / 13) % 17)), out[i] = 0, acc[i] = f2u(1.0f);
    for (int i = 0; i < RM + 8; i++) w[i] = f2u((float)(i % 5));
    for (int i = 0; i < RM; i++) col[i] = 0;
    run_in A;
    memset(&A, 0, sizeof A);
    A.n = 5;
    for (uint32_t s = 0; s < 5; s++) {
        uint32_t *d[5] = {u, w, out, acc, col};
        const int64_t len[5] = {RN * RM, RM + 8, RN * RM, RN * RM, RM};
        A.data[s] = d[s];
        A.len[s] = len[s];
        for (int k = 0; k < DVM_MAX_RANK; k++) A.shape[s * DVM_MAX_RANK + k] = 1;
        A.shape[s * DVM_MAX_RANK] = s == 1 || s == 4 ? (int32_t)len[s] : RN;
        if (s != 1 && s != 4) A.shape[s * DVM_MAX_RANK + 1] = RM;
    }
    A.uni[0] = RN - 1; A.uni[1] = RM - 1; A.uni[2] = 1; A.uni[3] = 1;
    A.nuni = 4;
    A.total = (RN - 2) * (RM - 2);
    int kind[5] = {EXACT, EXACT, EXACT, EXACT, EXACT};
    both("rows: 2-D accesses at the indices plus constants", &A, kind);
    A.uni[1] = RM;
    A.total = (RN - 2) * (RM - 1);
    kind[2] = kind[3] = kind[4] = UNSET;
    both("rows: out of bounds at the last column only", &A, kind);
}

/* Parallel tasks of different sizes in one launch: the launch's threads are its largest
   task's, and a smaller task dispatches only the invocations with an iteration
   (vulkan_backend.c, task_invocations), rounded up to whole workgroups of 64, so the smaller
   tasks span several. The first two take the row path on four lanes (accesses at index
   register 0), the third not (its index is register 1, and most of its nodes are
   arithmetic). */
static void test_task_sizes(void)
{
    enum { TA = 4000, TB = 700, TC = 530 };
    reset();
    for (uint8_t k = 0; k < 2; k++) { /* y[i] = x[i], i < U0; z[i] = x[i], i < U1 */
        dvm_task_desc *c = task(DVM_TASK_PARALLEL, 1);
        c->ext_u[0] = k;
        c->idx_reg[0] = 0;
        N(DVM_OP_LD, 0, 2, 0, 0);
        N(DVM_OP_ST, 1 + k, 0, 2, 0);
        N(DVM_OP_END, 0, 0, 0, 0);
        end_task(c);
    }
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 2;
    t->idx_reg[0] = 1;
    N(DVM_OP_LD, 0, 2, 1, 0);
    N(DVM_OP_MULF, 0, 3, 2, 2);
    N(DVM_OP_ADDF, 0, 3, 3, 2);
    N(DVM_OP_MULF, 0, 3, 3, 2);
    N(DVM_OP_ST, 3, 1, 3, 0); /* w[i] = (x[i]^2 + x[i]) x[i], i < U2 */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    static uint32_t x[TA], y[TA], zz[TA], w[TA];
    for (int i = 0; i < TA; i++) x[i] = f2u((float)(i % 23) - 11.0f), y[i] = 0;
    memset(zz, 0xFF, sizeof zz);
    memset(w, 0xFF, sizeof w);
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, x, TA);
    arr1(&A, 1, y, TA);
    arr1(&A, 2, zz, TA);
    arr1(&A, 3, w, TA);
    A.uni[0] = TA, A.uni[1] = TB, A.uni[2] = TC;
    A.nuni = 3;
    const int saved = pass_totals;
    pass_totals = 1; /* each task's count known, as dvm_launch passes it */
    int kind[4] = {EXACT, EXACT, EXACT, EXACT};
    both("tasks of 4000, 700 and 530 iterations in one launch", &A, kind);
    pass_totals = saved;
}

/* A task without branches runs on plain lanes (vulkan_backend.c, VK_X_PLAIN): in its last
   round a lane without an iteration repeats lane 0's, and only its stores and adds are left
   out. On four lanes 4001 iterations take 1024 invocations (whole workgroups), lane 3 of the
   last 95 without one. x is as long as the task, so a lane without lane 0's indices would
   read past it; each add must count its iteration once. */
static void test_plain_lanes(void)
{
    enum { PN = 4001 };
    reset();
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->idx_reg[0] = 0;
    N(DVM_OP_LD, 0, 1, 0, 0);        /* r1 = x[i] */
    CI(2, 7);
    N(DVM_OP_MODI, 0, 3, 0, 2);      /* cell = i % 7 */
    N(DVM_OP_ATOMADDF, 1, 3, 1, 0);  /* s[cell] += x[i] */
    CI(4, 1);
    N(DVM_OP_ATOMADDI, 2, 3, 4, 0);  /* c[cell] += 1 */
    N(DVM_OP_ADDF, 0, 5, 1, 1);
    N(DVM_OP_ST, 3, 0, 5, 0);        /* y[i] = 2 x[i] */
    N(DVM_OP_ATOMADDU, 0, 1, 1, 0);  /* U1 += x[i] */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    static uint32_t x[PN], sum[7], cnt[7], y[PN];
    for (int i = 0; i < PN; i++) x[i] = f2u((float)(i % 5)), y[i] = 0xFFFFFFFFu;
    memset(sum, 0, sizeof sum);
    memset(cnt, 0, sizeof cnt);
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, x, PN);
    arr1(&A, 1, sum, 7);
    arr1(&A, 2, cnt, 7);
    arr1(&A, 3, y, PN);
    A.uni[0] = PN;
    A.uni[1] = f2u(0.0f);
    A.nuni = 2;
    A.total = PN;
    int kind[4] = {EXACT, EXACT, EXACT, EXACT}; /* sums of small integers are exact */
    both("plain lanes: a last round with lanes that have no iteration", &A, kind);

    /* Plain lanes keep the register written last in machine registers (interp.comp, flush4),
       so at a round's end it must reach the register file, where the next round's indices are
       written: here the last node before END writes the index register (as the compiler's
       allocator does once the index is dead), and 64 threads take the 4001 iterations in 16
       rounds (on one lane, 64 iterations a round). A stale index (x[i]^2 taken for the next i)
       fails the comparison. */
    reset();
    t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->idx_reg[0] = 0;
    N(DVM_OP_LD, 0, 1, 0, 0);        /* r1 = x[i] */
    N(DVM_OP_I2F, 0, 2, 0, 0);       /* the index read as a value (loads and stores of x[i] */
    N(DVM_OP_ADDF, 0, 2, 2, 1);      /* take the row path's own indices) */
    N(DVM_OP_ST, 3, 0, 2, 0);        /* y[i] = i + x[i] */
    CI(3, 0);
    N(DVM_OP_MULF, 0, 0, 1, 1);      /* r0 (the index) = x[i]^2: the last register written */
    N(DVM_OP_ATOMADDF, 1, 3, 0, 0);  /* s[0] += x[i]^2 */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    for (int i = 0; i < PN; i++) y[i] = 0xFFFFFFFFu;
    memset(sum, 0, sizeof sum);
    dvm_backend_opts few = *opts_main;
    few.gpu_threads = 64;
    char err[512] = "";
    dvm_backend *main_vk = vk;
    vk = VV->open(&few, err, sizeof err);
    CHECK(vk != NULL, "open with gpu_threads 64: %s", err);
    if (vk) {
        both("plain lanes over 16 rounds: the index register written last", &A, kind);
        VV->close(vk);
    }
    vk = main_vk;
}

/* Many threads hit few cells with every atomic. */
static void test_atomics(void)
{
    reset();
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
    t->ext_u[0] = 0;
    t->idx_reg[0] = 1;
    CI(2, 7);
    N(DVM_OP_MODI, 0, 3, 1, 2);      /* cell = i % 7 */
    N(DVM_OP_I2F, 0, 4, 1, 0);
    CI(5, f2u(0.25f));
    N(DVM_OP_ATOMADDF, 0, 3, 5, 0);
    N(DVM_OP_ATOMADDI, 1, 3, 1, 0);
    N(DVM_OP_ATOMMAXF, 2, 3, 4, 0);
    N(DVM_OP_NEGF, 0, 6, 4, 0);
    N(DVM_OP_ATOMMINF, 3, 3, 6, 0);
    N(DVM_OP_ATOMMAXI, 1, 2, 1, 0);  /* cell 7 */
    N(DVM_OP_NEGI, 0, 7, 1, 0);
    CI(8, 8);
    N(DVM_OP_ATOMMINI, 1, 8, 7, 0);
    N(DVM_OP_ATOMADDU, 0, 1, 5, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    static uint32_t s0[8], s1[9], s2[8], s3[8];
    memset(s0, 0, sizeof s0);
    memset(s1, 0, sizeof s1);
    for (int i = 0; i < 8; i++) { s2[i] = f2u(-1e30f); s3[i] = f2u(1e30f); }
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, s0, 8);
    arr1(&A, 1, s1, 9);
    arr1(&A, 2, s2, 8);
    arr1(&A, 3, s3, 8);
    A.uni[0] = 20000;
    A.nuni = 2;
    int kind[4] = {EXACT, EXACT, EXACT, EXACT}; /* sums of 0.25 are exact */
    both("atomics", &A, kind);
}

/* Runtime errors: the record must match the CPU's field by field. */
static void test_errors(void)
{
    static const struct { uint8_t op; uint32_t b, c; const char *what; } cases[] = {
        {DVM_OP_DIVI, 5, 0, "division by zero"},
        {DVM_OP_POWI, 2, (uint32_t)-1, "negative power"},
        {DVM_OP_LD, 1000, 0, "load out of bounds"},
        {DVM_OP_IDX, (uint32_t)-1, 0, "index out of bounds"},
        {DVM_OP_ASSERT, 0, 1, "assert"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        reset();
        dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
        CI(1, cases[k].b);
        CI(2, cases[k].c);
        if (cases[k].op == DVM_OP_LD) N(DVM_OP_LD, 0, 3, 1, 0);
        else if (cases[k].op == DVM_OP_IDX) N(DVM_OP_IDX, 0, 3, 1, 0);
        else if (cases[k].op == DVM_OP_ASSERT) N(DVM_OP_ASSERT, 0, 1, 1, 0);
        else N(cases[k].op, 0, 3, 1, 2);
        N(DVM_OP_ST, 0, 2, 1, 0);
        N(DVM_OP_END, 0, 0, 0, 0);
        end_task(t);
        static uint32_t o[4];
        run_in A;
        memset(&A, 0, sizeof A);
        arr1(&A, 0, o, 4);
        both(cases[k].what, &A, NULL);
    }
}

/* The sizer: nested ranges, a top-level range for the max-reducer, saturation, an empty range. */
static uint32_t szb;
static uint16_t S(uint8_t op, uint8_t x, uint16_t a, uint16_t b, uint16_t c) { N(op, x, a, b, c); return (uint16_t)(nn - 1 - szb); }

static int run_size(const dvm_backend_vtbl *vt, dvm_backend *be, run_in *A, int64_t walk, int64_t *caps, dvm_rt_error *rt, char *err)
{
    make_prog(A->n, A->nuni);
    dvm_buffer *bufs[NARR] = {0};
    for (uint32_t i = 0; i < A->n; i++) {
        vt->alloc(be, (size_t)A->len[i] * 4, &bufs[i], err, 256);
        vt->write(be, bufs[i], 0, A->data[i], (size_t)A->len[i] * 4, err, 256);
    }
    dvm_loaded *ld = NULL;
    vt->load(be, &prog, &ld, err, 256);
    dvm_size_job j;
    memset(&j, 0, sizeof j);
    j.prog = &prog; j.loaded = ld; j.var = &var; j.nslots = A->n; j.arrays = bufs; j.arr_len = A->len;
    j.arr_shape = A->shape; j.uniforms = A->uni; j.nuniforms = A->nuni; j.walk_cap = walk;
    memset(rt, 0, sizeof *rt);
    int rc = dvm_sizer_run(vt, be, &j, caps, rt, err, 256);
    for (uint32_t i = 0; i < A->n; i++) vt->free(be, bufs[i]);
    vt->unload(be, ld);
    return rc;
}

static void test_sizer(void)
{
    reset();
    ns = 3;
    stacks[0].sizing = DVM_SZ_PROGRAM;
    szb = nn;
    uint16_t c0 = S(DVM_OP_SZ_CONST, 0, 0, 0, 0);
    uint16_t n = S(DVM_OP_SZ_PARAM, 0, 0, 0, 0);
    uint16_t r = S(DVM_OP_SZ_RANGE, 0, c0, n, 0);
    uint16_t i = S(DVM_OP_SZ_VAR, 0, 0, 0, 0);
    uint16_t st = S(DVM_OP_SZ_LOAD, 0, i, 0, 0);
    uint16_t one = S(DVM_OP_SZ_CONST, 0, 1, 0, 0);
    uint16_t r2 = S(DVM_OP_SZ_RANGE, 0, one, st, 0);
    uint16_t jv = S(DVM_OP_SZ_VAR, 0, 1, 0, 0);
    uint16_t three = S(DVM_OP_SZ_CONST, 0, 3, 0, 0);
    uint16_t m = S(DVM_OP_SZ_MUL, 0, jv, three, 0);
    uint16_t i2 = S(DVM_OP_SZ_VAR, 0, 0, 0, 0);
    S(DVM_OP_SZ_SUB, 0, m, i2, 0);
    nodes[szb + r2].c = (uint16_t)(nn - szb);
    S(DVM_OP_SZ_ADD, 0, r2, one, 0); /* the outer body's root */
    nodes[szb + r].c = (uint16_t)(nn - szb);
    uint16_t five = S(DVM_OP_SZ_CONST, 0, 5, 0, 0);
    S(DVM_OP_SZ_ADD, 0, five, r, 0);
    stacks[0].size_begin = szb;
    stacks[0].size_len = nn - szb;
    /* stack 1: the max-reducer over the whole array, plus its shape */
    stacks[1].sizing = DVM_SZ_PROGRAM;
    szb = nn;
    uint16_t z = S(DVM_OP_SZ_CONST, 0, 0, 0, 0);
    uint16_t sh = S(DVM_OP_SZ_SHAPE, 0, 0, 0, 0);
    uint16_t rr = S(DVM_OP_SZ_RANGE, 0, z, sh, 0);
    uint16_t v = S(DVM_OP_SZ_VAR, 0, 0, 0, 0);
    S(DVM_OP_SZ_LOAD, 0, v, 0, 0);
    nodes[szb + rr].c = (uint16_t)(nn - szb);
    S(DVM_OP_SZ_MAX, 0, rr, sh, 0);
    stacks[1].size_begin = szb;
    stacks[1].size_len = nn - szb;
    /* stack 2: constant sizing, left alone */
    stacks[2].sizing = DVM_SZ_CONSTANT;

    static uint32_t steps[5000];
    for (int k = 0; k < 5000; k++) steps[k] = (uint32_t)((k * 37) % 101 - 3);
    steps[4321] = 777;
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, steps, 5000);
    A.nuni = 1;
    static const uint32_t ns_[] = {0, 6, 300, 5000};
    for (size_t q = 0; q < 4; q++) {
        A.uni[0] = ns_[q];
        int64_t cc[3] = {-7, -7, -7}, cv[3] = {-7, -7, -7};
        dvm_rt_error rc_, rv_;
        char ec[256] = "", ev[256] = "";
        int a = run_size(VC, cpu, &A, 1000000, cc, &rc_, ec);
        int b = run_size(VV, vk, &A, 1000000, cv, &rv_, ev);
        CHECK(a == 0 && b == 0 && cc[0] == cv[0] && cc[1] == cv[1] && cv[2] == -7,
              "sizer n=%u: cpu %d {%lld %lld} (%s), vulkan %d {%lld %lld %lld} (%s)", ns_[q], a, (long long)cc[0],
              (long long)cc[1], ec, b, (long long)cv[0], (long long)cv[1], (long long)cv[2], ev);
    }
    /* the walk cap: nested walks of up to 776 steps against a cap of 50 */
    A.uni[0] = 5000;
    int64_t cc[3], cv[3];
    dvm_rt_error rc_, rv_;
    char ec[256] = "", ev[256] = "";
    int a = run_size(VC, cpu, &A, 50, cc, &rc_, ec);
    int b = run_size(VV, vk, &A, 50, cv, &rv_, ev);
    CHECK(a == 1 && b == 1 && rc_.code == DVM_RT_SIZER_CAP && rv_.code == rc_.code && rv_.p[0] == rc_.p[0] && rv_.p[1] == rc_.p[1],
          "walk cap: cpu %d code %d {%lld %lld}, vulkan %d code %d {%lld %lld} (%s)", a, rc_.code, (long long)rc_.p[0],
          (long long)rc_.p[1], b, rv_.code, (long long)rv_.p[0], (long long)rv_.p[1], ev);
}

/* ---- device limits, cache, probe ---- */
static void test_limits_and_cache(const dvm_backend_opts *o0)
{
    char err[512] = "";
    /* the largest allocation, lowered to 1 MiB (vk_max_alloc): a larger array is a clear error */
    dvm_backend_opts o = *o0;
    o.vk_max_alloc = 1048576;
    dvm_backend *b = VV->open(&o, err, sizeof err);
    o.vk_max_alloc = 0;
    CHECK(b != NULL, "open with vk_max_alloc: %s", err);
    if (b) {
        dvm_buffer *buf = NULL;
        int rc = VV->alloc(b, 2u << 20, &buf, err, sizeof err);
        CHECK(rc == -1 && strstr(err, "largest allocation") && strstr(err, "vk_max_alloc"),
              "alloc beyond the limit: status %d, message '%s'", rc, err);
        if (rc == 0) VV->free(b, buf);
        rc = VV->alloc(b, 1u << 19, &buf, err, sizeof err);
        CHECK(rc == 0, "alloc within the limit: %s", err);
        if (rc == 0) VV->free(b, buf);
        VV->close(b);
    }
    /* device index out of range */
    dvm_backend_opts bad = {.device = 99};
    b = VV->open(&bad, err, sizeof err);
    CHECK(b == NULL && strstr(err, "no device 99"), "device 99: expected an error, got '%s'", b ? "a backend" : err);
    if (b) VV->close(b);

    /* pipeline cache: cold (writes the file), warm (reads it), corrupt (ignored) */
    char dir[] = "/tmp/dvm_vk_cacheXXXXXX";
    if (!mkdtemp(dir)) { CHECK(0, "mkdtemp"); return; }
    setenv("DVM_CACHE_DIR", dir, 1);
    b = VV->open(&o, err, sizeof err);
    CHECK(b && !strstr(VV->device_name(b), "from cache"), "cold cache: '%s'", b ? VV->device_name(b) : err);
    if (b) { printf("cold: %s\n", VV->device_name(b)); VV->close(b); }
    char cname[300];
    CHECK(cache_name_is_image_hash(dir, cname, sizeof cname), "cache file '%s' is not named after the FNV-1a 64 of a SPIR-V image", cname);
    b = VV->open(&o, err, sizeof err);
    CHECK(b && strstr(VV->device_name(b), "from cache"), "warm cache: '%s'", b ? VV->device_name(b) : err);
    if (b) { printf("warm: %s\n", VV->device_name(b)); VV->close(b); }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "for f in %s/*.bin; do head -c 40 $f > $f.x; echo garbage >> $f.x; mv $f.x $f; done", dir);
    CHECK(system(cmd) == 0, "corrupting the cache");
    b = VV->open(&o, err, sizeof err);
    CHECK(b != NULL, "corrupt cache: open failed: %s", err);
    if (b) VV->close(b);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    unsetenv("DVM_CACHE_DIR");

    char probe[4096] = "";
    int n = VV->probe(probe, sizeof probe);
    CHECK(n >= 1 && strstr(probe, "maxStorageBufferRange") && strstr(probe, "maxComputeWorkGroupCount"), "probe: %d '%s'", n, probe);
}

/* Starts on every dimension (interp.comp reads them from the task words), against the CPU:
   a 2-D space [2,5) x [-1,6) from host-filled uniforms, then a 3-D one [0,2) x [U3,4) x [1,3)
   whose middle start a serial task computes (U3 = U4 - 2 = 1: the host cannot know it). */
static void test_starts(void)
{
    reset();
    dvm_task_desc *t = task(DVM_TASK_PARALLEL, 2);
    t->ext_u[0] = 0, t->ext_u[1] = 1, t->start_u[0] = 2, t->start_u[1] = 3;
    t->idx_reg[0] = 1, t->idx_reg[1] = 2;
    CI(10, 100);
    N(DVM_OP_MULI, 0, 4, 1, 10);
    N(DVM_OP_ADDI, 0, 4, 4, 2);    /* i * 100 + j */
    N(DVM_OP_ADDIK, 0, 5, 2, 1);   /* j + 1 */
    N(DVM_OP_IDX, 0, 6, 1, 0);
    N(DVM_OP_IDXM, 0, 6, 5, 1);
    N(DVM_OP_ST, 0, 6, 4, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    static uint32_t o2[64], o3[24];
    memset(o2, 0xFF, sizeof o2);
    run_in A;
    memset(&A, 0, sizeof A);
    arr1(&A, 0, o2, 64);
    A.shape[0] = 8;
    A.shape[1] = 8;
    A.uni[0] = 5, A.uni[1] = 6, A.uni[2] = 2, A.uni[3] = (uint32_t)-1;
    A.nuni = 4;
    int kind[3] = {EXACT, EXACT, EXACT};
    both("2-D [2,5) x [-1,6)", &A, kind);

    reset();
    t = task(DVM_TASK_SERIAL, 0);
    N(DVM_OP_LDU, 0, 1, 4, 0);
    N(DVM_OP_ADDIK, 0, 1, 1, (uint16_t)-2);
    N(DVM_OP_STU, 0, 3, 1, 0);     /* U3 = U4 - 2 */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    t = task(DVM_TASK_PARALLEL, 3);
    t->ext_u[0] = 0, t->ext_u[1] = 1, t->ext_u[2] = 2, t->start_u[1] = 3, t->start_u[2] = 5;
    t->idx_reg[0] = 1, t->idx_reg[1] = 2, t->idx_reg[2] = 3;
    CI(10, 100);
    CI(11, 10);
    N(DVM_OP_MULI, 0, 4, 1, 10);
    N(DVM_OP_MULI, 0, 5, 2, 11);
    N(DVM_OP_ADDI, 0, 4, 4, 5);
    N(DVM_OP_ADDI, 0, 4, 4, 3);    /* i * 100 + j * 10 + k */
    N(DVM_OP_IDX, 0, 6, 1, 0);
    N(DVM_OP_IDXM, 0, 6, 2, 1);
    N(DVM_OP_IDXM, 0, 6, 3, 2);
    N(DVM_OP_ST, 0, 6, 4, 0);
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    memset(o3, 0xFF, sizeof o3);
    memset(&A, 0, sizeof A);
    arr1(&A, 0, o3, 24);
    A.shape[0] = 2;
    A.shape[1] = 4;
    A.shape[2] = 3;
    A.uni[0] = 2, A.uni[1] = 4, A.uni[2] = 3, A.uni[4] = 3, A.uni[5] = 1;
    A.nuni = 6;
    both("3-D [0,2) x [U3,4) x [1,3)", &A, kind);
}

/* The launches the Vulkan backend may stop with its own errors (a loop's step guard, an
   iteration space past 2^32), for which vm/launch.c keeps the arrays' snapshot; the CPU
   backend has none. */
static void test_may_stop(void)
{
    const dvm_node loop[3] = {{DVM_OP_CONST, 0, 0, 0, 0}, {DVM_OP_JMP, 0, 0, 0, 0}, {DVM_OP_END, 0, 0, 0, 0}};
    const dvm_node flat[2] = {{DVM_OP_CONST, 0, 0, 0, 0}, {DVM_OP_END, 0, 0, 0, 0}};
    dvm_task_desc t;
    memset(&t, 0, sizeof t);
    t.kind = DVM_TASK_PARALLEL;
    t.ndim = 1;
    t.code_len = 3;
    CHECK(VV->may_stop && VV->may_stop(vk, loop, &t, 100) == 1, "vulkan may_stop: a task with a loop cannot stop");
    t.code_len = 2;
    CHECK(VV->may_stop(vk, flat, &t, 100) == 0, "vulkan may_stop: a branch-free task of 100 iterations may stop");
    CHECK(VV->may_stop(vk, flat, &t, (int64_t)1 << 32) == 1, "vulkan may_stop: 2^32 iterations cannot stop");
    CHECK(VC->may_stop == NULL, "cpu may_stop is set");
}

/* Tasks of every register-file class in one variant (the backend specializes a pipeline per
   class and switches between them within one command buffer): each task reads, adds in and
   writes through its highest registers, and the last writes a uniform from register 1023 of
   a serial task; the results must match the CPU backend's. */
static void test_reg_classes(void)
{
    reset();
    static const uint16_t nregs[] = {3, 17, 40, 65, 130, 300, 1024, 16};
    for (int k = 0; k < (int)(sizeof nregs / sizeof nregs[0]); k++) {
        const uint16_t R = nregs[k];
        dvm_task_desc *t = task(DVM_TASK_PARALLEL, 1);
        t->nregs = R;
        t->ext_u[0] = 0;
        t->idx_reg[0] = (uint16_t)(R - 1);
        N(DVM_OP_LD, 0, 0, (uint16_t)(R - 1), 0);                 /* r0 = O[i] */
        N(DVM_OP_ADDI, 0, (uint16_t)(R / 2), 0, (uint16_t)(R - 1)); /* + i */
        N(DVM_OP_ADDIK, 0, (uint16_t)(R - 2), (uint16_t)(R / 2), (uint16_t)(k + 1));
        N(DVM_OP_ST, 0, (uint16_t)(R - 1), (uint16_t)(R - 2), 0);
        N(DVM_OP_END, 0, 0, 0, 0);
        end_task(t);
    }
    dvm_task_desc *t = task(DVM_TASK_SERIAL, 0);
    t->nregs = 1024;
    N(DVM_OP_LDU, 0, 1023, 0, 0);
    N(DVM_OP_ADDIK, 0, 1023, 1023, 5);
    N(DVM_OP_STU, 0, 1, 1023, 0);                                  /* U[1] = n + 5 */
    N(DVM_OP_END, 0, 0, 0, 0);
    end_task(t);
    run_in A;
    memset(&A, 0, sizeof A);
    for (int i = 0; i < NE; i++) O[i] = (uint32_t)(3 * i);
    arr1(&A, 0, O, NE);
    A.uni[0] = NE;
    A.nuni = 2;
    A.total = NE;
    both("register-file classes", &A, NULL);
    run_out v;
    launch(VV, vk, &A, &v);
    CHECK(v.rc == 0 && v.data[0][NE - 1] == 3u * (NE - 1) + 8u * (NE - 1) + 36u && v.uni[1] == NE + 5u,
          "register-file classes: O[n-1] = %u, U[1] = %u (%s)", v.data[0][NE - 1], v.uni[1], v.err);
    free(v.data[0]);
}

int main(int argc, char **argv)
{
    char err[512] = "";
    dvm_backend_opts o = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-int64")) o.vk_no_int64 = 1;
        else if (!strcmp(argv[i], "--no-float-atomics")) o.vk_no_float_atomics = 1;
        else if (!strcmp(argv[i], "--gpu-threads") && i + 1 < argc) o.gpu_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--vk-lanes") && i + 1 < argc) o.vk_lanes = atoi(argv[++i]), pass_totals = 1;
        else {
            printf("usage: test_vulkan [--no-int64] [--no-float-atomics] [--gpu-threads N] [--vk-lanes N]\n");
            return 2;
        }
    }
    opts_main = &o;
    vk = VV->open(&o, err, sizeof err);
    if (!vk) {
        if (strstr(err, "no Vulkan device") || strstr(err, "cannot open libvulkan")) {
            printf("SKIP: %s\n", err);
            return 77;
        }
        printf("FAIL open: %s\n", err);
        return 1;
    }
    printf("vulkan: %s\n", VV->device_name(vk));
    /* the options took: the device line names the shader build */
    CHECK(!o.vk_no_int64 || strstr(VV->device_name(vk), "checked 32-bit"), "--no-int64: the device line lacks 'checked 32-bit'");
    CHECK(!o.vk_no_float_atomics || strstr(VV->device_name(vk), "by CAS"), "--no-float-atomics: the device line lacks 'by CAS'");
    CHECK(!o.gpu_threads || strstr(VV->device_name(vk), "threads (gpu_threads)"), "--gpu-threads: the device line lacks it");
    CHECK(o.vk_lanes != 4 || strstr(VV->device_name(vk), "4 lanes"), "--vk-lanes 4: the device line lacks '4 lanes'");
    cpu = VC->open(&o, err, sizeof err);
    if (!cpu) { printf("FAIL cpu open: %s\n", err); return 1; }
    test_ops();
    test_control();
    test_lane_loops();
    test_rows();
    test_task_sizes();
    test_plain_lanes();
    test_plain_loops();
    test_reg_classes();
    test_starts();
    test_atomics();
    test_errors();
    test_sizer();
    test_limits_and_cache(&o);
    test_may_stop();
    VV->close(vk);
    VC->close(cpu);
    if (fails) { printf("%d check(s) failed\n", fails); return 1; }
    printf("test_vulkan: all passed\n");
    return 0;
}
