/* dvm_main.c: the `dvm` command (spec/cli.md is its contract; docs/cli.md documents it).
 * Exit status: 0 success, 1 the program or launch failed, 2 wrong usage of the command,
 * 130 interrupted (SIGINT: the launch is cancelled and nothing is written). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "dvm.h"
#include "cli/npy.h"
#include "vm/runtime.h"
#include "compiler/compile.h"
#include "bytecode/blob.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 /* 128 + SIGINT, as shells report it */ };

static const char *help_main =
    "usage: dvm COMMAND ...\n"
    "\n"
    "  dvm compile SRC.dvk [-o OUT.dvb]              compile every kernel in SRC to one blob\n"
    "                                                (default OUT: SRC with .dvb)\n"
    "  dvm run    PROGRAM KERNEL [ARG ...] [OPTIONS] launch KERNEL\n"
    "  dvm grad   PROGRAM KERNEL [ARG ...] [OPTIONS] launch KERNEL, then its adjoint\n"
    "  dvm jvp    PROGRAM KERNEL [ARG ...] [OPTIONS] launch KERNEL's forward-mode tangent\n"
    "  dvm disasm PROGRAM                            print the bytecode, with source lines\n"
    "  dvm verify BLOB.dvb                           check a blob; exit 0 only if it is valid\n"
    "  dvm info                                      list the backends and devices found\n"
    "  dvm batch  [FILE]                             run many of these commands in one process,\n"
    "                                                one per line of FILE or stdin\n"
    "\n"
    "PROGRAM is a source file (.dvk, compiled in memory) or a blob (.dvb).\n"
    "`dvm COMMAND --help` describes a command's arguments and options.\n"
    "Exit status: 0 success, 1 the program or the launch failed, 2 wrong usage,\n"
    "130 interrupted (Ctrl-C cancels a launch; nothing is written).\n";

static const char *help_launch =
    "usage: dvm %s PROGRAM KERNEL [ARG ...] [OPTIONS]\n"
    "\n"
    "%s\n"
    "\n"
    "Arguments (every kernel parameter must be bound):\n"
    "  NAME=FILE.npy             an array parameter: a NumPy .npy file, '<f4' for f32, '<i4'\n"
    "                            for i32, C order, the declared rank\n"
    "  NAME=VALUE                a scalar parameter (3, -2, 0.5, 1e-3); an f32 parameter takes\n"
    "                            integers too, an i32 parameter only integers\n"
    "%s"
    "\n"
    "Options:\n"
    "  --backend B               cpu, vulkan, cuda, hip or auto (default: the first available\n"
    "                            of cuda, hip, vulkan, cpu; auto passes over a software\n"
    "                            Vulkan device such as lavapipe)\n"
    "  --device N                device index within the backend (default 0)\n"
    "  --out DIR                 after a successful launch, write every array argument to\n"
    "                            DIR/NAME.npy%s (DIR is created); without it, a summary of\n"
    "                            each output array is printed\n"
    "  --ad-stack-size N         force every adstack to capacity N\n"
    "  --default-ad-stack-size N capacity of adstacks whose bound the compiler cannot derive\n"
    "                            (while loops); without it they start at 256 and grow (the\n"
    "                            launch reruns) to the trips the loops make\n"
    "  --threads N               CPU backend worker threads (default: all cores; at most 4 x\n"
    "                            the online CPUs and at most 1024)\n"
    "  --in-place                with --out, replace input files without a warning (an\n"
    "                            output over an input file is otherwise warned about)\n"
    "  --time                    print compile, load and launch times to stderr\n"
    "  --timeout SECONDS         cancel the launch if it runs longer (a decimal number > 0):\n"
    "                            it fails with 'timed out', exit status 1, and writes nothing\n"
    "\n"
    "Switches for tests and for bisecting a suspected bug (the results are the same):\n"
    "%s"
    "  --cpu-lanes               cpu backend: parallel tasks through the lane interpreters of\n"
    "                            the CUDA and HIP backends (checks them without a GPU)\n"
    "  --gpu-threads N           cuda, hip, vulkan: at most N device threads run a parallel\n"
    "                            task, each taking every N-th iteration\n"
    "  --vk-lanes N              vulkan: each device thread runs N iterations of a parallel\n"
    "                            task at once, 1 or 4 (default: 4 on GPUs, 1 on CPU devices)\n"
    "\n"
    "Ctrl-C (SIGINT) cancels a running launch at its next loop iteration: dvm prints\n"
    "'dvm: interrupted', writes no output files and exits with status 130; a second\n"
    "Ctrl-C ends dvm at once. A launch without loops is not interrupted: it ends first.\n"
    "A launch that fails writes no output files. Outputs are written to temporary files\n"
    "in DIR and renamed over the old files only once all were written.\n";

/* The compiler's switches, in the help of every command that compiles. */
static const char *help_compiler_switches =
    "  --no-opt                  compile without the bytecode optimizer and loop partitioning\n"
    "  --no-partition            compile without loop partitioning\n"
    "  --unroll N                copies of a small loop body per trip: 1 (no unrolling) to\n"
    "                            256 (default 4)\n";

static const char *help_compile =
    "usage: dvm compile SRC.dvk [-o OUT.dvb] [--time] [--no-opt] [--no-partition] [--unroll N]\n"
    "\n"
    "Compiles every kernel in SRC (with its adjoint and tangent) to one portable blob.\n"
    "  -o OUT.dvb                the blob to write (default: SRC with its extension replaced\n"
    "                            by .dvb)\n"
    "  --time                    print the compile time to stderr\n"
    "Switches for tests and for bisecting a suspected miscompile (the results are the same;\n"
    "the blob records them and `dvm disasm` prints them):\n"
    "%s";

static const char *help_disasm =
    "usage: dvm disasm PROGRAM [--no-opt] [--no-partition] [--unroll N]\n"
    "\n"
    "Prints the bytecode of every kernel variant, size program and table of PROGRAM (a .dvk\n"
    "source, compiled in memory, or a .dvb blob), with source lines, and the compiler options\n"
    "it was compiled with. The switches apply to a source (see `dvm compile --help`):\n"
    "%s";

static const char *help_verify =
    "usage: dvm verify BLOB.dvb\n"
    "\n"
    "Reads and verifies a blob (format, opcode table, checksum, every index, jump and\n"
    "register); exits 0 only if it is valid, else 1 with the reason.\n";

static const char *help_info =
    "usage: dvm info\n"
    "\n"
    "Lists the backends compiled into this build, the devices each finds, and why a\n"
    "backend found none.\n";

static int usage_error(const char *cmd, const char *fmt, const char *a) {
    fprintf(stderr, "dvm: error: ");
    fprintf(stderr, fmt, a);
    if (cmd) fprintf(stderr, "\n(see `dvm %s --help`)\n", cmd);
    else fprintf(stderr, "\n(see `dvm --help`)\n");
    return EXIT_USAGE;
}

/* Prints the context's last message in the command's format. */
static int ctx_error(const dvm_context *ctx) {
    const char *m = dvm_errmsg(ctx);
    if (dvm_errmsg_located(ctx)) fprintf(stderr, "%s\n", m);
    else fprintf(stderr, "dvm: error: %s\n", m);
    return EXIT_FAIL;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* A non-negative decimal integer option value, whole string, at most max. */
static int parse_count(const char *s, long long lo, long long max, long long *out) {
    if (!s || !*s) return -1;
    for (const char *c = s; *c; c++)
        if (*c < '0' || *c > '9') return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno || v < lo || v > max) return -1;
    *out = v;
    return 0;
}

