/* test_cancel.c: dvm_context_cancel and dvm_launch_opts.timeout_ms on one backend (argv[1]:
 * cpu, vulkan, cuda or hip; exit 77, skipped, where it cannot be opened): a `while True:`
 * kernel, parallel and serial, stops with DVM_ERR_CANCELLED when another thread cancels it or
 * its time runs out, writes nothing, and the next launch runs normally; a cancel while no
 * launch runs is dropped; a launch with a loop keeps its snapshot, a loop-free one needs none. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "dvm.h"
#include "tests/check.h"

#if defined(__SANITIZE_ADDRESS__)
#define DVM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DVM_TEST_ASAN 1
#endif
#endif


static const char *SRC =
    "kernel spin(x: f32[n]):\n"
    "    for i in range(n):\n"
    "        x[i] = 1.0\n"
    "        while True:\n"
    "            x[i] = x[i] + 1.0\n"
    "kernel sspin(x: f32[n]):\n"
    "    x[0] = 1.0\n"
    "    while True:\n"
    "        x[0] = x[0] + 1.0\n"
    "kernel saxpy(x: f32[n], y: f32[n], a: f32):\n"
    "    for i in range(n):\n"
    "        y[i] = a * x[i] + y[i]\n"
    /* long but finite per thread: llvmpipe (lavapipe) ends any thread's loops after 65535
       iterations, so there a launch lasts long only through many threads */
    "kernel busy(x: f32[n], k: i32):\n"
    "    for i in range(n):\n"
    "        j = 0\n"
    "        while j < k:\n"
    "            x[i] = x[i] + 1.0\n"
    "            j += 1\n"
    "kernel inner(x: f32[n], k: i32):\n"
    "    for i in range(n):\n"
    "        for j in range(k):\n"
    "            x[i] = x[i] + 1.0\n";

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

typedef struct canceller {
    dvm_context *ctx;
    int delay_ms;
} canceller;

