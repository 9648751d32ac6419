/* test_spell.c: equivalent spellings of one computation get the same code (issue 26: no speed
 * that only one spelling gets; compiler/emit_code.c, try_fma and counted_while). For the
 * benchmark's dynamic loop (bench/bench_kernels.h) and saxpy, each other spelling's forward
 * task has as many nodes per iteration as the benchmark spelling's, its loop body is one
 * self-update node (bytecode/bc.h, DVM_SELF_UPDATE: the interpreters run its trips fused),
 * and its results (forward and adjoint) on the CPU are bit-equal to the benchmark
 * spelling's, with and without the optimizer. Then while loops that must not become counted
 * loops (a bound that the body writes, a continue, a read of the counter after its
 * increment, a bound read from an array that a store through another parameter bound to the
 * same array changes) and ones that must keep their exact meaning (break, the counter's value after
 * the loop, a loop that does not run) against values computed here in C. */
#define _POSIX_C_SOURCE 200809L
#include "bytecode/bc.h"
#include "compiler/compile.h"
#include "include/dvm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

/* f32 results of the while kernels against C, which may round a*b + c once or twice (as an
   FMAF node may); the counter's value, times 100, is exact either way */
static int close_to(float got, float want) {
    float d = got - want;
    return (d < 0 ? -d : d) <= 1e-4f * (1.0f + (want < 0 ? -want : want));
}

static const char *SRC =
    "kernel dynloop(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * rate + 0.01\n"
    "        y[i] = v\n"
    "kernel dynloop_lit(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * 0.97 + 0.01\n"
    "        y[i] = v\n"
    "kernel dynloop_par(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = v * rate + c\n"
    "        y[i] = v\n"
    "kernel dynloop_par_comm(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = c + rate * v\n"
    "        y[i] = v\n"
    "kernel dynloop_lit_par(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = 0.97 * v + c\n"
    "        y[i] = v\n"
    "kernel dynloop_while(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        j = 0\n"
    "        while j < steps[i]:\n"
    "            v = v * rate + 0.01\n"
    "            j += 1\n"
    "        y[i] = v\n"
    "kernel dynloop_comm(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):\n"
    "            v = 0.01 + rate * v\n"
    "        y[i] = v\n"
    "kernel saxpy(a: f32, x: f32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        y[i] = a * x[i] + y[i]\n"
    "kernel saxpy_comm(a: f32, x: f32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        y[i] = y[i] + x[i] * a\n"
    "kernel saxpy_lit(a: f32, x: f32[n], y: f32[n]):\n"
    "    for i in range(n):\n"
    "        y[i] = 1.5 * x[i] + y[i]\n"
    /* while loops with their own meaning: wl: the counter after the loop, a loop that does not
       run (j starts at 3), break; wb: the bound written in the body; wc: a continue; wr: the
       counter read after its increment */
    "kernel wl(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        j = 3\n"
    "        while j < steps[i]:\n"
    "            if v > 4.0:\n"
    "                break\n"
    "            v = v * 1.5 + 0.25\n"
    "            j += 1\n"
    "        y[i] = v + f32(j) * 100.0\n"
    "kernel wb(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        j = 0\n"
    "        lim = steps[i]\n"
    "        while j < lim:\n"
    "            v = v * rate + c\n"
    "            lim -= 1\n"
    "            j += 1\n"
    "        y[i] = v + f32(j) * 100.0\n"
    "kernel wc(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        j = 0\n"
    "        while j < steps[i]:\n"
    "            if j == 2:\n"
    "                j += 1\n"
    "                continue\n"
    "            v = v * rate + c\n"
    "            j += 1\n"
    "        y[i] = v + f32(j) * 100.0\n"
    "kernel wr(x: f32[n], steps: i32[n], y: f32[n], rate: f32, c: f32):\n"
    "    for i in range(n):\n"
    "        v = x[i]\n"
    "        j = 0\n"
    "        while j < steps[i]:\n"
    "            j += 1\n"
    "            v = v * rate + f32(j)\n"
    "        y[i] = v\n";

