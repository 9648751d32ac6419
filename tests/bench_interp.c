/* bench_interp.c: single-thread micro-benchmark of the interpreter against the same loops
 * compiled by the C compiler (the project's -O2). Prints the ratio interp/native.
 *   damp: y[i] = v where v = x[i]; for _ in range(steps[i]): v = v*rate + 0.01
 *   trig: v = x[i]; for _ in range(20): v = sin(v) + x[i]                              */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "vm/backend.h"

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static dvm_node nodes[64];
static uint32_t nn;
static void N(uint8_t op, uint8_t x, uint16_t a, uint16_t b, uint16_t c)
{
    dvm_node n = {op, x, a, b, c};
    nodes[nn++] = n;
}

__attribute__((noinline)) static void native_damp(const float *x, const int32_t *steps, float *y, int n, float rate)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        for (int s = 0; s < steps[i]; s++) v = v * rate + 0.01f;
        y[i] = v;
    }
}
__attribute__((noinline)) static void native_trig(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        for (int s = 0; s < 20; s++) v = sinf(v) + x[i];
        y[i] = v;
    }
}

static double run_interp(int which, uint32_t **data, int64_t *len, int32_t *shape, uint32_t *uni, int threads)
{
    nn = 0;
    uint32_t consts[2] = {f2u(0.01f), 0};
    dvm_task_desc t;
    memset(&t, 0, sizeof t);
    t.kind = DVM_TASK_PARALLEL;
    t.ndim = 1;
    t.nregs = 16;
    t.ext_u[0] = 0;
    t.start_u[0] = t.start_u[1] = t.start_u[2] = DVM_NO_SLOT;
    t.idx_reg[0] = 0;
    if (which == 0) {
        /* r1 = x[i]; r2 = steps[i]; r3 = 0; if r3 >= r2 goto done; loop: fmafk r1 r4 K0; inclt r3 r2 loop */
        N(DVM_OP_LD, 0, 1, 0, 0);
        N(DVM_OP_LD, 1, 2, 0, 0);
        N(DVM_OP_LDU, 0, 4, 1, 0);
        N(DVM_OP_CONST, 0, 3, 0, 0);
        N(DVM_OP_JGEI, 0, 3, 2, 7);
        N(DVM_OP_FMAFK, 0, 1, 4, 0);
        N(DVM_OP_INCLT, 0, 3, 2, 5);
        N(DVM_OP_ST, 2, 0, 1, 0);
        N(DVM_OP_END, 0, 0, 0, 0);
    } else {
        N(DVM_OP_LD, 0, 1, 0, 0);
        N(DVM_OP_MOV, 0, 5, 1, 0);
        N(DVM_OP_CONST, 0, 2, 20, 0);
        N(DVM_OP_CONST, 0, 3, 0, 0);
        N(DVM_OP_SIN, 0, 1, 1, 0);
        N(DVM_OP_ADDF, 0, 1, 1, 5);
        N(DVM_OP_INCLT, 0, 3, 2, 4);
        N(DVM_OP_ST, 2, 0, 1, 0);
        N(DVM_OP_END, 0, 0, 0, 0);
    }
    t.code_len = nn;
    dvm_program p;
    memset(&p, 0, sizeof p);
    p.nodes = nodes;
    p.nnodes = nn;
    p.tasks = &t;
    p.ntasks = 1;
    p.consts = consts;
    dvm_variant_desc var;
    memset(&var, 0, sizeof var);
    var.ntasks = 1;
    var.nslots = 3;
    char err[256];
    dvm_backend_opts o = {.threads = threads};
    dvm_backend *be = dvm_backend_cpu.open(&o, err, sizeof err);
    dvm_buffer *bufs[3];
    for (int i = 0; i < 3; i++) {
        dvm_backend_cpu.alloc(be, (size_t)len[i] * 4, &bufs[i], err, sizeof err);
        dvm_backend_cpu.write(be, bufs[i], 0, data[i], (size_t)len[i] * 4, err, sizeof err);
    }
    dvm_exec x;
    memset(&x, 0, sizeof x);
    x.prog = &p;
    x.var = &var;
    x.nslots = 3;
    x.arrays = bufs;
    x.arr_len = len;
    x.arr_shape = shape;
    x.uniforms = uni;
    x.nuniforms = 2;
    x.nthread_slots = dvm_backend_cpu.slots(be, &x);
    dvm_rt_error rt;
    double t0 = omp_get_wtime();
    int rc = dvm_backend_cpu.exec(be, &x, &rt, err, sizeof err);
    double dt = omp_get_wtime() - t0;
    if (rc) printf("exec failed: %d %d %s\n", rc, rt.code, err);
    dvm_backend_cpu.read(be, bufs[2], 0, data[2], (size_t)len[2] * 4, err, sizeof err);
    for (int i = 0; i < 3; i++) dvm_backend_cpu.free(be, bufs[i]);
    dvm_backend_cpu.close(be);
    return dt;
}

int main(int argc, char **argv)
{
    /* argv: [threads] [skew]; skew puts most of the work in the first eighth of the range */
    int n = 1 << 16, threads = argc > 1 ? atoi(argv[1]) : 1, skew = argc > 2 && strcmp(argv[2], "skew") == 0;
    float *xv = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *yn = malloc(sizeof(float) * n);
    int32_t *steps = malloc(sizeof(int32_t) * n);
    for (int i = 0; i < n; i++) {
        xv[i] = (float)(i % 97) * 0.01f;
        steps[i] = skew ? (i < n / 8 ? 1600 : 0) : 100 + (i * 7919) % 200;
    }
    float rate = 0.999f;
    uint32_t *data[3] = {(uint32_t *)xv, (uint32_t *)steps, (uint32_t *)y};
    int64_t len[3] = {n, n, n};
    int32_t shape[12] = {n, 1, 1, 1, n, 1, 1, 1, n, 1, 1, 1};
    uint32_t uni[2] = {(uint32_t)n, f2u(rate)};
    for (int which = 0; which < 2; which++) {
        double best_i = 1e9, best_n = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = omp_get_wtime();
            if (which == 0) native_damp(xv, steps, yn, n, rate);
            else native_trig(xv, yn, n);
            double tn = omp_get_wtime() - t0;
            double ti = run_interp(which, data, len, shape, uni, threads);
            if (tn < best_n) best_n = tn;
            if (ti < best_i) best_i = ti;
        }
        int same = memcmp(y, yn, sizeof(float) * n) == 0;
        printf("%s: native %.2f ms, interp (%d thread%s) %.2f ms, ratio %.2fx, results %s\n",
               which ? "trig" : "damp", best_n * 1e3, threads, threads == 1 ? "" : "s", best_i * 1e3,
               best_i / best_n, same ? "identical" : "DIFFER");
    }
    free(xv);
    free(y);
    free(yn);
    free(steps);
    return 0;
}
