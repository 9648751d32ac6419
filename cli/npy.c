/* npy.c: the .npy format (NumPy's NEP 1), validated field by field so that a malformed
 * file gives a message saying what is wrong and where, never a crash. */
#include "cli/npy.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static int fail(char *err, size_t errlen, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int fail(char *err, size_t errlen, const char *name, const char *fmt, ...) {
    if (err && errlen) {
        int n = snprintf(err, errlen, "%s: ", name);
        if (n < 0) n = 0;
        if ((size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* A cursor over the header dict (a Python literal). */
typedef struct hdr {
    const char *s;
    size_t n, i;
} hdr;

static void skip_ws(hdr *h) {
    while (h->i < h->n && (h->s[h->i] == ' ' || h->s[h->i] == '\t')) h->i++;
}

static int peek(hdr *h) {
    skip_ws(h);
    return h->i < h->n ? (unsigned char)h->s[h->i] : -1;
}

/* A quoted string (' or "), no escapes (none of the keys or dtypes we accept have any). */
static int parse_str(hdr *h, char *out, size_t outlen) {
    int q = peek(h);
    if (q != '\'' && q != '"') return -1;
    size_t j = ++h->i, k = 0;
    while (j < h->n && h->s[j] != q) {
        if (h->s[j] == '\\' || k + 1 >= outlen) return -1;
        out[k++] = h->s[j++];
    }
    if (j >= h->n) return -1;
    out[k] = 0;
    h->i = j + 1;
    return 0;
}

static int parse_word(hdr *h, const char *w) {
    size_t l = strlen(w);
    skip_ws(h);
    if (h->n - h->i < l || memcmp(h->s + h->i, w, l) != 0) return -1;
    char c = h->i + l < h->n ? h->s[h->i + l] : ' ';
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') return -1;
    h->i += l;
    return 0;
}

/* A shape tuple: "()", "(3,)", "(3, 4)", "(3, 4,)". 0 ok, -1 syntax, -2 too many dims,
 * -3 a dimension too large. */
static int parse_shape(hdr *h, dvm_npy *a) {
    if (peek(h) != '(') return -1;
    h->i++;
    a->rank = 0;
    int need_comma_for_one = 1;
    for (;;) {
        int c = peek(h);
        if (c == ')') {
            h->i++;
            /* "(3)" is an int in Python, not a tuple */
            if (a->rank == 1 && need_comma_for_one) return -1;
            return 0;
        }
        if (c < '0' || c > '9') return -1;
        int64_t v = 0;
        while (h->i < h->n && h->s[h->i] >= '0' && h->s[h->i] <= '9') {
            v = v * 10 + (h->s[h->i] - '0');
            if (v > DVM_NPY_MAX_COUNT) return -3;
            h->i++;
        }
        if (a->rank >= DVM_NPY_MAX_RANK) return -2;
        a->shape[a->rank++] = v;
        c = peek(h);
        if (c == ',') {
            h->i++;
            need_comma_for_one = 0;
        } else if (c != ')') {
            return -1;
        }
    }
}

static void shape_str(const dvm_npy *a, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int k = 0; k < a->rank && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, k ? ", %lld" : "%lld", (long long)a->shape[k]);
    if (n < len) snprintf(buf + n, len - n, a->rank == 1 ? ",)" : ")");
}

/* Parses the magic, version and header dict at the start of b (len bytes, at least the
 * whole header); sets out's dtype, rank, shape and count, *dstart to the data's offset and
 * *need to its byte size. The element count and byte size are checked, never overflowed. */
static int parse_header(const unsigned char *b, size_t len, const char *name, dvm_npy *out, size_t *dstart, size_t *need,
                        char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(b, npy_magic, 6) != 0)
        return fail(err, errlen, name, "not a .npy file (missing the \\x93NUMPY magic)");
    unsigned major = b[6], minor = b[7];
    size_t hlen, hstart;
    if (major == 1 && minor == 0) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hstart = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (len < 12) return fail(err, errlen, name, "truncated .npy header (%zu bytes)", len);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hstart = 12;
    } else {
        return fail(err, errlen, name, "unsupported .npy format version %u.%u (expected 1.0, 2.0 or 3.0)", major, minor);
    }
    if (hlen > DVM_NPY_MAX_HEADER)
        return fail(err, errlen, name, "header of %zu bytes is longer than the limit of %d bytes", hlen, DVM_NPY_MAX_HEADER);
    if (hlen > len - hstart)
        return fail(err, errlen, name, "header length %zu runs past the end of the file (%zu bytes)", hlen, len);
    if (hlen == 0 || b[hstart + hlen - 1] != '\n')
        return fail(err, errlen, name, "header does not end with a newline");
    hdr h = {(const char *)b + hstart, hlen - 1, 0};
    char descr[32] = "", key[32];
    int have_descr = 0, have_fortran = 0, have_shape = 0, fortran = 0;
    if (peek(&h) != '{') return fail(err, errlen, name, "header is not a dict (expected '{' at offset %zu)", hstart + h.i);
    h.i++;
    for (;;) {
        if (peek(&h) == '}') {
            h.i++;
            break;
        }
        size_t at = hstart + h.i;
        if (parse_str(&h, key, sizeof key))
            return fail(err, errlen, name, "header: expected a quoted key or '}' at offset %zu", at);
        if (peek(&h) != ':') return fail(err, errlen, name, "header: expected ':' after '%s'", key);
        h.i++;
        if (!strcmp(key, "descr")) {
            if (have_descr++) return fail(err, errlen, name, "header: duplicate key 'descr'");
            if (parse_str(&h, descr, sizeof descr))
                return fail(err, errlen, name, "header: 'descr' must be a dtype string such as '<f4'");
        } else if (!strcmp(key, "fortran_order")) {
            if (have_fortran++) return fail(err, errlen, name, "header: duplicate key 'fortran_order'");
            if (!parse_word(&h, "False")) fortran = 0;
            else if (!parse_word(&h, "True")) fortran = 1;
            else return fail(err, errlen, name, "header: 'fortran_order' must be True or False");
        } else if (!strcmp(key, "shape")) {
            if (have_shape++) return fail(err, errlen, name, "header: duplicate key 'shape'");
            int r = parse_shape(&h, out);
            if (r == -2) return fail(err, errlen, name, "header: shape has more than %d dimensions", DVM_NPY_MAX_RANK);
            if (r == -3) return fail(err, errlen, name, "header: a shape dimension is too large");
            if (r) return fail(err, errlen, name, "header: 'shape' must be a tuple of non-negative integers such as (3, 4)");
        } else {
            return fail(err, errlen, name, "header: unexpected key '%s' (expected 'descr', 'fortran_order', 'shape')", key);
        }
        int c = peek(&h);
        if (c == ',') {
            h.i++;
        } else if (c != '}') {
            return fail(err, errlen, name, "header: expected ',' or '}' at offset %zu", hstart + h.i);
        }
    }
    skip_ws(&h);
    if (h.i != h.n) return fail(err, errlen, name, "header: unexpected text after the dict at offset %zu", hstart + h.i);
    if (!have_descr) return fail(err, errlen, name, "header: missing key 'descr'");
    if (!have_fortran) return fail(err, errlen, name, "header: missing key 'fortran_order'");
    if (!have_shape) return fail(err, errlen, name, "header: missing key 'shape'");
    if (!strcmp(descr, "<f4")) {
        out->dtype = DVM_F32;
    } else if (!strcmp(descr, "<i4")) {
        out->dtype = DVM_I32;
    } else if (!strcmp(descr, ">f4") || !strcmp(descr, ">i4")) {
        return fail(err, errlen, name, "dtype '%s' is big-endian (expected little-endian '<f4' or '<i4')", descr);
    } else if (descr[0] == '|' && descr[1] && !strcmp(descr + 2, "4")) {
        return fail(err, errlen, name, "dtype '%s': byte order '|' is not valid for a 4-byte type (expected '<f4' or '<i4')", descr);
    } else {
        return fail(err, errlen, name, "unsupported dtype '%s' (expected '<f4' for f32 or '<i4' for i32)", descr);
    }
    if (fortran) return fail(err, errlen, name, "fortran_order is True (expected a C-order array; use numpy.ascontiguousarray)");
    /* checked: each dimension is at most 2^40, but a product of two would overflow int64 */
    int64_t count = 1;
    int empty = 0;
    for (int k = 0; k < out->rank; k++) empty |= out->shape[k] == 0;
    for (int k = 0; k < out->rank && !empty; k++) {
        if (count > DVM_NPY_MAX_COUNT / out->shape[k]) {
            char sh[160];
            shape_str(out, sh, sizeof sh);
            return fail(err, errlen, name, "shape %s is too large (more than 2^40 elements)", sh);
        }
        count *= out->shape[k];
    }
    out->count = empty ? 0 : count;
    if ((uint64_t)out->count > (uint64_t)SIZE_MAX / 4u)
        return fail(err, errlen, name, "shape of %lld elements is too large for this machine's memory", (long long)out->count);
    *dstart = hstart + hlen;
    *need = (size_t)out->count * 4u;
    return 0;
}