#define N 8
static const float XV[N] = {0.5f, 1.25f, -2, 0.25f, 3, -0.75f, 0.1f, 2.5f};
static const int32_t SV[N] = {0, 1, 3, 9, 7, 5, 4, 8};

static dvm_program *compile(int no_opt) {
    dvm_program *p = NULL;
    char *msg = NULL;
    dvm_compile_opts o = {.no_opt = no_opt};
    int rc = dvm_compile_source_opts(SRC, strlen(SRC), "spell.dvk", &o, &p, &msg);
    CHECK(rc == 0 && p, "compile (no_opt %d) failed: %s", no_opt, msg ? msg : "");
    free(msg);
    return p;
}

/* The forward variant's only task of kernel, or NULL. */
static const dvm_task_desc *fwd_task(const dvm_program *p, const char *kernel) {
    for (uint32_t k = 0; k < p->nkernels; k++) {
        if (strcmp(p->strings + p->kernels[k].name, kernel)) continue;
        const dvm_variant_desc *v = &p->kernels[k].v[DVM_V_FORWARD];
        CHECK(v->ntasks == 1u, "%s: %u forward tasks, expected 1", kernel, v->ntasks);
        return v->ntasks == 1u ? &p->tasks[v->task_begin] : NULL;
    }
    CHECK(0, "no kernel '%s'", kernel);
    return NULL;
}

/* nodes an iteration runs through: from the task's body start to its end (the prologue runs
   once per thread) */
static int body_nodes(const dvm_program *p, const char *kernel) {
    const dvm_task_desc *t = fwd_task(p, kernel);
    return t ? (int)(t->code_len - t->body) : -1;
}

/* The number of counted loops (INCLT) of the forward task whose body is one self-update node
   (the interpreters' fused loop), and, in *loops, all its loops (backward jumps). */
static int fused_loops(const dvm_program *p, const char *kernel, int *loops) {
    const dvm_task_desc *t = fwd_task(p, kernel);
    int n = 0;
    *loops = 0;
    for (uint32_t i = 0; t && i < t->code_len; i++) {
        const dvm_node *d = &p->nodes[t->code_begin + i];
        uint32_t target = d->op == DVM_OP_INCLT ? d->c : d->op == DVM_OP_JMP ? d->a
                          : (d->op == DVM_OP_JZ || d->op == DVM_OP_JNZ) ? d->b : UINT32_MAX;
        if (target <= i) ++*loops;
        if (d->op != DVM_OP_INCLT || d->x != 0 || (uint32_t)d->c + 1u != i) continue;
        const dvm_node *b = &p->nodes[t->code_begin + d->c];
        n += DVM_SELF_UPDATE(b->op, b->a, b->b, b->c) && b->a != d->a && b->a != d->b;
    }
    return n;
}

/* Backward jumps (loops) in all tasks of kernel's variant vk. */
static int variant_loops(const dvm_program *p, const char *kernel, int vk) {
    for (uint32_t k = 0; k < p->nkernels; k++) {
        if (strcmp(p->strings + p->kernels[k].name, kernel)) continue;
        const dvm_variant_desc *v = &p->kernels[k].v[vk];
        int n = 0;
        for (uint32_t t = 0; t < v->ntasks; t++) {
            const dvm_task_desc *td = &p->tasks[v->task_begin + t];
            for (uint32_t i = 0; i < td->code_len; i++) {
                const dvm_node *d = &p->nodes[td->code_begin + i];
                uint32_t target = d->op == DVM_OP_INCLT ? d->c : d->op == DVM_OP_JMP ? d->a
                                  : (d->op == DVM_OP_JZ || d->op == DVM_OP_JNZ) ? d->b : UINT32_MAX;
                n += target <= i;
            }
        }
        return n;
    }
    CHECK(0, "no kernel '%s'", kernel);
    return -1;
}

static dvm_context *ctx[2];

/* Runs kernel forward and adjoint (y.grad = 1) on the CPU context without (0) or with (1) the
   optimizer: out[0..N) y, out[N..2N) x.grad (the while kernels with a break or continue have no
   adjoint check here: grads are the suite's). */