static void *cancel_later(void *p) {
    canceller *c = (canceller *)p;
    struct timespec d = {c->delay_ms / 1000, (long)(c->delay_ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    dvm_context_cancel(c->ctx);
    return NULL;
}

#define N 256
#define NB (1 << 18) /* busy's elements: one a thread on lavapipe (vulkan_backend.c thread_cap) */
static float host[NB];

/* x holds 7.0 everywhere before each spin launch: a failed launch must leave it so */
static void fill(dvm_context *ctx, dvm_array *x, float v) {
    int64_t n = dvm_array_count(x);
    for (int64_t i = 0; i < n; i++) host[i] = v;
    dvm_array_write(ctx, x, host, n);
}
static int all_equal(dvm_context *ctx, dvm_array *x, float v) {
    int64_t n = dvm_array_count(x);
    if (dvm_array_read(ctx, x, host, n) != DVM_OK) return 0;
    for (int64_t i = 0; i < n; i++)
        if (host[i] != v) return 0;
    return 1;
}

static int32_t busy_trips = 1000;

static void spin_cases(dvm_context *ctx, dvm_module *m, const char *kname, dvm_array *x) {
    const dvm_kernel *k = NULL;
    dvm_args *a = NULL;
    CHECK(dvm_kernel_find(ctx, m, kname, &k) == DVM_OK, "%s: %s", kname, dvm_errmsg(ctx));
    CHECK(dvm_args_create(ctx, k, &a) == DVM_OK && dvm_args_array(ctx, a, "x", x) == DVM_OK, "%s: %s", kname,
           dvm_errmsg(ctx));
    /* busy's trips a thread: about 4000 interpreted nodes under llvmpipe's loop limit; a GPU
       finishes that in a millisecond, so there each thread loops for far longer than the test.
       A launch of one trip first: lavapipe compiles a pipeline's machine code at its first
       dispatch (a minute on two busy cores when Mesa's shader cache lacks it), which no cancel
       can interrupt and which the timed launches below must not include. */
    if (!strcmp(kname, "busy")) {
        dvm_args_i32(ctx, a, "k", 1);
        CHECK(dvm_launch(ctx, k, a, NULL, NULL) == DVM_OK, "%s with one trip: %s", kname, dvm_errmsg(ctx));
        dvm_args_i32(ctx, a, "k", busy_trips);
    }
    /* cancelled from another thread */
    fill(ctx, x, 7.0f);
    canceller c = {ctx, 300};
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &c);
    dvm_launch_stats st;
    double t0 = now_ms();
    dvm_status s = dvm_launch(ctx, k, a, NULL, &st);
    double dt = now_ms() - t0;
    pthread_join(th, NULL);
    printf("%s: cancelled after %.0f ms\n", kname, dt);
    CHECK(s == DVM_ERR_CANCELLED && strstr(dvm_errmsg(ctx), "cancelled (dvm_context_cancel)") &&
               strstr(dvm_errmsg(ctx), kname),
           "%s cancelled from a thread: expected DVM_ERR_CANCELLED naming the kernel, got %d '%s'", kname, (int)s,
           dvm_errmsg(ctx));
    CHECK(dt < 20000, "%s: the cancel took %.0f ms to act", kname, dt);
    CHECK(st.snapshot_bytes > 0, "%s: a launch with a loop must keep a snapshot (got %lld bytes)", kname,
           (long long)st.snapshot_bytes);
    CHECK(all_equal(ctx, x, 7.0f), "%s: a cancelled launch wrote its array", kname);
    /* timed out through the options */
    dvm_launch_opts o = {DVM_FORWARD, 0, 0, 250};
    t0 = now_ms();
    s = dvm_launch(ctx, k, a, &o, NULL);
    dt = now_ms() - t0;
    printf("%s: timed out after %.0f ms\n", kname, dt);
    CHECK(s == DVM_ERR_CANCELLED && strstr(dvm_errmsg(ctx), "timed out after 250 ms (opts.timeout_ms)"),
           "%s with timeout_ms = 250: expected DVM_ERR_CANCELLED 'timed out', got %d '%s'", kname, (int)s, dvm_errmsg(ctx));
    CHECK(dt >= 240 && dt < 20000, "%s: the timeout of 250 ms acted after %.0f ms", kname, dt);
    CHECK(all_equal(ctx, x, 7.0f), "%s: a timed-out launch wrote its array", kname);
    dvm_args_destroy(a);
}

#ifndef DVM_TEST_ASAN /* the sanitizer's shadow memory cannot live under an address-space limit */
/* The cpu backend when the system refuses threads (an address-space limit leaves no room for
 * their stacks): dvm_context_create fails with DVM_ERR_BACKEND and a message, where libgomp
 * had ended the process. Run in a child, which reports through its exit status: 0 as
 * expected, 2 the context was created, 3 another status, 1 the process was ended. */
static void thread_refusal(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long vm_kb = 0;
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "VmSize:", 7)) vm_kb = atol(line + 7);
        if (f) fclose(f);
        struct rlimit rl = {(rlim_t)(vm_kb + 4096) * 1024, (rlim_t)(vm_kb + 4096) * 1024};
        setrlimit(RLIMIT_AS, &rl);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        dvm_context_opts co = {.backend = "cpu", .threads = (int)(cpus * 4 < 1024 ? cpus * 4 : 1024)};
        dvm_context *c = NULL;
        dvm_status st = dvm_context_create(&co, &c);
        printf("thread refusal: status %d: %s\n", (int)st, dvm_errmsg(c));
        fflush(stdout);
        _exit(st == DVM_OK ? 2 : st == DVM_ERR_BACKEND && strstr(dvm_errmsg(c), "cannot create") ? 0 : 3);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
           "a cpu context whose threads the system refuses: expected DVM_ERR_BACKEND 'cannot create', got exit %d "
           "(2: created, 3: another status, 1: the process was ended)", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
}
#endif

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "cpu";
    dvm_context_opts co = {.backend = backend};
    dvm_context *ctx = NULL;
    if (dvm_context_create(&co, &ctx) != DVM_OK) {
        printf("SKIP: no %s backend: %s\n", backend, dvm_errmsg(ctx));
        dvm_context_destroy(ctx);
        return 77;
    }
    dvm_module *m = NULL;
    if (dvm_compile(ctx, SRC, strlen(SRC), "cancel.dvk", &m) != DVM_OK) {
        printf("FAIL compile: %s\n", dvm_errmsg(ctx));
        return 1;
    }
    int64_t shape[1] = {N};
    dvm_array *x = NULL, *y = NULL;
    dvm_array_create(ctx, DVM_F32, 1, shape, &x);
    dvm_array_create(ctx, DVM_F32, 1, shape, &y);

    /* llvmpipe's own loop limit stops a thread within about 65535 interpreted instructions
       (vulkan_backend.c take_error), often before a cancel could: there a `while True:` is
       stopped by that guard, and busy's many threads make a long launch instead */
    const int llvmpipe = !strcmp(backend, "vulkan") && strstr(dvm_context_device(ctx), "llvmpipe");
    /* elsewhere busy loops until the cancel (1000 trips took the CPU's blocks well under the
       250 ms of the timeout case) */
    if (!llvmpipe) busy_trips = 1 << 30;
    if (!llvmpipe) {
        spin_cases(ctx, m, "spin", x);
        spin_cases(ctx, m, "sspin", x);
        /* a tape's launch stops the same way and records nothing */
        const dvm_kernel *k = NULL;
        dvm_args *a = NULL;
        dvm_tape *t = NULL;
        dvm_kernel_find(ctx, m, "spin", &k);
        dvm_args_create(ctx, k, &a);
        dvm_args_array(ctx, a, "x", x);
        CHECK(dvm_tape_create(ctx, 0, &t) == DVM_OK, "tape: %s", dvm_errmsg(ctx));
        fill(ctx, x, 7.0f);
        canceller c = {ctx, 300};
        pthread_t th;
        pthread_create(&th, NULL, cancel_later, &c);
        dvm_status s = dvm_tape_launch(t, k, a);
        pthread_join(th, NULL);
        CHECK(s == DVM_ERR_CANCELLED && dvm_tape_count(t) == 0 && all_equal(ctx, x, 7.0f),
               "a cancelled tape launch: expected DVM_ERR_CANCELLED, nothing recorded or written, got %d '%s' (%d records)",
               (int)s, dvm_errmsg(ctx), dvm_tape_count(t));
        dvm_tape_destroy(t);
        dvm_args_destroy(a);
    } else {
        printf("spin, sspin: not on llvmpipe (its loop limit ends them first)\n");
    }
    int64_t bshape[1] = {NB};
    dvm_array *xb = NULL;
    dvm_array_create(ctx, DVM_F32, 1, bshape, &xb);
    spin_cases(ctx, m, "busy", xb);
    dvm_array_destroy(xb);

    /* bad timeouts are usage errors */
    const dvm_kernel *ks = NULL, *ki = NULL;
    dvm_kernel_find(ctx, m, "saxpy", &ks);
    dvm_kernel_find(ctx, m, "inner", &ki);
    dvm_args *as = NULL, *ai = NULL;
    dvm_args_create(ctx, ks, &as);
    dvm_args_array(ctx, as, "x", x);
    dvm_args_array(ctx, as, "y", y);
    dvm_args_f32(ctx, as, "a", 2.0f);
    dvm_args_create(ctx, ki, &ai);
    dvm_args_array(ctx, ai, "x", x);
    dvm_args_i32(ctx, ai, "k", 3);
    dvm_launch_opts bad = {DVM_FORWARD, 0, 0, -1};
    CHECK(dvm_launch(ctx, ks, as, &bad, NULL) == DVM_ERR_USAGE && strstr(dvm_errmsg(ctx), "timeout_ms"),
           "a negative timeout: expected DVM_ERR_USAGE, got '%s'", dvm_errmsg(ctx));

    /* after a cancel the next launches run; a cancel while none runs is dropped */
    fill(ctx, x, 1.0f);
    fill(ctx, y, 0.0f);
    dvm_context_cancel(ctx);
    dvm_launch_stats st;
    dvm_status s = dvm_launch(ctx, ki, ai, NULL, &st);
    CHECK(s == DVM_OK && all_equal(ctx, x, 4.0f), "a cancel before a launch must be dropped: got %d '%s'", (int)s,
           dvm_errmsg(ctx));
    CHECK(st.snapshot_bytes > 0, "a launch with a loop must keep a snapshot (a cancel point), got %lld bytes",
           (long long)st.snapshot_bytes);
    /* the loop-free saxpy has no cancel point: no snapshot (the fast path), and a long timeout
       does not disturb it */
    dvm_launch_opts o = {DVM_FORWARD, 0, 0, 60000};
    s = dvm_launch(ctx, ks, as, &o, &st);
    CHECK(s == DVM_OK && all_equal(ctx, y, 8.0f) && st.snapshot_bytes == 0,
           "saxpy after cancels: expected y = 8 and no snapshot, got %d '%s' snapshot %lld", (int)s, dvm_errmsg(ctx),
           (long long)st.snapshot_bytes);

#ifndef DVM_TEST_ASAN
    if (!strcmp(backend, "cpu")) thread_refusal();
#else
    printf("thread refusal: not checked in the sanitizer build (an address-space limit breaks its shadow memory)\n");
#endif

    /* a null context */
    CHECK(dvm_context_cancel(NULL) == DVM_ERR_USAGE, "dvm_context_cancel(NULL) must be DVM_ERR_USAGE");

    dvm_args_destroy(as);
    dvm_args_destroy(ai);
    dvm_array_destroy(x);
    dvm_array_destroy(y);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    if (fails) {
        printf("test_cancel %s: %d failure(s)\n", backend, fails);
        return 1;
    }
    printf("test_cancel %s: all passed\n", backend);
    return 0;
}
