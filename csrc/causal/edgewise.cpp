// Edgewise identification (edgewise.h): SEMID edgewiseIdentifyStep with subsetSizeControl = Inf, decided
// through the unique maximal good edge set per node instead of an enumeration of subsets.
//
// Gauss-Seidel passes over the nodes. For node v with unsolved parents U: allowed a: a != v, a not in sib(v),
// htrFrom(a) ∩ U != ∅, htrFrom(v) ∩ U_a = ∅. T(a) = (htrFrom(a) ∪ trFrom(U_a)) ∩ U. A_S = {a allowed :
// T(a) ⊆ S}. Maximal good set: S_0 = U, S_{k+1} = {w in S_k : e_w in rowspace M[A_{S_k}, U]} until stable.
#include "causal/edgewise.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "causal/rank.h"
#include "causal/tian.h"
#include "common/interrupt.h"

namespace fastnips::causal::detail {
namespace {

// The unsolved parents of every node (U, with their input edge ids Ue) and, for the rank method (rank ==
// true), two n x W masks per node a: Um(a) = U_a, Rm(a) = htrFrom(a) ∪ trFrom(U_a) (so T(a) = Rm(a) ∩ U).
struct Unsolved {
  const Graph& g;
  bool rank;
  std::vector<u64> tr;  // n x W: trFrom(u) = union of htrFrom(x) over the ancestors x of u (u included)
  std::vector<std::vector<i32>> U, Ue;
  std::vector<u64> Um, Rm;

  Unsolved(const Graph& g_, bool rank_) : g(g_), rank(rank_), U(g_.n), Ue(g_.n) {
    // per SCC, in topological order: tr(C) = ⋃_{x in C} htrFrom(x) ∪ ⋃_{p -> C} tr(scc(p))
    const int W = g.W;
    if (rank) {
      Um.assign(size_t(g.n) * W, 0);
      Rm = Um;
      tr = rows_per_node(g, scc_closure(g, Along::kParents, [this, W](i32 x, u64* row) {
                           const u64* hx = g.htr_row(x);
                           for (int w = 0; w < W; ++w) row[w] |= hx[w];
                         }));
    }
    for (int v = 0; v < g.n; ++v) {
      for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
        U[v].push_back(g.pa[e]);
        Ue[v].push_back(g.pa_eid[e]);
      }
      refresh(v);
    }
  }
  const u64* um(int a) const { return Um.data() + size_t(a) * g.W; }
  const u64* rm(int a) const { return Rm.data() + size_t(a) * g.W; }

  // Um(a) and Rm(a) from U[a].
  void refresh(int a) {
    if (!rank) return;
    const int W = g.W;
    u64* u = Um.data() + size_t(a) * W;
    u64* r = Rm.data() + size_t(a) * W;
    std::fill(u, u + W, 0);
    const u64* h = g.htr_row(a);
    std::copy(h, h + W, r);
    for (i32 p : U[a]) {
      sb(u, p);
      const u64* t = tr.data() + size_t(p) * W;
      for (int w = 0; w < W; ++w) r[w] |= t[w];
    }
  }
};

// The allowed sources of node v (see the top of the file), ascending.
void allowed_sources(const Graph& g, const Unsolved& st, int v, std::vector<i32>& allowed) {
  const int W = g.W;
  const u64* um = st.um(v);
  const u64* hv = g.htr_row(v);
  const u64* sv = g.sib_row(v);
  allowed.clear();
  for (int a = 0; a < g.n; ++a) {
    if (a == v || tb(sv, a)) continue;
    const u64* ha = g.htr_row(a);
    const u64* ua = st.um(a);
    bool reach = false, blocked = false;
    for (int w = 0; w < W; ++w) {
      reach = reach || (ha[w] & um[w]);
      blocked = blocked || (hv[w] & ua[w]);
    }
    if (reach && !blocked) allowed.push_back(a);
  }
}

// The rank side of one node v: the maximal good set S (a bitset over nodes) by the iteration at the top of
// the file, the basis B of its last round holding the identifying rows. Returns false when it is empty.
template <class F>
class GoodSet {
 public:
  GoodSet(const F& f, const Graph& g, const MMatrix<F>& mm, u64 seed) : f_(f), g_(g), mm_(mm), seed_(seed) {}

  bool find(const Unsolved& st, int v, const std::vector<i32>& allowed, std::vector<u64>& S, i64* tests) {
    const int W = g_.W, k = int(st.U[v].size());
    const u64* um = st.um(v);
    cols_.resize(k);
    for (int j = 0; j < k; ++j) cols_[j] = mm_.colidx[st.U[v][j]];
    sc_.ensure(k);
    std::copy(um, um + W, S.begin());
    S2_.resize(W);
    for (;;) {
      B.reset(k, mix_seed(seed_, 0xED6EULL, call_++));
      for (i32 a : allowed) {
        if (!inside(st.rm(a), um, S)) continue;
        const u64* row = mm_.M.data() + size_t(a) * mm_.m;
        for (int t = 0; t < k; ++t) sc_.x[t] = row[cols_[B.perm[t]]];
        ++*tests;
        if (B.insert(f_, sc_.x.data(), a, sc_) == 2) break;
      }
      std::fill(S2_.begin(), S2_.end(), 0);
      bool any = false;
      for (int i = 0; i < B.r; ++i)
        if (B.row_is_unit(i)) {
          sb(S2_.data(), st.U[v][B.pivot_column(i)]);
          any = true;
        }
      if (!any) return false;
      if (S2_ == S) return true;
      S.swap(S2_);
    }
  }

