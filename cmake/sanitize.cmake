# -DZTVM_SANITIZE=ON (make test-asan, make fuzz: the build-asan folder, clang): everything built with
# AddressSanitizer and UndefinedBehaviorSanitizer, any report fatal. With clang, the fuzz targets in
# fuzz/ are built too (libFuzzer), each with a CTest test that runs it for ZTVM_FUZZ_SECONDS over its
# seed corpus (label "fuzz").
option(ZTVM_SANITIZE "build with ASan + UBSan" OFF)
set(ZTVM_FUZZ_SECONDS 30 CACHE STRING "seconds each fuzz target runs in its CTest test")
if(ZTVM_SANITIZE)
  set(san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options(${san})
  add_link_options(${san})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options(-fsanitize=fuzzer-no-link)
    set(ZTVM_FUZZ ON)
  endif()
endif()

function(ztvm_fuzz_targets)
  file(GLOB fuzz_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/fuzz/fuzz_*.cpp)
  # The server's request pieces alone (no HTTP server, engine or GPU): the targets build in minutes.
  set(dir ${CMAKE_SOURCE_DIR}/src/server)
  add_library(ztvm_fuzz_server STATIC ${dir}/openai.cpp ${dir}/chat_prompt.cpp ${dir}/tool_calls.cpp
              ${dir}/tool_calls_validate.cpp)
  target_link_libraries(ztvm_fuzz_server PUBLIC ztvm_text)
  add_custom_target(fuzz)
  foreach(src ${fuzz_sources})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE ztvm_fuzz_server)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
    target_compile_definitions(${name} PRIVATE ZTVM_TESTDATA="${TESTDATA}")
    add_dependencies(fuzz ${name})
    # New inputs go to a scratch folder; the committed corpus (seeds + regressions) is only read.
    set(corpus ${CMAKE_SOURCE_DIR}/fuzz/corpus/${name})
    add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
             $<TARGET_FILE:${name}> -max_total_time=${ZTVM_FUZZ_SECONDS} -max_len=65536 -rss_limit_mb=4096
             -timeout=10 -print_final_stats=1 ${CMAKE_BINARY_DIR}/fuzz-found/${name} ${corpus})
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz-found/${name})
    set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 600)
  endforeach()
endfunction()
