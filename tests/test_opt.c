/* test_opt.c: the bytecode optimizer (compiler/opt.c, unroll.c). Compiles kernels with and
 * without it (the no_opt option; unroll = 1 for the passes but the unrolling) and checks what it removes (repeated transcendentals, an adstack whose pops
 * nothing reads, a PUSH/POP pair inside one block, jumps to the next node), what it must keep
 * (a stack the reverse pass reads), the register count after renumbering, that both
 * programs pass the verifier, the shape of an unrolled loop, and that all give bit-identical results on the CPU. */
#define _POSIX_C_SOURCE 200809L
#include "bytecode/bc.h"
#include "bytecode/blob.h"
#include "compiler/compile.h"
#include "include/dvm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

static const char *SRC =
    "kernel trans(x: f32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        y[i] = sin(v) * cos(v) + exp(-v * v) + log(1.0 + v * v) + tanh(v)\n"
    "kernel dynloop(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * rate + 0.01\n"
    "        y[i] = v\n"
    "kernel vsq(x: f32[n], steps: i32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * v + 0.125\n"
    "        y[i] = v\n"
    "kernel addk(x: f32[n], steps: i32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v + 0.25\n"
    "        y[i] = v\n"
    "kernel keep(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = sin(v) * rate\n"
    "        y[i] = v\n"
    "kernel sq(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * (rate - v * 0.05)\n"
    "        y[i] = v\n"
    "kernel csum(x: f32[n], steps: i32[n], y: f32[n], rate: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for j in range(steps[i]):\n"
    "            v = v * rate + x[(i + j) % n] * 0.5\n"
    "        y[i] = v\n"
    "kernel stencil(u: f32[n, m], v: f32[n, m]):\n"
    "    for i, j in ndrange(n, m):\n"
    "        if i > 0 and i < n - 1 and j > 0 and j < m - 1:\n"
    "            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]\n"
    "        else:\n"
    "            v[i, j] = u[i, j]\n"
    "kernel recycle(x: f32[n], h: f32[4]):\n"
    "    for i in range(n):\n"
    "        v = x[i] * 2.0\n"
    "        w = v * v + 1.0\n"
    "        h[1] += w\n"
    /* the tangent's body never reads the index: its prologue's temporaries must still not get
       the index register (the verifier refuses a prologue that writes one) */
    "kernel constsum(total: f32[1]):\n"
    "    for i in range(4):\n"
    "        v2 = sin(0.25)\n"
    "        total[0] += v2\n";

/* opt: 0 no optimizer (no_opt), 1 the optimizer without loop unrolling (unroll = 1), 2 the
 * optimizer with loops unrolled 4 times; all three without loop partitioning (no_partition:
 * these checks are about the bytecode passes on the stencil's if). 3: as the compiler runs by
 * default, partitioning too. 4: loops unrolled 2 times (no partitioning). The compiler's
 * switches (compile.h) and the same ones as context options (dvm.h), with the options word
 * each must leave in the program and its blob. */
#define NOPT 5
static const dvm_compile_opts copts[NOPT] = {{.no_opt = 1}, {.no_partition = 1, .unroll = 1}, {.no_partition = 1}, {0},
                                             {.no_partition = 1, .unroll = 2}};
static const dvm_context_opts xopts[NOPT] = {{.backend = "cpu", .no_opt = 1},
                                             {.backend = "cpu", .no_partition = 1, .unroll = 1},
                                             {.backend = "cpu", .no_partition = 1},
                                             {.backend = "cpu"},
                                             {.backend = "cpu", .no_partition = 1, .unroll = 2}};
static const uint32_t owords[NOPT] = {DVM_OPTS_NO_OPT, DVM_OPTS_NO_PARTITION | 1u << DVM_OPTS_UNROLL_SHIFT,
                                      DVM_OPTS_NO_PARTITION, 0, DVM_OPTS_NO_PARTITION | 2u << DVM_OPTS_UNROLL_SHIFT};
static dvm_context *ctxs[NOPT]; /* a cpu context per level, with xopts[level] */

static dvm_program *compile(int opt) {
    dvm_program *p = NULL;
    char *msg = NULL;
    int rc = dvm_compile_source_opts(SRC, strlen(SRC), "t.dvk", &copts[opt], &p, &msg);
    CHECK(rc == 0 && p, "compile (opt %d) failed: %s", opt, msg ? msg : "");
    free(msg);
    if (p) {
        CHECK(p->options == owords[opt], "compile (opt %d): options word 0x%x, expected 0x%x", opt, p->options, owords[opt]);
        void *blob = NULL;
        size_t len = 0;
        char err[512] = "";
        CHECK(dvm_blob_write(p, &blob, &len, err, sizeof err) == 0, "verifier refused the program (opt %d): %s", opt, err);
        dvm_program *back = NULL;
        CHECK(blob && dvm_blob_read(blob, len, &back, err, sizeof err) == 0 && back->options == p->options,
              "opt %d: the blob did not keep the options word 0x%x: %s (read back 0x%x)", opt, p->options, err,
              back ? back->options : 0u);
        dvm_program_free(back);
        free(blob);
    }
    return p;
}

/* The variant; for the adjoint, its reverse sweeps alone (the phase-1 tasks, after the
   forward it runs first), which is what the checks below are about. */
static const dvm_variant_desc *variant(const dvm_program *p, const char *kernel, int vk) {
    static dvm_variant_desc rev[8];
    static unsigned nrev;
    for (uint32_t k = 0; k < p->nkernels; k++) {
        if (strcmp(p->strings + p->kernels[k].name, kernel)) continue;
        const dvm_variant_desc *v = &p->kernels[k].v[vk];
        if (vk != DVM_V_ADJOINT) return v;
        dvm_variant_desc *r = &rev[nrev++ % 8];
        *r = *v;
        while (r->ntasks && p->tasks[r->task_begin].phase == 0) r->task_begin++, r->ntasks--;
        return r;
    }
    CHECK(0, "no kernel '%s'", kernel);
    return NULL;
}

