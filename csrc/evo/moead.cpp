// The evolutionary loops of moead.h: classic MOEA/D (fixed uniform weights) and the self-adjusting MOEA/D,
// step for step as python/fastnips/evo/reference.py (run_moead_reference, run_self_adjusting_reference).
#include "evo/moead.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "common/interrupt.h"
#include "evo/rng.h"

namespace fastnips::evo {
namespace {

using Word = uint64_t;

struct Raw {
  int64_t r1 = 0, r2 = 0;  // the undistorted objectives (LO, TZ) or (zeros, ones)
  bool operator==(const Raw& o) const { return r1 == o.r1 && r2 == o.r2; }
};

// Bit strings of n bits in ceil(n / 64) words (bit i: word i / 64, bit i % 64; the bits past n stay 0), the
// objectives and the two variation operators.
class Strings {
 public:
  explicit Strings(const RunSpec& s)
      : kind_(s.kind), n_(s.n), words_((s.n + 63) / 64), thr_(std::numeric_limits<uint64_t>::max() / uint64_t(s.n)) {}

  int64_t words() const { return words_; }

  void random(Xoshiro256& rng, Word* x) const {
    std::fill(x, x + words_, Word{0});
    for (int64_t i = 0; i < n_; ++i)
      if (rng.bit()) x[i >> 6] |= Word{1} << (i & 63);
  }

  // Standard bit mutation: bit i flips when its draw is below floor((2^64 - 1) / n).
  void mutate(Xoshiro256& rng, const Word* x, Word* y) const {
    std::copy(x, x + words_, y);
    for (int64_t i = 0; i < n_; ++i)
      if (rng.next() < thr_) y[i >> 6] ^= Word{1} << (i & 63);
  }

  Raw raw(const Word* x) const {
    if (kind_ == Kind::kOneMinMax) {
      int64_t ones = 0;
      for (int64_t k = 0; k < words_; ++k) ones += __builtin_popcountll(x[k]);
      return {n_ - ones, ones};
    }
    int64_t lo = 0;  // leading ones: the bits past n are 0 and stop the count
    for (int64_t k = 0; k < words_; ++k) {
      if (x[k] == ~Word{0}) {
        lo += 64;
        continue;
      }
      lo += __builtin_ctzll(~x[k]);
      break;
    }
    int64_t high = -1;  // the highest set bit
    for (int64_t k = words_ - 1; k >= 0; --k)
      if (x[k]) {
        high = 64 * k + 63 - __builtin_clzll(x[k]);
        break;
      }
    return {std::min(lo, n_), n_ - 1 - high};
  }

 private:
  Kind kind_;
  int64_t n_, words_;
  uint64_t thr_;
};

// Evaluations, the ideal point z* and the coverage of the population and of the archive (reference: _Tracker).
class Tracker {
 public:
  Tracker(const RunSpec& s) : s_(s), n_(s.n), count_(s.n + 1, 0) {
    out_.first_population.assign(n_ + 1, -1);
    if (s.archive) out_.first_archive.assign(n_ + 1, -1);
  }

  int64_t evals() const { return out_.evaluations; }
  bool full() const { return out_.full_population >= 0; }
  double z(int i) const { return z_[i]; }

  // f(x) for its raw objectives; counts the evaluation and updates z* and the archive.
  void evaluate(Raw r, double* f) {
    f[0] = s_.h1[r.r1];
    f[1] = s_.h2[r.r2];
    ++out_.evaluations;
    out_.digest = (out_.digest ^ uint64_t(r.r1 * (n_ + 1) + r.r2)) * 0x100000001B3ull;
    z_[0] = std::max(z_[0], f[0]);
    z_[1] = std::max(z_[1], f[1]);
    if (s_.archive && r.r1 + r.r2 == n_ && out_.first_archive[r.r1] < 0) {
      out_.first_archive[r.r1] = out_.evaluations;
      if (++in_archive_ == n_ + 1) out_.full_archive = out_.evaluations;
    }
  }

  void enter(Raw r) {
    if (r.r1 + r.r2 != n_) return;
    if (++count_[r.r1] != 1) return;
    ++covered_;
    if (out_.first_population[r.r1] < 0) out_.first_population[r.r1] = out_.evaluations;
    if (covered_ == n_ + 1 && out_.full_population < 0) out_.full_population = out_.evaluations;
  }

  void leave(Raw r) {
    if (r.r1 + r.r2 == n_ && --count_[r.r1] == 0) --covered_;
  }

  // Polls for Ctrl-C every 1024 evaluations.
  bool interrupted() const { return (out_.evaluations & 1023) == 0 && interrupt_requested(); }