typedef struct opts {
    const char *backend, *out;
    long long device, ad_stack, default_ad_stack, threads, gpu_threads, vk_lanes;
    double timeout; /* seconds; 0: none */
    int time, in_place, cpu_lanes;
    int no_opt, no_partition, unroll; /* the compiler's switches (compile, disasm, run, grad, jvp) */
    const char *compile_flag;         /* the first of them given, for the warning on a blob */
} opts;

/* The compiler's switches (dvm_context_opts: no_opt, no_partition, unroll) at argv[*i], for
 * every command that compiles; 1 if it was one (consumed), 0 if not, -1 usage error. */
static int take_compile_option(const char *cmd, int argc, char **argv, int *i, opts *o) {
    const char *a = argv[*i];
    if (!strcmp(a, "--no-opt") || !strcmp(a, "--no-partition")) {
        if (a[5] == 'o') o->no_opt = 1;
        else o->no_partition = 1;
        if (!o->compile_flag) o->compile_flag = a;
        return 1;
    }
    size_t nl = strcspn(a, "=");
    if (nl != 8 || strncmp(a, "--unroll", 8) != 0) return 0;
    const char *val = a[nl] == '=' ? a + nl + 1 : *i + 1 < argc ? argv[++*i] : NULL;
    long long v = 0;
    if (!val) {
        usage_error(cmd, "option '%s' needs a value", a);
        return -1;
    }
    if (parse_count(val, 1, 256, &v)) {
        fprintf(stderr, "dvm: error: --unroll needs a number of copies from 1 (no unrolling) to 256, not '%s'\n"
                        "(see `dvm %s --help`)\n", val, cmd);
        return -1;
    }
    o->unroll = (int)v;
    if (!o->compile_flag) o->compile_flag = "--unroll";
    return 1;
}

/* Recognizes an option at argv[*i]; 1 if it was one (consumed), 0 if not, -1 usage error. */
static int take_option(const char *cmd, int argc, char **argv, int *i, opts *o) {
    const char *a = argv[*i], *val = NULL;
    static const char *const with_value[] = {"--backend", "--device", "--out", "--ad-stack-size", "--default-ad-stack-size",
                                             "--threads", "--timeout", "--gpu-threads", "--vk-lanes"};
    if (strncmp(a, "--", 2) != 0) return 0;
    if (!strcmp(a, "--time")) {
        o->time = 1;
        return 1;
    }
    if (!strcmp(a, "--in-place")) {
        o->in_place = 1;
        return 1;
    }
    if (!strcmp(a, "--cpu-lanes")) {
        o->cpu_lanes = 1;
        return 1;
    }
    int c = take_compile_option(cmd, argc, argv, i, o);
    if (c) return c;
    size_t nl = strcspn(a, "=");
    int which = -1;
    for (int k = 0; k < (int)(sizeof with_value / sizeof with_value[0]); k++)
        if (strlen(with_value[k]) == nl && !strncmp(a, with_value[k], nl)) which = k;
    if (which < 0) {
        usage_error(cmd, "unknown option '%s'", a);
        return -1;
    }
    if (a[nl] == '=') {
        val = a + nl + 1;
    } else {
        if (*i + 1 >= argc) {
            usage_error(cmd, "option '%s' needs a value", a);
            return -1;
        }
        val = argv[++*i];
    }
    long long v = 0;
    switch (which) {
    case 0:
        if (strcmp(val, "cpu") && strcmp(val, "vulkan") && strcmp(val, "cuda") && strcmp(val, "hip") && strcmp(val, "auto")) {
            usage_error(cmd, "--backend must be cpu, vulkan, cuda, hip or auto, not '%s'", val);
            return -1;
        }
        o->backend = val;
        return 1;
    case 2:
        if (!*val) {
            usage_error(cmd, "--out needs a directory%s", "");
            return -1;
        }
        o->out = val;
        return 1;
    case 1:
        if (parse_count(val, 0, INT_MAX, &v)) break;
        o->device = v;
        return 1;
    case 3:
        if (parse_count(val, 1, INT32_MAX, &v)) break;
        o->ad_stack = v;
        return 1;
    case 4:
        if (parse_count(val, 1, INT32_MAX, &v)) break;
        o->default_ad_stack = v;
        return 1;
    case 5:
        if (parse_count(val, 1, INT_MAX, &v)) break; /* the library says what is too many */
        o->threads = v;
        return 1;
    case 6: {
        char *end = NULL;
        errno = 0;
        double t = strtod(val, &end);
        if (!*val || *end || errno || !isfinite(t) || t <= 0 || t > 1e9) {
            fprintf(stderr, "dvm: error: --timeout needs a number of seconds > 0 (at most 1e9), not '%s'\n(see `dvm %s --help`)\n",
                    val, cmd);
            return -1;
        }
        o->timeout = t;
        return 1;
    }
    case 7:
        if (parse_count(val, 1, INT32_MAX, &v)) break;
        o->gpu_threads = v;
        return 1;
    case 8:
        if (parse_count(val, 1, 4, &v) || (v != 1 && v != 4)) {
            usage_error(cmd, "--vk-lanes must be 1 or 4, not '%s'", val);
            return -1;
        }
        o->vk_lanes = v;
        return 1;
    }
    fprintf(stderr, "dvm: error: %s needs a %s integer, not '%s'\n(see `dvm %s --help`)\n", with_value[which],
            which == 1 ? "non-negative" : "positive", val, cmd);
    return -1;
}

/* SIGINT: the handler cancels the launch (dvm_context_cancel only stores a word) and marks the
   run interrupted; the command then writes nothing. SA_RESETHAND: a second one ends dvm. */
static dvm_context *volatile g_sigint_ctx;
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    g_interrupted = 1;
    dvm_context *c = g_sigint_ctx;
    if (c) dvm_context_cancel(c);
}

static void catch_sigint(dvm_context *ctx) {
    g_sigint_ctx = ctx;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

static int interrupted(void) {
    fprintf(stderr, "dvm: interrupted\n");
    return EXIT_INTERRUPTED;
}

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

/* The compiler's switches change nothing in a blob (it was compiled already): say so. */
static void warn_blob_options(const char *path, const opts *o) {
    if (!o->compile_flag) return;
    unsigned char head[4] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f) fclose(f);
    size_t pl = strlen(path);
    if (dvm_blob_is_blob(head, n) || (pl >= 4 && !strcmp(path + pl - 4, ".dvb")))
        fprintf(stderr, "dvm: warning: %s has no effect on the blob %s: it applies when source is compiled "
                        "(`dvm disasm` shows the options a blob was compiled with)\n", o->compile_flag, path);
}

/* The context options a command's options ask for. */
static dvm_context_opts ctx_opts(const opts *o) {
    dvm_context_opts co = {.backend = o && o->backend ? o->backend : "cpu"};
    if (o) {
        co.device = (int)o->device;
        co.threads = (int)o->threads;
        co.no_opt = o->no_opt;
        co.no_partition = o->no_partition;
        co.unroll = o->unroll;
        co.cpu_lanes = o->cpu_lanes;
        co.gpu_threads = (int)o->gpu_threads;
        co.vk_lanes = (int)o->vk_lanes;
    }
    return co;
}

/* `dvm batch` keeps the context of a launch command for the next launch command that asks
 * for the same context options, so that the device is opened once (lavapipe takes about a
 * second to build the Vulkan interpreter's pipeline). Outside a batch nothing is kept. */
static struct {
    int on;             /* running under `dvm batch` */
    dvm_context *ctx;   /* kept from the last launch command, or NULL */
    dvm_context_opts co; /* its options; co.backend points at backend[] */
    char backend[8];
} g_batch;