/* nodes of the variant's tasks with opcode op (-1: all), plus its size-program nodes for -1 */
static int count(const dvm_program *p, const char *kernel, int vk, int op) {
    const dvm_variant_desc *v = variant(p, kernel, vk);
    if (!v) return -1;
    int n = 0;
    for (uint32_t t = 0; t < v->ntasks; t++) {
        const dvm_task_desc *td = &p->tasks[v->task_begin + t];
        for (uint32_t i = 0; i < td->code_len; i++)
            if (op < 0 || p->nodes[td->code_begin + i].op == op) n++;
    }
    if (op < 0)
        for (uint32_t s = 0; s < v->nstacks; s++) {
            const dvm_stack_desc *sd = &p->stacks[v->stack_begin + s];
            if (sd->sizing == DVM_SZ_PROGRAM) n += (int)sd->size_len;
        }
    return n;
}

/* loop tests of an unrolled loop's main part (JGEI, INCLT with a count x > 0) */
static int count_x(const dvm_program *p, const char *kernel, int vk, int op) {
    const dvm_variant_desc *v = variant(p, kernel, vk);
    int n = 0;
    for (uint32_t t = 0; v && t < v->ntasks; t++) {
        const dvm_task_desc *td = &p->tasks[v->task_begin + t];
        for (uint32_t i = 0; i < td->code_len; i++)
            n += p->nodes[td->code_begin + i].op == op && p->nodes[td->code_begin + i].x != 0;
    }
    return n;
}

/* The variant has `want` nodes with opcode op (with unrolled: only those with a count x > 0). */
static void expect_op(const dvm_program *p, const char *kernel, int vk, int op, int unrolled, int want) {
    int got = unrolled ? count_x(p, kernel, vk, op) : count(p, kernel, vk, op);
    CHECK(got == want, "%s variant %d: %d %s%s, expected %d", kernel, vk, got, dvm_op_table[op].name,
          unrolled ? " with x > 0" : "", want);
}

/* the largest nregs among the variant's tasks */
static int max_nregs(const dvm_program *p, const char *kernel, int vk) {
    const dvm_variant_desc *v = variant(p, kernel, vk);
    int m = -1;
    for (uint32_t t = 0; v && t < v->ntasks; t++)
        if (p->tasks[v->task_begin + t].nregs > m) m = p->tasks[v->task_begin + t].nregs;
    return m;
}

/* Nodes the optimizer must leave none of: a jump to the next node, a MOV onto itself. */
static void check_leftovers(const dvm_program *p) {
    for (uint32_t t = 0; t < p->ntasks; t++) {
        const dvm_task_desc *td = &p->tasks[t];
        for (uint32_t i = 0; i < td->code_len; i++) {
            const dvm_node *n = &p->nodes[td->code_begin + i];
            uint32_t target = n->op == DVM_OP_JMP ? n->a : (n->op == DVM_OP_JZ || n->op == DVM_OP_JNZ) ? n->b
                              : n->op == DVM_OP_JGEI ? n->c : 0;
            CHECK(!target || target != i + 1, "task %u node %u (op %u) jumps to the next node", t, i, n->op);
            CHECK(n->op != DVM_OP_MOV || n->a != n->b, "task %u node %u: MOV r%u, r%u is left", t, i, n->a, n->b);
        }
    }
}

static int nstacks(const dvm_program *p, const char *kernel, int vk) {
    const dvm_variant_desc *v = variant(p, kernel, vk);
    return v ? (int)v->nstacks : -1;
}

/* Compiles SRC on the context of level opt (its options) and finds kernel; NULL on failure
   (counted). */
static const dvm_kernel *compile_find(dvm_context *ctx, const char *kernel, dvm_module **m) {
    *m = NULL;
    if (dvm_compile(ctx, SRC, strlen(SRC), "t.dvk", m) != DVM_OK) {
        CHECK(0, "dvm_compile: %s", dvm_errmsg(ctx));
        return NULL;
    }
    const dvm_kernel *k = NULL;
    dvm_kernel_find(ctx, *m, kernel, &k);
    CHECK(k != NULL, "kernel %s not found", kernel);
    return k;
}

/* Runs kernel's adjoint (y.grad = 1) and returns y and x.grad in out[0..7], out[8..15]. */
static int run(int opt, const char *kernel, float out[16]) {
    dvm_context *ctx = ctxs[opt];
    dvm_module *m = NULL;
    const dvm_kernel *k = compile_find(ctx, kernel, &m);
    if (!k) return 1;
    int64_t n[1] = {8};
    dvm_array *x, *s, *y, *yg, *xg;
    dvm_array_create(ctx, DVM_F32, 1, n, &x);
    dvm_array_create(ctx, DVM_I32, 1, n, &s);
    dvm_array_create(ctx, DVM_F32, 1, n, &y);
    dvm_array_create(ctx, DVM_F32, 1, n, &yg);
    dvm_array_create(ctx, DVM_F32, 1, n, &xg);
    float xv[8] = {0.5f, 1.25f, -2, 0.25f, 3, -0.75f, 0.1f, 2.5f}, ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, zeros[8] = {0};
    int32_t sv[8] = {0, 1, 3, 9, 7, 5, 4, 8}; /* unrolled 4 times: no trip, the remainder alone, both, two trips */
    dvm_array_write(ctx, x, xv, 8);
    dvm_array_write(ctx, s, sv, 8);
    dvm_array_write(ctx, yg, ones, 8);
    dvm_array_write(ctx, xg, zeros, 8);
    dvm_args *a = NULL;
    dvm_args_create(ctx, k, &a);
    dvm_args_array(ctx, a, "x", x);
    dvm_args_array(ctx, a, "y", y);
    dvm_args_grad(ctx, a, "y", yg);
    dvm_args_grad(ctx, a, "x", xg);
    if (strcmp(kernel, "trans")) {
        dvm_args_array(ctx, a, "steps", s);
        dvm_args_f32(ctx, a, "rate", 0.9f);
    }
    dvm_launch_opts adj = {DVM_ADJOINT, 0, 0, 0};
    int rc = dvm_launch(ctx, k, a, &adj, NULL);
    CHECK(rc == DVM_OK, "%s adjoint (opt %d): %s", kernel, opt, dvm_errmsg(ctx));
    dvm_array_read(ctx, y, out, 8);
    dvm_array_read(ctx, xg, out + 8, 8);
    dvm_args_destroy(a);
    dvm_array_destroy(x);
    dvm_array_destroy(s);
    dvm_array_destroy(y);
    dvm_array_destroy(yg);
    dvm_array_destroy(xg);
    dvm_module_destroy(m);
    return rc != DVM_OK;
}

