// The per-edge search of the trek-separation step (Weihs et al. 2018, Thm 3; SEMID 0.4.2
// trekSeparationIdentifyStep), exactly as python/fastnips/causal/_ref_trek.py (the oracle) searches:
// causal/trek.cpp. Plain C++17; polls interrupt_requested() once per target set.
#pragma once
#include <cstdint>
#include <vector>

namespace fastnips::causal {

// The prime of the determinant search (2^31 - 1: products of two residues fit in 64 bits).
constexpr uint64_t kTrekPrime = (uint64_t(1) << 31) - 1;

struct TrekEdgeQuery {
  int32_t i = 0, j = 0;               // the edge j -> i
  const int64_t* sigma = nullptr;     // n x n, row-major, residues mod kTrekPrime (the random point)
  const int64_t* a = nullptr;         // n: sigma[:, j]
  const int64_t* b = nullptr;         // n: column i with the removed edges taken off (mod kTrekPrime)
  std::vector<int32_t> pool;          // candidate target nodes (non-descendants of i other than j), ascending
  std::vector<int32_t> removed;       // j and the solved parents of i: their edges into i leave the right sides
  int32_t max_k = 3;                  // largest source set, 1..3
};

// Whether j -> i is identified: some candidate (S, T) of the grouped determinant search (the same
// candidates as _ref_trek._candidates) has a trek system S -> T ∪ {j} of size |S| and none S -> T ∪ {i}
// without the removed edges into i (two exact max-flows, SEMID getTrekSystem). Graph as in htc.h.
bool trek_edge_identified(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                          int64_t n_bi, const TrekEdgeQuery& q);

}  // namespace fastnips::causal
