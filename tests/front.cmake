# The front end (lexer, parser, checker, race check, IR dump): tests/test_front.c. Built from the
# compiler's own files so that it does not wait on the rest of the library.
add_executable(test_front tests/test_front.c compiler/lex.c compiler/parse.c compiler/check.c
               compiler/races.c compiler/ir.c compiler/arena.c compiler/diag.c)
target_include_directories(test_front PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME front COMMAND test_front)
