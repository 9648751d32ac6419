# The kernel corpus through the dvm command: forward, gradients (finite differences and
# tangent/adjoint agreement), runtime errors, on the CPU and, where a device exists, Vulkan.
# A backend with no device exits 77: ctest reports the test as skipped, never as passed.
# The CPU runs start one dvm process per command (the plain command line); the device
# backends' runs (and grad_fuzz's, below) pass --batch: their commands go through `dvm batch` (tests/suite/dvmbatch.py),
# which opens the device once per process instead of once per command (lavapipe spends about
# a second building the interpreter's pipeline at each open), with the same checks.
# Every run of the corpus keeps its grad references (finite differences in Python, most of a
# grad run's time) in one folder of the build (run_suite.py --refs, dvmtest.RefCache): the
# first grad run computes them, the others read them.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(DVM_SUITE ${CMAKE_CURRENT_SOURCE_DIR}/tests/suite/run_suite.py --refs ${CMAKE_CURRENT_BINARY_DIR}/suite_refs)
foreach(mode forward grad errors)
  add_test(NAME suite_${mode}_cpu COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:dvm_cli> --backend cpu --mode ${mode})
  set_tests_properties(suite_${mode}_cpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()
# The masked-lane interpreter (engine_lanes.h, DVM_MASKED: the CUDA and HIP backends run tasks
# with loops through it) on the CPU, so that its parting and meeting of lanes is checked here.
foreach(mode forward grad errors)
  add_test(NAME suite_${mode}_cpu_lanes COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:dvm_cli> --backend cpu --mode ${mode}
           --dvm-flag=--cpu-lanes)
  set_tests_properties(suite_${mode}_cpu_lanes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()
# Three device threads in all (the gpu_threads option, --gpu-threads): every thread takes many
# iterations, the lane kernels' lanes lie the thread count apart and every index digit carries.
# Vulkan's run is test_vulkan --gpu-threads (lavapipe ends a thread's loops after 65535 iterations).
foreach(be cuda hip)
  foreach(mode forward grad)
    add_test(NAME suite_${mode}_${be}_gpu_threads COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:dvm_cli>
             --backend ${be} --mode ${mode} --dvm-flag=--gpu-threads=3 --batch)
    set_tests_properties(suite_${mode}_${be}_gpu_threads PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
  endforeach()
endforeach()
add_test(NAME suite_big_maxreducer_cpu COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:dvm_cli> --backend cpu --mode big)
set_tests_properties(suite_big_maxreducer_cpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS nosan)
foreach(be vulkan cuda hip)
  foreach(mode forward grad errors)
    add_test(NAME suite_${mode}_${be} COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:dvm_cli> --backend ${be} --mode ${mode}
             --batch)
    set_tests_properties(suite_${mode}_${be} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
    if(be STREQUAL "vulkan")
      # lavapipe runs the whole corpus on the CPU: over 10 minutes on 2 busy cores
      set_tests_properties(suite_${mode}_${be} PROPERTIES TIMEOUT 1800)
    endif()
    if(be STREQUAL "vulkan" AND NOT mode STREQUAL "errors")
      # the host code of these launches runs under ASan in `vulkan` and suite_errors_vulkan;
      # repeating the kernels there would only re-run lavapipe (2+ minutes of CI)
      set_tests_properties(suite_${mode}_${be} PROPERTIES LABELS nosan)
    endif()
  endforeach()
endforeach()

# The same corpus through the public C API alone (tests/api_runner.c takes the command's
# arguments), so that both the API and the command are checked against the references.
add_executable(api_runner tests/api_runner.c)
target_link_libraries(api_runner PRIVATE dvm_npy dvm)
target_include_directories(api_runner PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(mode forward grad)
  add_test(NAME suite_${mode}_api_cpu COMMAND ${Python3_EXECUTABLE} ${DVM_SUITE} --dvm $<TARGET_FILE:api_runner> --backend cpu --mode ${mode})
  set_tests_properties(suite_${mode}_api_cpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()

# Random loops with one `if` on their indices (compiler/partition.c splits most of them), and
# random loops indexed by their indices plus constants, in and out of bounds (a launch the host
# proves unable to fail takes no snapshot, vm/launch.c: the proof must be exact), against
# Python on every backend; the first once more on the CPU through the masked lanes. Lavapipe
# runs neither under ASan (minutes for what the CPU runs check), and half the second's kernels.
foreach(fuzz partition nofail)
  foreach(be cpu vulkan cuda hip)
    set(batch --batch)
    if(be STREQUAL "cpu")
      set(batch)
    endif()
    add_test(NAME ${fuzz}_fuzz_${be} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/suite/${fuzz}_fuzz.py
             --dvm $<TARGET_FILE:dvm_cli> --backend ${be} ${batch})
    set_tests_properties(${fuzz}_fuzz_${be} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
  endforeach()
  set_tests_properties(${fuzz}_fuzz_vulkan PROPERTIES LABELS nosan)
endforeach()
set(DVM_PART_FUZZ ${CMAKE_CURRENT_SOURCE_DIR}/tests/suite/partition_fuzz.py)
add_test(NAME partition_fuzz_cpu_lanes COMMAND ${Python3_EXECUTABLE} ${DVM_PART_FUZZ} --dvm $<TARGET_FILE:dvm_cli> --backend cpu --seed 7
         --dvm-flag=--cpu-lanes)
set_tests_properties(partition_fuzz_cpu_lanes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)

# Random differentiable kernels (dynamic and while loops, if/elif/else, break/continue, helpers,
# nonlinear math, several stages, in-place updates, serial statements) through run, grad and
# jvp, against a dual-number reference in Python over the same program (tests/suite/grad_fuzz.py).
# Every feature this dvm compiles is on (grad_fuzz.py drops `timeloop` while it does not parse);
# a refusal is not a failure, a wrong gradient is. `grad_fuzz.py --always FEATURE` gives the
# counts of one feature (bench/RESULTS.md).
# Every backend's run goes through dvm batch (its 900 commands on the CPU: the sanitizer
# build's process start-up alone was a third of its time); the corpus and the other fuzzers
# keep one process per command on the CPU.
foreach(be cpu vulkan cuda hip)
  add_test(NAME grad_fuzz_${be} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/suite/grad_fuzz.py
           --dvm $<TARGET_FILE:dvm_cli> --backend ${be} --count 300 --batch)
  set_tests_properties(grad_fuzz_${be} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()
set_tests_properties(grad_fuzz_vulkan PROPERTIES LABELS nosan)
