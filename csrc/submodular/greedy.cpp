// Naive and lazy greedy over the objectives of greedy.h. See greedy.h for the definitions.
#include "submodular/greedy.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "common/interrupt.h"
#include "common/threads.h"

namespace fastnips::submodular {
namespace {

// ------------------------------------------------------------------------------------------ objectives

struct PairwiseObj {
  const PairwiseSpec& p;
  std::vector<double> g, dg;          // state (C); per candidate dg_c(a | S) (n, C)
  std::vector<int64_t> folded, sel;   // selected elements folded into dg[a]; the selection so far
  double fcur = 0.0;
  int64_t scratch_size;

  explicit PairwiseObj(const PairwiseSpec& spec)
      : p(spec), g(spec.C, 0.0), dg(spec.m, spec.m + spec.n * spec.C), folded(spec.n, 0) {
    int64_t kmax = spec.C;
    for (int64_t d : spec.dims) kmax = std::max(kmax, d);
    scratch_size = spec.C + 2 * kmax;
    std::vector<double> scr(scratch_size);
    fcur = pairwise_value(p, g.data(), scr.data());  // f(empty): the gains are differences from it
  }
  int64_t n() const { return p.n; }
  double w(int64_t c, int64_t a, int64_t b) const {
    const double* ua = p.U + (c * p.n + a) * p.r;
    const double* ub = p.U + (c * p.n + b) * p.r;
    double dot = 0.0;
    for (int64_t t = 0; t < p.r; ++t) dot += ua[t] * ub[t];
    return p.scale[c] * p.m[a * p.C + c] * p.m[b * p.C + c] / (1.0 + std::exp(-dot));
  }
  void refresh(int64_t a) {
    const auto done = int64_t(sel.size());
    for (int64_t j = folded[a]; j < done; ++j)
      for (int64_t c = 0; c < p.C; ++c) dg[a * p.C + c] += w(c, a, sel[j]);
    folded[a] = done;
  }
  double gain(int64_t a, double* scr) {
    refresh(a);
    for (int64_t c = 0; c < p.C; ++c) scr[c] = g[c] + dg[a * p.C + c];
    return pairwise_value(p, scr, scr + p.C) - fcur;
  }
  void add(int64_t a, double* scr) {
    refresh(a);
    for (int64_t c = 0; c < p.C; ++c) g[c] += dg[a * p.C + c];
    sel.push_back(a);
    fcur = pairwise_value(p, g.data(), scr);
  }
};

template <Concave Phi>
inline double concave(double x) {
  if constexpr (Phi == Concave::kSqrt) return std::sqrt(x);
  if constexpr (Phi == Concave::kLog) return std::log1p(x);
  return x / (1.0 + x);
}

// phi is a template argument: the inner loop has no branch on it (and the sqrt variant vectorises)
template <Concave Phi>
struct FeatureObj {
  const FeatureSpec& p;
  std::vector<double> c, phic;  // column sums of the selection and phi of them
  int64_t scratch_size = 0;
  explicit FeatureObj(const FeatureSpec& spec) : p(spec), c(spec.D, 0.0), phic(spec.D, concave<Phi>(0.0)) {}
  int64_t n() const { return p.n; }
  double gain(int64_t a, double*) const {
    const double* x = p.X + a * p.D;
    const double* cc = c.data();
    const double* pc = phic.data();
    double s0 = 0.0, s1 = 0.0;  // two partial sums
    int64_t d = 0;
    for (; d + 2 <= p.D; d += 2) {
      s0 += p.w[d] * (concave<Phi>(cc[d] + x[d]) - pc[d]);
      s1 += p.w[d + 1] * (concave<Phi>(cc[d + 1] + x[d + 1]) - pc[d + 1]);
    }
    if (d < p.D) s0 += p.w[d] * (concave<Phi>(cc[d] + x[d]) - pc[d]);
    return s0 + s1;
  }
  void add(int64_t a, double*) {
    const double* x = p.X + a * p.D;
    for (int64_t d = 0; d < p.D; ++d) {
      c[d] += x[d];
      phic[d] = concave<Phi>(c[d]);
    }
  }
};

struct FacilityObj {
  const FacilitySpec& p;
  std::vector<double> cur;  // max(0, max_{a in S} K_av) per ground point
  int64_t scratch_size = 0;
  explicit FacilityObj(const FacilitySpec& spec) : p(spec), cur(spec.G, 0.0) {}
  int64_t n() const { return p.n; }
  double gain(int64_t a, double*) const {
    const double* k = p.K + a * p.G;
    const double* c = cur.data();
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;  // four partial sums: the loop vectorises
    int64_t v = 0;
    for (; v + 4 <= p.G; v += 4) {
      s0 += std::max(0.0, k[v] - c[v]);
      s1 += std::max(0.0, k[v + 1] - c[v + 1]);
      s2 += std::max(0.0, k[v + 2] - c[v + 2]);
      s3 += std::max(0.0, k[v + 3] - c[v + 3]);
    }
    for (; v < p.G; ++v) s0 += std::max(0.0, k[v] - c[v]);
    return (s0 + s1) + (s2 + s3);
  }
  void add(int64_t a, double*) {
    const double* k = p.K + a * p.G;
    for (int64_t v = 0; v < p.G; ++v) cur[v] = std::max(cur[v], k[v]);
  }
};

// --------------------------------------------------------------------------------------------- greedy

struct Entry {
  double key;
  int64_t idx, stamp;
};
// (key, -idx) lexicographic: the top of a max-heap is the largest key, ties to the smaller index
bool before(double k1, int64_t i1, double k2, int64_t i2) { return k1 > k2 || (k1 == k2 && i1 < i2); }
struct HeapLess {
  bool operator()(const Entry& x, const Entry& y) const { return before(y.key, y.idx, x.key, x.idx); }
};

template <class Obj>
class Greedy {
 public:
  Greedy(Obj& obj, const Budget& bud, int n_threads)
      : obj_(obj), bud_(bud), n_(obj.n()), threads_(n_threads), taken_(obj.n(), 0),
        scratch_(std::max<int64_t>(obj.scratch_size, 1)) {
    left_ = bud.budget;
  }

