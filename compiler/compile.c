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
    return dvm_compile_source_opts(src, len, filename, NULL, out, msg);
}

int dvm_compile_source_opts(const char *src, size_t len, const char *filename, const dvm_compile_opts *opts,
                            dvm_program **out, char **msg) {
    static const dvm_compile_opts defaults;
    const dvm_compile_opts *o = opts ? opts : &defaults;
    *out = NULL;
    *msg = NULL;
    dvm_diags d;
    dvm_diags_init(&d, filename, src, len);
    dvm_arena *a = NULL;
    int rc = -1;
    if (o->unroll > DVM_UNROLL_MAX) {
        dvm_diag(&d, 0, 0, "unroll %u is more than %u copies of a loop body", o->unroll, DVM_UNROLL_MAX);
        goto done;
    }
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
    dvm_arena_set_limit(a, o->arena_limit);
    ir_module *m = dvm_front(a, src, len, filename, &d);
    if (!m || d.nerrors) goto done;
    if (dvm_check_races(m, &d)) goto done;
    /* the unoptimized code stays reachable for tests and for bisecting a miscompile */
    const int opt = !o->no_opt, part = opt && !o->no_partition;
    const unsigned factor = o->unroll ? o->unroll : DVM_UNROLL_DEFAULT;
    if (part && dvm_partition(m, &d)) goto done;
    if (dvm_autodiff(m, &d) || d.nerrors) goto done;
    if (dvm_emit(m, out, &d) || d.nerrors) goto done;
    if (opt && dvm_optimize(*out, &d, factor)) goto done;
    /* what changed the code, for the blob (with the optimizer off the others change nothing) */
    (*out)->options = !opt ? DVM_OPTS_NO_OPT
                           : (part ? 0u : DVM_OPTS_NO_PARTITION) |
                                 (factor == DVM_UNROLL_DEFAULT ? 0u : factor << DVM_OPTS_UNROLL_SHIFT);
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