/* Runs stencil on a 5 x 6 grid in every mode: out[0..29] v (forward), out[30..59] u.grad
 * (adjoint, v.grad = a pattern), out[60..89] v.dual (tangent, u.dual = a pattern). */
#define SN 5
#define SM 6
#define SC (SN * SM)
static int run_stencil(int opt, float out[3 * SC]) {
    dvm_context *ctx = ctxs[opt];
    dvm_module *m = NULL;
    const dvm_kernel *k = compile_find(ctx, "stencil", &m);
    if (!k) return 1;
    int64_t shape[2] = {SN, SM};
    float uv[SC], gv[SC], zeros[SC] = {0};
    for (int i = 0; i < SC; i++) {
        uv[i] = (float)((i * 7) % 11) * 0.375f - 1.5f;
        gv[i] = (float)((i * 5) % 7) * 0.25f + 0.125f;
    }
    int rc = 0;
    for (int mode = 0; mode < 3; mode++) {
        dvm_array *u, *v, *ug, *vg;
        dvm_array_create(ctx, DVM_F32, 2, shape, &u);
        dvm_array_create(ctx, DVM_F32, 2, shape, &v);
        dvm_array_create(ctx, DVM_F32, 2, shape, &ug);
        dvm_array_create(ctx, DVM_F32, 2, shape, &vg);
        dvm_array_write(ctx, u, uv, SC);
        dvm_array_write(ctx, v, zeros, SC);
        dvm_args *a = NULL;
        dvm_args_create(ctx, k, &a);
        dvm_args_array(ctx, a, "u", u);
        dvm_args_array(ctx, a, "v", v);
        if (mode == DVM_ADJOINT) {
            dvm_array_write(ctx, ug, zeros, SC);
            dvm_array_write(ctx, vg, gv, SC);
            dvm_args_grad(ctx, a, "u", ug);
            dvm_args_grad(ctx, a, "v", vg);
        } else if (mode == DVM_TANGENT) {
            dvm_array_write(ctx, ug, gv, SC);
            dvm_array_write(ctx, vg, zeros, SC);
            dvm_args_dual(ctx, a, "u", ug);
            dvm_args_dual(ctx, a, "v", vg);
        }
        dvm_launch_opts lo = {(dvm_mode)mode, 0, 0, 0};
        int lrc = dvm_launch(ctx, k, a, &lo, NULL);
        CHECK(lrc == DVM_OK, "stencil mode %d (opt %d): %s", mode, opt, dvm_errmsg(ctx));
        rc |= lrc != DVM_OK;
        dvm_array_read(ctx, mode == DVM_FORWARD ? v : mode == DVM_ADJOINT ? ug : vg, out + mode * SC, SC);
        dvm_args_destroy(a);
        dvm_array_destroy(u);
        dvm_array_destroy(v);
        dvm_array_destroy(ug);
        dvm_array_destroy(vg);
    }
    dvm_module_destroy(m);
    return rc;
}

/* dvm_task_flow_of (bytecode/ops.c), which picks a task's lane interpreter: the
 * conditional branches and loops of the variant's only task */
static dvm_task_flow flow(const dvm_program *p, const char *kernel, int vk) {
    const dvm_variant_desc *v = variant(p, kernel, vk);
    dvm_task_flow none = {UINT32_MAX, UINT32_MAX, 0};
    if (!v || v->ntasks != 1) return none;
    return dvm_task_flow_of(p->nodes, &p->tasks[v->task_begin]);
}

/* The adjoint's last stage fused into its reverse sweep (compiler/autodiff.c, fused_stage):
   which kernels get it (no phase-0 task for their last stage) and which keep the two runs. */
static void fusion_checks(void) {
    static const char *FS =
        "kernel one(x: f32[n], y: f32[n]):\n"      /* fused: reads x, writes y */
        "    for i in range(n):\n"
        "        y[i] = sin(x[i])\n"
        "kernel inplace(y: f32[n]):\n"             /* reads what it writes */
        "    for i in range(n):\n"
        "        y[i] = y[i] * y[i]\n"
        "kernel branch(x: f32[n], y: f32[n]):\n"   /* an if */
        "    for i in range(n):\n"
        "        if x[i] > 0.0:\n"
        "            y[i] = x[i] * 2.0\n"
        "kernel later(x: f32[n], t: f32[n], y: f32[n]):\n" /* stage 1 writes y, which no one else touches */
        "    for i in range(n):\n"
        "        t[i] = x[i] * 2.0\n"
        "    for i in range(n):\n"
        "        y[i] = t[i] * x[i]\n"
        "kernel readback(x: f32[n], y: f32[n], s: f32[1]):\n" /* stage 0 reads y, which stage 1 writes */
        "    for i in range(n):\n"
        "        s[0] += y[i]\n"
        "    for i in range(n):\n"
        "        y[i] = x[i] * s[0]\n";
    static const struct { const char *k; int phase0, fused; } want[] = {
        {"one", 0, 1}, {"inplace", 1, 0}, {"branch", 1, 0}, {"later", 1, 1}, {"readback", 2, 0}};
    dvm_program *p = NULL;
    char *msg = NULL;
    int rc = dvm_compile_source_opts(FS, strlen(FS), "f.dvk", &copts[3], &p, &msg);
    CHECK(rc == 0 && p, "fusion kernels: %s", msg ? msg : "");
    free(msg);
    for (size_t w = 0; p && w < sizeof want / sizeof want[0]; w++) {
        const dvm_variant_desc *v = NULL;
        for (uint32_t k = 0; k < p->nkernels; k++)
            if (!strcmp(p->strings + p->kernels[k].name, want[w].k)) v = &p->kernels[k].v[DVM_V_ADJOINT];
        int ph0 = 0, last0 = 0;
        uint32_t last = 0;
        for (uint32_t t = 0; v && t < v->ntasks; t++) {
            const dvm_task_desc *td = &p->tasks[v->task_begin + t];
            if (td->stage > last) last = td->stage;
        }
        for (uint32_t t = 0; v && t < v->ntasks; t++) {
            const dvm_task_desc *td = &p->tasks[v->task_begin + t];
            if (td->phase == 0 && td->kind == DVM_TASK_PARALLEL) ph0++, last0 |= td->stage == last;
        }
        CHECK(v && ph0 == want[w].phase0, "fusion: kernel '%s' has %d parallel phase-0 tasks, expected %d", want[w].k, ph0,
              want[w].phase0);
        CHECK(v && last0 == !want[w].fused, "fusion: kernel '%s': its last stage %s a phase-0 run", want[w].k,
              last0 ? "has" : "lacks");
    }
    if (p) dvm_program_free(p);
}

