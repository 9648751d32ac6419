/* lex.c: .dvk lexer (Python-style indentation, comments, brackets continue lines). */
#include "compiler/lex.h"
#include "bytecode/hash.h"
#include <stdlib.h>
#include <string.h>

static const char *const kw_text[] = {"kernel", "def", "return", "for", "in", "while", "if", "elif",
                                      "else", "break", "continue", "and", "or", "not", "True",
                                      "False", "pass", "assert"};

const char *dvm_tok_spelling(int kind) {
    static const char *const punct[] = {"(", ")", "[", "]", ",", ":", ".", "->", "=", "+=", "-=", "*=",
                                        "/=", "+", "-", "*", "/", "//", "%", "**", "==", "!=", "<",
                                        "<=", ">", ">=", "@"};
    if (kind >= TK_KERNEL && kind <= TK_ASSERT) return kw_text[kind - TK_KERNEL];
    if (kind >= TK_LPAREN && kind < TK_COUNT) return punct[kind - TK_LPAREN];
    return NULL;
}

const char *dvm_tok_desc(dvm_arena *a, const char *src, const dvm_token *t) {
    switch (t->kind) {
    case TK_EOF: return "end of file";
    case TK_NEWLINE: return "end of line";
    case TK_INDENT: return "an indented block";
    case TK_DEDENT: return "the end of the block";
    case TK_STRING: return "a string";
    default: {
        unsigned n = t->len > 40 ? 40 : t->len;
        return dvm_arena_printf(a, "'%.*s'", (int)n, src + t->off);
    }
    }
}

/* ---- identifier interning: open addressing over the arena ---- */
typedef struct intern_tab {
    dvm_arena *a;
    int *slot; /* id + 1, 0 = empty */
    unsigned cap;
    const char **names;
    int n, ncap;
} intern_tab;

static uint32_t hash_bytes(const char *s, size_t n) { return (uint32_t)dvm_fnv1a(DVM_FNV_BASIS, s, n); }

static int intern(intern_tab *t, const char *s, size_t n, const char **spelling) {
    if ((unsigned)(t->n + 1) * 2 > t->cap) {
        unsigned cap = t->cap ? t->cap * 2 : 256;
        int *slot = dvm_arena_alloc(t->a, cap * sizeof(int));
        if (!slot) return -1;
        for (unsigned i = 0; i < t->cap; i++)
            if (t->slot[i]) {
                const char *nm = t->names[t->slot[i] - 1];
                unsigned h = hash_bytes(nm, strlen(nm)) & (cap - 1);
                while (slot[h]) h = (h + 1) & (cap - 1);
                slot[h] = t->slot[i];
            }
        t->slot = slot;
        t->cap = cap;
    }
    unsigned h = hash_bytes(s, n) & (t->cap - 1);
    while (t->slot[h]) {
        const char *nm = t->names[t->slot[h] - 1];
        if (strncmp(nm, s, n) == 0 && nm[n] == 0) {
            *spelling = nm;
            return t->slot[h] - 1;
        }
        h = (h + 1) & (t->cap - 1);
    }
    if (t->n == t->ncap) {
        int nc = t->ncap ? t->ncap * 2 : 64;
        const char **nn = dvm_arena_grow(t->a, t->names, (size_t)t->ncap * sizeof *nn, (size_t)nc * sizeof *nn);
        if (!nn) return -1;
        t->names = nn;
        t->ncap = nc;
    }
    char *copy = dvm_arena_strndup(t->a, s, n);
    if (!copy) return -1;
    t->names[t->n] = copy;
    t->slot[h] = ++t->n;
    *spelling = copy;
    return t->n - 1;
}

typedef struct lexer {
    dvm_arena *a;
    dvm_diags *d;
    const char *src;
    size_t len, pos;
    int line;
    size_t line_start;
    dvm_token *toks;
    int n, cap;
    int errors;
    int oom; /* an allocation failed: lexing stops and says so (never a token silently lost) */
    int too_many; /* DVM_MAX_TOKENS reached: lexing stops */
    intern_tab names;
} lexer;