static int same_ctx_opts(const dvm_context_opts *a, const dvm_context_opts *b) {
    return !strcmp(a->backend, b->backend) && a->device == b->device && a->threads == b->threads && a->no_opt == b->no_opt &&
           a->no_partition == b->no_partition && a->unroll == b->unroll && a->cpu_lanes == b->cpu_lanes &&
           a->gpu_threads == b->gpu_threads && a->vk_no_int64 == b->vk_no_int64 &&
           a->vk_no_float_atomics == b->vk_no_float_atomics && a->vk_max_alloc == b->vk_max_alloc && a->vk_lanes == b->vk_lanes;
}

static void batch_drop_ctx(void) {
    dvm_context_destroy(g_batch.ctx);
    g_batch.ctx = NULL;
}

static dvm_context *open_ctx(const char *cmd, const opts *o, int *rc) {
    dvm_context_opts co = ctx_opts(o);
    dvm_context *ctx = NULL;
    dvm_status st = dvm_context_create(&co, &ctx);
    if (st != DVM_OK) {
        if (ctx) ctx_error(ctx);
        else fprintf(stderr, "dvm: error: cannot create a context (out of memory)\n");
        *rc = st == DVM_ERR_USAGE ? EXIT_USAGE : EXIT_FAIL;
        if (st == DVM_ERR_USAGE && cmd) fprintf(stderr, "(see `dvm %s --help`)\n", cmd);
        dvm_context_destroy(ctx);
        return NULL;
    }
    dvm_context_cli_remedies(ctx, 1);
    return ctx;
}

/* A launch command's context: in a batch, the kept one when its options are the same. */
static dvm_context *launch_ctx(const char *cmd, const opts *o, int *rc) {
    if (g_batch.ctx) {
        dvm_context_opts co = ctx_opts(o);
        if (same_ctx_opts(&co, &g_batch.co)) {
            dvm_context *ctx = g_batch.ctx;
            g_batch.ctx = NULL;
            return ctx;
        }
        batch_drop_ctx(); /* one kept context at most: a device's memory is not held twice */
    }
    return open_ctx(cmd, o, rc);
}

/* The end of a launch command's context. In a batch it is kept for the next command unless
 * the command failed in the backend or ran out of memory (the context's last failure was
 * DVM_ERR_BACKEND or DVM_ERR_NOMEM: the next command opens the device anew) or left
 * something in it; a failure of the program (compile, arguments, runtime error, timeout)
 * leaves the backend as it was. */
static void release_launch_ctx(dvm_context *ctx, const opts *o, int rc) {
    if (!ctx) return;
    int broken = rc != EXIT_OK && (ctx->err_status == DVM_ERR_BACKEND || ctx->err_status == DVM_ERR_NOMEM);
    if (!g_batch.on || broken || ctx->kids) {
        dvm_context_destroy(ctx);
        return;
    }
    g_batch.co = ctx_opts(o);
    snprintf(g_batch.backend, sizeof g_batch.backend, "%s", g_batch.co.backend);
    g_batch.co.backend = g_batch.backend;
    g_batch.ctx = ctx;
}

/* ---- output files: each written to a temporary beside its target (same directory, so the
 * same filesystem), synced, and renamed over the targets only once all were written. A
 * failure removes the temporaries and leaves every old file as it was. ---- */

typedef struct staged_file {
    char *tmp, *final;
} staged_file;

typedef struct stage {
    staged_file *f;
    int n, cap;
} stage;

/* Creates "DIR/.BASE.tmpXXXXXX" for target `final`, with the mode `final` has (or would get
 * from fopen: 0666 less the umask). Returns the open stream, or NULL after an error message. */
static FILE *stage_open(stage *s, const char *final) {
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 8;
        staged_file *nf = (staged_file *)realloc(s->f, (size_t)nc * sizeof *nf);
        if (!nf) return NULL;
        s->f = nf;
        s->cap = nc;
    }
    const char *slash = strrchr(final, '/');
    size_t dl = slash ? (size_t)(slash - final) + 1 : 0, l = strlen(final) + 16;
    char *tmp = (char *)malloc(l), *fin = strdup(final);
    if (!tmp || !fin) {
        free(tmp);
        free(fin);
        fprintf(stderr, "dvm: error: out of memory\n");
        return NULL;
    }
    snprintf(tmp, l, "%.*s.%s.tmpXXXXXX", (int)dl, final, final + dl);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "dvm: error: %s: cannot create a temporary file beside it: %s\n", final, strerror(errno));
        free(tmp);
        free(fin);
        return NULL;
    }
    struct stat sb;
    mode_t mode;
    if (stat(final, &sb) == 0 && S_ISREG(sb.st_mode)) {
        mode = sb.st_mode & 07777;
    } else {
        mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }
    FILE *f = fchmod(fd, mode) == 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        fprintf(stderr, "dvm: error: %s: cannot open a temporary file: %s\n", final, strerror(errno));
        close(fd);
        remove(tmp);
        free(tmp);
        free(fin);
        return NULL;
    }
    s->f[s->n].tmp = tmp;
    s->f[s->n].final = fin;
    s->n++;
    return f;
}

/* Flushes, syncs and closes a stream from stage_open; 0 or -1 after an error message. */
static int stage_close(FILE *f, const char *final) {
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "dvm: error: %s: write failed: %s\n", final, strerror(errno));
    return ok ? 0 : -1;
}

/* Removes every temporary (after a failure, or what a failed commit left). */
static void stage_abort(stage *s) {
    for (int i = 0; i < s->n; i++) {
        if (s->f[i].tmp) remove(s->f[i].tmp);
        free(s->f[i].tmp);
        free(s->f[i].final);
    }
    free(s->f);
    memset(s, 0, sizeof *s);
}

/* Renames every temporary over its target, after checking that each target can be replaced
 * (a directory cannot), then syncs the directories. 0, or -1 after an error message. */
static int stage_commit(stage *s) {
    for (int i = 0; i < s->n; i++) {
        struct stat sb;
        if (lstat(s->f[i].final, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "dvm: error: %s: is a directory, cannot write the output there; no output was written\n",
                    s->f[i].final);
            stage_abort(s);
            return -1;
        }
    }
    for (int i = 0; i < s->n; i++) {
        if (rename(s->f[i].tmp, s->f[i].final) != 0) {
            fprintf(stderr, "dvm: error: %s: cannot rename the new file into place: %s (%d earlier output%s replaced)\n",
                    s->f[i].final, strerror(errno), i, i == 1 ? " was" : "s were");
            stage_abort(s);
            return -1;
        }
        free(s->f[i].tmp);
        s->f[i].tmp = NULL;
    }
    /* the renames themselves are durable once their directory is synced (the outputs of
     * one command share one directory: sync each distinct one once) */
    char *last = NULL;
    for (int i = 0; i < s->n; i++) {
        const char *slash = strrchr(s->f[i].final, '/');
        char *dir = slash ? strndup(s->f[i].final, (size_t)(slash - s->f[i].final) + 1) : strdup("./");
        if (dir && (!last || strcmp(dir, last) != 0)) {
            int fd = open(dir, O_RDONLY);
            if (fd >= 0) {
                fsync(fd); /* some filesystems refuse to sync a directory; the data is synced anyway */
                close(fd);
            }
        }
        free(last);
        last = dir;
    }
    free(last);
    stage_abort(s); /* nothing left to remove: frees the names */
    return 0;
}

/* ---- compile ---- */

