/* compile.c: runs the compiler's stages in one arena. */
#include "compiler/compile.h"
#include <stdlib.h>
#include <string.h>

/* The front end: source to the forward IR (lex.c, parse.c, then the checker, lower.c). */
ir_module *dvm_front(dvm_arena *a, const char *src, size_t len, const char *filename, dvm_diags *d) {
    if (!a || !d) return NULL;
    if (!src) len = 0;
    if (len > 0x7fffffff) {
        dvm_diag(d, 0, 0, "source file is too large");
        return NULL;
    }
    dvm_lexed lx;
    if (dvm_lex(a, src ? src : "", len, d, &lx) || !lx.toks || lx.ntoks == 0) return NULL;
    ast_module *am = dvm_parse(a, src ? src : "", &lx, d);
    if (!am || d->nerrors) return NULL;
    return dvm_check(a, src, &lx, am, filename, d);
}

int dvm_compile_source(const char *src, size_t len, const char *filename, dvm_program **out, char **msg) {
    return dvm_compile_source_limited(src, len, filename, 0, out, msg);
}

int dvm_compile_source_limited(const char *src, size_t len, const char *filename, size_t arena_limit, dvm_program **out,
                               char **msg) {
    *out = NULL;
    *msg = NULL;
    dvm_diags d;
    dvm_diags_init(&d, filename, src, len);
    dvm_arena *a = NULL;
    int rc = -1;
    if (len > DVM_MAX_SOURCE_BYTES) {
        dvm_diag(&d, 0, 0, "source too large: more than %zu bytes (the limit is %zu MiB)", DVM_MAX_SOURCE_BYTES,
                 DVM_MAX_SOURCE_BYTES >> 20);
        goto done;
    }
    a = dvm_arena_create();
    if (!a) {
        dvm_diag(&d, 0, 0, "out of memory");
        goto done;
    }
    dvm_arena_set_limit(a, arena_limit);
    ir_module *m = dvm_front(a, src, len, filename, &d);
    if (!m || d.nerrors) goto done;
    if (dvm_check_races(m, &d)) goto done;
    /* the unoptimized code stays reachable for tests and for bisecting a miscompile */
    const char *noopt = getenv("DVM_NO_OPT");
    const int opt = !(noopt && *noopt && strcmp(noopt, "0") != 0);
    const char *part = getenv("DVM_PARTITION");
    if (opt && !(part && !strcmp(part, "0")) && dvm_partition(m, &d)) goto done;
    if (dvm_autodiff(m, &d) || d.nerrors) goto done;
    if (dvm_emit(m, out, &d) || d.nerrors) goto done;
    const char *unroll = getenv("DVM_UNROLL");
    const unsigned factor = unroll && *unroll ? (unsigned)strtoul(unroll, NULL, 10) : DVM_UNROLL_DEFAULT;
    if (opt && dvm_optimize(*out, &d, factor)) goto done;
    rc = 0;
done:
    if (rc) {
        dvm_program_free(*out);
        *out = NULL;
        *msg = dvm_diags_take(&d);
    }
    dvm_diags_free(&d);
    dvm_arena_destroy(a);
    return rc;
}
