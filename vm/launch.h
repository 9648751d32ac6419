/* launch.h: what vm/launch.c gives the rest of the runtime besides dvm_launch (include/dvm.h),
 * which follows the protocol written at the top of vm/backend.h. */
#ifndef DVM_LAUNCH_H
#define DVM_LAUNCH_H

#include "dvm.h"

/* Brackets every public call that launches (dvm_launch, dvm_tape_launch, dvm_tape_backward);
   the outermost clears the context's cancel word. */
void dvm_run_begin(dvm_context *ctx);
void dvm_run_end(dvm_context *ctx);

#endif