static int cmd_compile(int argc, char **argv) {
    const char *src = NULL, *out = NULL;
    int timing = 0;
    opts o;
    memset(&o, 0, sizeof o);
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            printf(help_compile, help_compiler_switches);
            return EXIT_OK;
        }
        int c = take_compile_option("compile", argc, argv, &i, &o);
        if (c < 0) return EXIT_USAGE;
        if (c) continue;
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (i + 1 >= argc) return usage_error("compile", "%s needs a file name", argv[i]);
            out = argv[++i];
        } else if (!strcmp(argv[i], "--time")) {
            timing = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("compile", "unknown option '%s'", argv[i]);
        } else if (!src) {
            src = argv[i];
        } else {
            return usage_error("compile", "unexpected argument '%s' (one source file only)", argv[i]);
        }
    }
    if (!src) return usage_error("compile", "missing the source file%s", "");
    char *defout = NULL;
    if (!out) {
        size_t l = strlen(src);
        defout = (char *)malloc(l + 5);
        if (!defout) return EXIT_FAIL;
        memcpy(defout, src, l + 1);
        if (l > 4 && !strcmp(src + l - 4, ".dvk")) defout[l - 4] = 0;
        strcat(defout, ".dvb");
        out = defout;
    }
    int rc = EXIT_FAIL;
    dvm_context *ctx = open_ctx(NULL, &o, &rc);
    dvm_module *m = NULL;
    void *blob = NULL;
    size_t len = 0;
    if (!ctx) goto done;
    FILE *f = fopen(src, "rb");
    if (!f) {
        fprintf(stderr, "dvm: error: %s: cannot open: %s\n", src, strerror(errno));
        goto done;
    }
    /* bounded: one byte past the compiler's limit is enough for it to say "source too large",
       and an endless input (/dev/zero, a pipe) ends there */
    char *text = NULL;
    size_t n = 0, cap = 0;
    int oom = 0;
    while (n <= DVM_MAX_SOURCE_BYTES) {
        if (cap - n < 4096) {
            char *nt = (char *)realloc(text, cap = cap * 2 + 65536);
            if (!nt) {
                oom = 1;
                break;
            }
            text = nt;
        }
        size_t want = cap - n < DVM_MAX_SOURCE_BYTES + 1 - n ? cap - n : DVM_MAX_SOURCE_BYTES + 1 - n;
        size_t r = fread(text + n, 1, want, f);
        n += r;
        if (!r) break;
    }
    fclose(f);
    if (oom || !text) {
        fprintf(stderr, "dvm: error: %s: out of memory reading the source\n", src);
        free(text);
        goto done;
    }
    double t0 = now_ms();
    dvm_status st = dvm_compile(ctx, text, n, src, &m);
    double t1 = now_ms();
    free(text);
    if (st != DVM_OK) {
        ctx_error(ctx);
        goto done;
    }
    if (timing) fprintf(stderr, "dvm: compile %.3f ms\n", t1 - t0);
    if (dvm_module_save(ctx, m, &blob, &len) != DVM_OK) {
        ctx_error(ctx);
        goto done;
    }
    /* a temporary beside OUT, renamed over it: a failed write leaves the previous blob */
    stage sg = {NULL, 0, 0};
    f = stage_open(&sg, out);
    if (!f) {
        stage_abort(&sg);
        goto done;
    }
    if (fwrite(blob, 1, len, f) != len) {
        fprintf(stderr, "dvm: error: %s: write failed: %s\n", out, strerror(errno));
        fclose(f);
        stage_abort(&sg);
        goto done;
    }
    if (stage_close(f, out) != 0) {
        stage_abort(&sg);
        goto done;
    }
    if (stage_commit(&sg) != 0) goto done;
    printf("%s: %d kernel%s, %zu bytes\n", out, dvm_module_kernel_count(m), dvm_module_kernel_count(m) == 1 ? "" : "s", len);
    rc = EXIT_OK;
done:
    dvm_free(blob);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    free(defout);
    return rc;
}

/* ---- disasm, verify, info ---- */

static int cmd_disasm(int argc, char **argv) {
    const char *prog = NULL;
    opts o;
    memset(&o, 0, sizeof o);
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            printf(help_disasm, help_compiler_switches);
            return EXIT_OK;
        }
        int c = take_compile_option("disasm", argc, argv, &i, &o);
        if (c < 0) return EXIT_USAGE;
        if (c) continue;
        if (argv[i][0] == '-' && argv[i][1]) return usage_error("disasm", "unknown option '%s'", argv[i]);
        if (prog) return usage_error("disasm", "unexpected argument '%s' (one program only)", argv[i]);
        prog = argv[i];
    }
    if (!prog) return usage_error("disasm", "missing the program (a .dvk or .dvb file)%s", "");
    int rc = EXIT_FAIL;
    dvm_context *ctx = open_ctx(NULL, &o, &rc);
    dvm_module *m = NULL;
    char *text = NULL;
    if (!ctx) return rc;
    warn_blob_options(prog, &o);
    if (dvm_load_file(ctx, prog, &m) != DVM_OK || dvm_module_disasm(ctx, m, &text) != DVM_OK) {
        ctx_error(ctx);
    } else {
        fputs(text, stdout);
        rc = EXIT_OK;
    }
    dvm_free(text);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    return rc;
}

static int cmd_verify(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(help_verify, stdout);
            return EXIT_OK;
        }
        if (argv[i][0] == '-' && argv[i][1]) return usage_error("verify", "unknown option '%s'", argv[i]);
        if (path) return usage_error("verify", "unexpected argument '%s' (one blob only)", argv[i]);
        path = argv[i];
    }
    if (!path) return usage_error("verify", "missing the blob file%s", "");
    int rc = EXIT_FAIL;
    dvm_context *ctx = open_ctx(NULL, NULL, &rc);
    if (!ctx) return rc;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "dvm: error: %s: cannot open: %s\n", path, strerror(errno));
        dvm_context_destroy(ctx);
        return EXIT_FAIL;
    }
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 4096) {
            unsigned char *nb = (unsigned char *)realloc(buf, cap = cap * 2 + 65536);
            if (!nb) break;
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (!r) break;
    }
    fclose(f);
    dvm_module *m = NULL;
    /* only a blob: source text is not a blob, and verify says so rather than compiling it */
    if (!buf || dvm_load_blob(ctx, buf, n, path, &m) != DVM_OK) {
        ctx_error(ctx);
    } else {
        printf("%s: valid blob, %d kernel%s\n", path, dvm_module_kernel_count(m), dvm_module_kernel_count(m) == 1 ? "" : "s");
        rc = EXIT_OK;
    }
    free(buf);
    dvm_module_destroy(m);
    dvm_context_destroy(ctx);
    return rc;
}

static int cmd_info(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(help_info, stdout);
            return EXIT_OK;
        }
        return usage_error("info", "unexpected argument '%s'", argv[i]);
    }
    char *r = dvm_backends_report();
    if (!r) {
        fprintf(stderr, "dvm: error: out of memory\n");
        return EXIT_FAIL;
    }
    fputs(r, stdout);
    dvm_free(r);
    return EXIT_OK;
}

/* ---- run, grad, jvp ---- */

typedef struct binding {
    const char *name; /* as given, e.g. "x.grad" */
    const char *value;
} binding;

/* An input file, known by device and inode so that another path to it is recognized. */
typedef struct input_file {
    dev_t dev;
    ino_t ino;
    const char *path, *arg, *suffix; /* borrowed; arg NULL for the program */
} input_file;

/* The input that `path` is, or NULL. */
static const input_file *same_input(const input_file *in, int n, const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return NULL;
    for (int i = 0; i < n; i++)
        if (in[i].dev == sb.st_dev && in[i].ino == sb.st_ino) return &in[i];
    return NULL;
}

/* A seed given as a number (NAME.grad=1): the whole text must be one. */
static int seed_number(const char *v, float *out) {
    char *end = NULL;
    float f = strtof(v, &end);
    if (!*v || end == v || *end) return 0;
    *out = f;
    return 1;
}