static void run(int opt, const char *kernel, int adjoint, float out[2 * N]) {
    dvm_context *cx = ctx[opt];
    dvm_module *m = NULL;
    const dvm_kernel *k = NULL;
    memset(out, 0, sizeof(float) * 2 * N);
    if (dvm_compile(cx, SRC, strlen(SRC), "spell.dvk", &m) != DVM_OK || dvm_kernel_find(cx, m, kernel, &k) != DVM_OK) {
        CHECK(0, "%s: %s", kernel, dvm_errmsg(cx));
        dvm_module_destroy(m);
        return;
    }
    int64_t n[1] = {N};
    dvm_array *x, *s, *y, *yg, *xg;
    dvm_array_create(cx, DVM_F32, 1, n, &x);
    dvm_array_create(cx, DVM_I32, 1, n, &s);
    dvm_array_create(cx, DVM_F32, 1, n, &y);
    dvm_array_create(cx, DVM_F32, 1, n, &yg);
    dvm_array_create(cx, DVM_F32, 1, n, &xg);
    const float ones[N] = {1, 1, 1, 1, 1, 1, 1, 1}, zeros[N] = {0};
    dvm_array_write(cx, x, XV, N);
    dvm_array_write(cx, s, SV, N);
    dvm_array_write(cx, y, XV, N);
    dvm_array_write(cx, yg, ones, N);
    dvm_array_write(cx, xg, zeros, N);
    dvm_args *a = NULL;
    dvm_args_create(cx, k, &a);
    dvm_args_array(cx, a, "x", x);
    dvm_args_array(cx, a, "y", y);
    if (strncmp(kernel, "saxpy", 5)) {
        dvm_args_array(cx, a, "steps", s);
        dvm_args_f32(cx, a, "rate", 0.97f);
        dvm_args_f32(cx, a, "c", 0.01f);
    } else {
        dvm_args_f32(cx, a, "a", 1.5f);
    }
    dvm_launch_opts fwd = {DVM_FORWARD, 0, 0, 0};
    CHECK(dvm_launch(cx, k, a, &fwd, NULL) == DVM_OK, "%s forward (opt %d): %s", kernel, opt, dvm_errmsg(cx));
    dvm_array_read(cx, y, out, N);
    if (adjoint) {
        dvm_args_grad(cx, a, "y", yg);
        dvm_args_grad(cx, a, "x", xg);
        dvm_launch_opts adj = {DVM_ADJOINT, 0, 0, 0};
        CHECK(dvm_launch(cx, k, a, &adj, NULL) == DVM_OK, "%s adjoint (opt %d): %s", kernel, opt, dvm_errmsg(cx));
        dvm_array_read(cx, xg, out + N, N);
    }
    dvm_args_destroy(a);
    dvm_array_destroy(x);
    dvm_array_destroy(s);
    dvm_array_destroy(y);
    dvm_array_destroy(yg);
    dvm_array_destroy(xg);
    dvm_module_destroy(m);
}

/* A while whose bound reads an array that a store may change: the launch binds one array to
 * s and o, so the store changes the bound (5 or 1, then 2): the loop stops at j = 2. */
