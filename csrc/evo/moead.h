// MOEA/D on monotone distortions of LOTZ and OneMinMax: the whole evolutionary loop (bit strings, standard bit
// mutation, xoshiro256**, evaluation, decomposition, coverage bookkeeping) in plain C++17, no Python.
//
// The readable oracle is python/fastnips/evo/reference.py; this file follows it draw by draw and decision by
// decision (the same doubles for the distortion tables, the same arithmetic order for the subproblem values,
// built without floating-point contraction), so a seed gives the same RunOutput on both.
#pragma once
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace fastnips::evo {

// Limits checked by run(): the string length, and the entries of the neighbourhood table and of the population
// words of classic MOEA/D ((N + 1) * T and (N + 1) * ceil(n / 64), 1 GiB each at the most), and the number
// of subproblems N + 1 (48 B of weights and objectives each, outside the cell cap).
constexpr int64_t kMaxBits = int64_t(1) << 20;
constexpr int64_t kMaxCells = int64_t(1) << 27;
constexpr int64_t kMaxSubproblems = int64_t(1) << 22;

enum class Kind { kLotz, kOneMinMax };
enum class Algorithm { kMoead, kSelfAdjusting };
enum class Decomposition { kTchebycheff, kWeightedSum };

struct RunSpec {
  Kind kind = Kind::kLotz;
  int64_t n = 0;               // string length >= 1
  const double* h1 = nullptr;  // distortion tables, n + 1 strictly increasing finite values each
  const double* h2 = nullptr;
  Algorithm algorithm = Algorithm::kSelfAdjusting;
  Decomposition decomposition = Decomposition::kTchebycheff;  // classic MOEA/D only
  int64_t n_weights = 0;                                      // N (N + 1 subproblems), classic only
  int64_t n_neighbors = 0;                                    // T, 1 <= T <= N + 1, classic only
  bool archive = false;
  int64_t budget = 0;  // evaluations >= 1
  uint64_t seed = 0;
  bool stop_on_full = true;
};

// Evaluations count from 1; -1 is "never". The vectors have n + 1 entries (Pareto point i: raw (i, n - i)).
struct RunOutput {
  int64_t evaluations = 0;
  std::vector<int64_t> first_population, first_archive;
  std::vector<uint8_t> final_population, final_archive;
  int64_t full_population = -1, full_archive = -1;
  // (d ^ (r1 (n + 1) + r2)) * 0x100000001B3 over every evaluation (FNV-1a style), then ^ the next RNG output at
  // the end: equal digests mean the same evaluations in the same order and the same number of draws
  uint64_t digest = 0xCBF29CE484222325ull;
};

// Checks the spec (a Status::value_error naming the field) and runs; interruptible (common/interrupt.h).
Status run(const RunSpec& spec, RunOutput* out);

}  // namespace fastnips::evo
