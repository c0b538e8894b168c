// Shared compile-time switches for hot loops. Plain C++: no Python, no pybind11.
#pragma once

// x86-64 GCC builds carry an AVX2+FMA clone of a function marked FASTNIPS_CLONES next to the baseline one;
// the loader picks the best at run time, so one wheel is portable and still uses the wide registers where
// they exist.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define FASTNIPS_CLONES __attribute__((target_clones("avx2,fma", "default")))
#else
#define FASTNIPS_CLONES
#endif