/* The data size must be exactly what the shape says. */
static int check_data_size(const dvm_npy *a, const char *name, size_t need, uint64_t have, char *err, size_t errlen) {
    if (have == need) return 0;
    char sh[160];
    shape_str(a, sh, sizeof sh);
    return fail(err, errlen, name, "%s data: shape %s of '%s' needs %zu bytes but the file holds %llu",
                have < need ? "truncated" : "extra bytes after the", sh, a->dtype == DVM_F32 ? "<f4" : "<i4", need,
                (unsigned long long)have);
}

int dvm_npy_parse(const void *buf, size_t len, const char *name, dvm_npy *out, char *err, size_t errlen) {
    const unsigned char *b = (const unsigned char *)buf;
    size_t dstart = 0, need = 0;
    if (parse_header(b, len, name, out, &dstart, &need, err, errlen)) return -1;
    if (check_data_size(out, name, need, len - dstart, err, errlen)) return -1;
    out->data = malloc(need ? need : 1);
    if (!out->data) return fail(err, errlen, name, "out of memory");
    memcpy(out->data, b + dstart, need);
    return 0;
}

/* Reads only what the header says: the header (at most DVM_NPY_MAX_HEADER bytes), then
 * exactly the data, after checking it against the file's size; never the whole file blindly. */
