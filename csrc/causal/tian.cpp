// SEMID's Tian decomposition for the criteria that run per c-component graph (causal/tian.h): the edgewise
// criterion (SEMID's default edgewiseID) and the ancestral step (SEMID's default ancestralID), each on the
// component graph of every Tian c-component, the answers mapped back to the caller's node and edge ids.
//
// Tian c-components in SEMID's sense: bidirected components merged along directed cycles (every strongly
// connected component inside one c-component), numbered by smallest member. The component graph of C has the
// nodes C ∪ pa(C) in SEMID's topological order of the condensation of (V, D) (Kahn, the strongly connected
// component with the smallest member first, members of one component ascending), every directed edge into C
// and every bidirected edge inside C, both in the caller's edge order. This is exactly what the Python
// reference (_ref_fixpoint.tian_decompose / component_graph) builds, so both give the same answers and steps.
#include "causal/tian.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "causal/ancestral.h"
#include "causal/edgewise.h"
#include "common/interrupt.h"

namespace fastnips::causal {
namespace detail {
namespace {

// Position of every node in the topological order of the condensation that SEMID's Tian code uses.
std::vector<i32> condensation_positions(const Graph& g) {
  const int n = g.n, C = g.nscc;
  std::vector<std::vector<i32>> members(C);
  for (int v = 0; v < n; ++v) members[g.scc[v]].push_back(v);  // ascending
  std::vector<std::vector<i32>> succ(C);
  std::vector<i32> indeg(C, 0);
  for (int v = 0; v < n; ++v)
    for (i32 e = g.ch_off[v]; e < g.ch_off[v + 1]; ++e) {
      const i32 a = g.scc[v], b = g.scc[g.ch[e]];
      if (a != b) succ[a].push_back(b);
    }
  for (int c = 0; c < C; ++c) {
    std::sort(succ[c].begin(), succ[c].end());
    succ[c].erase(std::unique(succ[c].begin(), succ[c].end()), succ[c].end());
    for (i32 d : succ[c]) ++indeg[d];
  }
  using Key = std::pair<i32, i32>;  // (smallest member, scc)
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
  for (int c = 0; c < C; ++c)
    if (indeg[c] == 0) heap.emplace(members[c][0], c);
  std::vector<i32> pos(n, 0);
  i32 k = 0;
  while (!heap.empty()) {
    const i32 c = heap.top().second;
    heap.pop();
    for (i32 v : members[c]) pos[v] = k++;
    for (i32 d : succ[c])
      if (--indeg[d] == 0) heap.emplace(members[d][0], d);
  }
  return pos;
}

}  // namespace

void for_each_tian_component(int32_t n, const i32* directed, i64 n_dir, const i32* bidirected, i64 n_bi,
                             const std::function<void(const TianPiece&)>& f) {
  validate(n, directed, n_dir, bidirected, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, false, false);
  int ncomp = 0;
  const std::vector<i32> comp = tian_component_ids(g, &ncomp);
  const std::vector<i32> pos = condensation_positions(g);
  // per component: its internal nodes (ascending), its directed edges (by head) and bidirected edges, in order
  std::vector<std::vector<i32>> internal(ncomp), dir_of(ncomp), bi_of(ncomp);
  for (int v = 0; v < n; ++v) internal[comp[v]].push_back(v);
  for (i64 e = 0; e < n_dir; ++e) dir_of[comp[directed[2 * e + 1]]].push_back(i32(e));
  for (i64 e = 0; e < n_bi; ++e) bi_of[comp[bidirected[2 * e]]].push_back(i32(e));
  std::vector<i32> loc(n, -1), nodes, ld, lb;
  std::vector<uint8_t> seen(n, 0);
  for (int c = 0; c < ncomp; ++c) {
    if (dir_of[c].empty()) continue;  // no directed edge into the component: nothing to identify
    check_interrupt();
    nodes = internal[c];
    for (i32 v : nodes) seen[v] = 1;
    for (i32 e : dir_of[c]) {
      const i32 p = directed[2 * e];
      if (!seen[p]) {
        seen[p] = 1;
        nodes.push_back(p);
      }
    }
    std::sort(nodes.begin(), nodes.end(), [&](i32 a, i32 b) { return pos[a] < pos[b]; });
    for (size_t k = 0; k < nodes.size(); ++k) loc[nodes[k]] = i32(k);
    ld.clear();
    lb.clear();
    for (i32 e : dir_of[c]) {
      ld.push_back(loc[directed[2 * e]]);
      ld.push_back(loc[directed[2 * e + 1]]);
    }
    for (i32 e : bi_of[c]) {
      lb.push_back(loc[bidirected[2 * e]]);
      lb.push_back(loc[bidirected[2 * e + 1]]);
    }
    f(TianPiece{nodes, dir_of[c], ld, lb});
    for (i32 v : nodes) {
      loc[v] = -1;
      seen[v] = 0;
    }
  }
}

}  // namespace detail

EdgewiseResult edgewise_identify_tian(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                                      int64_t n_bi, const HtcOptions& opt) {
  detail::checked_prime(opt.prime);
  EdgewiseResult res;
  res.edge_solved.assign(size_t(n_dir), 0);
  res.edge_step.assign(size_t(n_dir), -1);
  detail::for_each_tian_component(n, directed, n_dir, bidirected, n_bi, [&](const detail::TianPiece& t) {
    // the component graph is valid by construction (and the prime checked above): no second validation
    const int32_t m = int32_t(t.nodes.size());
    const int64_t nd = int64_t(t.dir_ids.size()), nb = int64_t(t.lb.size() / 2);
    const bool par = detail::use_threads(m, nd, nb);
    const EdgewiseResult sub = detail::edgewise_run(detail::build_graph(m, t.ld.data(), nd, t.lb.data(), nb, par),
                                                    opt.prime, opt.seed, par);
    const int32_t base = int32_t(res.steps.size());
    for (size_t k = 0; k < t.dir_ids.size(); ++k) {
      res.edge_solved[size_t(t.dir_ids[k])] = sub.edge_solved[k];
      if (sub.edge_step[k] >= 0) res.edge_step[size_t(t.dir_ids[k])] = base + sub.edge_step[k];
    }
    for (const EdgewiseStep& s : sub.steps) {
      EdgewiseStep u{t.nodes[size_t(s.node)], {}, {}};
      for (int32_t x : s.S) u.S.push_back(t.nodes[size_t(x)]);
      for (int32_t y : s.Y) u.Y.push_back(t.nodes[size_t(y)]);
      std::sort(u.S.begin(), u.S.end());
      std::sort(u.Y.begin(), u.Y.end());
      res.steps.push_back(std::move(u));
    }
    res.rounds = std::max(res.rounds, sub.rounds);
    res.tests += sub.tests;
  });
  res.node_solved = detail::nodes_of_edges(res.edge_solved, n, directed, n_dir);
  return res;
}

AncestralResult generic_identify(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                                 int64_t n_bi, const std::vector<uint8_t>& steps, bool tian, uint64_t seed,
                                 uint64_t prime) {
  detail::checked_prime(prime);
  for (uint8_t s : steps)
    if (s > detail::kStepAncestral) detail::refuse("generic_identify: unknown step code");
  AncestralResult res;
  res.edge_solved.assign(size_t(n_dir), 0);
  auto run = [&](int32_t m, const int32_t* d, int64_t nd, const int32_t* b, int64_t nb, const int32_t* ids) {
    const bool par = detail::use_threads(m, nd, nb);
    const EdgewiseResult sub = detail::generic_run(detail::build_graph(m, d, nd, b, nb, par), steps, prime, seed, par);
    for (int64_t k = 0; k < nd; ++k) res.edge_solved[size_t(ids ? ids[k] : k)] = sub.edge_solved[size_t(k)];
    res.rounds += sub.rounds;
  };
  if (tian) {
    detail::for_each_tian_component(n, directed, n_dir, bidirected, n_bi, [&](const detail::TianPiece& t) {
      run(int32_t(t.nodes.size()), t.ld.data(), int64_t(t.dir_ids.size()), t.lb.data(), int64_t(t.lb.size() / 2),
          t.dir_ids.data());
    });
  } else {
    detail::validate(n, directed, n_dir, bidirected, n_bi);
    run(n, directed, n_dir, bidirected, n_bi, nullptr);
  }
  res.node_solved = detail::nodes_of_edges(res.edge_solved, n, directed, n_dir);
  return res;
}

namespace {

// run(piece) -> the AncestralResult of one component graph (local ids) for every Tian component, node_solved
// mapped back to the caller's nodes and rounds summed over the components, as the reference's loop counts them.
template <class Run>
AncestralResult solved_per_component(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                                     int64_t n_bi, Run&& run) {
  AncestralResult res;
  res.node_solved.assign(size_t(n), 1);  // parentless nodes, and every node of an edgeless component
  detail::for_each_tian_component(n, directed, n_dir, bidirected, n_bi, [&](const detail::TianPiece& t) {
    const AncestralResult sub = run(t);
    for (size_t k = 0; k < t.dir_ids.size(); ++k)  // the heads: the component's internal nodes with parents
      res.node_solved[size_t(t.nodes[size_t(t.ld[2 * k + 1])])] = sub.node_solved[size_t(t.ld[2 * k + 1])];
    res.rounds += sub.rounds;
  });
  res.edge_solved = detail::edges_of_nodes(res.node_solved, directed, n_dir);
  return res;
}

}  // namespace

AncestralResult htc_sweeps_tian(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                                int64_t n_bi) {
  return solved_per_component(n, directed, n_dir, bidirected, n_bi, [](const detail::TianPiece& t) {
    const int32_t m = int32_t(t.nodes.size());
    const int64_t nd = int64_t(t.dir_ids.size());
    return detail::htc_sweeps_run(
        detail::build_graph(m, t.ld.data(), nd, t.lb.data(), int64_t(t.lb.size() / 2), false), t.ld.data(), nd);
  });
}

}  // namespace fastnips::causal