/* Prints "  name: f32 (3,) [1, 2, 3]" with the first few values. */
static void summarize(dvm_context *ctx, const char *name, const char *suffix, dvm_array *a) {
    int64_t shp[DVM_MAX_RANK], n = dvm_array_count(a);
    int rank = dvm_array_rank(a);
    for (int k = 0; k < rank; k++) shp[k] = dvm_array_dim(a, k);
    char sh[160];
    dvm_shape_str(shp, rank, sh, sizeof sh);
    printf("%s%s: %s %s [", name, suffix, dvm_dtype_name(dvm_array_dtype(a)), sh);
    uint32_t *v = (uint32_t *)malloc((size_t)(n ? n : 1) * 4);
    if (v && dvm_array_read(ctx, a, v, n) == DVM_OK) {
        int64_t show = n < 8 ? n : 8;
        for (int64_t i = 0; i < show; i++) {
            if (dvm_array_dtype(a) == DVM_F32) {
                float f;
                memcpy(&f, &v[i], 4);
                printf("%s%.7g", i ? ", " : "", (double)f);
            } else {
                printf("%s%d", i ? ", " : "", (int32_t)v[i]);
            }
        }
        if (n > show) printf(", ... (%lld values)", (long long)n);
    }
    printf("]\n");
    free(v);
}

/* "DIR/NAMESUFFIX.npy", malloc'd. */
static char *out_path(const char *dir, const char *name, const char *suffix) {
    size_t pl = strlen(dir) + strlen(name) + strlen(suffix) + 8;
    char *path = (char *)malloc(pl);
    if (path) snprintf(path, pl, "%s/%s%s.npy", dir, name, suffix);
    return path;
}

/* Reads array a back and writes it to a temporary for DIR/NAMESUFFIX.npy (renamed by
 * stage_commit once every output was written). */
static int write_npy(dvm_context *ctx, stage *sg, const char *dir, const char *name, const char *suffix, dvm_array *a) {
    int64_t shp[DVM_MAX_RANK], n = dvm_array_count(a);
    int rank = dvm_array_rank(a);
    for (int k = 0; k < rank; k++) shp[k] = dvm_array_dim(a, k);
    void *v = malloc((size_t)(n ? n : 1) * 4);
    if (!v) return -1;
    if (dvm_array_read(ctx, a, v, n) != DVM_OK) {
        free(v);
        return ctx_error(ctx);
    }
    char *path = out_path(dir, name, suffix);
    char err[1024];
    int rc = -1;
    FILE *f = path ? stage_open(sg, path) : NULL;
    if (f) {
        if (dvm_npy_write_stream(f, path, dvm_array_dtype(a), rank, shp, v, err, sizeof err) != 0) {
            fprintf(stderr, "dvm: error: %s\n", err);
            fclose(f);
        } else {
            rc = stage_close(f, path);
        }
    }
    free(path);
    free(v);
    return rc;
}

/* mkdir -p */
static int make_dirs(const char *dir) {
    char *p = strdup(dir);
    if (!p) return -1;
    for (char *c = p + 1;; c++) {
        if (*c == '/' || !*c) {
            char save = *c;
            *c = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "dvm: error: %s: cannot create the directory: %s\n", p, strerror(errno));
                free(p);
                return -1;
            }
            *c = save;
            if (!save) break;
        }
    }
    struct stat sb;
    int ok = stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (!ok) fprintf(stderr, "dvm: error: %s: not a directory\n", p);
    free(p);
    return ok ? 0 : -1;
}

/* Binds one scalar from its text; f32 takes any number, i32 only integers. */
static int bind_scalar_text(dvm_context *ctx, dvm_args *args, const dvm_param_info *pi, const char *decl, const char *v) {
    char *end = NULL;
    errno = 0;
    if (pi->dtype == DVM_F32) {
        float f = strtof(v, &end);
        if (!*v || *end || end == v) {
            fprintf(stderr, "dvm: error: argument '%s': expected a number for the scalar parameter (%s), got '%s'\n", pi->name,
                    decl, v);
            return EXIT_FAIL;
        }
        if (dvm_args_f32(ctx, args, pi->name, f) != DVM_OK) return ctx_error(ctx);
    } else {
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || end == v) {
            fprintf(stderr, "dvm: error: argument '%s': expected an integer for the scalar parameter (%s), got '%s'\n", pi->name,
                    decl, v);
            return EXIT_FAIL;
        }
        if (errno || x < INT32_MIN || x > INT32_MAX) {
            fprintf(stderr, "dvm: error: argument '%s': %s is outside the i32 range (%s)\n", pi->name, v, decl);
            return EXIT_FAIL;
        }
        if (dvm_args_i32(ctx, args, pi->name, (int32_t)x) != DVM_OK) return ctx_error(ctx);
    }
    return EXIT_OK;
}

/* Reads FILE.npy into a new array for parameter pi (role suffix "", ".grad" or ".dual"). */
static int load_npy_arg(dvm_context *ctx, const dvm_param_info *pi, const char *decl, const char *suffix, const char *path,
                        dvm_array **out) {
    dvm_npy np;
    char err[1024];
    *out = NULL;
    if (dvm_npy_read(path, &np, err, sizeof err) != 0) {
        fprintf(stderr, "dvm: error: argument '%s%s': %s\n", pi->name, suffix, err);
        return EXIT_FAIL;
    }
    int rc = EXIT_OK;
    if (np.rank == 0 || np.rank != pi->rank) {
        char sh[160];
        dvm_shape_str(np.shape, np.rank, sh, sizeof sh);
        fprintf(stderr, "dvm: error: argument '%s%s': %s: expected rank %d (%s), got %s array of shape %s\n", pi->name, suffix,
                path, pi->rank, decl, np.rank == 0 ? "a 0-d" : "an", sh);
        rc = EXIT_FAIL;
    } else if (np.dtype != pi->dtype) {
        fprintf(stderr, "dvm: error: argument '%s%s': %s: expected '%s' (%s), got '%s'\n", pi->name, suffix, path,
                pi->dtype == DVM_F32 ? "<f4" : "<i4", decl, np.dtype == DVM_F32 ? "<f4" : "<i4");
        rc = EXIT_FAIL;
    } else if (dvm_array_create(ctx, np.dtype, np.rank, np.shape, out) != DVM_OK ||
               dvm_array_write(ctx, *out, np.data, np.count) != DVM_OK) {
        rc = ctx_error(ctx);
        dvm_array_destroy(*out);
        *out = NULL;
    }
    dvm_npy_free(&np);
    return rc;
}