static dvm_token *emit(lexer *L, int kind, size_t off, size_t len) {
    if (L->n >= DVM_MAX_TOKENS + 128) return NULL; /* past the limit, only the closing tokens (at most 102) come */
    if (L->n == DVM_MAX_TOKENS && kind != TK_NEWLINE && kind != TK_DEDENT && kind != TK_EOF && !L->too_many) {
        L->too_many = 1;
        L->errors++;
        dvm_diag(L->d, L->line, (int)(off - L->line_start) + 1, "source too large: more than %d tokens", DVM_MAX_TOKENS);
        return NULL;
    }
    if (L->n == L->cap) {
        int nc = L->cap ? (L->cap < (DVM_MAX_TOKENS + 128) / 2 ? L->cap * 2 : DVM_MAX_TOKENS + 128) : 256;
        /* grown on the C heap (realloc extends in place or frees the old block) and copied to
           the arena once, at its final size: growing in the arena abandoned every smaller
           copy, twice the tokens' memory for the whole compilation */
        dvm_token *t = realloc(L->toks, (size_t)nc * sizeof *t);
        if (!t) {
            L->oom = 1;
            return NULL;
        }
        L->toks = t;
        L->cap = nc;
    }
    dvm_token *t = &L->toks[L->n++];
    memset(t, 0, sizeof *t);
    t->kind = (uint8_t)kind;
    t->line = L->line;
    t->col = (int)(off - L->line_start) + 1;
    t->off = (uint32_t)off;
    t->len = (uint32_t)len;
    t->name = -1;
    return t;
}

static void lerr(lexer *L, size_t off, const char *msg, const char *arg) {
    L->errors++;
    dvm_diag(L->d, L->line, (int)(off - L->line_start) + 1, msg, arg);
}

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

static int keyword(const char *s, size_t n) {
    for (size_t i = 0; i < sizeof kw_text / sizeof *kw_text; i++)
        if (strlen(kw_text[i]) == n && memcmp(kw_text[i], s, n) == 0) return TK_KERNEL + (int)i;
    return -1;
}

static void lex_number(lexer *L) {
    const char *s = L->src;
    size_t b = L->pos, p = b;
    int is_float = 0;
    while (p < L->len && is_digit(s[p])) p++;
    if (p < L->len && s[p] == '.') {
        is_float = 1;
        p++;
        while (p < L->len && is_digit(s[p])) p++;
    }
    if (p < L->len && (s[p] == 'e' || s[p] == 'E')) {
        size_t q = p + 1;
        if (q < L->len && (s[q] == '+' || s[q] == '-')) q++;
        if (q < L->len && is_digit(s[q])) {
            while (q < L->len && is_digit(s[q])) q++;
            p = q;
            is_float = 1;
        } else {
            L->pos = p + 1;
            lerr(L, b, "malformed number: the exponent of '%s' has no digits", dvm_arena_strndup(L->a, s + b, q - b));
            return;
        }
    }
    if (p < L->len && (is_alpha(s[p]) || is_digit(s[p]) || s[p] == '.')) {
        size_t q = p;
        while (q < L->len && (is_alpha(s[q]) || is_digit(s[q]) || s[q] == '.')) q++;
        L->pos = q;
        lerr(L, b, "malformed number '%s'", dvm_arena_strndup(L->a, s + b, q - b));
        return;
    }
    L->pos = p;
    dvm_token *t = emit(L, is_float ? TK_FLOAT : TK_INT, b, p - b);
    if (!t) return;
    if (is_float) {
        char buf[128];
        size_t n = p - b < sizeof buf - 1 ? p - b : sizeof buf - 1;
        memcpy(buf, s + b, n);
        buf[n] = 0;
        t->fval = strtof(buf, NULL);
        if (t->fval > 3.4028235e38f || t->fval < -3.4028235e38f)
            lerr(L, b, "float literal %s is out of the f32 range", buf);
    } else {
        int64_t v = 0;
        for (size_t i = b; i < p; i++) {
            v = v * 10 + (s[i] - '0');
            if (v > ((int64_t)1 << 40)) v = (int64_t)1 << 40; /* saturate: only the range check needs it */
        }
        t->ival = v;
        if (v > 2147483648LL)
            lerr(L, b, "integer literal %s is out of the i32 range (at most 2147483647)",
                 p - b > 40 ? dvm_arena_printf(L->a, "%.20s...(%zu digits)", s + b, p - b) : dvm_arena_strndup(L->a, s + b, p - b));
    }
}

