// Prime checks of the HTC solvers' fields (field.h).
#include "causal/field.h"

#include <string>

#include "common/status.h"

namespace fastnips::causal::detail {
namespace {

// Deterministic Miller-Rabin for 64-bit n.
bool is_prime_u64(u64 n) {
  if (n < 2) return false;
  for (u64 q : {2ULL, 3ULL, 5ULL, 7ULL, 11ULL, 13ULL, 17ULL, 19ULL, 23ULL, 29ULL, 31ULL, 37ULL}) {
    if (n % q == 0) return n == q;
  }
  u64 d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  auto mulm = [n](u64 a, u64 b) { return u64((u128(a) * b) % n); };
  auto powm = [&](u64 a, u64 e) {
    u64 r = 1;
    while (e) {
      if (e & 1) r = mulm(r, a);
      a = mulm(a, a);
      e >>= 1;
    }
    return r;
  };
  for (u64 a : {2ULL, 3ULL, 5ULL, 7ULL, 11ULL, 13ULL, 17ULL, 19ULL, 23ULL, 29ULL, 31ULL, 37ULL}) {
    u64 x = powm(a % n, d);
    if (x == 1 || x == n - 1) continue;
    bool comp = true;
    for (int r = 1; r < s; ++r) {
      x = mulm(x, x);
      if (x == n - 1) {
        comp = false;
        break;
      }
    }
    if (comp) return false;
  }
  return true;
}

}  // namespace

u64 checked_prime(u64 prime) {
  if (prime == 0) return kMersenne61;
  if (prime < 3 || prime >= (u64(1) << 63) || !is_prime_u64(prime)) {
    refuse("htc: prime must be 0 (=> 2^61-1) or a prime p with 3 <= p < 2^63, got " +
                                std::to_string(prime));
  }
  return prime;
}

}  // namespace fastnips::causal::detail
