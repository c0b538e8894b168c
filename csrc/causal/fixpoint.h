// Internal to the HTC solvers: the HTC fixpoint on one mixed graph (plain) and per Tian c-component
// (causal/fixpoint.cpp), on either solver (rank.h, maxflow.h).
#pragma once
#include "causal/htc.h"
#include "causal/mixed_graph.h"

namespace fastnips::causal::detail {

// Plain HTC (SEMID htcID(g, tianDecompose=FALSE)) with opt.method; par: may use threads.
HtcResult htc_plain(const Graph& g, const HtcOptions& opt, bool par);

// SEMID's default Tian-decomposed HTC: htc_plain on every c-component's subgraph (see HtcResult).
HtcResult htc_tian(const Graph& g, const HtcOptions& opt, bool par);

}  // namespace fastnips::causal::detail
