/* program.c: ownership of a dvm_program (every array malloc'd, freed together). */
#include "bytecode/bc.h"
#include <stdlib.h>

void dvm_program_free(dvm_program *p) {
    if (!p) return;
    free(p->kernels);
    free(p->params);
    free(p->syms);
    free(p->slots);
    free(p->tasks);
    free(p->stacks);
    free(p->nodes);
    free(p->lines);
    free(p->cols);
    free(p->consts);
    free(p->strings);
    free(p);
}
