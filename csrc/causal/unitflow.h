// Internal to the trek-system searches (causal/trek.cpp, causal/lfhtc.cpp): a small unit-capacity flow
// network whose arcs are added once and whose capacities are reset per query. Plain C++17, header only.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace fastnips::causal::detail {

// Unit-capacity max-flow by BFS augmenting paths (Edmonds-Karp), stopped at `limit`. The capacities of a
// query are a copy of `base` with the source and target arcs of that query opened (and, where the caller
// knows some paths, those paths' flow: push() moves one unit along an arc).
struct FlowNet {
  std::vector<int32_t> head, nxt, to, par, queue;
  std::vector<uint8_t> base, cap;
  explicit FlowNet(int nv) : head(size_t(nv), -1), par(size_t(nv)) {}
  int32_t arc(int u, int v, uint8_t c = 1) {
    add(u, v, c);
    add(v, u, 0);
    return int32_t(to.size()) - 2;
  }
  void add(int u, int v, uint8_t c) {
    to.push_back(v);
    base.push_back(c);
    nxt.push_back(head[u]);
    head[u] = int32_t(to.size()) - 1;
  }
  void push(int32_t e) {
    cap[size_t(e)] -= 1;
    cap[size_t(e ^ 1)] += 1;
  }
  // From a feasible flow of value `flow` already in cap (0: none), augmented to at most `limit`.
  int max_flow(int s, int t, int limit, int flow = 0) {
    while (flow < limit) {
      std::fill(par.begin(), par.end(), -1);
      par[s] = -2;
      queue.assign(1, s);
      for (size_t h = 0; h < queue.size() && par[t] == -1; ++h)
        for (int32_t e = head[queue[h]]; e >= 0; e = nxt[e])
          if (cap[e] && par[to[e]] == -1) {
            par[to[e]] = e;
            queue.push_back(to[e]);
          }
      if (par[t] == -1) break;
      for (int w = t; w != s; w = to[par[w] ^ 1]) {
        cap[par[w]] -= 1;
        cap[par[w] ^ 1] += 1;
      }
      ++flow;
    }
    return flow;
  }
};

}  // namespace fastnips::causal::detail
