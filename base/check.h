// PHALANX_CHECK: aborts with a message on an invariant that only a bug can break.
// Never used for peer or user input: those return errors.
#pragma once

#include <cstdio>
#include <cstdlib>

#define PHALANX_CHECK(cond, msg)                                                             \
  do {                                                                                       \
    if (!(cond)) [[unlikely]] {                                                              \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s: %s\n", __FILE__, __LINE__, #cond, msg); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)