  RunOutput finish(Xoshiro256& rng) {
    out_.digest ^= rng.next();
    out_.final_population.resize(n_ + 1);
    for (int64_t i = 0; i <= n_; ++i) out_.final_population[i] = count_[i] > 0;
    if (s_.archive) {
      out_.final_archive.resize(n_ + 1);
      for (int64_t i = 0; i <= n_; ++i) out_.final_archive[i] = out_.first_archive[i] >= 0;
    } else {
      out_.full_archive = -1;
    }
    return std::move(out_);
  }

 private:
  const RunSpec& s_;
  int64_t n_;
  std::vector<int64_t> count_;
  int64_t covered_ = 0, in_archive_ = 0;
  double z_[2] = {-std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  RunOutput out_;
};

// g(f | lambda, z*): the reference's subproblem_value, the same operations in the same order.
inline double subproblem_value(Decomposition d, double l1, double l2, const Tracker& t, const double* f) {
  if (d == Decomposition::kTchebycheff) return std::max(l1 * (t.z(0) - f[0]), l2 * (t.z(1) - f[1]));
  return -(l1 * f[0] + l2 * f[1]);
}

// B(i): the T nearest weights to lambda_i (|i - j|, ties to the smaller j), row-major (N + 1) x T: the
// reference's sort, generated outward from i (i, i - 1, i + 1, i - 2, ...) in O(T) per row.
std::vector<int64_t> neighbourhoods(int64_t N, int64_t T) {
  std::vector<int64_t> B((N + 1) * T);
  for (int64_t i = 0; i <= N; ++i) {
    int64_t* row = &B[i * T];
    int64_t m = 0;
    row[m++] = i;
    for (int64_t d = 1; m < T; ++d) {
      if (i - d >= 0) row[m++] = i - d;
      if (m < T && i + d <= N) row[m++] = i + d;
    }
  }
  return B;
}

Status run_moead(const RunSpec& s, RunOutput* out) {
  const Strings str(s);
  const int64_t W = str.words(), N = s.n_weights, T = s.n_neighbors;
  std::vector<double> l1(N + 1), l2(N + 1);
  for (int64_t j = 0; j <= N; ++j) {
    l1[j] = double(j) / double(N);
    l2[j] = 1.0 - l1[j];
  }
  const std::vector<int64_t> B = neighbourhoods(N, T);
  Xoshiro256 rng(s.seed);
  Tracker tr(s);
  std::vector<Word> pop((N + 1) * W), y(W);
  std::vector<Raw> raw(N + 1);
  std::vector<double> f(2 * (N + 1));
  for (int64_t j = 0; j <= N; ++j) {
    if (tr.evals() >= s.budget) {
      *out = tr.finish(rng);
      return {};
    }
    str.random(rng, &pop[j * W]);
    raw[j] = str.raw(&pop[j * W]);
    tr.evaluate(raw[j], &f[2 * j]);
    tr.enter(raw[j]);
    if (tr.interrupted()) return Status::interrupted();  // up to 2^33 draws before the main loop
  }
  auto done = [&] { return tr.evals() >= s.budget || (s.stop_on_full && tr.full()); };
  double fy[2];
  while (!done()) {
    for (int64_t i = 0; i <= N && !done(); ++i) {
      const int64_t* Bi = &B[i * T];
      str.mutate(rng, &pop[Bi[rng.below(uint64_t(T))] * W], y.data());
      const Raw ry = str.raw(y.data());
      tr.evaluate(ry, fy);
      for (int64_t m = 0; m < T; ++m) {
        const int64_t k = Bi[m];
        if (subproblem_value(s.decomposition, l1[k], l2[k], tr, fy) <=
            subproblem_value(s.decomposition, l1[k], l2[k], tr, &f[2 * k])) {
          tr.leave(raw[k]);
          std::copy(y.begin(), y.end(), pop.begin() + k * W);
          raw[k] = ry;
          f[2 * k] = fy[0];
          f[2 * k + 1] = fy[1];
          tr.enter(ry);
        }
      }
      if (tr.interrupted()) return Status::interrupted();
    }
  }
  *out = tr.finish(rng);
  return {};
}

struct Member {
  Raw r;
  std::vector<Word> x;
};

// F: the non-dominated members sorted by r1 (so r2 strictly decreases). y enters unless a member strictly
// dominates it, and evicts the members it weakly dominates (the reference's linear scans, here by binary search:
// the evicted members are one contiguous run, those with r1 <= y1 and r2 <= y2).
bool offer(std::vector<Member>& F, Raw ry, const std::vector<Word>& y, Tracker& tr) {
  const auto past = std::partition_point(F.begin(), F.end(), [&](const Member& q) { return q.r.r1 <= ry.r1; });
  if (past != F.end() && past->r.r2 >= ry.r2) return false;  // r1 > y1 and r2 >= y2
  if (past != F.begin()) {
    const Raw& q = std::prev(past)->r;
    if (q == ry) {  // the same point: y replaces it (the coverage does not change)
      std::prev(past)->x = y;
      return true;
    }
    if (q.r1 == ry.r1 && q.r2 > ry.r2) return false;
  }
  const auto first = std::partition_point(F.begin(), past, [&](const Member& q) { return q.r.r2 > ry.r2; });
  for (auto it = first; it != past; ++it) tr.leave(it->r);
  if (first == past) {
    F.insert(first, Member{ry, y});
  } else {  // reuse the storage of the first evicted member
    first->r = ry;
    first->x = y;
    F.erase(first + 1, past);
  }
  tr.enter(ry);
  return true;
}

Status run_self_adjusting(const RunSpec& s, RunOutput* out) {
  const Strings str(s);
  Xoshiro256 rng(s.seed);
  Tracker tr(s);
  std::vector<Word> y(str.words());
  double f[2];
  str.random(rng, y.data());
  const Raw r0 = str.raw(y.data());
  tr.evaluate(r0, f);
  std::vector<Member> F{Member{r0, y}};
  tr.enter(r0);
  Member lo{r0, y}, hi{r0, y};  // the boundary subproblems (0, 1) and (1, 0)
  while (tr.evals() < s.budget && !(s.stop_on_full && tr.full())) {
    const uint64_t k = rng.below(2 * F.size() + 1);
    const std::vector<Word>* parent;
    if (k < 2) {
      parent = k == 0 ? &lo.x : &hi.x;
    } else if (k % 2 == 0) {
      parent = &F[(k - 2) / 2].x;
    } else {
      parent = &F[(k - 3) / 2 + rng.bit()].x;
    }
    str.mutate(rng, parent->data(), y.data());
    const Raw ry = str.raw(y.data());
    tr.evaluate(ry, f);
    if (ry.r2 >= lo.r.r2) {
      lo.r = ry;
      lo.x = y;
    }
    if (ry.r1 >= hi.r.r1) {
      hi.r = ry;
      hi.x = y;
    }
    offer(F, ry, y, tr);
    if (tr.interrupted()) return Status::interrupted();
  }
  *out = tr.finish(rng);
  return {};
}

}  // namespace

Status run(const RunSpec& s, RunOutput* out) {
  if (s.n < 1 || s.n > kMaxBits)
    return Status::value_error("n must lie in [1, " + std::to_string(kMaxBits) + "], got " + std::to_string(s.n));
  if (s.budget < 1) return Status::value_error("budget must be >= 1 evaluation, got " + std::to_string(s.budget));
  if (!s.h1 || !s.h2) return Status::value_error("the distortion tables h1 and h2 are missing");
  for (const double* h : {s.h1, s.h2})
    for (int64_t v = 0; v <= s.n; ++v)
      if (!std::isfinite(h[v]) || std::fabs(h[v]) > 0x1p1020 || (v > 0 && !(h[v] > h[v - 1])))
        return Status::value_error(std::string(h == s.h1 ? "h1" : "h2") +
                                   " must be finite, within +-2^1020 and strictly increasing on 0..n; it is not at " +
                                   std::to_string(v));
  if (s.algorithm == Algorithm::kMoead) {
    if (s.n_weights < 1) return Status::value_error("n_weights must be >= 1, got " + std::to_string(s.n_weights));
    if (s.n_weights > kMaxCells)
      return Status::value_error("n_weights must be <= " + std::to_string(kMaxCells) + ", got " +
                                 std::to_string(s.n_weights));
    if (s.n_weights + 1 > kMaxSubproblems)
      return Status::value_error("n_weights + 1 must be <= " + std::to_string(kMaxSubproblems) + ", got " +
                                 std::to_string(s.n_weights + 1));
    if (s.n_neighbors < 1 || s.n_neighbors > s.n_weights + 1)
      return Status::value_error("n_neighbors must lie in [1, n_weights + 1], got " + std::to_string(s.n_neighbors));
    const int64_t cells = std::max(s.n_neighbors, (s.n + 63) / 64) * (s.n_weights + 1);
    if (cells / (s.n_weights + 1) != std::max(s.n_neighbors, (s.n + 63) / 64) || cells > kMaxCells)
      return Status::value_error("(n_weights + 1) * max(n_neighbors, n / 64) must be <= " +
                                 std::to_string(kMaxCells) + " (the neighbourhoods and the population)");
    return run_moead(s, out);
  }
  return run_self_adjusting(s, out);
}

}  // namespace fastnips::evo
