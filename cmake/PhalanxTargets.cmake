# Helpers that give every phalanx target the same warnings, sanitizers and include root.

# Flags for our own targets only (never for third-party headers, which come in as SYSTEM).
function(phalanx_target_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-missing-field-initializers>
    # GCC 12 warns -Wrestrict inside libstdc++'s std::string operator+ at -O2 and above, a
    # false positive (GCC bug 105329, fixed in 13).
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>
    # libstdc++ 12's std::stable_sort calls its own get_temporary_buffer, deprecated in C++23
    # mode, and clang reports that inside the system header at our call site. GCC builds (CI)
    # still report our own deprecated calls.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:Clang>>:-Wno-deprecated-declarations>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  # Warnings are errors where we control the compiler (./tools/test, CI), not in a user's build,
  # which must not fail on a newer compiler's new warning.
  if(PHALANX_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Werror -Wno-error=deprecated-declarations>
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
  if(PHALANX_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>
      # GCC 12 reports false maybe-uninitialized in libstdc++ under -fsanitize (GCC bug 105562).
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>
      # -O1 with line tables only (-g1): reports keep file:line, and a translation unit compiles
      # in 43 s instead of 118 s at -O2 -g (node/peer_node.cc, GCC 12) — most of CI's time.
      $<$<COMPILE_LANGUAGE:CXX>:-O1 -g1>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(PHALANX_TSAN)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>
                                             $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized -Wno-tsan -O1 -g1>)
    target_link_options(${target} PRIVATE -fsanitize=thread)
  endif()
endfunction()

# phalanx_library(NAME SOURCES ... DEPS ...): the static library phalanx_NAME, alias phalanx::NAME.
# A folder whose code has not landed yet is an INTERFACE library, so the arrows already hold.
function(phalanx_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  set(target phalanx_${name})
  if(ARG_SOURCES)
    add_library(${target} STATIC ${ARG_SOURCES})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
    phalanx_target_options(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  add_library(phalanx::${name} ALIAS ${target})
endfunction()
