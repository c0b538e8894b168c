// Greedy maximisation of monotone (alpha-)submodular set functions for fastnips.submodular (backend "cpp").
// Plain C++17 with OpenMP: no Python, no pybind11.
//
// Three objectives share one greedy (naive or lazy, cardinality and/or knapsack budget):
//
//   pairwise   the neural pairwise network of fastnips.submodular.PairwiseSubmodular:
//                g_c(S) = sum_{a in S} m_ca + sum_{a<b in S} w_cab,  w_cab = s_c m_ca m_cb sigmoid(<U_ca, U_cb>),
//                h_c = sum_r a_cr (1 - exp(-beta_cr g_c)) / beta_cr,  then h <- log1p(W_l h + b_l) per layer,
//                f(S) = <v, h>  (f(empty) subtracted by the caller; gains do not see it).
//              Gains are incremental: each candidate keeps dg_c(a | S) and the number of selected elements
//              already folded into it; a gain evaluation adds w_c(a, s) for the elements selected since
//              (O(C r) each), so the lazy greedy touches a candidate's pairs only when it re-evaluates it.
//   feature    f(S) = sum_d w_d phi(sum_{a in S} X_ad), phi in {sqrt, log1p, x / (1 + x)} (apricot's names).
//   facility   f(S) = sum_v max(0, max_{a in S} K_av), K given candidate-major (n, n_ground).
//
// The greedy picks, at each step, the candidate with the largest key (gain, or gain / cost under a
// knapsack), ties to the smaller index; the lazy greedy keeps stale keys in a max-heap (Minoux 1978) and
// takes the top once its key is fresh, which is the naive choice exactly when keys only shrink
// (submodularity). Under a knapsack the result is the better of the ratio greedy and the best feasible
// singleton (Leskovec et al. 2007, CELF). Every gain is computed by the same code in both modes, so naive
// and lazy agree bit for bit on submodular inputs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace fastnips::submodular {

struct PairwiseSpec {
  int64_t n = 0, C = 0, r = 0, R = 0;
  const double* m = nullptr;      // (n, C) >= 0
  const double* U = nullptr;      // (C, n, r)
  const double* scale = nullptr;  // (C,) rho * kappa_c >= 0
  const double* a = nullptr;      // (C, R) >= 0
  const double* beta = nullptr;   // (C, R) > 0
  std::vector<int64_t> dims;      // K_0 = C, K_1, ..., K_L
  std::vector<const double*> W;   // (K_l, K_{l-1}) >= 0
  std::vector<const double*> b;   // (K_l,) >= 0
  const double* v = nullptr;      // (K_L,) >= 0
};

enum class Concave : int { kSqrt = 0, kLog = 1, kSigmoid = 2 };

struct FeatureSpec {
  int64_t n = 0, D = 0;
  const double* X = nullptr;  // (n, D) >= 0
  const double* w = nullptr;  // (D,) >= 0
  Concave phi = Concave::kSqrt;
};

struct FacilitySpec {
  int64_t n = 0, G = 0;
  const double* K = nullptr;  // (n, G): similarities of candidate a to ground point v
};

struct Budget {
  int64_t k = -1;                  // at most k elements (-1: no cardinality limit)
  const double* costs = nullptr;   // (n,) > 0, or null: no knapsack
  double budget = 0.0;
};

struct GreedyResult {
  std::vector<int64_t> selected;
  std::vector<double> gains;       // f(S_i) - f(S_{i-1}) in selection order
  int64_t evaluations = 0;         // gain evaluations
  bool singleton = false;          // knapsack: the best singleton beat the ratio greedy
};

// The pairwise network's f(S) - f(empty) on a state g (C values); scratch holds max(K_l) * 2 doubles.
double pairwise_value(const PairwiseSpec& p, const double* g, double* scratch);

Status greedy_pairwise(const PairwiseSpec& p, const Budget& bud, bool lazy, int n_threads, GreedyResult& out);
Status greedy_feature(const FeatureSpec& p, const Budget& bud, bool lazy, int n_threads, GreedyResult& out);
Status greedy_facility(const FacilitySpec& p, const Budget& bud, bool lazy, int n_threads, GreedyResult& out);

}  // namespace fastnips::submodular