static void test_alias(void) {
    const char *src = "kernel al(s: i32[n], o: i32[n], y: f32[n]):\n"
                      "    for i in range(n):\n"
                      "        j = 0\n"
                      "        while j < s[i]:\n"
                      "            o[i] = 2\n"
                      "            j += 1\n"
                      "        y[i] = f32(j)\n";
    for (int opt = 0; opt < 2; opt++) {
        dvm_context *cx = ctx[opt];
        dvm_module *m = NULL;
        const dvm_kernel *k = NULL;
        if (dvm_compile(cx, src, strlen(src), "alias.dvk", &m) != DVM_OK || dvm_kernel_find(cx, m, "al", &k) != DVM_OK) {
            CHECK(0, "al: %s", dvm_errmsg(cx));
            dvm_module_destroy(m);
            return;
        }
        int64_t n[1] = {4};
        dvm_array *sa, *y;
        dvm_array_create(cx, DVM_I32, 1, n, &sa);
        dvm_array_create(cx, DVM_F32, 1, n, &y);
        const int32_t sv[4] = {5, 5, 1, 0};
        dvm_array_write(cx, sa, sv, 4);
        dvm_args *a = NULL;
        dvm_args_create(cx, k, &a);
        dvm_args_array(cx, a, "s", sa);
        dvm_args_array(cx, a, "o", sa);
        dvm_args_array(cx, a, "y", y);
        dvm_launch_opts fwd = {DVM_FORWARD, 0, 0, 0};
        CHECK(dvm_launch(cx, k, a, &fwd, NULL) == DVM_OK, "al (opt %d): %s", opt, dvm_errmsg(cx));
        float got[4];
        dvm_array_read(cx, y, got, 4);
        CHECK(got[0] == 2 && got[1] == 2 && got[2] == 2 && got[3] == 0, "al (opt %d): j = %g %g %g %g, expected 2 2 2 0", opt,
              (double)got[0], (double)got[1], (double)got[2], (double)got[3]);
        dvm_args_destroy(a);
        dvm_array_destroy(sa);
        dvm_array_destroy(y);
        dvm_module_destroy(m);
    }
}

/* kernel against its benchmark spelling `base`: nodes per iteration, fused loops, results */
static void same_as(const dvm_program *p, const char *base, const char *kernel, int loop) {
    CHECK(body_nodes(p, kernel) == body_nodes(p, base), "%s: %d nodes per iteration, %s has %d", kernel,
          body_nodes(p, kernel), base, body_nodes(p, base));
    if (loop) {
        int loops = 0, fused = fused_loops(p, kernel, &loops);
        CHECK(fused == 1 && loops == 1, "%s: %d loops, %d of them a fused one-node loop; expected 1 and 1", kernel, loops, fused);
    }
    for (int opt = 0; opt < 2; opt++) {
        float want[2 * N], got[2 * N];
        run(opt, base, loop, want);
        run(opt, kernel, loop, got);
        CHECK(!memcmp(want, got, sizeof want), "%s (opt %d): results differ from %s's (y[3] %.9g vs %.9g, x.grad[3] %.9g vs %.9g)",
              kernel, opt, base, (double)got[3], (double)want[3], (double)got[N + 3], (double)want[N + 3]);
    }
}