  Status run(bool lazy, GreedyResult& out) {
    const int64_t kmax = bud_.k < 0 ? n_ : std::min(bud_.k, n_);
    std::vector<double> g0(n_);
    scan_gains(g0);  // the gains at the empty set, every candidate (in parallel)
    out.evaluations = n_;
    std::priority_queue<Entry, std::vector<Entry>, HeapLess> heap;
    if (lazy)
      for (int64_t a = 0; a < n_; ++a)
        if (fits(a)) heap.push({key(a, g0[a]), a, 0});
    for (int64_t step = 0; step < kmax; ++step) {
      if (interrupt_requested()) return Status::interrupted();
      int64_t best = -1;
      double gain = 0.0;
      if (lazy) {
        while (!heap.empty()) {
          Entry e = heap.top();
          heap.pop();
          if (!fits(e.idx)) continue;  // the budget only shrinks: it never fits again
          if (e.stamp == step) {
            best = e.idx;
            gain = step == 0 ? g0[best] : fresh_[best];
            break;
          }
          const double gn = obj_.gain(e.idx, scratch_.data());
          ++out.evaluations;
          if (fresh_.empty()) fresh_.assign(n_, 0.0);
          fresh_[e.idx] = gn;
          heap.push({key(e.idx, gn), e.idx, step});
        }
      } else if (step == 0) {
        best = argmax(g0, gain);
      } else {
        std::vector<double> gs(n_, 0.0);
        scan_gains(gs);
        out.evaluations += n_ - step;
        best = argmax(gs, gain);
      }
      if (best < 0) break;
      obj_.add(best, scratch_.data());
      taken_[best] = 1;
      if (bud_.costs) left_ -= bud_.costs[best];
      out.selected.push_back(best);
      out.gains.push_back(gain);
    }
    if (bud_.costs) keep_best_singleton(g0, out);
    return Status{};
  }

 private:
  bool fits(int64_t a) const { return !taken_[a] && (!bud_.costs || bud_.costs[a] <= left_); }
  double key(int64_t a, double gain) const { return bud_.costs ? gain / bud_.costs[a] : gain; }

