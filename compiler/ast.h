/* ast.h: the syntax tree that parse.c builds and the checker (check.c, lower.c) lowers to the IR. It mirrors the
 * source: no names are resolved and no types are known yet. Everything lives in the arena. */
#ifndef DVM_AST_H
#define DVM_AST_H
#include <stdint.h>
#include "compiler/arena.h"
#include "compiler/diag.h"
#include "compiler/lex.h"

enum ast_expr_kind {
    AE_INT, AE_FLOAT, AE_BOOL, AE_STRING, AE_NAME,
    AE_UNARY,   /* op (TK_MINUS, TK_PLUS, TK_NOT) a */
    AE_BINARY,  /* a op b, op a token kind (TK_PLUS ... TK_DSTAR) */
    AE_COMPARE, /* args[0] ops[0] args[1] ops[1] args[2] ... (a chain) */
    AE_AND, AE_OR, /* a, b */
    AE_COND,    /* a if b else c */
    AE_CALL,    /* name(args) */
    AE_INDEX,   /* a[args] */
    AE_ATTR,    /* a.name */
    AE_TUPLE    /* args (only as a returned value: return a, b) */
};

/* Vector, matrix and tuple types, beside dvm_vtype's scalars (check_vec.c lowers every vector and
 * matrix to its f32 components; none of them reaches the IR). */
enum {
    DVM_T_VEC2 = 16, DVM_T_VEC3, DVM_T_VEC4,
    DVM_T_MAT2 = 20, DVM_T_MAT3, DVM_T_MAT4,
    DVM_T_TUPLE = 24
};
#define DVM_MAX_TUPLE 8

typedef struct ast_expr {
    uint8_t kind;
    uint8_t op;
    int line, col;
    uint32_t off, end; /* source span [off, end) */
    int64_t ival;      /* AE_INT, AE_BOOL */
    float fval;        /* AE_FLOAT */
    int name;          /* AE_NAME, AE_CALL, AE_ATTR: interned id */
    const char *str;   /* AE_NAME, AE_CALL, AE_ATTR: spelling; AE_STRING: text */
    struct ast_expr *a, *b, *c;
    struct ast_expr **args;
    uint8_t *ops;
    int nargs;
} ast_expr;

typedef struct ast_stmt ast_stmt;
typedef struct ast_block {
    ast_stmt **s;
    int n;
} ast_block;

enum ast_stmt_kind {
    AS_ASSIGN,   /* target = value */
    AS_AUG,      /* target op= value (op: TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH) */
    AS_EXPR,     /* value (a call) */
    AS_IF,       /* if value: body else: orelse (elif: an AS_IF alone in orelse) */
    AS_WHILE,    /* while value: body */
    AS_FOR,      /* for targets in value: body */
    AS_BREAK, AS_CONTINUE, AS_PASS,
    AS_ASSERT,   /* assert value[, msg] */
    AS_RETURN    /* return value */
};

struct ast_stmt {
    uint8_t kind;
    uint8_t op;
    int line, col;
    ast_expr *target, *value;
    ast_expr **targets; /* AS_FOR: the loop variables (AE_NAME); AS_ASSIGN of a tuple: the targets */
    int ntargets;
    const char *msg;    /* AS_ASSERT: the message, or NULL */
    const char *text;   /* AS_ASSERT: the condition's source text */
    int is_elif;        /* AS_IF that came from `elif` */
    ast_block body, orelse;
};

typedef struct ast_dim {
    int is_sym;
    int name;          /* symbol: interned id */
    const char *str;
    int64_t value;     /* literal extent */
    int line, col;
} ast_dim;

typedef struct ast_param {
    int name;
    const char *str;
    int line, col;
    uint8_t type;     /* DVM_T_F32, DVM_T_I32, DVM_T_BOOL, DVM_T_VEC2.. DVM_T_MAT4 (arrays: the element) */
    int is_array;
    int rank;
    ast_dim dim[4];
} ast_param;

typedef struct ast_func {
    int is_kernel;
    int name;
    const char *str;
    int line, col;
    ast_param *params;
    int nparams;
    uint8_t ret;      /* helpers: the return type (DVM_T_TUPLE: rets) */
    uint8_t rets[DVM_MAX_TUPLE];
    int nrets;
    ast_block body;
} ast_func;

typedef struct ast_module {
    ast_func **funcs;
    int nfuncs;
} ast_module;

/* parse.c: parses the tokens; errors go to d (several per run; the module is still returned
 * with the declarations that parsed). */
ast_module *dvm_parse(dvm_arena *a, const char *src, const dvm_lexed *lx, dvm_diags *d);
#endif