static void lex_string(lexer *L) {
    const char *s = L->src;
    size_t b = L->pos;
    char q = s[b];
    size_t p = b + 1;
    char *buf;
    size_t n = 0;
    /* decode into a buffer as long as the rest of the line at most */
    size_t e = p;
    while (e < L->len && s[e] != '\n') e++;
    buf = dvm_arena_alloc(L->a, e - p + 1);
    if (!buf) {
        L->oom = 1;
        return;
    }
    for (;;) {
        if (p >= L->len || s[p] == '\n' || s[p] == '\r') {
            L->pos = p;
            lerr(L, b, "unterminated string%s", "");
            return;
        }
        char c = s[p++];
        if (c == q) break;
        if (c == '\\' && p < L->len && s[p] != '\n') {
            char x = s[p++];
            c = x == 'n' ? '\n' : x == 't' ? '\t' : x == '0' ? ' ' : x;
        }
        buf[n++] = c;
    }
    buf[n] = 0;
    L->pos = p;
    dvm_token *t = emit(L, TK_STRING, b, p - b);
    if (t) t->str = buf;
}

/* The operator at src[p], longest match first; returns its length or 0. */
static int lex_op(const char *s, size_t p, size_t len, int *kind) {
    char c = s[p], c1 = p + 1 < len ? s[p + 1] : 0, c2 = p + 2 < len ? s[p + 2] : 0;
    (void)c2;
    switch (c) {
    case '(': *kind = TK_LPAREN; return 1;
    case ')': *kind = TK_RPAREN; return 1;
    case '[': *kind = TK_LBRACK; return 1;
    case ']': *kind = TK_RBRACK; return 1;
    case ',': *kind = TK_COMMA; return 1;
    case ':': *kind = TK_COLON; return 1;
    case '.': *kind = TK_DOT; return 1;
    case '%': *kind = TK_PERCENT; return 1;
    case '@': *kind = TK_AT; return 1;
    case '+': if (c1 == '=') { *kind = TK_PLUSEQ; return 2; } *kind = TK_PLUS; return 1;
    case '-':
        if (c1 == '=') { *kind = TK_MINUSEQ; return 2; }
        if (c1 == '>') { *kind = TK_ARROW; return 2; }
        *kind = TK_MINUS; return 1;
    case '*':
        if (c1 == '*') { *kind = TK_DSTAR; return 2; }
        if (c1 == '=') { *kind = TK_STAREQ; return 2; }
        *kind = TK_STAR; return 1;
    case '/':
        if (c1 == '/') { *kind = TK_DSLASH; return 2; }
        if (c1 == '=') { *kind = TK_SLASHEQ; return 2; }
        *kind = TK_SLASH; return 1;
    case '=': if (c1 == '=') { *kind = TK_EQ; return 2; } *kind = TK_ASSIGN; return 1;
    case '!': if (c1 == '=') { *kind = TK_NE; return 2; } return 0;
    case '<': if (c1 == '=') { *kind = TK_LE; return 2; } *kind = TK_LT; return 1;
    case '>': if (c1 == '=') { *kind = TK_GE; return 2; } *kind = TK_GT; return 1;
    default: return 0;
    }
}

#define MAX_INDENT 100
#define MAX_BRACKETS 200