int dvm_npy_read(const char *path, dvm_npy *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, path, "cannot open: %s", strerror(errno));
    unsigned char pre[12];
    size_t n = fread(pre, 1, sizeof pre, f), dstart = 0, need = 0;
    unsigned char *head = NULL;
    int rc = -1;
    if (ferror(f)) {
        fail(err, errlen, path, "read error: %s", strerror(errno));
        goto done;
    }
    /* the header's length, from the prefix (parse_header says what is wrong with a bad one) */
    size_t hlen = n >= 10 ? ((size_t)pre[8] | (size_t)pre[9] << 8) : 0, hstart = 10;
    if (n >= 12 && pre[6] != 1) {
        hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        hstart = 12;
    }
    if (hlen > DVM_NPY_MAX_HEADER) hlen = DVM_NPY_MAX_HEADER + 1; /* parse_header refuses it */
    size_t hn = n < 10 ? n : hstart + (hlen <= DVM_NPY_MAX_HEADER ? hlen : 0);
    if (hn < n) hn = n;
    head = (unsigned char *)malloc(hn ? hn : 1);
    if (!head) {
        fail(err, errlen, path, "out of memory");
        goto done;
    }
    memcpy(head, pre, n);
    size_t got = n + (hn > n ? fread(head + n, 1, hn - n, f) : 0);
    if (ferror(f)) {
        fail(err, errlen, path, "read error: %s", strerror(errno));
        goto done;
    }
    if (parse_header(head, got, path, out, &dstart, &need, err, errlen)) goto done;
    /* the file must hold exactly the data: a regular file by its size, anything else by reading */
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) &&
        check_data_size(out, path, need, (uint64_t)sb.st_size < dstart ? 0 : (uint64_t)sb.st_size - dstart, err, errlen))
        goto done;
    if (got != dstart && fseek(f, (long)dstart, SEEK_SET) != 0) {
        fail(err, errlen, path, "cannot seek to the data: %s", strerror(errno));
        goto done;
    }
    out->data = malloc(need ? need : 1);
    if (!out->data) {
        fail(err, errlen, path, "out of memory (%zu bytes of data)", need);
        goto done;
    }
    size_t r = need ? fread(out->data, 1, need, f) : 0;
    if (ferror(f)) {
        fail(err, errlen, path, "read error: %s", strerror(errno));
        goto done;
    }
    if (r < need) {
        check_data_size(out, path, need, r, err, errlen);
        goto done;
    }
    if (fgetc(f) != EOF) {
        check_data_size(out, path, need, (uint64_t)need + 1, err, errlen);
        goto done;
    }
    rc = 0;