int main(void) {
    for (int i = 0; i < 2; i++) {
        dvm_context_opts o = {.backend = "cpu", .no_opt = i == 0};
        CHECK(dvm_context_create(&o, &ctx[i]) == DVM_OK, "cpu context: %s", ctx[i] ? dvm_errmsg(ctx[i]) : "none");
        if (!ctx[i]) return 1;
    }
    dvm_program *p = compile(0);
    if (!p) return 1;
    int loops = 0;
    CHECK(fused_loops(p, "dynloop", &loops) == 1 && loops == 1, "dynloop: the benchmark spelling's loop is not fused");
    same_as(p, "dynloop", "dynloop_lit", 1);
    same_as(p, "dynloop", "dynloop_par", 1);
    same_as(p, "dynloop", "dynloop_par_comm", 1);
    same_as(p, "dynloop", "dynloop_lit_par", 1);
    same_as(p, "dynloop", "dynloop_comm", 1);
    /* the while loop has no copy of the counter (j is it) but builds its 0 per iteration */
    CHECK(body_nodes(p, "dynloop_while") <= body_nodes(p, "dynloop"), "dynloop_while: %d nodes per iteration, dynloop %d",
          body_nodes(p, "dynloop_while"), body_nodes(p, "dynloop"));
    loops = 0;
    CHECK(fused_loops(p, "dynloop_while", &loops) == 1 && loops == 1, "dynloop_while: %d loops, not one fused one", loops);
    /* its adjoint counts the trips without a loop (the reverse sweep recomputes the forward's
       while only for its trip count): as many loops as dynloop's adjoint */
    CHECK(variant_loops(p, "dynloop_while", DVM_V_ADJOINT) == variant_loops(p, "dynloop", DVM_V_ADJOINT),
          "dynloop_while adjoint: %d loops, dynloop's %d", variant_loops(p, "dynloop_while", DVM_V_ADJOINT),
          variant_loops(p, "dynloop", DVM_V_ADJOINT));
    for (int opt = 0; opt < 2; opt++) {
        float want[2 * N], got[2 * N];
        run(opt, "dynloop", 1, want);
        run(opt, "dynloop_while", 1, got);
        CHECK(!memcmp(want, got, sizeof want), "dynloop_while (opt %d): results differ from dynloop's", opt);
    }
    same_as(p, "saxpy", "saxpy_comm", 0);
    same_as(p, "saxpy", "saxpy_lit", 0);

    /* while loops, against C */
    for (int opt = 0; opt < 2; opt++) {
        float got[2 * N];
        run(opt, "wl", 0, got);
        for (int i = 0; i < N; i++) {
            float v = XV[i];
            int j = 3;
            while (j < SV[i]) {
                if (v > 4.0f) break;
                v = v * 1.5f + 0.25f;
                j += 1;
            }
            float want = v + (float)j * 100.0f;
            CHECK(close_to(got[i], want), "wl[%d] (opt %d): %.9g, expected %.9g", i, opt, (double)got[i], (double)want);
        }
        run(opt, "wb", 0, got);
        for (int i = 0; i < N; i++) {
            float v = XV[i];
            int j = 0, lim = SV[i];
            while (j < lim) {
                v = v * 0.97f + 0.01f;
                lim -= 1;
                j += 1;
            }
            float want = v + (float)j * 100.0f;
            CHECK(close_to(got[i], want), "wb[%d] (opt %d): %.9g, expected %.9g", i, opt, (double)got[i], (double)want);
        }
        run(opt, "wc", 0, got);
        for (int i = 0; i < N; i++) {
            float v = XV[i];
            int j = 0;
            while (j < SV[i]) {
                if (j == 2) {
                    j += 1;
                    continue;
                }
                v = v * 0.97f + 0.01f;
                j += 1;
            }
            float want = v + (float)j * 100.0f;
            CHECK(close_to(got[i], want), "wc[%d] (opt %d): %.9g, expected %.9g", i, opt, (double)got[i], (double)want);
        }
        run(opt, "wr", 0, got);
        for (int i = 0; i < N; i++) {
            float v = XV[i];
            for (int j = 0; j < SV[i];) {
                j += 1;
                v = v * 0.97f + (float)j;
            }
            CHECK(close_to(got[i], v), "wr[%d] (opt %d): %.9g, expected %.9g", i, opt, (double)got[i], (double)v);
        }
    }
    /* which of them are counted loops: wl (the break leaves it) is; wb (its bound changes), wc
       (a continue skips the increment) and wr (the counter is read after it) are not */
    CHECK(fused_loops(p, "wl", &loops) == 0 && loops == 1, "wl: %d loops", loops);
    const dvm_task_desc *t = fwd_task(p, "wl");
    int inclt = 0;
    for (uint32_t i = 0; t && i < t->code_len; i++) inclt += p->nodes[t->code_begin + i].op == DVM_OP_INCLT;
    CHECK(inclt == 1, "wl: %d INCLT, expected its while as a counted loop", inclt);
    const char *not_counted[3] = {"wb", "wc", "wr"};
    for (int w = 0; w < 3; w++) {
        t = fwd_task(p, not_counted[w]);
        inclt = 0;
        for (uint32_t i = 0; t && i < t->code_len; i++) inclt += p->nodes[t->code_begin + i].op == DVM_OP_INCLT;
        CHECK(inclt == 0, "%s: %d INCLT: a while that is not a counted loop became one", not_counted[w], inclt);
    }
    test_alias();
    dvm_program_free(p);
    for (int i = 0; i < 2; i++) dvm_context_destroy(ctx[i]);
    if (fails) {
        printf("test_spell: %d failure(s)\n", fails);
        return 1;
    }
    printf("test_spell: all spellings agree\n");
    return 0;
}