int dvm_lex(dvm_arena *a, const char *src, size_t len, dvm_diags *d, dvm_lexed *out) {
    lexer L;
    memset(&L, 0, sizeof L);
    L.a = a;
    L.d = d;
    L.src = src;
    L.len = len;
    L.line = 1;
    L.names.a = a;
    int indent[MAX_INDENT], nindent = 1;
    indent[0] = 0;
    size_t bracket_off[MAX_BRACKETS];
    int bracket_line[MAX_BRACKETS], bracket_col[MAX_BRACKETS], depth = 0;
    int at_line_start = 1, line_has_tokens = 0;

    while (L.pos < len && !L.oom && !L.too_many) {
        char c = src[L.pos];
        if (at_line_start && depth == 0) {
            /* measure the indentation of a new logical line */
            size_t p = L.pos;
            int width = 0, tab = 0;
            while (p < len && (src[p] == ' ' || src[p] == '\t' || src[p] == '\f')) {
                if (src[p] == '\t' && !tab) {
                    tab = 1;
                    lerr(&L, p, "tabs are not allowed in indentation; indent with spaces%s", "");
                }
                width++;
                p++;
            }
            L.pos = p;
            at_line_start = 0;
            if (p >= len) break;
            if (src[p] == '#' || src[p] == '\n' || src[p] == '\r') continue; /* blank line */
            if (width > indent[nindent - 1]) {
                if (nindent == MAX_INDENT) {
                    lerr(&L, p, "blocks are nested too deeply%s", "");
                    break;
                }
                indent[nindent++] = width;
                emit(&L, TK_INDENT, p, 0);
            } else if (width < indent[nindent - 1]) {
                while (nindent > 1 && width < indent[nindent - 1]) {
                    nindent--;
                    emit(&L, TK_DEDENT, p, 0);
                }
                if (width != indent[nindent - 1])
                    lerr(&L, p, "this line's indentation does not match any enclosing block%s", "");
            }
            continue;
        }
        if (c == '\n') {
            if (depth == 0 && line_has_tokens) emit(&L, TK_NEWLINE, L.pos, 0);
            if (depth == 0) line_has_tokens = 0;
            L.pos++;
            L.line++;
            L.line_start = L.pos;
            at_line_start = 1;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
            L.pos++;
            continue;
        }
        if (c == '#') {
            while (L.pos < len && src[L.pos] != '\n') L.pos++;
            continue;
        }
        if (c == '\\' && L.pos + 1 < len && (src[L.pos + 1] == '\n' || src[L.pos + 1] == '\r')) {
            /* explicit line joining, as in Python */
            L.pos++;
            if (src[L.pos] == '\r') L.pos++;
            if (L.pos < len && src[L.pos] == '\n') L.pos++;
            L.line++;
            L.line_start = L.pos;
            continue;
        }
        line_has_tokens = 1;
        if (is_alpha(c)) {
            size_t b = L.pos;
            while (L.pos < len && (is_alpha(src[L.pos]) || is_digit(src[L.pos]))) L.pos++;
            int kw = keyword(src + b, L.pos - b);
            dvm_token *t = emit(&L, kw >= 0 ? kw : TK_NAME, b, L.pos - b);
            if (!t) break;
            if (kw < 0) {
                t->name = intern(&L.names, src + b, L.pos - b, &t->str);
                if (t->name < 0) {
                    L.oom = 1;
                    break;
                }
            }
            continue;
        }
        if (is_digit(c) || (c == '.' && L.pos + 1 < len && is_digit(src[L.pos + 1]))) {
            lex_number(&L);
            continue;
        }
        if (c == '"' || c == '\'') {
            lex_string(&L);
            continue;
        }
        int kind = 0, n = lex_op(src, L.pos, len, &kind);
        if (n) {
            if (kind == TK_LPAREN || kind == TK_LBRACK) {
                if (depth == MAX_BRACKETS) {
                    lerr(&L, L.pos, "brackets are nested too deeply%s", "");
                    break;
                }
                bracket_off[depth] = L.pos;
                bracket_line[depth] = L.line;
                bracket_col[depth] = (int)(L.pos - L.line_start) + 1;
                depth++;
            } else if ((kind == TK_RPAREN || kind == TK_RBRACK) && depth > 0) {
                depth--;
            }
            emit(&L, kind, L.pos, (size_t)n);
            L.pos += (size_t)n;
            continue;
        }
        if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f) {
            char ch[2] = {c, 0};
            lerr(&L, L.pos, "unexpected character '%s'", ch);
        } else {
            char hex[8];
            static const char hx[] = "0123456789abcdef";
            hex[0] = '0'; hex[1] = 'x';
            hex[2] = hx[((unsigned char)c) >> 4];
            hex[3] = hx[((unsigned char)c) & 15];
            hex[4] = 0;
            lerr(&L, L.pos, "unexpected byte %s (only ASCII is allowed outside strings and comments)", hex);
        }
        L.pos++;
        if (L.errors > 50) break;
    }
    if (depth > 0) {
        L.errors++;
        const char *open = src[bracket_off[depth - 1]] == '(' ? "(" : "[";
        dvm_diag(d, bracket_line[depth - 1], bracket_col[depth - 1], "'%s' was never closed", open);
    }
    if (line_has_tokens) emit(&L, TK_NEWLINE, L.pos, 0);
    while (nindent > 1) {
        nindent--;
        emit(&L, TK_DEDENT, L.pos, 0);
    }
    emit(&L, TK_EOF, L.pos, 0);
    dvm_token *kept = L.oom || !L.n ? NULL : dvm_arena_alloc(a, (size_t)L.n * sizeof *kept);
    if (kept) memcpy(kept, L.toks, (size_t)L.n * sizeof *kept);
    else if (L.n) L.oom = 1;
    free(L.toks);
    L.toks = kept;
    if (L.oom) { /* the tokens are incomplete: no other error may come from them */
        dvm_diag(d, L.line, (int)(L.pos - L.line_start) + 1, "out of memory while reading the source");
        out->toks = NULL;
        out->ntoks = 0;
        return -1;
    }
    out->toks = L.toks;
    out->ntoks = L.n;
    out->names = L.names.names;
    out->nnames = L.names.n;
    return L.errors ? -1 : 0;
}