done:
    if (rc) dvm_npy_free(out);
    free(head);
    fclose(f);
    return rc;
}

int dvm_npy_write_stream(FILE *f, const char *path, dvm_dtype dtype, int rank, const int64_t *shape, const void *data,
                         char *err, size_t errlen) {
    if (rank < 0 || rank > DVM_NPY_MAX_RANK) return fail(err, errlen, path, "bad rank %d", rank);
    char dict[1024];
    size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                                dtype == DVM_F32 ? "<f4" : "<i4");
    int64_t count = 1;
    for (int k = 0; k < rank; k++) {
        if (shape[k] < 0 || (shape[k] && count > DVM_NPY_MAX_COUNT / shape[k]))
            return fail(err, errlen, path, "shape dimension %d (%lld) is negative or makes the array too large", k,
                        (long long)shape[k]);
        n += (size_t)snprintf(dict + n, sizeof dict - n, k ? ", %lld" : "%lld", (long long)shape[k]);
        count *= shape[k];
    }
    n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }", rank == 1 ? "," : "");
    /* pad with spaces so that magic + length + dict + '\n' is a multiple of 64 */
    size_t total = (10 + n + 1 + 63) / 64 * 64;
    size_t hlen = total - 10;
    if (hlen > 65535 || total > sizeof dict) return fail(err, errlen, path, "header too long");
    unsigned char head[1024];
    memcpy(head, npy_magic, 6);
    head[6] = 1;
    head[7] = 0;
    head[8] = (unsigned char)(hlen & 0xff);
    head[9] = (unsigned char)(hlen >> 8);
    memcpy(head + 10, dict, n);
    memset(head + 10 + n, ' ', hlen - n - 1);
    head[total - 1] = '\n';
    int ok = fwrite(head, 1, total, f) == total;
    if (ok && count > 0) ok = fwrite(data, 4, (size_t)count, f) == (size_t)count;
    if (ok) ok = fflush(f) == 0;
    if (!ok) return fail(err, errlen, path, "write failed: %s", strerror(errno));
    return 0;
}

int dvm_npy_write(const char *path, dvm_dtype dtype, int rank, const int64_t *shape, const void *data,
                  char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f) return fail(err, errlen, path, "cannot create: %s", strerror(errno));
    int rc = dvm_npy_write_stream(f, path, dtype, rank, shape, data, err, errlen);
    if (fclose(f) != 0 && rc == 0) rc = fail(err, errlen, path, "write failed: %s", strerror(errno));
    return rc;
}

void dvm_npy_free(dvm_npy *a) {
    if (a) {
        free(a->data);
        a->data = NULL;
    }
}
