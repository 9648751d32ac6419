add_executable(test_autodiff tests/test_autodiff.c)
target_link_libraries(test_autodiff PRIVATE dvm)
target_include_directories(test_autodiff PRIVATE ${CMAKE_SOURCE_DIR})
add_test(NAME autodiff COMMAND test_autodiff)
