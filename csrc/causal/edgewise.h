// Internal to the HTC solvers: edgewise identification on one mixed graph (causal/edgewise.cpp).
#pragma once
#include "causal/htc.h"
#include "causal/mixed_graph.h"

namespace fastnips::causal::detail {

// SEMID edgewiseID(tianDecompose=FALSE, subsetSizeControl=Inf) by the randomized rank method over F_prime
// (prime checked; 2^61-1 takes the Mersenne arithmetic); par: may use threads.
EdgewiseResult edgewise_run(const Graph& g, u64 prime, u64 seed, bool par);

// generalGenericID's loop on one graph over `steps` (kStepHtc: htcIdentifyStep; kStepEdgewise:
// edgewiseIdentifyStep with subsetSizeControl = Inf, one Gauss-Seidel sweep by the rank method above;
// kStepAncestral: ancestralIdentifyStep, causal/ancestral.cpp): the steps are tried in order, the first that
// identifies an edge restarts the list; rounds = the steps that did. edge_solved and node_solved as
// edgewise_run's; no steps recorded. The random matrix of the rank method is drawn only when an edgewise
// step is in the list.
constexpr uint8_t kStepHtc = 0, kStepEdgewise = 1, kStepAncestral = 2;
EdgewiseResult generic_run(const Graph& g, const std::vector<uint8_t>& steps, u64 prime, u64 seed, bool par);

}  // namespace fastnips::causal::detail
