/* test_misuse.c: the C API misused as a careless embedder would (docs/c-api.md, "Lifetimes
 * and threads"): double destroy of every handle kind, use after destroy, a context destroyed
 * before its arrays, modules, argument sets and tapes, and two threads on one context. Each
 * misuse is DVM_ERR_USAGE with a message, or a no-op for a destroy; never a crash. Run in the
 * sanitizer build too, where any read of freed memory would be reported. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "dvm.h"
#include "tests/check.h"


static const char *SRC =
    "kernel saxpy(x: f32[n], y: f32[n], a: f32):\n"
    "    for i in range(n):\n"
    "        y[i] = a * x[i] + y[i]\n"
    "kernel spin(x: f32[n]):\n"
    "    for i in range(n):\n"
    "        while True:\n"
    "            x[i] = x[i] + 1.0\n";

static dvm_context *new_ctx(void) {
    dvm_context_opts co = {.backend = "cpu"};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&co, &ctx) != DVM_OK) {
        printf("FAIL: no cpu context: %s\n", dvm_errmsg(ctx));
        return NULL;
    }
    return ctx;
}

static int has(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

/* use after destroy, and a second destroy, of each kind of handle */
static void after_destroy(void) {
    dvm_context *ctx = new_ctx();
    if (!ctx) return;
    dvm_module *m = NULL;
    const dvm_kernel *k = NULL;
    dvm_args *a = NULL;
    dvm_array *x = NULL, *y = NULL, *z = NULL;
    int64_t sh[1] = {4};
    float h[4] = {1, 2, 3, 4};
    dvm_compile(ctx, SRC, strlen(SRC), "misuse.dvk", &m);
    dvm_kernel_find(ctx, m, "saxpy", &k);
    dvm_array_create(ctx, DVM_F32, 1, sh, &x);
    dvm_array_create(ctx, DVM_F32, 1, sh, &y);
    dvm_array_create(ctx, DVM_F32, 1, sh, &z);
    dvm_args_create(ctx, k, &a);
    dvm_args_array(ctx, a, "x", x);
    dvm_args_array(ctx, a, "y", y);
    dvm_args_f32(ctx, a, "a", 2.0f);
    CHECK(dvm_launch(ctx, k, a, NULL, NULL) == DVM_OK, "a first launch: %s", dvm_errmsg(ctx));

    /* an array destroyed while an argument set holds it */
    dvm_array_destroy(x);
    dvm_status s = dvm_launch(ctx, k, a, NULL, NULL);
    CHECK(s == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "the array bound to 'x' was destroyed"),
           "launch with a destroyed array: got %d '%s'", (int)s, dvm_errmsg(ctx));
    s = dvm_array_write(ctx, x, h, 4);
    CHECK(s == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "dvm_array_write: the array was destroyed"),
           "write to a destroyed array: got %d '%s'", (int)s, dvm_errmsg(ctx));
    s = dvm_array_read(ctx, x, h, 4);
    CHECK(s == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "dvm_array_read: the array was destroyed"),
           "read of a destroyed array: got %d '%s'", (int)s, dvm_errmsg(ctx));
    s = dvm_args_array(ctx, a, "x", x);
    CHECK(s == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "argument 'x': the array was destroyed"),
           "binding a destroyed array: got %d '%s'", (int)s, dvm_errmsg(ctx));
    CHECK(dvm_array_count(x) == 0 && dvm_array_rank(x) == 0, "a destroyed array's count and rank must read 0");
    dvm_array_destroy(x); /* a second destroy: ignored, and said */
    CHECK(has(dvm_errmsg(ctx), "destroyed already"), "a second dvm_array_destroy: expected a message, got '%s'",
           dvm_errmsg(ctx));
    /* rebinding a live array makes the set usable again */
    CHECK(dvm_args_array(ctx, a, "x", z) == DVM_OK && dvm_launch(ctx, k, a, NULL, NULL) == DVM_OK,
           "after rebinding: %s", dvm_errmsg(ctx));

    /* argument sets */
    dvm_args_destroy(a);
    dvm_args_destroy(a);
    s = dvm_launch(ctx, k, a, NULL, NULL);
    CHECK(s == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "the argument set was destroyed"),
           "launch with destroyed arguments: got %d '%s'", (int)s, dvm_errmsg(ctx));
    s = dvm_args_f32(ctx, a, "a", 1.0f);
    CHECK(s == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "was destroyed"), "binding into destroyed arguments: got %d '%s'",
           (int)s, dvm_errmsg(ctx));

    /* modules: their kernels are borrowed and die with them */
    dvm_args *b = NULL;
    dvm_args_create(ctx, k, &b);
    dvm_module_destroy(m);
    dvm_module_destroy(m);
    s = dvm_launch(ctx, k, b, NULL, NULL);
    CHECK(s == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "the kernel's module was destroyed"),
           "launch of a destroyed module's kernel: got %d '%s'", (int)s, dvm_errmsg(ctx));
    const dvm_kernel *k2 = NULL;
    s = dvm_kernel_find(ctx, m, "saxpy", &k2);
    CHECK(s == DVM_ERR_USAGE && k2 == NULL && has(dvm_errmsg(ctx), "the module was destroyed"),
           "kernel_find in a destroyed module: got %d '%s'", (int)s, dvm_errmsg(ctx));
    CHECK(dvm_module_kernel_count(m) == 0 && dvm_module_kernel(m, 0) == NULL && !strcmp(dvm_kernel_name(k), ""),
           "a destroyed module has no kernels");
    dvm_args *c = NULL;
    s = dvm_args_create(ctx, k, &c);
    CHECK(s == DVM_ERR_USAGE && c == NULL, "args for a destroyed module's kernel: got %d '%s'", (int)s, dvm_errmsg(ctx));
    dvm_args_destroy(b);

    /* tapes */
    dvm_tape *t = NULL;
    dvm_tape_create(ctx, 0, &t);
    dvm_tape_destroy(t);
    dvm_tape_destroy(t);
    CHECK(dvm_tape_count(t) == 0 && dvm_tape_backward(t, NULL) == DVM_ERR_USAGE &&
               dvm_tape_grad(t, y, NULL) == DVM_ERR_USAGE,
           "a destroyed tape must refuse every call");

    dvm_array_destroy(y);
    dvm_array_destroy(z);
    dvm_context_destroy(ctx);
    /* contexts */
    dvm_context_destroy(ctx);
    CHECK(dvm_array_create(ctx, DVM_F32, 1, sh, &x) == DVM_ERR_USAGE && x == NULL, "array_create on a destroyed context");
    CHECK(dvm_context_cancel(ctx) == DVM_ERR_USAGE, "cancel on a destroyed context");
    CHECK(has(dvm_errmsg(ctx), "the context was destroyed"), "errmsg of a destroyed context: '%s'", dvm_errmsg(ctx));
}