static int cmd_launch(const char *cmd, int argc, char **argv) {
    dvm_mode mode = !strcmp(cmd, "grad") ? DVM_ADJOINT : !strcmp(cmd, "jvp") ? DVM_TANGENT : DVM_FORWARD;
    const char *dsuffix = mode == DVM_ADJOINT ? ".grad" : ".dual";
    opts o;
    memset(&o, 0, sizeof o);
    o.backend = "auto";
    const char *prog = NULL, *kname = NULL;
    binding *b = (binding *)calloc((size_t)argc, sizeof *b);
    int nb = 0;
    if (!b) return EXIT_FAIL;
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            const char *what = mode == DVM_ADJOINT ? "Launches KERNEL, then its adjoint (reverse mode), in one context: the adjoint adds\n"
                                                     "dL/dx into every x.grad, seeded by the .grad values of the outputs."
                               : mode == DVM_TANGENT ? "Launches KERNEL's tangent (forward mode): the primal outputs and, in every\n"
                                                       "output's .dual, the directional derivative along the given .dual inputs."
                                                     : "Launches KERNEL.";
            const char *extra =
                mode == DVM_ADJOINT ? "  NAME.grad=FILE.npy        the initial gradient of an f32 array (default zero); seed\n"
                                      "                            an output here (without any, every gradient is zero)\n"
                                      "  NAME.grad=VALUE           the same, VALUE in every element: y.grad=1\n"
                : mode == DVM_TANGENT ? "  NAME.dual=FILE.npy        the tangent of an f32 array (default zero)\n"
                                        "  NAME.dual=VALUE           the same, VALUE in every element: x.dual=1\n"
                                      : "";
            const char *outs = mode == DVM_ADJOINT ? " and every gradient to DIR/NAME.grad.npy"
                               : mode == DVM_TANGENT ? " and every tangent to DIR/NAME.dual.npy"
                                                     : "";
            printf(help_launch, cmd, what, extra, outs, help_compiler_switches);
            free(b);
            return EXIT_OK;
        }
        int r = take_option(cmd, argc, argv, &i, &o);
        if (r < 0) {
            free(b);
            return EXIT_USAGE;
        }
        if (r) continue;
        if (!prog) prog = argv[i];
        else if (!kname) kname = argv[i];
        else {
            const char *eq = strchr(argv[i], '=');
            if (!eq || eq == argv[i]) {
                free(b);
                return usage_error(cmd, "unexpected argument '%s' (arguments are NAME=FILE.npy or NAME=VALUE)", argv[i]);
            }
            b[nb].name = argv[i];
            b[nb].value = eq + 1;
            nb++;
        }
    }
    if (!prog || !kname) {
        free(b);
        return usage_error(cmd, !prog ? "missing the program (a .dvk or .dvb file)%s" : "missing the kernel name%s", "");
    }
    /* names: split "x.grad=..." into "x" and the role; reject roles this command has none of */
    char **names = (char **)calloc((size_t)(nb ? nb : 1), sizeof *names);
    int *role = (int *)calloc((size_t)(nb ? nb : 1), sizeof *role);
    int rc = EXIT_FAIL;
    dvm_context *ctx = NULL;
    dvm_module *m = NULL;
    dvm_args *args = NULL;
    int np = 0;
    dvm_array **arr = NULL, **der = NULL;
    float *seedv = NULL;  /* per parameter: a .grad/.dual given as a number */
    char *has_seedv = NULL;
    input_file *inputs = (input_file *)calloc((size_t)nb + 1, sizeof *inputs);
    int ninputs = 0, nseeds = 0;
    if (!names || !role || !inputs) goto done;
    for (int i = 0; i < nb; i++) {
        size_t l = (size_t)(b[i].value - 1 - b[i].name);
        names[i] = strndup(b[i].name, l);
        if (!names[i]) goto done;
        char *dot = strchr(names[i], '.');
        if (dot) {
            if (strcmp(dot, ".grad") && strcmp(dot, ".dual")) {
                rc = usage_error(cmd, "bad argument name '%s' (expected NAME, NAME.grad or NAME.dual)", names[i]);
                goto done;
            }
            if ((!strcmp(dot, ".grad") && mode != DVM_ADJOINT) || (!strcmp(dot, ".dual") && mode != DVM_TANGENT)) {
                fprintf(stderr, "dvm: error: '%s' is only accepted by `dvm %s`\n(see `dvm %s --help`)\n", names[i],
                        !strcmp(dot, ".grad") ? "grad" : "jvp", cmd);
                rc = EXIT_USAGE;
                goto done;
            }
            *dot = 0;
            role[i] = 1;
        }
        for (int j = 0; j < i; j++)
            if (role[j] == role[i] && !strcmp(names[j], names[i])) {
                fprintf(stderr, "dvm: error: argument '%s%s' is given twice\n", names[i], role[i] ? dsuffix : "");
                rc = EXIT_USAGE;
                goto done;
            }
    }
    double t0 = now_ms();
    /* Ctrl-C from here on cancels the launch instead of killing dvm midway */
    catch_sigint(NULL);
    ctx = launch_ctx(cmd, &o, &rc);
    g_sigint_ctx = ctx;
    if (!ctx) goto done;
    double t1 = now_ms();
    warn_blob_options(prog, &o);
    if (dvm_load_file(ctx, prog, &m) != DVM_OK) {
        rc = ctx_error(ctx);
        goto done;
    }
    double t2 = now_ms();
    const dvm_kernel *k;
    if (dvm_kernel_find(ctx, m, kname, &k) != DVM_OK || dvm_args_create(ctx, k, &args) != DVM_OK) {
        rc = ctx_error(ctx);
        goto done;
    }
    np = dvm_kernel_param_count(k);
    arr = (dvm_array **)calloc((size_t)(np ? np : 1), sizeof *arr);
    der = (dvm_array **)calloc((size_t)(np ? np : 1), sizeof *der);
    seedv = (float *)calloc((size_t)(np ? np : 1), sizeof *seedv);
    has_seedv = (char *)calloc((size_t)(np ? np : 1), 1);
    if (!arr || !der || !seedv || !has_seedv) goto done;
    struct stat psb;
    if (stat(prog, &psb) == 0) inputs[ninputs++] = (input_file){psb.st_dev, psb.st_ino, prog, NULL, ""};
    rc = EXIT_FAIL;
    for (int i = 0; i < nb; i++) {
        int pi_idx = -1;
        for (int p = 0; p < np; p++) {
            dvm_param_info pi;
            dvm_kernel_param(k, p, &pi);
            if (!strcmp(pi.name, names[i])) pi_idx = p;
        }
        if (pi_idx < 0) {
            /* let the library name the kernel's parameters */
            dvm_args_f32(ctx, args, names[i], 0.0f);
            ctx_error(ctx);
            goto done;
        }
        dvm_param_info pi;
        dvm_kernel_param(k, pi_idx, &pi);
        char decl[256];
        dvm_param_decl(k, (uint32_t)pi_idx, decl, sizeof decl);
        if (role[i]) {
            if (!pi.is_array || pi.dtype != DVM_F32) {
                fprintf(stderr, "dvm: error: argument '%s%s': only f32 array parameters have a %s (%s)\n", pi.name, dsuffix,
                        mode == DVM_ADJOINT ? "gradient" : "tangent", decl);
                goto done;
            }
            nseeds++;
            if (seed_number(b[i].value, &seedv[pi_idx])) has_seedv[pi_idx] = 1; /* filled once the shape is known */
            else if (load_npy_arg(ctx, &pi, decl, dsuffix, b[i].value, &der[pi_idx]) != EXIT_OK) goto done;
        } else if (pi.is_array) {
            if (load_npy_arg(ctx, &pi, decl, "", b[i].value, &arr[pi_idx]) != EXIT_OK) goto done;
            if (dvm_args_array(ctx, args, pi.name, arr[pi_idx]) != DVM_OK) {
                ctx_error(ctx);
                goto done;
            }
        } else {
            if (bind_scalar_text(ctx, args, &pi, decl, b[i].value) != EXIT_OK) goto done;
        }
    }
    for (int i = 0; i < nb; i++) {
        struct stat sb;
        if (stat(b[i].value, &sb) == 0)
            inputs[ninputs++] = (input_file){sb.st_dev, sb.st_ino, b[i].value, names[i], role[i] ? dsuffix : ""};
    }
    /* `dvm grad` with no seed at all computes only zero gradients: say how to give one
     * (a warning: spec/cli.md keeps the form valid, gradients not given start at zero) */
    if (mode == DVM_ADJOINT && nseeds == 0)
        fprintf(stderr, "dvm: warning: no output seed, so every gradient is zero: give NAME.grad=FILE.npy or NAME.grad=1 "
                        "for an output array\n");
    /* every f32 array gets a gradient / tangent the command can write out: zero if not given,
     * VALUE in every element if given as a number */
    for (int p = 0; p < np && mode != DVM_FORWARD; p++) {
        dvm_param_info pi;
        dvm_kernel_param(k, p, &pi);
        if (!pi.is_array || pi.dtype != DVM_F32 || !arr[p]) continue;
        if (!der[p]) {
            int64_t shp[DVM_MAX_RANK], cnt = dvm_array_count(arr[p]);
            for (int a = 0; a < pi.rank; a++) shp[a] = dvm_array_dim(arr[p], a);
            if (dvm_array_create(ctx, DVM_F32, pi.rank, shp, &der[p]) != DVM_OK) {
                ctx_error(ctx);
                goto done;
            }
            if (has_seedv[p] && seedv[p] != 0.0f) {
                float *fill = (float *)malloc((size_t)(cnt ? cnt : 1) * sizeof *fill);
                if (!fill) goto done;
                for (int64_t e = 0; e < cnt; e++) fill[e] = seedv[p];
                dvm_status wst = dvm_array_write(ctx, der[p], fill, cnt);
                free(fill);
                if (wst != DVM_OK) {
                    ctx_error(ctx);
                    goto done;
                }
            }
        }
        dvm_status st = mode == DVM_ADJOINT ? dvm_args_grad(ctx, args, pi.name, der[p]) : dvm_args_dual(ctx, args, pi.name, der[p]);
        if (st != DVM_OK) {
            ctx_error(ctx);
            goto done;
        }
    }
    double t3 = now_ms();
    dvm_launch_opts lo = {mode, o.ad_stack, o.default_ad_stack, o.timeout * 1e3};
    dvm_launch_stats ls;
    if (g_interrupted) { /* before the launch: dvm_launch clears a cancel that came earlier */
        rc = interrupted();
        goto done;
    }
    dvm_status lst = dvm_launch(ctx, k, args, &lo, &ls);
    if (g_interrupted) { /* cancelled, or it ended before it could be: nothing is written */
        rc = interrupted();
        goto done;
    }
    if (lst != DVM_OK) {
        ctx_error(ctx);
        goto done;
    }
    double t4 = now_ms();
    if (o.time)
        fprintf(stderr,
                "dvm: backend %s (%s): context %.3f ms, %s %.3f ms, arguments %.3f ms, launch %.3f ms "
                "(sizing %.3f ms%s, exec %.3f ms, adstack heap %lld bytes, snapshots %lld bytes, versions %lld bytes, retries %d)\n",
                dvm_context_backend(ctx), dvm_context_device(ctx), t1 - t0,
                strlen(prog) > 4 && !strcmp(prog + strlen(prog) - 4, ".dvk") ? "compile" : "load", t2 - t1, t3 - t2, t4 - t3,
                ls.size_ms, ls.sizes_cached ? ", cached" : "", ls.exec_ms, (long long)ls.heap_bytes,
                (long long)ls.snapshot_bytes, (long long)ls.version_bytes, ls.retries);
    /* outputs: only now, after a successful launch */
    if (o.out) {
        if (make_dirs(o.out) != 0) goto done;
        /* an output over an input file: warned about unless --in-place says it is meant (a
         * warning: spec/cli.md keeps `--out DIR` writing every output, inputs included) */
        for (int p = 0; p < np && !o.in_place; p++) {
            dvm_param_info pi;
            dvm_kernel_param(k, p, &pi);
            for (int r = 0; r < 2; r++) {
                if (!(r ? der[p] : arr[p])) continue;
                char *path = out_path(o.out, pi.name, r ? dsuffix : "");
                const input_file *in = path ? same_input(inputs, ninputs, path) : NULL;
                if (in)
                    fprintf(stderr, "dvm: warning: output %s replaces the input file %s (%s%s%s%s); pass --in-place if that is meant\n",
                            path, in->path, in->arg ? "argument '" : "the program", in->arg ? in->arg : "", in->suffix,
                            in->arg ? "'" : "");
                free(path);
            }
        }
        stage sg = {NULL, 0, 0};
        for (int p = 0; p < np; p++) {
            dvm_param_info pi;
            dvm_kernel_param(k, p, &pi);
            if ((arr[p] && write_npy(ctx, &sg, o.out, pi.name, "", arr[p]) != 0) ||
                (der[p] && write_npy(ctx, &sg, o.out, pi.name, dsuffix, der[p]) != 0)) {
                stage_abort(&sg);
                goto done;
            }
        }
        if (g_interrupted) { /* while the outputs were written: none replaces an old file */
            stage_abort(&sg);
            rc = interrupted();
            goto done;
        }
        if (stage_commit(&sg) != 0) goto done;
    } else {
        /* a summary of what the launch produced: arrays it may write, and every gradient/tangent */
        const dvm_variant_desc *var = &k->kd->v[mode == DVM_TANGENT ? DVM_V_TANGENT : DVM_V_FORWARD];
        const dvm_program *pr = m->prog;
        for (int p = 0; p < np; p++) {
            dvm_param_info pi;
            dvm_kernel_param(k, p, &pi);
            int written = 0;
            for (uint32_t j = 0; j < var->nslots; j++) {
                const dvm_slot_desc *sd = &pr->slots[var->slot_begin + j];
                if (sd->param == (uint32_t)p && sd->role == DVM_ROLE_PRIMAL && sd->writes) written = 1;
            }
            if (arr[p] && written) summarize(ctx, pi.name, "", arr[p]);
        }
        for (int p = 0; p < np; p++) {
            dvm_param_info pi;
            dvm_kernel_param(k, p, &pi);
            if (der[p]) summarize(ctx, pi.name, dsuffix, der[p]);
        }
    }
    rc = EXIT_OK;
