/* lex.h: the .dvk lexer. It turns the whole source into one token array (in the arena) with
 * Python-style NEWLINE / INDENT / DEDENT tokens, and interns every identifier to a small
 * integer so that the checker resolves names without string compares. */
#ifndef DVM_LEX_H
#define DVM_LEX_H
#include <stddef.h>
#include <stdint.h>
#include "compiler/arena.h"
#include "compiler/diag.h"

enum tok_kind {
    TK_EOF, TK_NEWLINE, TK_INDENT, TK_DEDENT, TK_NAME, TK_INT, TK_FLOAT, TK_STRING,
    /* keywords (range and ndrange are names the checker reserves) */
    TK_KERNEL, TK_DEF, TK_RETURN, TK_FOR, TK_IN, TK_WHILE, TK_IF, TK_ELIF, TK_ELSE, TK_BREAK,
    TK_CONTINUE, TK_AND, TK_OR, TK_NOT, TK_TRUE, TK_FALSE, TK_PASS, TK_ASSERT,
    /* punctuation and operators */
    TK_LPAREN, TK_RPAREN, TK_LBRACK, TK_RBRACK, TK_COMMA, TK_COLON, TK_DOT, TK_ARROW,
    TK_ASSIGN, TK_PLUSEQ, TK_MINUSEQ, TK_STAREQ, TK_SLASHEQ,
    TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_DSLASH, TK_PERCENT, TK_DSTAR,
    TK_EQ, TK_NE, TK_LT, TK_LE, TK_GT, TK_GE, TK_AT,
    TK_COUNT
};

typedef struct dvm_token {
    uint8_t kind;
    int line, col;
    uint32_t off, len; /* the token's text in the source */
    int64_t ival;      /* TK_INT (0 .. 2^31; 2^31 is legal only after unary minus) */
    float fval;        /* TK_FLOAT */
    int name;          /* TK_NAME: interned id; keywords: -1 */
    const char *str;   /* TK_NAME: the interned spelling; TK_STRING: the decoded text */
} dvm_token;

typedef struct dvm_lexed {
    dvm_token *toks;
    int ntoks;
    const char **names; /* interned spellings by id */
    int nnames;
} dvm_lexed;

/* Tokens in one source: what the lexer holds at once (every later stage is bounded by it), so
 * memory stays a small multiple of the source's size. */
#define DVM_MAX_TOKENS (4 << 20)

/* Lexes src. Returns 0 on success; on errors they are reported to d and -1 is returned
 * (the token array is still terminated by TK_EOF). */
int dvm_lex(dvm_arena *a, const char *src, size_t len, dvm_diags *d, dvm_lexed *out);
/* A short description of a token for messages: "'foo'", "end of line", "end of file". */
const char *dvm_tok_desc(dvm_arena *a, const char *src, const dvm_token *t);
/* The fixed spelling of a punctuation or keyword kind ("+=", "while"), else NULL. */
const char *dvm_tok_spelling(int kind);
#endif
