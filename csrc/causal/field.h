// Internal to the HTC solvers (csrc/causal/): the integer types, random streams and prime-field arithmetic
// they share. Plain C++17; needs GCC or Clang (unsigned __int128).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "common/status.h"

#ifdef _OPENMP
#include <omp.h>
#define FASTNIPS_HTC_OMP(x) _Pragma(#x)
#else
#define FASTNIPS_HTC_OMP(x)
#endif

namespace fastnips::causal::detail {

using u64 = std::uint64_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
__extension__ typedef unsigned __int128 u128;

constexpr u64 kMersenne61 = (u64(1) << 61) - 1;

// Random numbers: splitmix64 for seeding, xoshiro256** for streams.
inline u64 splitmix64(u64& s) {
  u64 z = (s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline u64 mix_seed(u64 seed, u64 a, u64 b) {
  u64 s = seed;
  u64 x = splitmix64(s) ^ (a * 0xD1B54A32D192ED03ULL);
  x = splitmix64(x) ^ (b * 0xABC98388FB8FAC03ULL);
  return splitmix64(x);
}

struct Rng {
  u64 s[4];
  Rng() : Rng(0) {}
  explicit Rng(u64 seed) {
    u64 x = seed;
    for (auto& w : s) w = splitmix64(x);
  }
  static inline u64 rotl(u64 x, int k) { return (x << k) | (x >> (64 - k)); }
  inline u64 next() {
    const u64 result = rotl(s[1] * 5, 7) * 9;
    const u64 t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
  // uniform in [0, m), m >= 1
  inline u64 below(u64 m) {
    const u64 threshold = (u64(0) - m) % m;
    for (;;) {
      const u64 x = next();
      if (x >= threshold) return x % m;
    }
  }
};

// Prime fields. Values are kept reduced in [0, P). `kBatch` products of two reduced values (plus one
// reduced value) can be summed in a u128 before a reduction is needed.
struct FieldM61 {
  static constexpr u64 P = kMersenne61;
  static constexpr int kBatch = 31;
  u64 p() const { return P; }
  static inline u64 fold(u64 x) {  // any x < 2^64
    x = (x & P) + (x >> 61);
    return x >= P ? x - P : x;
  }
  inline u64 red(u128 z) const {  // any z < 2^128
    const u64 t = (u64(z) & P) + (u64(z >> 61) & P) + u64(z >> 122);
    return fold(t);
  }
  inline u64 mul(u64 a, u64 b) const {
    const u128 z = u128(a) * b;  // < 2^122
    const u64 r = (u64(z) & P) + u64(z >> 61);
    return r >= P ? r - P : r;
  }
  inline u64 add(u64 a, u64 b) const {
    const u64 r = a + b;
    return r >= P ? r - P : r;
  }
  inline u64 sub(u64 a, u64 b) const { return a >= b ? a - b : a + (P - b); }
  inline u64 neg(u64 a) const { return a ? P - a : 0; }
  inline u64 muladd(u64 a, u64 b, u64 c) const {  // a + b*c, all reduced
    const u128 z = u128(b) * c + a;                // < 2^123
    const u64 r = (u64(z) & P) + u64(z >> 61);
    return r >= P ? r - P : r;
  }
};

struct FieldGeneric {  // any prime 3 <= P < 2^63
  u64 P;
  static constexpr int kBatch = 2;
  u64 p() const { return P; }
  inline u64 red(u128 z) const { return u64(z % P); }
  inline u64 mul(u64 a, u64 b) const { return u64((u128(a) * b) % P); }
  inline u64 add(u64 a, u64 b) const {
    const u64 r = a + b;
    return r >= P ? r - P : r;
  }
  inline u64 sub(u64 a, u64 b) const { return a >= b ? a - b : a + (P - b); }
  inline u64 neg(u64 a) const { return a ? P - a : 0; }
  inline u64 muladd(u64 a, u64 b, u64 c) const { return u64((u128(b) * c + a) % P); }
};

template <class F>
u64 field_pow(const F& f, u64 a, u64 e) {
  u64 r = 1 % f.p();
  while (e) {
    if (e & 1) r = f.mul(r, a);
    a = f.mul(a, a);
    e >>= 1;
  }
  return r;
}

template <class F>
inline u64 field_inv(const F& f, u64 a) {
  return field_pow(f, a, f.p() - 2);
}

template <class F>
inline u64 random_nonzero(const F& f, Rng& rng) {
  return 1 + rng.below(f.p() - 1);
}

// sum_j x[j] * y[j]
template <class F>
inline u64 dot(const F& f, const u64* x, const u64* y, int k) {
  u64 res = 0;
  int j = 0;
  while (j < k) {
    const int e = std::min(k, j + F::kBatch);
    u128 acc = res;
    for (; j < e; ++j) acc += u128(x[j]) * y[j];
    res = f.red(acc);
  }
  return res;
}

// Refuses the input of an HTC solver: a ValueError (the solvers return results, so the Status is thrown).
[[noreturn]] inline void refuse(const std::string& message) { throw StatusError(Status::value_error(message)); }

// opt.prime checked: 0 gives 2^61-1; anything else must be a prime with 3 <= p < 2^63 (else a ValueError
// StatusError).
u64 checked_prime(u64 prime);

}  // namespace fastnips::causal::detail