/* a context destroyed first takes its children with it; their destroys are then no-ops */
static void context_first(void) {
    dvm_context *ctx = new_ctx();
    if (!ctx) return;
    dvm_module *m = NULL;
    const dvm_kernel *k = NULL;
    dvm_args *a = NULL;
    dvm_array *x = NULL, *y = NULL;
    dvm_tape *t = NULL;
    int64_t sh[1] = {4};
    dvm_compile(ctx, SRC, strlen(SRC), "misuse.dvk", &m);
    dvm_kernel_find(ctx, m, "saxpy", &k);
    dvm_array_create(ctx, DVM_F32, 1, sh, &x);
    dvm_array_create(ctx, DVM_F32, 1, sh, &y);
    dvm_args_create(ctx, k, &a);
    dvm_args_array(ctx, a, "x", x);
    dvm_args_array(ctx, a, "y", y);
    dvm_args_f32(ctx, a, "a", 2.0f);
    dvm_tape_create(ctx, 0, &t);
    CHECK(dvm_tape_launch(t, k, a) == DVM_OK && dvm_tape_count(t) == 1, "tape launch: %s", dvm_errmsg(ctx));
    dvm_context_destroy(ctx);
    CHECK(dvm_launch(ctx, k, a, NULL, NULL) == DVM_ERR_USAGE, "launch after the context's destroy");
    CHECK(dvm_tape_launch(t, k, a) == DVM_ERR_USAGE && dvm_tape_count(t) == 0, "tape launch after the context's destroy");
    CHECK(dvm_array_count(x) == 0, "an array of a destroyed context reads as destroyed");
    dvm_tape_destroy(t);
    dvm_args_destroy(a);
    dvm_array_destroy(x);
    dvm_array_destroy(y);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
}

typedef struct spinner {
    dvm_context *ctx;
    const dvm_kernel *k;
    dvm_args *a;
    dvm_status st;
} spinner;

static void *spin_launch(void *p) {
    spinner *s = (spinner *)p;
    s->st = dvm_launch(s->ctx, s->k, s->a, NULL, NULL);
    return NULL;
}

/* two threads on one context: the second is refused with a message of its own; cancel is the
   exception, meant for another thread */
static void two_threads(void) {
    dvm_context *ctx = new_ctx();
    if (!ctx) return;
    dvm_module *m = NULL;
    dvm_array *x = NULL;
    int64_t sh[1] = {16};
    float h[16];
    spinner s = {ctx, NULL, NULL, DVM_OK};
    dvm_compile(ctx, SRC, strlen(SRC), "misuse.dvk", &m);
    dvm_kernel_find(ctx, m, "spin", &s.k);
    dvm_array_create(ctx, DVM_F32, 1, sh, &x);
    dvm_args_create(ctx, s.k, &s.a);
    dvm_args_array(ctx, s.a, "x", x);
    pthread_t th;
    pthread_create(&th, NULL, spin_launch, &s);
    struct timespec d = {0, 300 * 1000000L};
    nanosleep(&d, NULL);
    dvm_status r = dvm_array_read(ctx, x, h, 16);
    CHECK(r == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "in use by another thread"),
           "a read while another thread launches: got %d '%s'", (int)r, dvm_errmsg(ctx));
    r = dvm_launch(ctx, s.k, s.a, NULL, NULL);
    CHECK(r == DVM_ERR_USAGE && has(dvm_errmsg(ctx), "in use by another thread"),
           "a second launch while another thread launches: got %d '%s'", (int)r, dvm_errmsg(ctx));
    CHECK(dvm_context_cancel(ctx) == DVM_OK, "cancel from another thread must be allowed");
    pthread_join(th, NULL);
    CHECK(s.st == DVM_ERR_CANCELLED, "the spinning launch: expected DVM_ERR_CANCELLED, got %d '%s'", (int)s.st,
           dvm_errmsg(ctx));
    /* the context is free again: this thread's next call works and has its own message */
    CHECK(dvm_array_read(ctx, x, h, 16) == DVM_OK && !has(dvm_errmsg(ctx), "in use"), "a read after the launch: '%s'",
           dvm_errmsg(ctx));
    dvm_context_destroy(ctx); /* takes the module, the array and the arguments with it */
}

int main(void) {
    after_destroy();
    context_first();
    two_threads();
    if (fails) {
        printf("test_misuse: %d failure(s)\n", fails);
        return 1;
    }
    printf("test_misuse: all passed\n");
    return 0;
}
