/* compile.h: the compiler's stages and its one entry point.
 *   source --dvm_front--> ir_module (forward variants) --dvm_autodiff--> + adjoint, tangent
 *          --dvm_emit--> dvm_program (what a blob holds)
 * Each stage reports errors through dvm_diags and returns failure if it reported any. */
#ifndef DVM_COMPILE_H
#define DVM_COMPILE_H
#include <stddef.h>
#include "bytecode/bc.h"
#include "compiler/arena.h"
#include "compiler/ast.h"
#include "compiler/diag.h"
#include "compiler/ir.h"

/* compile.c: lex.c, parse.c, then dvm_check: parse and type-check; NULL when d has errors. */
ir_module *dvm_front(dvm_arena *a, const char *src, size_t len, const char *filename, dvm_diags *d);
/* check.c, check_vec.c, inline.c, lower.c: resolves names, types every expression and lowers the
 * syntax tree to the forward IR (helpers inlined, static loops unrolled); NULL when d has errors. */
ir_module *dvm_check(dvm_arena *a, const char *src, const dvm_lexed *lx, ast_module *am, const char *filename,
                     dvm_diags *d);
/* races.c: rejects the races between the iterations of a parallel loop that it can see. */
int dvm_check_races(ir_module *m, dvm_diags *d);
/* autodiff.c: adds the adjoint and tangent variants of every kernel. 0 on success. */
int dvm_autodiff(ir_module *m, dvm_diags *d);
/* emit.c: lowers every variant to bytecode. 0 on success; *out is malloc'd (dvm_program_free). */
int dvm_emit(const ir_module *m, dvm_program **out, dvm_diags *d);
/* partition.c: a parallel loop whose body is one `if` on a box of its indices, split into the
 * box (the if's statements, no test) and the boxes around it (the else's); the forward code,
 * before autodiff. */
int dvm_partition(ir_module *m, dvm_diags *d);

/* opt.c: the bytecode optimizer (docs/internals.md), in place on dvm_emit's program; unroll:
 * the copies of a small loop body per trip (0 or 1: no unrolling). 0 on success; on failure
 * (out of memory, reported) the program must be dropped. */
int dvm_optimize(dvm_program *p, dvm_diags *d, unsigned unroll);
#define DVM_UNROLL_DEFAULT 4
/* unroll.c: unrolls every task's small innermost counted loops, factor copies of the body per
 * trip; the number of tasks changed, or -1 when out of memory. */
int dvm_unroll_loops(dvm_program *p, unsigned factor);

/* The largest source dvm_compile_source accepts (docs/language.md, "Limits"); readers of source
 * files stop one byte past it, so that an endless input (/dev/zero, a pipe) ends at once. */
#define DVM_MAX_SOURCE_BYTES ((size_t)16 << 20)

/* The compiler's switches (dvm_context_opts: no_opt, no_partition, unroll; docs/c-api.md). All
 * zero: the defaults. The program records those that changed its code (dvm_program.options). */
typedef struct dvm_compile_opts {
    int no_opt;          /* skip dvm_partition and dvm_optimize (bisecting a suspected miscompile) */
    int no_partition;    /* skip dvm_partition alone */
    unsigned unroll;     /* copies of a small loop body per trip: 0 the default (DVM_UNROLL_DEFAULT),
                            1 none, at most DVM_UNROLL_MAX */
    size_t arena_limit;  /* tests of the out-of-memory paths: the compilation's arena limited to this
                            many bytes (dvm_arena_set_limit; 0: none) */
} dvm_compile_opts;
#define DVM_UNROLL_MAX 256

/* compile.c: all stages with the default switches. 0 on success; otherwise *msg (malloc'd)
 * holds the diagnostics. */
int dvm_compile_source(const char *src, size_t len, const char *filename, dvm_program **out, char **msg);
/* The same with switches (NULL: the defaults); an unroll beyond DVM_UNROLL_MAX is an error. */
int dvm_compile_source_opts(const char *src, size_t len, const char *filename, const dvm_compile_opts *opts,
                            dvm_program **out, char **msg);
#endif