done:
    for (int p = 0; p < np; p++) {
        if (arr) dvm_array_destroy(arr[p]);
        if (der) dvm_array_destroy(der[p]);
    }
    free(arr);
    free(der);
    free(seedv);
    free(has_seedv);
    free(inputs);
    dvm_args_destroy(args);
    dvm_module_destroy(m);
    g_sigint_ctx = NULL;
    signal(SIGINT, SIG_DFL);
    release_launch_ctx(ctx, &o, rc);
    if (names)
        for (int i = 0; i < nb; i++) free(names[i]);
    free(names);
    free(role);
    free(b);
    return rc;
}

/* ---- batch ---- */

static const char *help_batch =
    "usage: dvm batch [FILE]\n"
    "\n"
    "Runs dvm commands in one process, one per line of FILE (default, or '-': standard\n"
    "input), each written as on a command line without the leading 'dvm':\n"
    "\n"
    "  run k.dvk k x=x.npy y=y.npy --backend vulkan --out out1\n"
    "\n"
    "Words are separated by spaces or tabs; 'single quotes' take everything up to the next\n"
    "quote as it is, \"double quotes\" the same except \\\" and \\\\, and a backslash outside\n"
    "quotes takes the next character as it is (a word cannot hold a newline). A blank line\n"
    "or one whose first word starts with '#' is skipped. `cd DIR` changes the directory\n"
    "that relative paths of the following lines are read against.\n"
    "\n"
    "Every command means, does, prints and exits exactly as `dvm COMMAND ...` would, with\n"
    "one difference: run, grad and jvp keep their context (the opened device) for the next\n"
    "run, grad or jvp with the same context options (--backend, --device, --threads and the\n"
    "switches), so a device is opened once, not per line (after a command that failed other\n"
    "than in its program, such as a device error, the next one opens it anew); `--time`\n"
    "then reports the context time of a kept context as about 0.\n"
    "\n"
    "After each command, one record goes to stdout: the line\n"
    "\n"
    "  dvm batch: line L: exit S, stdout N bytes, stderr M bytes\n"
    "\n"
    "(L the line number in FILE, S the command's exit status), then the N bytes the command\n"
    "wrote to stdout and the M bytes it wrote to stderr, exactly. Lines are read and run one\n"
    "at a time, and each record is written as soon as its command ends, so a program can\n"
    "drive dvm batch through pipes, line by line.\n"
    "\n"
    "Exit status: the highest status of its commands (0 when every one succeeded); 130 when\n"
    "Ctrl-C interrupted a launch (the batch ends there); 2 for wrong usage of dvm batch\n"
    "itself, 1 when FILE cannot be read.\n";

