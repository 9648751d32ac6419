/* blob.h: the portable blob (.dvb) of a dvm_program: writer and reader (blob.c), the
 * structural verifier (verify.c) and the disassembler (disasm.c). docs/bytecode.md
 * describes the byte layout so that other tools can read and write blobs.
 *
 * Every function returns 0 on success and -1 on failure, with a message in err (always
 * NUL-terminated when errlen > 0) that names the section, kernel, variant, task or stack,
 * and index at fault. None of them prints, exits or keeps state. */
#ifndef DVM_BLOB_H
#define DVM_BLOB_H

#include <stddef.h>
#include <stdint.h>
#include "bytecode/bc.h"

#define DVM_BLOB_MAGIC "DVMB"
#define DVM_BLOB_VERSION 4u
#define DVM_BLOB_NODE_SIZE 8u
#define DVM_BLOB_NSECTIONS 11u
#define DVM_BLOB_HEADER_SIZE 128u /* magic .. section table; the sections follow */

/* Serializes a program after verifying it (an invalid program is refused, so every blob
 * written reads back). *out is malloc'd, *len its length. */
int dvm_blob_write(const dvm_program *p, void **out, size_t *len, char *err, size_t errlen);

/* Parses and verifies a blob from untrusted bytes. Rejects a wrong magic, version, node
 * size, opcode table (ops hash), length or checksum before it allocates anything; every
 * allocation is bounded by len. On success *out is malloc'd (dvm_program_free). */
int dvm_blob_read(const void *data, size_t len, dvm_program **out, char *err, size_t errlen);

/* 1 if data starts with the blob magic (to tell a .dvb from .dvk source). */
int dvm_blob_is_blob(const void *data, size_t len);

/* FNV-1a 64 of n bytes: the blob's trailing checksum covers every byte before it. */
uint64_t dvm_blob_checksum(const void *data, size_t n);

/* The full structural check (docs/bytecode.md, "What the verifier guarantees"): after it
 * succeeds no interpreter can read or write outside its buffers by following the program's
 * indices. Runs on every blob read and on freshly compiled programs. */
int dvm_verify(const dvm_program *p, char *err, size_t errlen);

/* Human-readable listing of a verified program, one line per call of out (no newline in
 * the line). Returns 0, or -1 if p is NULL. */
int dvm_disasm(const dvm_program *p, void (*out)(void *ctx, const char *line), void *ctx);

#endif