int main(void) {
    fusion_checks();
    dvm_program *po = compile(1), *pn = compile(0), *pu = compile(2);
    if (!po || !pn || !pu) return 1;
    const int ADJ = DVM_V_ADJOINT;
    dvm_task_flow f0;

    /* unrolling (pu; the checks further down use po, without it): a loop whose body is straight
       line runs 4 copies per trip while 4 iterations are left (JGEI and INCLT with x = 3), then
       the original loop for the rest (vsq: one FMAFK whose factor is its own register) */
    expect_op(pu, "vsq", DVM_V_FORWARD, DVM_OP_JGEI, 1, 1);
    expect_op(pu, "vsq", DVM_V_FORWARD, DVM_OP_INCLT, 1, 1);
    expect_op(pu, "vsq", DVM_V_FORWARD, DVM_OP_INCLT, 0, 2);
    expect_op(pu, "vsq", DVM_V_FORWARD, DVM_OP_FMAFK, 0, 5);
    /* a body of one self-update (DVM_SELF_UPDATE) stays rolled, the interpreters run its trips
       in its INCLT: dynloop's v = v * rate + K, and its adjoint's reverse loop g = g * rate */
    expect_op(pu, "dynloop", DVM_V_FORWARD, DVM_OP_FMAFK, 0, 1);
    expect_op(pu, "dynloop", DVM_V_FORWARD, DVM_OP_INCLT, 1, 0);
    expect_op(pu, "dynloop", ADJ, DVM_OP_MULF, 0, 1);
    expect_op(pu, "dynloop", ADJ, DVM_OP_INCLT, 1, 0);
    expect_op(pu, "addk", DVM_V_FORWARD, DVM_OP_ADDFK, 0, 1); /* v = v + 0.25 too */
    expect_op(pu, "addk", DVM_V_FORWARD, DVM_OP_INCLT, 1, 0);
    /* the pushes and pops of a loop with a stack */
    expect_op(pu, "sq", ADJ, DVM_OP_PUSH, 0, 5);
    expect_op(pu, "sq", ADJ, DVM_OP_POP, 0, 5);
    expect_op(pu, "sq", ADJ, DVM_OP_INCLT, 1, 2);
    CHECK(nstacks(pu, "sq", ADJ) == 1, "unrolled sq adjoint: %d stacks, expected 1", nstacks(pu, "sq", ADJ));
    /* a loop with library math is not unrolled (keep: sin, and cos in its reverse loop) */
    CHECK(count_x(pu, "keep", ADJ, DVM_OP_INCLT) == 0 && count(pu, "keep", ADJ, -1) == count(po, "keep", ADJ, -1),
          "keep adjoint: %d unrolled loops, %d nodes (%d without unrolling); expected 0 and the same",
          count_x(pu, "keep", ADJ, DVM_OP_INCLT), count(pu, "keep", ADJ, -1), count(po, "keep", ADJ, -1));
    /* an unrolled loop's main part is not one more loop for the backends' choice (only its
       remainder counts), so the lanes do not keep the warp together for it */
    f0 = flow(pu, "vsq", DVM_V_FORWARD);
    CHECK(f0.cond == 5 && f0.loops == 1, "unrolled vsq: %u conditional branches, %u loops; expected 5, 1", f0.cond, f0.loops);
    /* a body that reads the counter: the copies read it plus 1, 2, 3 (one ADDIK each: the MODI
       reads the sum, so it is not an index offset) */
    expect_op(pu, "csum", DVM_V_FORWARD, DVM_OP_INCLT, 1, 1);
    expect_op(pu, "csum", DVM_V_FORWARD, DVM_OP_MODI, 0, 5);
    expect_op(pu, "csum", DVM_V_FORWARD, DVM_OP_ADDIK, 0, count(po, "csum", DVM_V_FORWARD, DVM_OP_ADDIK) + 3);
    /* no loop, nothing to unroll */
    CHECK(count(pu, "stencil", DVM_V_FORWARD, -1) == count(po, "stencil", DVM_V_FORWARD, -1) &&
              count(pu, "trans", ADJ, -1) == count(po, "trans", ADJ, -1),
          "stencil or trans changed by unrolling");
    check_leftovers(pu);

    /* task flow: trans is branch-free (plain lanes), the loops and the stencil's if are not */
    dvm_task_flow f = flow(po, "trans", DVM_V_FORWARD);
    (void)f0;
    CHECK(f.cond == 0 && f.loops == 0, "trans: %u conditional branches, %u loops; expected 0, 0", f.cond, f.loops);
    f = flow(po, "dynloop", DVM_V_FORWARD);
    CHECK(f.cond == 2 && f.loops == 1, "dynloop: %u conditional branches, %u loops; expected 2 (JGEI, INCLT), 1", f.cond,
          f.loops);
    f = flow(po, "keep", ADJ);
    CHECK(f.cond == 4 && f.loops == 2, "keep adjoint: %u conditional branches, %u loops; expected 4, 2", f.cond, f.loops);
    f = flow(po, "stencil", DVM_V_FORWARD);
    CHECK(f.cond == 2 && f.loops == 0, "stencil: %u conditional branches, %u loops; expected 2 (JOUTI), 0", f.cond, f.loops);
    /* fixed_idx (the GPU lanes' row path): the index registers 0..ndim-1 hold the indices
       throughout, unless the register allocator gave a dead index's register to a temporary */
    CHECK(f.fixed_idx == 1, "stencil: fixed_idx %u, expected 1", f.fixed_idx);
    f = flow(po, "stencil", ADJ);
    CHECK(f.fixed_idx == 1, "stencil adjoint: fixed_idx %u, expected 1", f.fixed_idx);
    f = flow(po, "trans", DVM_V_FORWARD);
    CHECK(f.fixed_idx == 1, "trans: fixed_idx %u, expected 1", f.fixed_idx);
    f = flow(po, "recycle", DVM_V_FORWARD);
    CHECK(f.fixed_idx == 0, "recycle: fixed_idx %u, expected 0 (x[i] is its index's last use)", f.fixed_idx);

    /* trans: its adjoint is one task, the stage's forward (the store of y) inside its reverse
       sweep (autodiff.c, fused_stage); sin, cos and tanh of v once: the sin that cos'
       derivative needs is the store's, still in its register (each statement's temporaries
       are fresh, emit_code.c), so CSE reuses it. (exp twice: the FMAF that adds sin * cos
       to exp(-v * v) accumulates into exp's register) */
    CHECK(count(po, "trans", ADJ, DVM_OP_SIN) == 1, "trans adjoint: %d SIN, expected 1", count(po, "trans", ADJ, DVM_OP_SIN));
    CHECK(count(po, "trans", ADJ, DVM_OP_COS) == 1, "trans adjoint: %d COS, expected 1", count(po, "trans", ADJ, DVM_OP_COS));
    CHECK(count(po, "trans", ADJ, DVM_OP_TANH) == 1, "trans adjoint: %d TANH, expected 1",
          count(po, "trans", ADJ, DVM_OP_TANH));
    CHECK(count(pn, "trans", ADJ, DVM_OP_TANH) > count(po, "trans", ADJ, DVM_OP_TANH),
          "unoptimized trans adjoint: %d TANH, no more than optimized (is no_opt honored?)", count(pn, "trans", ADJ, DVM_OP_TANH));
    /* the adjoint of sin * cos and of exp(-v * v) subtracts: NEGF + ADDF as emitted, one SUBF
       each after the optimizer; -v itself, read twice, stays */
    CHECK(count(pn, "trans", ADJ, DVM_OP_NEGF) == 5 && count(pn, "trans", ADJ, DVM_OP_SUBF) == 0,
          "unoptimized trans adjoint: %d NEGF, %d SUBF, expected 5 and 0", count(pn, "trans", ADJ, DVM_OP_NEGF),
          count(pn, "trans", ADJ, DVM_OP_SUBF));
    CHECK(count(po, "trans", ADJ, DVM_OP_NEGF) == 1 && count(po, "trans", ADJ, DVM_OP_SUBF) == 2,
          "trans adjoint: %d NEGF, %d SUBF, expected 1 and 2", count(po, "trans", ADJ, DVM_OP_NEGF),
          count(po, "trans", ADJ, DVM_OP_SUBF));

    /* dynloop: v's stack is dead (the adjoint of v * rate reads rate only); the trip count is
     * pushed and popped in one block (forwarded to a MOV), so no stack is left */
    CHECK(nstacks(pn, "dynloop", ADJ) == 2, "unoptimized dynloop adjoint: %d stacks, expected 2", nstacks(pn, "dynloop", ADJ));
    CHECK(nstacks(po, "dynloop", ADJ) == 0, "dynloop adjoint: %d stacks, expected 0", nstacks(po, "dynloop", ADJ));
    CHECK(count(po, "dynloop", ADJ, DVM_OP_PUSH) == 0 && count(po, "dynloop", ADJ, DVM_OP_POP) == 0,
          "dynloop adjoint: %d PUSH, %d POP, expected none", count(po, "dynloop", ADJ, DVM_OP_PUSH),
          count(po, "dynloop", ADJ, DVM_OP_POP));
    /* the adjoint is one task (the stage's forward, which stores y, inside its reverse sweep):
       the forward loop, whose body is the one self-update, and the reverse loop; with v's
       pushes gone nothing else is left of the forward sweep; the trip count's `+ 0` is a copy,
       folded away */
    CHECK(count(pn, "dynloop", ADJ, DVM_OP_INCLT) == 2, "unoptimized dynloop adjoint: %d INCLT, expected 2",
          count(pn, "dynloop", ADJ, DVM_OP_INCLT));
    CHECK(count(po, "dynloop", ADJ, DVM_OP_INCLT) == 2, "dynloop adjoint: %d INCLT, expected 2 (the forward and the reverse loop)",
          count(po, "dynloop", ADJ, DVM_OP_INCLT));
    CHECK(count(po, "dynloop", ADJ, DVM_OP_ADDIK) == 0, "dynloop adjoint: %d ADDIK, expected 0",
          count(po, "dynloop", ADJ, DVM_OP_ADDIK));
    /* the reverse loop resets v's adjoint to -0.0 and adds rate * (its old value): with -0.0 the
       additive identity, FMAF onto it is a MULF, and the copy of the old value folds away, so
       the loop is MULF + INCLT: no FMAF, no MOV, no CONST -0 left in it */
    CHECK(count(pn, "dynloop", ADJ, DVM_OP_FMAF) >= 1, "unoptimized dynloop adjoint: no FMAF (did autodiff change?)");
    CHECK(count(po, "dynloop", ADJ, DVM_OP_FMAF) == 0, "dynloop adjoint: %d FMAF, expected 0 (FMAF onto -0.0 is MULF)",
          count(po, "dynloop", ADJ, DVM_OP_FMAF));
    {
        const dvm_variant_desc *v = variant(po, "dynloop", ADJ);
        const dvm_task_desc *td = &po->tasks[v->task_begin];
        const dvm_node *code = po->nodes + td->code_begin;
        for (uint32_t i = 0; i < td->code_len; i++)
            if (code[i].op == DVM_OP_INCLT) {
                uint32_t body = i - code[i].c; /* nodes from the back edge's target to it */
                CHECK(body == 1 && (code[code[i].c].op == DVM_OP_MULF || code[code[i].c].op == DVM_OP_FMAFK),
                      "dynloop adjoint: a loop of %u nodes before its INCLT (op %u first), expected one MULF (the "
                      "reverse) or FMAFK (the forward)",
                      body, code[code[i].c].op);
            }
    }

    /* keep: the reverse pass reads v (cos(v)) in another loop: its stack and its size program
     * stay; the trip count's PUSH/POP pair goes */
    CHECK(nstacks(po, "keep", ADJ) == 1, "keep adjoint: %d stacks, expected 1", nstacks(po, "keep", ADJ));
    CHECK(count(po, "keep", ADJ, DVM_OP_PUSH) == 1 && count(po, "keep", ADJ, DVM_OP_POP) == 1,
          "keep adjoint: %d PUSH, %d POP, expected 1 each", count(po, "keep", ADJ, DVM_OP_PUSH),
          count(po, "keep", ADJ, DVM_OP_POP));
    const dvm_variant_desc *kv = variant(po, "keep", ADJ);
    if (kv && kv->nstacks == 1)
        CHECK(po->stacks[kv->stack_begin].type == DVM_T_F32 && po->stacks[kv->stack_begin].sizing == DVM_SZ_PROGRAM,
              "keep adjoint: the stack left is not v's (f32, with a size program)");

    /* stencil: 23 registers as emitted; at most 7 values are live at once (the two indices,
     * the prologue's n - 1, m - 1 and 0, kept for the thread's every iteration, a sum and a
     * load), so renumbering must get well below; the adjoint's condition stack (PUSH; JZ to
     * the next node; POP) disappears */
    CHECK(max_nregs(pn, "stencil", DVM_V_FORWARD) == 23, "unoptimized stencil forward: %d registers, expected 23",
          max_nregs(pn, "stencil", DVM_V_FORWARD));
    CHECK(max_nregs(po, "stencil", DVM_V_FORWARD) <= 7, "stencil forward: %d registers, expected <= 7",
          max_nregs(po, "stencil", DVM_V_FORWARD));
    /* the prologue: what every iteration computed alike (n, m, n - 1, m - 1, the 0 of the bounds
       tests) runs once per thread, and an iteration starts at the first bounds test */
    {
        const dvm_variant_desc *v = variant(po, "stencil", DVM_V_FORWARD);
        const dvm_task_desc *td = v ? &po->tasks[v->task_begin] : NULL;
        CHECK(td && td->body == 5, "stencil forward: prologue of %u nodes, expected 5", td ? td->body : 0u);
        for (uint32_t i = 0; td && i < td->body; i++) {
            uint8_t op = po->nodes[td->code_begin + i].op;
            CHECK(op == DVM_OP_LDU || op == DVM_OP_CONST || op == DVM_OP_ADDIK,
                  "stencil forward: prologue node %u is op %u, expected LDU, CONST or ADDIK", i, op);
        }
        CHECK(td && po->nodes[td->code_begin + td->body].op == DVM_OP_JOUTI,
              "stencil forward: the body starts with op %u, expected the first bounds test (JOUTI)",
              td ? po->nodes[td->code_begin + td->body].op : 0u);
        const dvm_variant_desc *vn = variant(pn, "stencil", DVM_V_FORWARD);
        CHECK(vn && pn->tasks[vn->task_begin].body == 0, "unoptimized stencil forward: a prologue without the optimizer");
    }
    CHECK(max_nregs(po, "stencil", ADJ) <= 8, "stencil adjoint: %d registers, expected <= 8", max_nregs(po, "stencil", ADJ));
    CHECK(nstacks(pn, "stencil", ADJ) == 1, "unoptimized stencil adjoint: %d stacks, expected 1", nstacks(pn, "stencil", ADJ));
    CHECK(nstacks(po, "stencil", ADJ) == 0, "stencil adjoint: %d stacks, expected 0", nstacks(po, "stencil", ADJ));
    /* its condition `i > 0 and i < n - 1 and ...` is evaluated into a register: LTI + JZ per
       test, each JZ jumping to the next JZ on the same register. Threaded (each goes straight
       to the else branch) and fused (LTI + JZ -> JGEI), it is four JGEIs, as in the forward;
       each two-sided pair (0 < i, i < n - 1) then is one JOUTI */
    CHECK(count(pn, "stencil", ADJ, DVM_OP_LTI) == 4 && count(pn, "stencil", ADJ, DVM_OP_JZ) >= 4,
          "unoptimized stencil adjoint: %d LTI, %d JZ, expected 4 and >= 4", count(pn, "stencil", ADJ, DVM_OP_LTI),
          count(pn, "stencil", ADJ, DVM_OP_JZ));
    CHECK(count(po, "stencil", ADJ, DVM_OP_LTI) == 0 && count(po, "stencil", ADJ, DVM_OP_JZ) == 0 &&
              count(po, "stencil", ADJ, DVM_OP_JGEI) == 0 && count(po, "stencil", ADJ, DVM_OP_JOUTI) == 2,
          "stencil adjoint: %d LTI, %d JZ, %d JGEI, %d JOUTI, expected 0, 0, 0, 2", count(po, "stencil", ADJ, DVM_OP_LTI),
          count(po, "stencil", ADJ, DVM_OP_JZ), count(po, "stencil", ADJ, DVM_OP_JGEI), count(po, "stencil", ADJ, DVM_OP_JOUTI));
    CHECK(count(po, "stencil", DVM_V_FORWARD, DVM_OP_JGEI) == 0 && count(po, "stencil", DVM_V_FORWARD, DVM_OP_JOUTI) == 2,
          "stencil forward: %d JGEI, %d JOUTI, expected 0 and 2", count(po, "stencil", DVM_V_FORWARD, DVM_OP_JGEI),
          count(po, "stencil", DVM_V_FORWARD, DVM_OP_JOUTI));
    /* CSE over extended blocks: the bounds tests' blocks, each entered only by falling through
       the test before, reuse the 0 loaded for the first one; in the adjoint the else branch's
       0 (the reset of v.grad there) is the same fresh temporary's value, moved to the
       prologue with the first one, so one CONST serves both */
    CHECK(count(po, "stencil", DVM_V_FORWARD, DVM_OP_CONST) == 1, "stencil forward: %d CONST, expected 1",
          count(po, "stencil", DVM_V_FORWARD, DVM_OP_CONST));
    CHECK(count(po, "stencil", ADJ, DVM_OP_CONST) == 1, "stencil adjoint: %d CONST, expected 1 (in the prologue)",
          count(po, "stencil", ADJ, DVM_OP_CONST));
    /* the neighbours' index arithmetic fused into the accesses: u[i - 1, j] etc. are LD2O in the
       forward and ATOMADDF2O in the adjoint; ADDIK is left only for n - 1 and m - 1. The forward's
       sum of the four then adds three of them as it loads them (LDADDF2O) */
    CHECK(count(po, "stencil", DVM_V_FORWARD, DVM_OP_LD2O) == 1 && count(po, "stencil", DVM_V_FORWARD, DVM_OP_LDADDF2O) == 3 &&
              count(po, "stencil", DVM_V_FORWARD, DVM_OP_ADDF) == 0 && count(po, "stencil", DVM_V_FORWARD, DVM_OP_ADDIK) == 2,
          "stencil forward: %d LD2O, %d LDADDF2O, %d ADDF, %d ADDIK, expected 1, 3, 0 and 2",
          count(po, "stencil", DVM_V_FORWARD, DVM_OP_LD2O), count(po, "stencil", DVM_V_FORWARD, DVM_OP_LDADDF2O),
          count(po, "stencil", DVM_V_FORWARD, DVM_OP_ADDF), count(po, "stencil", DVM_V_FORWARD, DVM_OP_ADDIK));
    /* the if's first branch ends in END, not in a JMP to the END after the else branch */
    CHECK(count(po, "stencil", DVM_V_FORWARD, DVM_OP_JMP) == 0 && count(po, "stencil", DVM_V_FORWARD, DVM_OP_END) == 2,
          "stencil forward: %d JMP, %d END, expected 0 and 2", count(po, "stencil", DVM_V_FORWARD, DVM_OP_JMP),
          count(po, "stencil", DVM_V_FORWARD, DVM_OP_END));
    CHECK(count(po, "stencil", ADJ, DVM_OP_ATOMADDF2O) == 4 && count(po, "stencil", ADJ, DVM_OP_ADDIK) == 2,
          "stencil adjoint: %d ATOMADDF2O, %d ADDIK, expected 4 and 2", count(po, "stencil", ADJ, DVM_OP_ATOMADDF2O),
          count(po, "stencil", ADJ, DVM_OP_ADDIK));
    CHECK(count(pn, "stencil", DVM_V_FORWARD, DVM_OP_LD2O) == 0, "unoptimized stencil forward: LD2O (is no_opt honored?)");
    check_leftovers(po);

    const char *names[4] = {"trans", "dynloop", "keep", "stencil"};
    for (int i = 0; i < 4; i++)
        for (int vk = 0; vk < DVM_V_COUNT; vk++) {
            int a = count(po, names[i], vk, -1), b = count(pn, names[i], vk, -1);
            if (vk == ADJ) CHECK(a < b, "%s adjoint: %d nodes optimized, %d not: expected fewer", names[i], a, b);
            else CHECK(a <= b, "%s variant %d: %d nodes optimized, %d not", names[i], vk, a, b);
            int ra = max_nregs(po, names[i], vk), rb = max_nregs(pn, names[i], vk);
            CHECK(ra <= rb, "%s variant %d: %d registers optimized, %d not", names[i], vk, ra, rb);
        }
    /* loop partitioning (compiler/partition.c): the stencil's if tests a box of its indices,
       so each variant is a serial task computing the box's bounds, the box (the if's
       statements, branch-free, the bounds' registers gone) and the four boxes around it; the
       adjoint's reverse sweeps are the five boxes (its forward computed the bounds) */
    dvm_program *pp = compile(3);
    for (int vk = 0; pp && vk < DVM_V_COUNT; vk++) {
        const dvm_variant_desc *v = variant(pp, "stencil", vk);
        const uint32_t first = vk == ADJ ? 0 : 1;
        CHECK(v && v->ntasks == 5 + first, "partitioned stencil variant %d: %u tasks, expected %u", vk, v ? v->ntasks : 0u,
              5 + first);
        if (!v || v->ntasks != 5 + first) continue;
        CHECK(vk == ADJ || pp->tasks[v->task_begin].kind == DVM_TASK_SERIAL, "partitioned stencil variant %d: task 0 is not serial", vk);
        for (uint32_t t = first; t < 5 + first; t++) {
            const dvm_task_desc *td = &pp->tasks[v->task_begin + t];
            const dvm_task_flow tf = dvm_task_flow_of(pp->nodes, td);
            CHECK(td->kind == DVM_TASK_PARALLEL && td->ndim == 2 && tf.cond == 0 && tf.loops == 0 && tf.fixed_idx == 1,
                  "partitioned stencil variant %d task %u: kind %u, %u dims, %u branches, %u loops, fixed_idx %u; "
                  "expected parallel, 2, 0, 0, 1", vk, t, td->kind, td->ndim, tf.cond, tf.loops, tf.fixed_idx);
        }
        CHECK(nstacks(pp, "stencil", vk) == 0, "partitioned stencil variant %d: %d stacks", vk, nstacks(pp, "stencil", vk));
    }
    if (pp) {
        /* the forward's box: its starts are the bounds' slots, and it is the if's 9 nodes in 4
           registers (the 0, n - 1 and m - 1 of the bounds tests and the tests are gone) */
        const dvm_variant_desc *v = variant(pp, "stencil", DVM_V_FORWARD);
        const dvm_task_desc *box = v && v->ntasks == 6 ? &pp->tasks[v->task_begin + 1] : NULL;
        CHECK(box && box->start_u[0] != DVM_NO_SLOT && box->start_u[1] != DVM_NO_SLOT && box->code_len == 9 &&
                  box->nregs <= 4,
              "partitioned stencil forward box: starts %u %u, %u nodes, %u registers; expected two slots, 9, <= 4",
              box ? box->start_u[0] : 0u, box ? box->start_u[1] : 0u, box ? box->code_len : 0u, box ? box->nregs : 0u);
        expect_op(pp, "stencil", DVM_V_FORWARD, DVM_OP_JOUTI, 0, 0);
        expect_op(pp, "stencil", ADJ, DVM_OP_JOUTI, 0, 0);
        /* dvm_task_may_fail (no snapshot for a launch that cannot fail): the box reads u[i +- 1,
           j +- 1], so over [1, n - 1) x [1, m - 1) of 8x6 arrays every access is in bounds;
           one row or column more on any side reads outside, and an empty space runs nothing */
        if (box) {
            const int64_t len[2] = {48, 48};
            const int32_t shp[2 * DVM_MAX_RANK] = {8, 6, 1, 1, 8, 6, 1, 1};
            const int64_t lo[3] = {1, 1, 0}, hi[3] = {7, 5, 0};
            CHECK(dvm_task_may_fail(pp->nodes, box, lo, hi, len, shp, 2) == 0, "stencil box over its box: may fail");
            for (int side = 0; side < 4; side++) {
                int64_t l2[3] = {1, 1, 0}, h2[3] = {7, 5, 0};
                if (side < 2) l2[side] = 0;
                else h2[side - 2] += 1;
                CHECK(dvm_task_may_fail(pp->nodes, box, l2, h2, len, shp, 2) == 1,
                      "stencil box one past its box (side %d): cannot fail", side);
            }
            const int64_t e0[3] = {0, 0, 0}, e1[3] = {9, 0, 0};
            CHECK(dvm_task_may_fail(pp->nodes, box, e0, e1, len, shp, 2) == 0, "stencil box over an empty space: may fail");
            /* unpartitioned, the same accesses run over the whole space behind a bounds test
               that the analysis does not follow (u[i - 1, j] at i = 0 is outside): it may fail */
            const dvm_variant_desc *vo = variant(po, "stencil", DVM_V_FORWARD);
            const int64_t l0[3] = {0, 0, 0}, h0[3] = {8, 6, 0};
            CHECK(vo && dvm_task_may_fail(po->nodes, &po->tasks[vo->task_begin + vo->ntasks - 1], l0, h0, len, shp, 2) == 1,
                  "unpartitioned stencil: cannot fail");
        }
        /* a loop the pass leaves: trans (no if), dynloop (a loop in its body) */
        CHECK(variant(pp, "trans", DVM_V_FORWARD)->ntasks == 1 && variant(pp, "dynloop", DVM_V_FORWARD)->ntasks == 1,
              "partitioning split trans or dynloop");
    }
    /* unrolled 2 times: other code than 4 times and than none (the switch reaches the pass) */
    dvm_program *p2 = compile(4);
    if (p2 && pu && po)
        CHECK(p2->nnodes != pu->nnodes && p2->nnodes != po->nnodes, "unroll 2: %u nodes, the same as unroll 4 (%u) or none (%u)",
              p2->nnodes, pu->nnodes, po->nnodes);
    dvm_program_free(p2);
    dvm_program_free(pp);
    dvm_program_free(po);
    dvm_program_free(pn);
    dvm_program_free(pu);

    /* The same switches as context options: dvm_compile on each context records them in the
       module's blob, and the disassembly names them as the `dvm` flags that give them. */
    static const char *const listed[NOPT] = {"compiler options: --no-opt\n", "compiler options: --no-partition --unroll 1\n",
                                             "compiler options: --no-partition\n", "compiler options: default\n",
                                             "compiler options: --no-partition --unroll 2\n"};
    for (int opt = 0; opt < NOPT; opt++) {
        if (dvm_context_create(&xopts[opt], &ctxs[opt]) != DVM_OK) {
            fprintf(stderr, "FAILED: no cpu context (level %d): %s\n", opt, dvm_errmsg(ctxs[opt]));
            return 1;
        }
        dvm_module *m = NULL;
        void *blob = NULL;
        size_t len = 0;
        char *text = NULL, err[512] = "";
        dvm_program *back = NULL;
        if (dvm_compile(ctxs[opt], SRC, strlen(SRC), "t.dvk", &m) == DVM_OK && dvm_module_save(ctxs[opt], m, &blob, &len) == DVM_OK &&
            dvm_module_disasm(ctxs[opt], m, &text) == DVM_OK) {
            CHECK(dvm_blob_read(blob, len, &back, err, sizeof err) == 0 && back->options == owords[opt],
                  "context level %d: the blob's options word is 0x%x, expected 0x%x %s", opt, back ? back->options : 0u,
                  owords[opt], err);
            CHECK(strstr(text, listed[opt]) != NULL, "context level %d: the disassembly lacks '%s'", opt, listed[opt]);
        } else {
            CHECK(0, "context level %d: compile, save or disasm: %s", opt, dvm_errmsg(ctxs[opt]));
        }
        dvm_program_free(back);
        dvm_free(text);
        dvm_free(blob);
        dvm_module_destroy(m);
    }

    /* the same values, bit for bit: the optimizer neither reorders nor rewrites arithmetic */
    const char *runs[5] = {"trans", "dynloop", "keep", "sq", "csum"};
    static const int levels[3] = {1, 2, 4};
    for (int i = 0; i < 5; i++) {
        float rn[16];
        if (run(0, runs[i], rn)) continue;
        for (int l = 0; l < 3; l++) {
            const int opt = levels[l];
            float ro[16];
            if (run(opt, runs[i], ro)) continue;
            for (int j = 0; j < 16; j++)
                CHECK(!memcmp(&ro[j], &rn[j], 4), "%s: %s[%d] = %.9g optimized (%s), %.9g not", runs[i], j < 8 ? "y" : "x.grad",
                      j % 8, (double)ro[j], opt == 1 ? "not unrolled" : opt == 2 ? "unrolled 4 times" : "unrolled 2 times",
                      (double)rn[j]);
        }
    }
    float so[3 * SC], sn[3 * SC];
    for (int opt = 1; opt <= 3; opt += 2)
        if (!run_stencil(opt, so) && !run_stencil(0, sn))
            for (int j = 0; j < 3 * SC; j++)
                CHECK(!memcmp(&so[j], &sn[j], 4), "stencil: %s[%d] = %.9g optimized (%s), %.9g not",
                      j < SC ? "v" : j < 2 * SC ? "u.grad" : "v.dual", j % SC, (double)so[j],
                      opt == 3 ? "partitioned" : "not partitioned", (double)sn[j]);
    for (int opt = 0; opt < NOPT; opt++) dvm_context_destroy(ctxs[opt]);
    if (fails) {
        fprintf(stderr, "%d check(s) failed\n", fails);
        return 1;
    }
    printf("ok\n");
    return 0;
}
