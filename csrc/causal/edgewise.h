// Internal to the HTC solvers: edgewise identification on one mixed graph (causal/edgewise.cpp).
#pragma once
#include "causal/htc.h"
#include "causal/mixed_graph.h"

namespace fastnips::causal::detail {

// SEMID edgewiseID(tianDecompose=FALSE, subsetSizeControl=Inf) by the randomized rank method over F_prime
// (prime checked; 2^61-1 takes the Mersenne arithmetic); par: may use threads.
EdgewiseResult edgewise_run(const Graph& g, u64 prime, u64 seed, bool par);

}  // namespace fastnips::causal::detail
