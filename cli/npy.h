/* npy.h: reading and writing NumPy .npy files (format 1.0 written; 1.0, 2.0 and 3.0 read)
 * for the `dvm` command and tests. Only little-endian 4-byte element types, C order:
 * '<f4' (DVM_F32) and '<i4' (DVM_I32). Every malformation is an error whose message
 * names the file; nothing here prints. */
#ifndef DVM_NPY_H
#define DVM_NPY_H
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "dvm.h"

#define DVM_NPY_MAX_RANK 32 /* NumPy's own limit; callers check their kernel's rank */
#define DVM_NPY_MAX_HEADER 65536 /* header bytes: every v1.0 header fits; longer ones are refused */
#define DVM_NPY_MAX_COUNT ((int64_t)1 << 40) /* elements in one file (a dimension, and the product) */

typedef struct dvm_npy {
    dvm_dtype dtype;
    int rank;                        /* 0 for a 0-d array */
    int64_t shape[DVM_NPY_MAX_RANK];
    int64_t count;                   /* product of shape (1 for 0-d) */
    void *data;                      /* count 4-byte elements, malloc'd; free with dvm_npy_free */
} dvm_npy;

/* Parses a whole .npy image held in memory; `name` (the file) prefixes every message.
 * Returns 0, or -1 with the reason in err. */
int dvm_npy_parse(const void *buf, size_t len, const char *name, dvm_npy *out, char *err, size_t errlen);
/* Reads and parses a file: the header, then exactly the data it announces, refusing a
 * file whose size does not match (without reading more than the header and data). */
int dvm_npy_read(const char *path, dvm_npy *out, char *err, size_t errlen);
/* Writes a v1.0 file with a header padded to a multiple of 64 bytes. */
int dvm_npy_write(const char *path, dvm_dtype dtype, int rank, const int64_t *shape, const void *data,
                  char *err, size_t errlen);
/* The same into an open stream (flushed, not closed); `path` names it in messages. */
int dvm_npy_write_stream(FILE *f, const char *path, dvm_dtype dtype, int rank, const int64_t *shape, const void *data,
                         char *err, size_t errlen);
void dvm_npy_free(dvm_npy *a);

#endif
