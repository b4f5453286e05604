# cmake -DSOURCE_DIR=<repository root> -P check_one_source.cmake
# The host/device numerics exist once, as FP8LAB_HD functions in core headers
# (core/common/host_device.h, core/formats/rne_encode.h, core/scaling/scale_rules.h,
# core/scaling/delayed_update.h) that nvcc compiles for gpu/. Fails when a device twin comes back:
# one of the deleted twin files or names, a second definition of the rule enums or of FP8LAB_HD.
# Also one thread-count rule (resolveThreads, in common/worker_pool.cpp), one rule for comparing
# typed names with registry names ('-' read as '_', in common/names.h), and the GEMM internals
# (gemm/gemm_internal.h) included only by core/gemm and its tests.
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "check_one_source: -DSOURCE_DIR=... is required")
endif()
set(problems)
foreach(f gpu/fp8_encode.cuh gpu/fp8_encode.cpp gpu/scale_rules.cuh gpu/delayed_scaling.cuh)
  if(EXISTS ${SOURCE_DIR}/${f})
    list(APPEND problems "${f} exists again (its functions live in core's FP8LAB_HD headers)")
  endif()
endforeach()
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/core/*.h ${SOURCE_DIR}/core/*.cpp ${SOURCE_DIR}/gpu/*.h ${SOURCE_DIR}/gpu/*.cpp
     ${SOURCE_DIR}/gpu/*.cu ${SOURCE_DIR}/gpu/*.cuh ${SOURCE_DIR}/ui/*.h ${SOURCE_DIR}/ui/*.cpp
     ${SOURCE_DIR}/app/*.h ${SOURCE_DIR}/app/*.cpp ${SOURCE_DIR}/tests/*.h ${SOURCE_DIR}/tests/*.cpp
     ${SOURCE_DIR}/tests/*.cu)
list(LENGTH files nfiles)
if(nfiles LESS 100)
  message(FATAL_ERROR "check_one_source: only ${nfiles} source files under ${SOURCE_DIR}; wrong directory?")
endif()
# Names of the deleted device twins (a regular expression each; EncodeConstants alone, not RneEncodeConstants).
set(twins "DeviceScaleRule" "DeviceScaleParams" "deviceScaleParams" "DeviceBlockScale" "blockScaleFromAmaxHD"
          "DelayedScalingParams" "makeEncodeConstants" "(^|[^A-Za-z_])EncodeConstants" "gpu::DelayedPreset"
          "gpu::AmaxAlgo")
# Definitions that must appear in exactly one file.
set(once "enum class ScaleRule[ {]" "enum class DelayedPreset[ {]" "enum class AmaxAlgo[ {]" "#define FP8LAB_HD"
         "int resolveThreads\\([a-z ]+\\) {" "int64_t availableMemoryBytes\\(\\) {"
         "== '-' \\? '_'")
foreach(d IN LISTS once)
  set(count_${d} 0)
endforeach()
foreach(f IN LISTS files)
  file(READ ${SOURCE_DIR}/${f} text)
  if(text MATCHES "#include \"gemm/gemm_internal.h\"" AND NOT f MATCHES "^(core/gemm|tests)/")
    list(APPEND problems "${f}: includes gemm/gemm_internal.h (use common/worker_pool.h or gemm/gemm.h)")
  endif()
  foreach(t IN LISTS twins)
    if(text MATCHES "${t}")
      list(APPEND problems "${f}: a deleted device twin is back (${t})")
    endif()
  endforeach()
  foreach(d IN LISTS once)
    if(text MATCHES "${d}")
      math(EXPR count_${d} "${count_${d}} + 1")
    endif()
  endforeach()
endforeach()
foreach(d IN LISTS once)
  if(NOT count_${d} EQUAL 1)
    list(APPEND problems "'${d}' is in ${count_${d}} files (expected one)")
  endif()
endforeach()
if(problems)
  list(JOIN problems "\n  " msg)
  message(FATAL_ERROR "check_one_source:\n  ${msg}")
endif()
message(STATUS "check_one_source: ${nfiles} files, no device twins")