  // gains[a] for every candidate not taken (the others keep their value), in parallel
  void scan_gains(std::vector<double>& gains) {
    const int nt = thread_count(threads_, n_ * 64, 1 << 14);
#pragma omp parallel num_threads(nt)
    {
      std::vector<double> scr(scratch_.size());
#pragma omp for schedule(static)
      for (int64_t a = 0; a < n_; ++a)
        if (!taken_[a]) gains[a] = obj_.gain(a, scr.data());
    }
  }

  int64_t argmax(const std::vector<double>& gains, double& gain) const {
    int64_t best = -1;
    for (int64_t a = 0; a < n_; ++a)
      if (fits(a) && (best < 0 || before(key(a, gains[a]), a, key(best, gains[best]), best))) best = a;
    if (best >= 0) gain = gains[best];
    return best;
  }

  // CELF's rule under a knapsack: the best feasible singleton replaces the ratio greedy when it is worth more
  void keep_best_singleton(const std::vector<double>& g0, GreedyResult& out) const {
    int64_t best = -1;
    for (int64_t a = 0; a < n_; ++a)
      if (bud_.costs[a] <= bud_.budget && (bud_.k != 0) && (best < 0 || g0[a] > g0[best])) best = a;
    double total = 0.0;
    for (double x : out.gains) total += x;
    if (best >= 0 && g0[best] > total) {
      out.selected.assign(1, best);
      out.gains.assign(1, g0[best]);
      out.singleton = true;
    }
  }

  Obj& obj_;
  const Budget& bud_;
  int64_t n_;
  int threads_;
  std::vector<char> taken_;
  std::vector<double> scratch_, fresh_;
  double left_ = 0.0;
};

template <class Obj, class Spec>
Status run(const Spec& spec, const Budget& bud, bool lazy, int n_threads, GreedyResult& out) {
  Obj obj(spec);
  Greedy<Obj> greedy(obj, bud, n_threads);
  return greedy.run(lazy, out);
}

}  // namespace

double pairwise_value(const PairwiseSpec& p, const double* g, double* scratch) {
  int64_t kmax = p.C;
  for (int64_t d : p.dims) kmax = std::max(kmax, d);
  double* h = scratch;
  double* nxt = scratch + kmax;
  for (int64_t c = 0; c < p.C; ++c) {
    double s = 0.0;
    for (int64_t t = 0; t < p.R; ++t) {
      const double beta = p.beta[c * p.R + t];
      s += p.a[c * p.R + t] * -std::expm1(-beta * g[c]) / beta;
    }
    h[c] = s;
  }
  int64_t width = p.C;
  for (size_t l = 0; l < p.W.size(); ++l) {
    const int64_t out = p.dims[l + 1];
    for (int64_t k = 0; k < out; ++k) {
      double s = p.b[l][k];
      for (int64_t j = 0; j < width; ++j) s += p.W[l][k * width + j] * h[j];
      nxt[k] = std::log1p(s);
    }
    std::swap(h, nxt);
    width = out;
  }
  double f = 0.0;
  for (int64_t k = 0; k < width; ++k) f += p.v[k] * h[k];
  return f;
}

Status greedy_pairwise(const PairwiseSpec& p, const Budget& bud, bool lazy, int n_threads, GreedyResult& out) {
  return run<PairwiseObj>(p, bud, lazy, n_threads, out);
}
Status greedy_feature(const FeatureSpec& p, const Budget& bud, bool lazy, int n_threads, GreedyResult& out) {
  switch (p.phi) {
    case Concave::kSqrt: return run<FeatureObj<Concave::kSqrt>>(p, bud, lazy, n_threads, out);
    case Concave::kLog: return run<FeatureObj<Concave::kLog>>(p, bud, lazy, n_threads, out);
    case Concave::kSigmoid: break;
  }
  return run<FeatureObj<Concave::kSigmoid>>(p, bud, lazy, n_threads, out);
}
Status greedy_facility(const FacilitySpec& p, const Budget& bud, bool lazy, int n_threads, GreedyResult& out) {
  return run<FacilityObj>(p, bud, lazy, n_threads, out);
}

}  // namespace fastnips::submodular
