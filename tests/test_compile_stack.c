/* test_compile_stack.c: dvm_compile on a small thread stack (256 KiB, what an embedder may
 * give a worker thread) over generated sources of every deep shape: long elif chains, helper
 * call chains, deep brackets, long operator chains, deep blocks. Each must compile or fail
 * with a clear error naming the limit, never overflow the stack. The elif chains must also
 * run correctly on the CPU backend.
 * `test_compile_stack SHAPE N` compiles one generated source and prints the outcome (for
 * measuring by hand). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dvm.h"
#include "tests/check.h"
#include "compiler/compile.h"

/* The sanitizers' instrumented frames are several times larger than the real ones. */
#if defined(__SANITIZE_ADDRESS__)
#define STACK_BYTES (1024 * 1024)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STACK_BYTES (1024 * 1024)
#endif
#endif
#ifndef STACK_BYTES
#define STACK_BYTES (256 * 1024)
#endif


/* ---- a growing text ---- */
typedef struct text {
    char *s;
    size_t n, cap;
} text;
static void put(text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) abort();
        if (t->s && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        t->cap = (t->cap + (size_t)k + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (!t->s) abort();
        if (t->n == 0) t->s[0] = 0;
    }
}
static void indent(text *t, int n) { put(t, "%*s", n * 4, ""); }

