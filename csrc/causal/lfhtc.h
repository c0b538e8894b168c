// The latent-factor half-trek criterion (Barber, Drton, Sturma & Weihs 2022; SEMID 0.4.2 lfhtcID with its
// lfhtcIdentifyStep), exactly as python/fastnips/causal/_ref_lfhtc.py (the oracle) decides it:
// causal/lfhtc.cpp. Plain C++17; polls interrupt_requested() once per (L, Z) query.
#pragma once
#include <cstdint>

#include "causal/ancestral.h"

namespace fastnips::causal {

// The LF-HTC fixpoint on a latent digraph: observed nodes 0..n-1 with the n_dir directed (tail, head) edges
// among them, latent nodes 0..n_latent-1 (sources) with the n_lat (latent, observed child) edges. Refuses
// (ValueError StatusError) ids out of range, self loops and duplicate edges. edge_solved follows the
// directed edges; rounds = the nodes the criterion solved (SEMID's loop solves one per step). Exact
// max-flows, deterministic.
AncestralResult lfhtc_identify(int32_t n, int32_t n_latent, const int32_t* directed, int64_t n_dir,
                               const int32_t* latent, int64_t n_lat);

}  // namespace fastnips::causal
