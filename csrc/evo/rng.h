// The random numbers of the evolutionary loops: xoshiro256** (Blackman & Vigna 2018) seeded by four outputs
// of splitmix64. Plain C++17. The Python reference (python/fastnips/evo/reference.py, Xoshiro256) computes the
// same numbers, and both loops draw them in the same order, so a seed gives the same trajectory on both.
#pragma once
#include <cstdint>

namespace fastnips::evo {

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s_) {  // splitmix64
      x += 0x9E3779B97F4A7C15ull;
      uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      w = z ^ (z >> 31);
    }
  }

  uint64_t next() {
    const uint64_t out = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return out;
  }

  // A uniform integer in [0, k): Lemire's multiply-shift of one output (bias at most k / 2^64).
  uint64_t below(uint64_t k) { return uint64_t((static_cast<unsigned __int128>(next()) * k) >> 64); }

  // A uniform bit: the top bit of one output.
  uint64_t bit() { return next() >> 63; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace fastnips::evo
