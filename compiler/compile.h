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

/* compile.c: all stages (DVM_NO_OPT=1 in the environment skips dvm_optimize; DVM_UNROLL=N
 * sets the unrolling factor, 0 or 1: none). 0 on success; otherwise *msg (malloc'd) holds the diagnostics. */
int dvm_compile_source(const char *src, size_t len, const char *filename, dvm_program **out, char **msg);
/* For tests of the out-of-memory paths: the same with the compilation's arena limited to
 * arena_limit bytes (dvm_arena_set_limit; 0: none). */
int dvm_compile_source_limited(const char *src, size_t len, const char *filename, size_t arena_limit, dvm_program **out,
                               char **msg);
#endif
