/* diag.h: compiler diagnostics. Each error is formatted at once as
 *   FILE:LINE:COL: error: MESSAGE
 *       the source line
 *       ^
 * and appended to one text that the caller takes at the end. */
#ifndef DVM_DIAG_H
#define DVM_DIAG_H
#include <stddef.h>

typedef struct dvm_diags {
    const char *file;
    const char *src;
    size_t len;
    int nerrors;
    int max_errors; /* later errors are counted, not formatted (default 20) */
    char *buf;      /* malloc'd */
    size_t n, cap;
} dvm_diags;

void dvm_diags_init(dvm_diags *d, const char *file, const char *src, size_t len);
void dvm_diags_free(dvm_diags *d);
/* line and col are 1-based; line 0 means no location ("FILE: error: ..."). */
void dvm_diag(dvm_diags *d, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The formatted text (malloc'd, caller frees); the diags are emptied. */
char *dvm_diags_take(dvm_diags *d);
#endif
