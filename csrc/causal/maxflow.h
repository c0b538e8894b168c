// Internal to the HTC solvers: the exact max-flow method (causal/maxflow.cpp), one incremental
// unit-capacity flow network per unsolved node, with the per-node solver interface of the fixpoint (see
// RankSolver in causal/rank.h).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "causal/mixed_graph.h"

namespace fastnips::causal::detail {

// Exact incremental max-flow. Network for node v: L(x) (x in V), Rin(u) -> Rout(u) (capacity 1),
// s -> L(a) for allowed a, L(x) -> Rin(x), L(x) -> Rin(u) for u in sib(x), Rout(w) -> Rin(c) for w -> c,
// Rout(p) -> t for p in pa(v). All arcs capacity 1. Node ids: L(x) = x, Rin(u) = n+u, Rout(u) = 2n+u.
// Flow state (unit flows): fL[x] = u if L(x)->Rin(u) carries flow; fR[u] = c if Rout(u)->Rin(c) carries
// flow, n if Rout(u)->t does; pr[u] = x (L(x)) or n+y (Rout(y)) feeding Rin(u); -1 = none.
struct FlowSolver {
  const Graph& g;
  int n, W;
  std::vector<u64> anc;  // n*W: ancestors of u, u included (nodes that can reach u by a directed path)
  struct VS {
    std::vector<i32> fL, fR, pr, src;
    // 3 bitsets of W words (L, Rin, Rout): vertices known unable to reach t in the residual graph minus s.
    // Reset after every augmentation to "Rin/Rout of nodes that reach no parent of v".
    std::vector<u64> dead, rel;  // rel: W words, ancestors of pa(v)
    int flow = 0;
  };
  std::vector<VS> st;
  struct Buf {
    std::vector<i32> stk, it;
  };
  explicit FlowSolver(const Graph& g_);
  Buf make_buf() const {
    Buf b;
    b.stk.resize(size_t(3) * n + 2);
    b.it.resize(size_t(3) * n + 2);
    return b;
  }
  void begin(int v);
  int insert(int v, int a, Buf& buf);
  std::vector<i32> sources(int v) const {
    std::vector<i32> y = st[v].src;
    std::sort(y.begin(), y.end());
    return y;
  }
  void release(int v);

 private:
  void reset_dead(VS& s) const;
  int search(VS& s, int v, int a, Buf& buf) const;
  i32 next_vertex(VS& s, const u64* pm, i32 node, i32& it, bool& found) const;
  void augment(VS& s, const i32* stk, int top) const;
};

}  // namespace fastnips::causal::detail