  Basis B;

 private:
  // T(a) ⊆ S: Rm(a) ∩ U ∩ ~S is empty.
  bool inside(const u64* ra, const u64* um, const std::vector<u64>& S) const {
    for (int w = 0; w < g_.W; ++w)
      if (ra[w] & um[w] & ~S[w]) return false;
    return true;
  }

  const F& f_;
  const Graph& g_;
  const MMatrix<F>& mm_;
  u64 seed_;
  u64 call_ = 0;
  Scratch sc_;
  std::vector<i32> cols_;
  std::vector<u64> S2_;
};

// Records the step S -> v identified from the pivot rows Y of B, and moves S out of v's unsolved parents.
void record_step(int v, const std::vector<u64>& S, const Basis& B, Unsolved& st, EdgewiseResult& res) {
  EdgewiseStep step;
  step.node = v;
  step.Y = B.src;
  std::sort(step.Y.begin(), step.Y.end());
  const i32 sid = i32(res.steps.size());
  std::vector<i32> nu, nue;
  for (size_t j = 0; j < st.U[v].size(); ++j) {
    if (tb(S.data(), st.U[v][j])) {
      step.S.push_back(st.U[v][j]);
      res.edge_solved[st.Ue[v][j]] = 1;
      res.edge_step[st.Ue[v][j]] = sid;
    } else {
      nu.push_back(st.U[v][j]);
      nue.push_back(st.Ue[v][j]);
    }
  }
  res.steps.push_back(std::move(step));
  st.U[v].swap(nu);
  st.Ue[v].swap(nue);
  st.refresh(v);
}

// steps == nullptr: edgewise sweeps until one identifies nothing (rounds: the sweeps that did); else
// generalGenericID's loop over the steps (generic_run).
template <class F>
void edgewise_passes(const F& f, const Graph& g, u64 seed, EdgewiseResult& res, bool par,
                     const std::vector<uint8_t>* steps) {
  const int n = g.n;
  const bool rank = steps == nullptr || std::count(steps->begin(), steps->end(), kStepEdgewise) > 0;
  const MMatrix<F> mm = rank ? compute_M(f, g, seed, par) : MMatrix<F>{};
  res.edge_solved.assign(size_t(g.n_dir), 0);
  res.edge_step.assign(size_t(g.n_dir), -1);
  res.node_solved.assign(n, 0);
  res.steps.clear();
  res.rounds = 0;
  res.tests = 0;
  if (n == 0) return;
  Unsolved st(g, rank);
  GoodSet<F> good(f, g, mm, seed);
  std::vector<i32> allowed;
  std::vector<u64> S(g.W);
  auto edgewise_sweep = [&] {
    bool changed = false;
    for (int v = 0; v < n; ++v) {
      if (st.U[v].empty()) continue;
      check_interrupt();
      allowed_sources(g, st, v, allowed);
      if (allowed.empty() || !good.find(st, v, allowed, S, &res.tests)) continue;
      record_step(v, S, good.B, st, res);
      changed = true;
    }
    return changed;
  };
  std::vector<uint8_t> solved(static_cast<size_t>(n));
  std::unique_ptr<AncestralSweeper> ancestral;
  auto node_sweep = [&](uint8_t step) {  // whole nodes: every unsolved edge into a node the sweep solves
    for (int v = 0; v < n; ++v) solved[size_t(v)] = st.U[v].empty();
    if (step == kStepAncestral && !ancestral) ancestral = std::make_unique<AncestralSweeper>(g);
    const std::vector<int32_t> got = step == kStepHtc ? htc_sweep_graph(g, solved) : ancestral->sweep(solved);
    for (int32_t v : got) {
      for (i32 e : st.Ue[v]) res.edge_solved[size_t(e)] = 1;
      st.U[v].clear();
      st.Ue[v].clear();
      st.refresh(v);
    }
    return !got.empty();
  };
  if (steps == nullptr) {
    while (edgewise_sweep()) ++res.rounds;
  } else {
    for (bool changed = true; changed;) {
      changed = false;
      for (uint8_t s : *steps)
        if (s == kStepEdgewise ? edgewise_sweep() : node_sweep(s)) {
          ++res.rounds;
          changed = true;
          break;
        }
    }
  }
  for (int v = 0; v < n; ++v) res.node_solved[v] = st.U[v].empty() ? 1 : 0;
}

EdgewiseResult edgewise_dispatch(const Graph& g, u64 prime, u64 seed, bool par, const std::vector<uint8_t>* steps) {
  const u64 p = checked_prime(prime);
  EdgewiseResult res;
  if (p == kMersenne61)
    edgewise_passes(FieldM61{}, g, seed, res, par, steps);
  else
    edgewise_passes(FieldGeneric{p}, g, seed, res, par, steps);
  return res;
}

}  // namespace

EdgewiseResult edgewise_run(const Graph& g, u64 prime, u64 seed, bool par) {
  return edgewise_dispatch(g, prime, seed, par, nullptr);
}

EdgewiseResult generic_run(const Graph& g, const std::vector<uint8_t>& steps, u64 prime, u64 seed, bool par) {
  return edgewise_dispatch(g, prime, seed, par, &steps);
}

}  // namespace fastnips::causal::detail