static int dispatch(int argc, char **argv);

/* Splits one batch line (no newline) into words in out[] (as long as the line, plus one),
 * after words[0] = "dvm"; *words is NULL-terminated. The word count, or -1 with *why. */
static int split_line(const char *s, char *out, char ***words, const char **why) {
    int n = 1, cap = 16;
    char **w = (char **)malloc((size_t)cap * sizeof *w);
    if (!w) {
        *why = "out of memory";
        return -1;
    }
    w[0] = (char *)"dvm";
    for (;;) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        if (n + 2 > cap) {
            char **nw = (char **)realloc(w, (size_t)(cap *= 2) * sizeof *w);
            if (!nw) {
                free(w);
                *why = "out of memory";
                return -1;
            }
            w = nw;
        }
        w[n++] = out;
        while (*s && *s != ' ' && *s != '\t') {
            if (*s == '\'' || *s == '"') {
                char q = *s++;
                while (*s && *s != q) {
                    if (q == '"' && *s == '\\' && (s[1] == '"' || s[1] == '\\')) s++;
                    *out++ = *s++;
                }
                if (!*s) {
                    free(w);
                    *why = q == '"' ? "a double quote is not closed" : "a single quote is not closed";
                    return -1;
                }
                s++;
            } else if (*s == '\\') {
                if (!s[1]) {
                    free(w);
                    *why = "a backslash ends the line";
                    return -1;
                }
                *out++ = s[1];
                s += 2;
            } else {
                *out++ = *s++;
            }
        }
        *out++ = 0;
    }
    w[n] = NULL;
    *words = w;
    return n;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Copies what a command wrote into the capture file fd (from its start) to stdout. */
static int copy_capture(int fd, off_t n) {
    char buf[65536];
    for (off_t at = 0; at < n;) {
        ssize_t r = pread(fd, buf, n - at < (off_t)sizeof buf ? (size_t)(n - at) : sizeof buf, at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || write_all(1, buf, (size_t)r) != 0) return -1;
        at += r;
    }
    return 0;
}

static int batch_cd(int argc, char **argv) {
    if (argc != 3) return usage_error("batch", "cd takes one directory%s", "");
    if (chdir(argv[2]) != 0) {
        fprintf(stderr, "dvm: error: cd %s: %s\n", argv[2], strerror(errno));
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

static int cmd_batch(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(help_batch, stdout);
            return EXIT_OK;
        }
        if (argv[i][0] == '-' && argv[i][1]) return usage_error("batch", "unknown option '%s'", argv[i]);
        if (path) return usage_error("batch", "unexpected argument '%s' (one file of commands only)", argv[i]);
        path = argv[i];
    }
    FILE *in = !path || !strcmp(path, "-") ? stdin : fopen(path, "r");
    if (!in) {
        fprintf(stderr, "dvm: error: %s: cannot open: %s\n", path, strerror(errno));
        return EXIT_FAIL;
    }
    /* each command's stdout and stderr go to a file of their own (fds 1 and 2 moved there),
       then into its record; saved[] keeps the batch's own */
    FILE *cap[2] = {tmpfile(), tmpfile()};
    int saved[2] = {dup(1), dup(2)};
    if (!cap[0] || !cap[1] || saved[0] < 0 || saved[1] < 0) {
        fprintf(stderr, "dvm: error: batch: cannot create the files that capture a command's output: %s\n", strerror(errno));
        for (int k = 0; k < 2; k++) {
            if (cap[k]) fclose(cap[k]);
            if (saved[k] >= 0) close(saved[k]);
        }
        if (in != stdin) fclose(in);
        return EXIT_FAIL;
    }
    g_batch.on = 1;
    int worst = EXIT_OK;
    long lineno = 0;
    char *line = NULL, *buf = NULL;
    size_t lcap = 0, bcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, in)) >= 0) {
        lineno++;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (len && line[len - 1] == '\r') line[--len] = 0;
        const char *first = line + strspn(line, " \t");
        if (!*first || *first == '#') continue;
        if (bcap < (size_t)len + 1) {
            free(buf);
            buf = (char *)malloc((size_t)len + 1);
            bcap = buf ? (size_t)len + 1 : 0;
        }
        char **words = NULL;
        const char *why = "out of memory";
        int n = buf ? split_line(line, buf, &words, &why) : -1;
        fflush(stdout);
        fflush(stderr);
        int ok = 1;
        for (int k = 0; k < 2; k++) {
            int fd = fileno(cap[k]);
            ok = ok && ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0 && dup2(fd, k + 1) == k + 1;
        }
        int rc;
        if (!ok) {
            rc = EXIT_FAIL;
        } else if (n < 0) {
            fprintf(stderr, "dvm: error: batch line %ld: %s\n(see `dvm batch --help`)\n", lineno, why);
            rc = EXIT_USAGE;
        } else if (!strcmp(words[1], "cd")) {
            rc = batch_cd(n, words);
        } else if (!strcmp(words[1], "batch")) {
            rc = usage_error("batch", "a batch line cannot run `dvm batch`%s", "");
        } else {
            rc = dispatch(n, words);
        }
        free(words);
        fflush(stdout);
        fflush(stderr);
        dup2(saved[0], 1);
        dup2(saved[1], 2);
        struct stat so, se;
        if (!ok || fstat(fileno(cap[0]), &so) != 0 || fstat(fileno(cap[1]), &se) != 0) {
            fprintf(stderr, "dvm: error: batch line %ld: cannot capture the command's output: %s\n", lineno, strerror(errno));
            worst = EXIT_FAIL;
            break;
        }
        char head[160];
        int hl = snprintf(head, sizeof head, "dvm batch: line %ld: exit %d, stdout %lld bytes, stderr %lld bytes\n", lineno, rc,
                          (long long)so.st_size, (long long)se.st_size);
        if (write_all(1, head, (size_t)hl) != 0 || copy_capture(fileno(cap[0]), so.st_size) != 0 ||
            copy_capture(fileno(cap[1]), se.st_size) != 0) {
            fprintf(stderr, "dvm: error: batch: writing the record of line %ld failed: %s\n", lineno, strerror(errno));
            worst = EXIT_FAIL;
            break;
        }
        if (rc > worst) worst = rc;
        if (g_interrupted) break; /* Ctrl-C cancelled a launch: the batch ends with it */
    }
    if (ferror(in)) {
        fprintf(stderr, "dvm: error: %s: read failed after line %ld\n", path && strcmp(path, "-") ? path : "standard input", lineno);
        if (worst < EXIT_FAIL) worst = EXIT_FAIL;
    }
    batch_drop_ctx();
    g_batch.on = 0;
    free(line);
    free(buf);
    for (int k = 0; k < 2; k++) {
        fclose(cap[k]);
        close(saved[k]);
    }
    if (in != stdin) fclose(in);
    return worst;
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        fputs(help_main, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (is_help(cmd) || !strcmp(cmd, "help")) {
        fputs(help_main, stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("dvm %s\n", DVM_VERSION_STRING);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "compile")) return cmd_compile(argc, argv);
    if (!strcmp(cmd, "run") || !strcmp(cmd, "grad") || !strcmp(cmd, "jvp")) return cmd_launch(cmd, argc, argv);
    if (!strcmp(cmd, "disasm")) return cmd_disasm(argc, argv);
    if (!strcmp(cmd, "verify")) return cmd_verify(argc, argv);
    if (!strcmp(cmd, "info")) return cmd_info(argc, argv);
    if (!strcmp(cmd, "batch")) return cmd_batch(argc, argv);
    return usage_error(NULL, "unknown command '%s'", cmd);
}

int main(int argc, char **argv) { return dispatch(argc, argv); }
