# The tape of launches (vm/tape.c): 1000 mass-spring steps, an unbounded tape against a
# budgeted one (binomial checkpointing) and finite differences; on the CPU, and on Vulkan and
# CUDA where a device exists (77: skipped, never passed).
add_executable(test_tape tests/test_tape.c)
target_link_libraries(test_tape PRIVATE dvm m)
foreach(be cpu vulkan cuda hip)
  add_test(NAME tape_${be} COMMAND test_tape ${be})
  set_tests_properties(tape_${be} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
# lavapipe takes milliseconds a launch: 200 steps (about 2600 launches with the budget's)
set_tests_properties(tape_vulkan PROPERTIES ENVIRONMENT "" )
set_property(TEST tape_vulkan PROPERTY COMMAND test_tape vulkan 200)
set_tests_properties(tape_vulkan PROPERTIES LABELS nosan)