/* ---- the shapes ---- */
/* y[i] = 0 for v < 0, J * v for J-1 <= v < J (J = 1..n-1), v beyond */
static void gen_elif(text *t, int n) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n");
    put(t, "        if v < 0.0:\n            y[i] = 0.0\n");
    for (int j = 1; j < n; j++) put(t, "        elif v < %d.0:\n            y[i] = %d.0 * v\n", j, j);
    put(t, "        else:\n            y[i] = v\n");
}
/* the chain in top-level serial code (its hidden flag is a uniform word) */
static void gen_elif_serial(text *t, int n) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    i = 0\n    while i < n:\n        v = x[i]\n");
    put(t, "        if v < 0.0:\n            y[i] = 0.0\n");
    for (int j = 1; j < n; j++) put(t, "        elif v < %d.0:\n            y[i] = %d.0 * v\n", j, j);
    put(t, "        else:\n            y[i] = v\n        i += 1\n");
}
/* the same chain in a parallel loop, inside a loop, differentiated */
static void gen_elif_loop(text *t, int n) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n        s = 0.0\n");
    put(t, "        for r in range(2):\n");
    put(t, "            if v < 0.0:\n                s += 0.0\n");
    for (int j = 1; j < n; j++) put(t, "            elif v < %d.0:\n                s += %d.0 * v\n", j, j);
    put(t, "            else:\n                s += v\n");
    put(t, "        y[i] = s\n");
}
static void gen_helpers(text *t, int n) {
    put(t, "def h0(a: f32) -> f32:\n    return a + 1.0\n");
    for (int j = 1; j < n; j++) put(t, "def h%d(a: f32) -> f32:\n    return h%d(a) + 1.0\n", j, j - 1);
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = h%d(x[i])\n", n - 1);
}
/* helpers with statement bodies: each one's body holds a loop and calls the previous one */
static void gen_helper_blocks(text *t, int n) {
    put(t, "def h0(a: f32) -> f32:\n    return a + 1.0\n");
    for (int j = 1; j < n; j++)
        put(t, "def h%d(a: f32) -> f32:\n    s = a\n    for q in range(2):\n        s = h%d(s)\n    return s\n", j, j - 1);
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = h%d(x[i])\n", n - 1);
}
static void gen_parens(text *t, int n) {
    put(t, "kernel k(y: f32[n]):\n    for i in range(n):\n        y[i] = ");
    for (int j = 0; j < n; j++) put(t, "(");
    put(t, "1.0");
    for (int j = 0; j < n; j++) put(t, ")");
    put(t, "\n");
}
static void gen_sum(text *t, int n) {
    put(t, "kernel k(y: f32[n]):\n    for i in range(n):\n        y[i] = 1.0");
    for (int j = 1; j < n; j++) put(t, " + 1.0");
    put(t, "\n");
}
static void gen_unary(text *t, int n) {
    put(t, "kernel k(y: f32[n]):\n    for i in range(n):\n        y[i] = ");
    for (int j = 0; j < n; j++) put(t, "- ");
    put(t, "1.0\n");
}
static void gen_not(text *t, int n) {
    put(t, "kernel k(y: f32[n]):\n    for i in range(n):\n        if ");
    for (int j = 0; j < n; j++) put(t, "not ");
    put(t, "True:\n            y[i] = 1.0\n");
}
static void gen_power(text *t, int n) {
    put(t, "kernel k(y: f32[n]):\n    for i in range(n):\n        y[i] = 1.0");
    for (int j = 1; j < n; j++) put(t, " ** 1.0");
    put(t, "\n");
}
static void gen_cond(text *t, int n) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = ");
    for (int j = 0; j < n; j++) put(t, "%d.0 if x[i] < %d.0 else ", j, j);
    put(t, "0.0\n");
}
static void gen_index(text *t, int n) {
    put(t, "kernel k(x: i32[n], y: i32[n]):\n    for i in range(n):\n        y[i] = ");
    for (int j = 0; j < n; j++) put(t, "x[");
    put(t, "i");
    for (int j = 0; j < n; j++) put(t, "]");
    put(t, "\n");
}
static void gen_blocks(text *t, int n) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n");
    for (int j = 0; j < n; j++) {
        indent(t, j + 2);
        put(t, "if v < %d.0:\n", j + 1000);
        indent(t, j + 3);
        put(t, "v = v * 2.0\n");
    }
    indent(t, n + 2);
    put(t, "y[i] = v\n");
}
static void gen_loops(text *t, int n) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n");
    for (int j = 0; j < n; j++) {
        indent(t, j + 2);
        put(t, "for q%d in range(1):\n", j);
    }
    indent(t, n + 2);
    put(t, "v = sin(v)\n");
    put(t, "        y[i] = v\n");
}
/* deep blocks, each holding an elif chain whose last else opens the next level */
static void gen_blocks_elif(text *t, int n) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n");
    for (int j = 0; j < n; j++) {
        indent(t, j + 2);
        put(t, "if v < -1.0:\n");
        for (int e = 0; e < 40; e++) {
            indent(t, j + 3);
            put(t, "v = v + 1.0\n");
            indent(t, j + 2);
            put(t, "elif v < %d.0:\n", -2 - e);
        }
        indent(t, j + 3);
        put(t, "v = v * 2.0\n");
        indent(t, j + 2);
        put(t, "else:\n");
    }
    indent(t, n + 2);
    put(t, "y[i] = v\n");
}
static void gen_bool(text *t, int n, const char *op) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        if x[i] < 0.0");
    for (int j = 1; j < n; j++) put(t, " %s x[i] < %d.0", op, j);
    put(t, ":\n            y[i] = 1.0\n");
}
static void gen_and(text *t, int n) { gen_bool(t, n, "and"); }
static void gen_or(text *t, int n) { gen_bool(t, n, "or"); }
static void gen_while(text *t, int n) {
    put(t, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n");
    for (int j = 0; j < n; j++) {
        indent(t, j + 2);
        put(t, "while v > 1000.0:\n");
    }
    indent(t, n + 2);
    put(t, "v = v * 0.5\n");
    put(t, "        y[i] = v\n");
}

typedef struct shape {
    const char *name;
    void (*gen)(text *, int);
} shape;
static const shape shapes[] = {
    {"elif", gen_elif},        {"elif_loop", gen_elif_loop}, {"elif_serial", gen_elif_serial}, {"helpers", gen_helpers},
    {"helper_blocks", gen_helper_blocks}, {"parens", gen_parens}, {"sum", gen_sum},
    {"unary", gen_unary},      {"not", gen_not},             {"power", gen_power},
    {"cond", gen_cond},        {"index", gen_index},         {"blocks", gen_blocks},
    {"loops", gen_loops},      {"blocks_elif", gen_blocks_elif}, {"while", gen_while},
    {"and", gen_and},          {"or", gen_or},
};

/* ---- compiling on a small stack ---- */
typedef struct job {
    dvm_context *ctx;
    const char *src;
    size_t len;
    dvm_module *mod;
    dvm_status st;
    char msg[512];
} job;

static void *run_job(void *p) {
    job *j = p;
    j->st = dvm_compile(j->ctx, j->src, j->len, "gen.dvk", &j->mod);
    if (j->st != DVM_OK) snprintf(j->msg, sizeof j->msg, "%s", dvm_errmsg(j->ctx));
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Compiles on a STACK_BYTES thread; returns the module (or NULL) and the message. */
static dvm_module *compile_small_stack(dvm_context *ctx, const text *t, dvm_status *st, char *msg, size_t cap,
                                       double *secs) {
    job j = {ctx, t->s, t->n, NULL, DVM_OK, ""};
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, STACK_BYTES);
    pthread_t th;
    double t0 = now();
    if (pthread_create(&th, &at, run_job, &j) != 0) {
        printf("FAIL: pthread_create\n");
        exit(1);
    }
    pthread_join(th, NULL);
    *secs = now() - t0;
    pthread_attr_destroy(&at);
    *st = j.st;
    snprintf(msg, cap, "%s", j.msg);
    return j.mod;
}

static const shape *find_shape(const char *name) {
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        if (!strcmp(shapes[i].name, name)) return &shapes[i];
    return NULL;
}

/* y = k(x) on the cpu for a few x; the elif kernel's expected values */
static void check_elif_values(dvm_context *ctx, dvm_module *m, int nbranch, int loop) {
    const float xs[] = {-3.0f, 0.5f, 1.5f, 77.25f, (float)nbranch - 0.5f, (float)nbranch + 3.0f};
    const int64_t n = (int64_t)(sizeof xs / sizeof *xs);
    dvm_array *x = NULL, *y = NULL;
    dvm_args *args = NULL;
    const dvm_kernel *k = dvm_module_kernel(m, 0);
    CHECK(dvm_array_create(ctx, DVM_F32, 1, &n, &x) == DVM_OK && dvm_array_create(ctx, DVM_F32, 1, &n, &y) == DVM_OK &&
               dvm_array_write(ctx, x, xs, n) == DVM_OK && dvm_args_create(ctx, k, &args) == DVM_OK &&
               dvm_args_array(ctx, args, "x", x) == DVM_OK && dvm_args_array(ctx, args, "y", y) == DVM_OK,
           "setting up the launch: %s", dvm_errmsg(ctx));
    dvm_launch_opts lo = {DVM_FORWARD, 0, 0, 0};
    dvm_status st = dvm_launch(ctx, k, args, &lo, NULL);
    CHECK(st == DVM_OK, "launch: %s", dvm_errmsg(ctx));
    float ys[6] = {0};
    if (st == DVM_OK) dvm_array_read(ctx, y, ys, n);
    for (int i = 0; i < n; i++) {
        float v = xs[i], want;
        if (v < 0.0f) want = 0.0f;
        else if (v < (float)nbranch - 1.0f) want = (float)(int)(v + 1.0f) * v; /* the first J with v < J */
        else want = v;
        if (loop) want *= 2.0f;
        CHECK(ys[i] == want, "elif chain of %d (loop %d): x = %g gave %g, expected %g", nbranch, loop, v, ys[i], want);
    }
    if (loop) { /* the adjoint: dy/dx = 2 * (the branch's factor) */
        dvm_array *gx = NULL, *gy = NULL;
        float seed[6] = {1, 1, 1, 1, 1, 1}, g[6] = {0};
        CHECK(dvm_array_create(ctx, DVM_F32, 1, &n, &gx) == DVM_OK && dvm_array_create(ctx, DVM_F32, 1, &n, &gy) == DVM_OK &&
                   dvm_array_write(ctx, gy, seed, n) == DVM_OK && dvm_args_grad(ctx, args, "x", gx) == DVM_OK &&
                   dvm_args_grad(ctx, args, "y", gy) == DVM_OK,
               "setting up the adjoint: %s", dvm_errmsg(ctx));
        lo.mode = DVM_ADJOINT;
        st = dvm_launch(ctx, k, args, &lo, NULL);
        if (nbranch > 1000) { /* its adjoint needs more than a task's registers: no gradient, a clear error */
            CHECK(st == DVM_ERR_COMPILE && strstr(dvm_errmsg(ctx), "registers") && strstr(dvm_errmsg(ctx), "no gradient"),
                   "adjoint of a %d-branch chain: expected the reason it has no gradient, got %d: %s", nbranch, (int)st,
                   dvm_errmsg(ctx));
            st = DVM_ERR_COMPILE;
            for (int i = 0; i < n; i++) g[i] = xs[i] < 0.0f ? 0.0f : xs[i] < (float)nbranch - 1.0f ? 2.0f * (float)(int)(xs[i] + 1.0f) : 2.0f;
        } else {
            CHECK(st == DVM_OK, "adjoint launch: %s", dvm_errmsg(ctx));
        }
        if (st == DVM_OK) dvm_array_read(ctx, gx, g, n);
        for (int i = 0; i < n; i++) {
            float v = xs[i], want = v < 0.0f ? 0.0f : v < (float)nbranch - 1.0f ? (float)(int)(v + 1.0f) : 1.0f;
            want *= 2.0f;
            CHECK(g[i] == want, "elif chain of %d: d/dx at x = %g gave %g, expected %g", nbranch, v, g[i], want);
        }
        dvm_array_destroy(gx);
        dvm_array_destroy(gy);
    }
    dvm_args_destroy(args);
    dvm_array_destroy(x);
    dvm_array_destroy(y);
}

/* Out of memory anywhere in the compiler (front end, autodiff, emitter) says so: with the
 * arena limited to ever more bytes, every compile either fails with "out of memory" or
 * succeeds, never with another error or none. */
static void check_out_of_memory(void) {
    text t = {0};
    gen_elif_loop(&t, 40);
    put(&t, "def h0(a: f32) -> f32:\n    return a + 1.0\n");
    for (int j = 1; j < 5; j++)
        put(&t, "def h%d(a: f32) -> f32:\n    s = a\n    for q in range(2):\n        s = h%d(s)\n    return s\n", j, j - 1);
    put(&t, "kernel k2(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = h4(x[i]) + sin(x[i])\n");
    int ok = 0;
    for (size_t limit = 1 << 16; limit < ((size_t)64 << 20) && !ok; limit += limit / 16) {
        dvm_program *p = NULL;
        char *msg = NULL;
        dvm_compile_opts co = {.arena_limit = limit};
        int rc = dvm_compile_source_opts(t.s, t.n, "gen.dvk", &co, &p, &msg);
        if (rc == 0) ok = 1;
        else
            CHECK(msg && strstr(msg, "out of memory"), "with a %zu-byte arena: expected 'out of memory', got: %s", limit,
                   msg ? msg : "(nothing)");
        dvm_program_free(p);
        free(msg);
    }
    CHECK(ok, "the source never compiled, even with 64 MiB of arena");
    free(t.s);
}

typedef struct cse {
    const char *shape;
    int n;
    const char *expect; /* NULL: must compile; else a part of the error message */
} cse;

int main(int argc, char **argv) {
    dvm_context_opts co = {.backend = "cpu"};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&co, &ctx) != DVM_OK) {
        printf("FAIL: no cpu context: %s\n", dvm_errmsg(ctx));
        return 1;
    }
    if (argc == 3) { /* one shape by hand */
        const shape *sh = find_shape(argv[1]);
        if (!sh) {
            printf("unknown shape %s\n", argv[1]);
            return 2;
        }
        text t = {0};
        sh->gen(&t, atoi(argv[2]));
        dvm_status st;
        char msg[512];
        double secs;
        dvm_module *m = compile_small_stack(ctx, &t, &st, msg, sizeof msg, &secs);
        printf("%s %s: %zu bytes, %.3f s: %s\n", argv[1], argv[2], t.n, secs, st == DVM_OK ? "compiled" : msg);
        dvm_module_destroy(m);
        free(t.s);
        dvm_context_destroy(ctx);
        return 0;
    }
    check_out_of_memory();
    static const cse cases[] = {
        {"elif", 10, NULL},
        {"elif", 5000, NULL},
        /* a task holds at most 65535 nodes: 10,000 branches compile without derivatives
           (their adjoint and tangent do not fit), the forward of 30,000 does not fit */
        {"elif", 10000, NULL},
        {"elif", 30000, "more than the limit of 65535"},
        {"elif_serial", 100, NULL},
        {"elif_loop", 300, NULL},
        {"elif_loop", 3000, NULL},
        {"helpers", 50, NULL},
        {"helpers", 5000, "helper calls are nested too deeply"},
        {"helpers", 15000, "too many kernels and helpers"},
        {"helper_blocks", 10, NULL},
        {"helper_blocks", 5000, "helper calls are nested too deeply"},
        {"parens", 150, NULL},
        {"parens", 100000, "nested too deeply"},
        {"sum", 100, NULL},
        {"sum", 200000, "operator chain is too long"},
        {"unary", 100, NULL},
        {"unary", 200000, "nested too deeply"},
        {"not", 100, NULL},
        {"not", 200000, "nested too deeply"},
        {"power", 100, NULL},
        {"power", 200000, "operator chain is too long"},
        {"cond", 100, NULL},
        {"cond", 100000, "nested too deeply"},
        {"index", 50, NULL},
        {"index", 100000, "nested too deeply"},
        {"blocks", 90, NULL},
        {"blocks", 500, "nested too deeply"},
        {"loops", 90, NULL},
        {"loops", 500, "nested too deeply"},
        {"while", 90, NULL},
        {"and", 100, NULL},
        {"and", 100000, "nested too deeply"},
        {"or", 100, NULL},
        {"blocks_elif", 90, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const cse *c = &cases[i];
        text t = {0};
        find_shape(c->shape)->gen(&t, c->n);
        dvm_status st;
        char msg[512];
        double secs;
        dvm_module *m = compile_small_stack(ctx, &t, &st, msg, sizeof msg, &secs);
        printf("%-14s %6d: %8zu bytes, %6.3f s: %.*s\n", c->shape, c->n, t.n, secs,
               (int)strcspn(st == DVM_OK ? "compiled" : msg, "\n"), st == DVM_OK ? "compiled" : msg);
        if (c->expect) {
            CHECK(st == DVM_ERR_COMPILE && strstr(msg, c->expect), "%s %d: expected an error with '%s', got %d: %s",
                   c->shape, c->n, c->expect, (int)st, msg);
        } else {
            CHECK(st == DVM_OK, "%s %d: expected it to compile, got: %s", c->shape, c->n, msg);
        }
        if (st == DVM_OK && !strncmp(c->shape, "elif", 4)) check_elif_values(ctx, m, c->n, !strcmp(c->shape, "elif_loop"));
        dvm_module_destroy(m);
        free(t.s);
    }
    dvm_context_destroy(ctx);
    if (fails) printf("%d fails\n", fails);
    else printf("ok\n");
    return fails != 0;
}
