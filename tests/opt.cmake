# Bytecode optimizer tests: what it removes and keeps, verified and run against the no_opt option.
add_executable(test_opt tests/test_opt.c)
target_link_libraries(test_opt PRIVATE dvm)
target_include_directories(test_opt PRIVATE ${CMAKE_SOURCE_DIR})
add_test(NAME opt COMMAND test_opt)

# Equivalent spellings (literals and parameters, commuted operands, for and while) get the same
# code and bit-equal results (issue 26).
add_executable(test_spell tests/test_spell.c)
target_link_libraries(test_spell PRIVATE dvm)
target_include_directories(test_spell PRIVATE ${CMAKE_SOURCE_DIR})
add_test(NAME spell COMMAND test_spell)
