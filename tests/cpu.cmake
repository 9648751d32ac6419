# CPU backend, interpreter core and adstack heap tests (owned by the cpu helper).
add_executable(test_interp tests/test_interp.c)
target_link_libraries(test_interp PRIVATE dvm)
target_include_directories(test_interp PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME interp COMMAND test_interp)

add_executable(test_heap tests/test_heap.c)
target_link_libraries(test_heap PRIVATE dvm)
target_include_directories(test_heap PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME heap COMMAND test_heap)

# Micro-benchmark: interpreter against the same loops compiled natively (not a test).
add_executable(bench_interp tests/bench_interp.c)
target_link_libraries(bench_interp PRIVATE dvm)
target_include_directories(bench_interp PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
