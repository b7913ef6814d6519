#include "truescore/constat.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "truescore/numeric.hpp"
#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/sampling.hpp"

namespace truescore {

namespace {

// Reinsch's bands for n points (p = n - 2 interior second derivatives): Q^T W^-1 Q in
// n0..n2, R in r0, r1, Q^T y in z; Q's column i holds a_i, b_i, c_i in rows i, i + 1, i + 2.
// Band arrays carry zeros past their ends (n1[p - 1], n2[p - 2 ..]) so the loops below need
// no boundary branches.
struct Bands {
    std::size_t n = 0, p = 0;
    std::vector<double> a, b, c, n0, n1, n2, r0, r1, z, inv_w;
    void setup(const double* x, const double* y, const double* w, std::size_t count) {
        n = count;
        p = n - 2;
        // Every entry [0, p) is written below; only the pads past the ends are zeroed.
        for (auto* v : {&a, &b, &c, &n0, &n1, &n2, &r0, &r1, &z}) {
            v->resize(p + 2);
            (*v)[p] = (*v)[p + 1] = 0.0;
        }
        n1[p - 1] = 0.0;
        n2[p - 1] = 0.0;
        if (p >= 2) n2[p - 2] = 0.0;
        inv_w.resize(n);
        // 1 / 1 is 1: unit weights (all but ConStat's anchors) skip the division.
        for (std::size_t k = 0; k < n; ++k) inv_w[k] = w[k] == 1.0 ? 1.0 : 1.0 / w[k];
        // c_i = 1 / (x_{i+2} - x_{i+1}) is a_{i+1}: each reciprocal is taken once.
        double a_next = 1.0 / (x[1] - x[0]);
        for (std::size_t i = 0; i < p; ++i) {
            const double h0 = x[i + 1] - x[i], h1 = x[i + 2] - x[i + 1];
            a[i] = a_next;
            c[i] = a_next = 1.0 / h1;
            b[i] = -a[i] - c[i];
            r0[i] = (h0 + h1) / 3.0;
            r1[i] = i + 1 < p ? h1 / 6.0 : 0.0;
            z[i] = a[i] * y[i] + b[i] * y[i + 1] + c[i] * y[i + 2];
        }
        for (std::size_t i = 0; i < p; ++i) {
            n0[i] = a[i] * a[i] * inv_w[i] + b[i] * b[i] * inv_w[i + 1] + c[i] * c[i] * inv_w[i + 2];
            if (i + 1 < p) n1[i] = b[i] * a[i + 1] * inv_w[i + 1] + c[i] * b[i + 1] * inv_w[i + 2];
            if (i + 2 < p) n2[i] = c[i] * a[i + 2] * inv_w[i + 2];
        }
    }
};

// One lambda: M = R + lambda Q^T W^-1 Q = L D L^T (unit lower L with subdiagonals l1, l2;
// inv_d = 1 / D), gamma = M^-1 Q^T y, the residuals e = lambda W^-1 Q gamma (so
// f(x_k) = y_k - e_k), their sum of squares and, for GCV, tr A = 2 + tr(M^-1 R) from the
// diagonal and first off-diagonal of M^-1 (Hutchinson & de Hoog's recursion on L D L^T).
// Two passes: the factorisation with the forward substitution, then the back substitution
// with the residuals and the trace recursion (independent chains the CPU overlaps). Arrays
// are padded by two zeros on the left (index i + 2 holds entry i) so that the recursions
// read no out-of-range entry.
struct Solve {
    std::vector<double> l1, l2, inv_d, gam, e;
    double rss = 0.0, trace = 0.0;
    void run(const Bands& bd, double lambda, bool with_trace) {
        const std::size_t p = bd.p, n = bd.n;
        // Entries [2, p + 2) are all written below; the left pads are never written (zero
        // from the first resize), the right pads of gam may hold a longer fit's values.
        l1.resize(p + 2), l2.resize(p + 2), inv_d.resize(p + 2), gam.resize(p + 4), e.resize(n);
        gam[p + 2] = gam[p + 3] = 0.0;
        double* L1 = l1.data() + 2;
        double* L2 = l2.data() + 2;
        double* ID = inv_d.data() + 2;
        double* G = gam.data() + 2;  // gam[-2 .. p + 1], zero outside [0, p)
        double dm1 = 0.0, dm2 = 0.0;  // D[i - 1], D[i - 2]
        double um1 = 0.0, um2 = 0.0;  // u[i - 1], u[i - 2] of L u = Q^T y
        for (std::size_t i = 0; i < p; ++i) {
            const double di = bd.r0[i] + lambda * bd.n0[i] - L1[i - 1] * L1[i - 1] * dm1 - L2[i - 2] * L2[i - 2] * dm2;
            const double inv = 1.0 / di;
            ID[i] = inv;
            L1[i] = (bd.r1[i] + lambda * bd.n1[i] - L2[i - 1] * dm1 * L1[i - 1]) * inv;
            L2[i] = lambda * bd.n2[i] * inv;
            const double u = bd.z[i] - L1[i - 1] * um1 - L2[i - 2] * um2;
            G[i] = u * inv;
            dm2 = dm1, dm1 = di;
            um2 = um1, um1 = u;
        }
        if (!with_trace) {  // a prediction needs gamma; residuals come from residual()
            for (std::size_t i = p; i-- > 0;) G[i] -= L1[i] * G[i + 1] + L2[i] * G[i + 2];
            lambda_ = lambda, bands_ = &bd, rss = trace = 0.0;
            return;
        }
        lambda_ = lambda, bands_ = &bd;
        const double* w = bd.inv_w.data();
        double sum = 0.0, tr = 0.0;
        double s0_next = 0.0, s0_next2 = 0.0, s1_next = 0.0;  // S[i+1,i+1], S[i+2,i+2], S[i+1,i+2]
        for (std::size_t i = p; i-- > 0;) {
            const double a1 = L1[i], a2 = L2[i];  // zero past the ends
            G[i] -= a1 * G[i + 1] + a2 * G[i + 2];
            // Q's row i + 2: a_{i+2} gamma_{i+2} + b_{i+1} gamma_{i+1} + c_i gamma_i (the
            // padded coefficients are zero past the ends).
            const double ek = lambda * (bd.a[i + 2] * G[i + 2] + bd.b[i + 1] * G[i + 1] + bd.c[i] * G[i]) * w[i + 2];
            e[i + 2] = ek;
            sum += ek * ek;
            const double s2 = -a1 * s1_next - a2 * s0_next2;  // S[i, i+2]
            const double s1 = -a1 * s0_next - a2 * s1_next;   // S[i, i+1]
            const double s0 = ID[i] - a1 * s1 - a2 * s2;      // S[i, i]
            tr += s0 * bd.r0[i] + 2.0 * s1 * bd.r1[i];
            s0_next2 = s0_next, s0_next = s0, s1_next = s1;
        }
        e[1] = lambda * (bd.a[1] * G[1] + bd.b[0] * G[0]) * w[1];
        e[0] = lambda * bd.a[0] * G[0] * w[0];
        rss = sum + e[1] * e[1] + e[0] * e[0];
        trace = 2.0 + tr;
    }
    // Second derivative at interior point i (0 <= i < p).
    double second(std::size_t i) const { return gam[i + 2]; }
    // Residual e_k of the last run, the same expression the traced pass stores in e.
    double residual(std::size_t k) const {
        const Bands& bd = *bands_;
        const double* G = gam.data() + 2;
        if (k >= 2)
            return lambda_ * (bd.a[k] * G[k] + bd.b[k - 1] * G[k - 1] + bd.c[k - 2] * G[k - 2]) * bd.inv_w[k];
        if (k == 1) return lambda_ * (bd.a[1] * G[1] + bd.b[0] * G[0]) * bd.inv_w[1];
        return lambda_ * bd.a[0] * G[0] * bd.inv_w[0];
    }

  private:
    double lambda_ = 0.0;
    const Bands* bands_ = nullptr;
};

struct SplineWork {
    Bands bands;
    Solve solve;
};

double gcv_value(SplineWork& wk, double lambda) {
    wk.solve.run(wk.bands, lambda, true);
    const double n = static_cast<double>(wk.bands.n);
    const double t = 1.0 - wk.solve.trace / n;
    return (wk.solve.rss / n) / (t * t);
}

double sign_or_one(double v) { return v > 0.0 ? 1.0 : (v < 0.0 ? -1.0 : 1.0); }

// SciPy's _minimize_scalar_bounded (fminbound), the same steps and comparisons.
template <class F>
double bounded_brent(F f, double x1, double x2, double xatol = 1e-5, int maxfun = 500) {
    const double sqrt_eps = std::sqrt(2.2e-16);
    const double golden_mean = 0.5 * (3.0 - std::sqrt(5.0));
    double a = x1, b = x2;
    double fulc = a + golden_mean * (b - a);
    double nfc = fulc, xf = fulc;
    double rat = 0.0, e = 0.0;
    double x = xf;
    double fx = f(x);
    int num = 1;
    double ffulc = fx, fnfc = fx;
    double xm = 0.5 * (a + b);
    double tol1 = sqrt_eps * std::fabs(xf) + xatol / 3.0;
    double tol2 = 2.0 * tol1;
    while (std::fabs(xf - xm) > (tol2 - 0.5 * (b - a))) {
        bool golden = true;
        if (std::fabs(e) > tol1) {
            golden = false;
            double r = (xf - nfc) * (fx - ffulc);
            double q = (xf - fulc) * (fx - fnfc);
            double p = (xf - fulc) * q - (xf - nfc) * r;
            q = 2.0 * (q - r);
            if (q > 0.0) p = -p;
            q = std::fabs(q);
            r = e;
            e = rat;
            if ((std::fabs(p) < std::fabs(0.5 * q * r)) && (p > q * (a - xf)) && (p < q * (b - xf))) {
                rat = (p + 0.0) / q;
                x = xf + rat;
                if (((x - a) < tol2) || ((b - x) < tol2)) {
                    const double si = (xm - xf) > 0.0 ? 1.0 : ((xm - xf) < 0.0 ? -1.0 : 0.0);
                    rat = tol1 * (si + ((xm - xf) == 0.0 ? 1.0 : 0.0));
                }
            } else {
                golden = true;
            }
        }
        if (golden) {
            e = xf >= xm ? a - xf : b - xf;
            rat = golden_mean * e;
        }
        const double si = sign_or_one(rat);
        x = xf + si * std::max(std::fabs(rat), tol1);
        const double fu = f(x);
        ++num;
        if (fu <= fx) {
            if (x >= xf) a = xf;
            else b = xf;
            fulc = nfc, ffulc = fnfc;
            nfc = xf, fnfc = fx;
            xf = x, fx = fu;
        } else {
            if (x < xf) a = x;
            else b = x;
            if ((fu <= fnfc) || (nfc == xf)) {
                fulc = nfc, ffulc = fnfc;
                nfc = x, fnfc = fu;
            } else if ((fu <= ffulc) || (fulc == xf) || (fulc == nfc)) {
                fulc = x, ffulc = fu;
            }
        }
        xm = 0.5 * (a + b);
        tol1 = sqrt_eps * std::fabs(xf) + xatol / 3.0;
        tol2 = 2.0 * tol1;
        if (num >= maxfun) break;
    }
    return xf;
}

double gcv_lambda(SplineWork& wk) {
    return bounded_brent([&](double lam) { return gcv_value(wk, lam); }, 0.0,
                         static_cast<double>(wk.bands.n));
}

// The natural cubic spline with values g = y - e and second derivatives gamma (0 at the
// ends) at x0, on the piece [x_j, x_j+1] holding it (an end piece beyond the ends).
double spline_value(const double* x, const double* y, const Solve& sv, std::size_t n, double x0) {
    std::size_t j = static_cast<std::size_t>(std::upper_bound(x, x + n, x0) - x);
    j = j == 0 ? 0 : j - 1;
    if (j > n - 2) j = n - 2;
    const double h = x[j + 1] - x[j];
    const double gl = y[j] - sv.residual(j), gr = y[j + 1] - sv.residual(j + 1);
    const double cl = j >= 1 ? sv.second(j - 1) : 0.0, cr = j + 1 <= n - 2 ? sv.second(j) : 0.0;
    const double u = x0 - x[j], v = x[j + 1] - x0;
    return (u * gr + v * gl) / h - u * v / 6.0 * ((1.0 + u / h) * cr + (1.0 + v / h) * cl);
}

double spline_predict(SplineWork& wk, const double* x, const double* y, const double* w, std::size_t n,
                      double lambda, double x0) {
    wk.bands.setup(x, y, w, n);
    // A lambda above kMaxLambda is kMaxLambda: the fit has long reached its limit, the
    // weighted least-squares line, there (on [0, 1] data it is the line to double precision
    // from about 1e8), while lambda times the bands overflows past about 1e303 and the fit
    // became garbage (smoothing=1e308 predicted 0 for every model).
    constexpr double kMaxLambda = 1e200;
    const double lam = lambda < 0.0 ? gcv_lambda(wk) : std::min(lambda, kMaxLambda);
    wk.solve.run(wk.bands, lam, false);
    return spline_value(x, y, wk.solve, n, x0);
}

// Scratch of one worker of the resample loop.
struct Scratch {
    SplineWork spline;
    std::vector<std::uint64_t> idx;
    std::vector<double> cb, cr, bench, ref;
    std::vector<std::int16_t> cb16, cr16;  // the counts of a 0/1 matrix (RowMeans)
    std::vector<std::size_t> draws_a, draws_b, seen;
    std::vector<double> px, py, ux, uy, ones, ax, ay, aw;
    std::vector<std::size_t> order;
    // the sorted path: per reference position, its x and y, the positions in x and in y
    // order, the draw counts of each draw set, and a row's counts
    std::vector<double> vx, vy;
    std::vector<std::size_t> by_x, by_y, count_a, count_b, count, seq;
};

// The sorted coordinate list of a multiset: the values `value[r]` of the positions r in
// `order` (increasing value), each count[r] times, with g placed among them when `guess`.
void emit_sorted(const std::vector<std::size_t>& order, const std::vector<double>& value, const std::size_t* count,
                 bool guess, double g, std::vector<double>& out) {
    std::size_t total = guess ? 1 : 0;
    for (const std::size_t r : order) total += count[r];
    out.resize(total);
    double* o = out.data();
    bool placed = !guess;
    for (const std::size_t r : order) {
        const double v = value[r];
        if (!placed && g <= v) *o++ = g, placed = true;
        for (std::size_t c = count[r]; c > 0; --c) *o++ = v;
    }
    if (!placed) *o = g;
}

// ConStat's tie rule on sorted points (ux, uy): a point whose x equals the next one's is
// dropped (the first of a tie goes). Returns the number left.
std::size_t drop_ties(Scratch& s) {
    const std::size_t k = s.ux.size();
    std::size_t n = 0;
    for (std::size_t i = 0; i < k; ++i) {
        if (i + 1 < k && s.ux[i] == s.ux[i + 1]) continue;  // ConStat deletes the first of a tie
        s.ux[n] = s.ux[i], s.uy[n] = s.uy[i], ++n;
    }
    s.ux.resize(n), s.uy.resize(n);
    return n;
}

// ConStat's sorted points (sort=True) from per-reference counts, without sorting: the
// same (ux, uy) prepare_points(s, true) gives for that multiset. Returns their number.
std::size_t sorted_points(Scratch& s, const std::size_t* count, bool guess, double gx, double gy) {
    emit_sorted(s.by_x, s.vx, count, guess, gx, s.ux);
    emit_sorted(s.by_y, s.vy, count, guess, gy, s.uy);
    return drop_ties(s);
}

// A standard normal from one word, by inversion: Phi^-1((top 53 bits + 1/2) / 2^53).
double normal_from(Philox& gen) {
    const double u = (static_cast<double>(gen.next_u64() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    return normal_quantile(u);
}

// k draws below(k) from gen, again until at least kConStatMinDistinct are distinct; with
// exactly kConStatMinDistinct references no draw at all (ConStat keeps every model then).
void draw_models(Philox& gen, std::size_t k, std::vector<std::size_t>& out, std::vector<std::size_t>& seen) {
    out.resize(k);
    if (k == kConStatMinDistinct) {
        std::iota(out.begin(), out.end(), std::size_t{0});
        return;
    }
    for (;;) {
        for (std::size_t t = 0; t < k; ++t) out[t] = static_cast<std::size_t>(gen.below(k));
        seen.assign(out.begin(), out.end());
        std::sort(seen.begin(), seen.end());
        if (static_cast<std::size_t>(std::unique(seen.begin(), seen.end()) - seen.begin()) >= kConStatMinDistinct)
            return;
    }
}

// A score matrix (m, cols) row-major and its row means under column counts: the means of
// the resample that draws column idx[q] for q < cols (each column once when idx is null).
// Row j's sum is kept in eight accumulators (column i into i mod 8, then added pairwise):
// the compiler can keep them in vector registers; the order is fixed, so the result is
// too. A matrix of 0s and 1s (per-item correctness, the usual case) of at most 32,767
// columns is kept as 16-bit integers and summed as integers (vector multiply-adds on a
// quarter of the memory): every partial sum of the floating-point path is an exact
// integer there, so the means are the same bits. On 0/1 scores equal multisets give equal
// means either way.
class RowMeans {
  public:
    RowMeans(const double* data, std::size_t m, std::size_t cols) : data_(data), m_(m), cols_(cols) {
        const std::size_t size = m * cols;
        if (cols > 32767 || !std::all_of(data, data + size, [](double v) { return v == 0.0 || v == 1.0; })) return;
        bits_.resize(size);
        for (std::size_t k = 0; k < size; ++k) bits_[k] = data[k] == 1.0 ? 1 : 0;
    }

    void operator()(const std::uint64_t* idx, std::vector<double>& counts, std::vector<std::int16_t>& counts16,
                    std::vector<double>& out) const {
        out.resize(m_);
        const double n = static_cast<double>(cols_);
        if (!bits_.empty()) {
            counts16.assign(cols_, idx == nullptr ? 1 : 0);
            if (idx != nullptr)
                for (std::size_t q = 0; q < cols_; ++q) ++counts16[idx[q]];
            const std::int16_t* c = counts16.data();
            for (std::size_t j = 0; j < m_; ++j) {
                const std::int16_t* row = bits_.data() + j * cols_;
                std::int32_t sum = 0;
                for (std::size_t i = 0; i < cols_; ++i) sum += static_cast<std::int32_t>(row[i]) * c[i];
                out[j] = static_cast<double>(sum) / n;
            }
            return;
        }
        counts.assign(cols_, idx == nullptr ? 1.0 : 0.0);
        if (idx != nullptr)
            for (std::size_t q = 0; q < cols_; ++q) counts[idx[q]] += 1.0;
        for (std::size_t j = 0; j < m_; ++j) {
            const double* row = data_ + j * cols_;
            const double* counts_ = counts.data();
            // (named locals: an array here was kept on the stack, a store per item)
            double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, a4 = 0.0, a5 = 0.0, a6 = 0.0, a7 = 0.0;
            std::size_t i = 0;
            for (; i + 8 <= cols_; i += 8) {
                const double* c = counts_ + i;
                const double* r = row + i;
                a0 += c[0] * r[0], a1 += c[1] * r[1], a2 += c[2] * r[2], a3 += c[3] * r[3];
                a4 += c[4] * r[4], a5 += c[5] * r[5], a6 += c[6] * r[6], a7 += c[7] * r[7];
            }
            double acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
            for (; i < cols_; ++i) acc[i % 8] += counts_[i] * row[i];
            const double sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            out[j] = sum / n;
        }
    }

  private:
    const double* data_;
    std::size_t m_, cols_;
    std::vector<std::int16_t> bits_;  // the 0/1 matrix, or empty
};

// A leaderboard's candidate draw (kConStatShareLambda or more references): k draws below(n)
// of reference positions, as a row that is no reference draws them. See constat_bootstrap
// for how the rows choose among the candidates.
void draw_candidate(Philox& gen, std::size_t n, std::size_t k, std::vector<std::size_t>& u) {
    u.resize(k);
    for (std::size_t q = 0; q < k; ++q) u[q] = static_cast<std::size_t>(gen.below(n));
}

// The number of distinct positions a draw holds: its nonzero counts.
std::size_t distinct(const std::vector<std::size_t>& counts) {
    return static_cast<std::size_t>(std::count_if(counts.begin(), counts.end(), [](std::size_t c) { return c != 0; }));
}

// The fit's points (px, py) in ConStat's order: x = reference score, y = benchmark score,
// the random-guess point first. ConStat's preparation: sort (x and y each on its own
// when `sort`, else the pairs by x, ties in insertion order), then drop every point whose
// x equals the next point's. Returns the number of points left in (ux, uy).
std::size_t prepare_points(Scratch& s, bool sort) {
    const std::size_t k = s.px.size();
    s.ux.resize(k), s.uy.resize(k);
    if (sort) {
        std::copy(s.px.begin(), s.px.end(), s.ux.begin());
        std::copy(s.py.begin(), s.py.end(), s.uy.begin());
        std::sort(s.ux.begin(), s.ux.end());
        std::sort(s.uy.begin(), s.uy.end());
    } else {
        s.order.resize(k);
        std::iota(s.order.begin(), s.order.end(), std::size_t{0});
        std::stable_sort(s.order.begin(), s.order.end(), [&](std::size_t i, std::size_t j) { return s.px[i] < s.px[j]; });
        for (std::size_t i = 0; i < k; ++i) s.ux[i] = s.px[s.order[i]], s.uy[i] = s.py[s.order[i]];
    }
    return drop_ties(s);
}

// GCV's lambda on the prepared points (ux, uy) with unit weights.
double constat_gcv_lambda(Scratch& s) {
    const std::size_t n = s.ux.size();
    s.ones.assign(n, 1.0);
    s.spline.bands.setup(s.ux.data(), s.uy.data(), s.ones.data(), n);
    return gcv_lambda(s.spline);
}

// ConStat's fit on the prepared points (n >= kConStatMinDistinct): lambda given, or chosen
// by GCV on the points alone with unit weights; then the anchors (0, 0) before and (1, 1)
// after, weight kConStatAnchorWeight, where the points do not already reach 0 or 1, and
// the spline refitted at that lambda. The fit is left in s.spline (its points in s.ax,
// s.ay) for constat_value, so rows sharing one set of points share one fit.
void constat_prepare(Scratch& s, double lambda) {
    const std::size_t n = s.ux.size();
    constexpr double kMaxLambda = 1e200;  // as spline_predict: the line long before
    const double lam = lambda < 0.0 ? constat_gcv_lambda(s) : std::min(lambda, kMaxLambda);
    const bool low = s.ux.front() > 0.0, high = s.ux.back() < 1.0;
    const std::size_t first = low ? 1 : 0, na = n + first + (high ? 1 : 0);
    s.ax.resize(na), s.ay.resize(na), s.aw.resize(na);
    std::copy(s.ux.begin(), s.ux.end(), s.ax.begin() + static_cast<std::ptrdiff_t>(first));
    std::copy(s.uy.begin(), s.uy.end(), s.ay.begin() + static_cast<std::ptrdiff_t>(first));
    std::fill(s.aw.begin(), s.aw.end(), 1.0);
    if (low) s.ax[0] = 0.0, s.ay[0] = 0.0, s.aw[0] = kConStatAnchorWeight;
    if (high) s.ax[na - 1] = 1.0, s.ay[na - 1] = 1.0, s.aw[na - 1] = kConStatAnchorWeight;
    s.spline.bands.setup(s.ax.data(), s.ay.data(), s.aw.data(), na);
    s.spline.solve.run(s.spline.bands, lam, false);
}

// The prepared fit's value at x0, clipped to [0, 1].
double constat_value(const Scratch& s, double x0) {
    const double value = spline_value(s.ax.data(), s.ay.data(), s.spline.solve, s.ax.size(), x0);
    return std::min(1.0, std::max(0.0, value));
}

// The fit's value at x0, clipped to [0, 1].
double constat_fit(Scratch& s, double lambda, double x0) {
    constat_prepare(s, lambda);
    return constat_value(s, x0);
}

}  // namespace

double smoothing_spline_predict(const double* x, const double* y, const double* w, std::size_t n, double lambda,
                                double x0) {
    SplineWork wk;
    return spline_predict(wk, x, y, w, n, lambda, x0);
}

double smoothing_spline_gcv(const double* x, const double* y, const double* w, std::size_t n, double lambda) {
    SplineWork wk;
    wk.bands.setup(x, y, w, n);
    return gcv_value(wk, lambda);
}

double smoothing_spline_gcv_lambda(const double* x, const double* y, const double* w, std::size_t n) {
    SplineWork wk;
    wk.bands.setup(x, y, w, n);
    return gcv_lambda(wk);
}

void constat_bootstrap(const double* scores, const double* reference, std::size_t m, std::size_t n_items,
                       std::size_t n_reference, const std::int64_t* references, std::size_t n_references,
                       const std::int64_t* tested, std::size_t n_tested, std::size_t n_bootstrap,
                       const ConStatOptions& options, std::uint64_t key0, std::uint64_t key1, int n_threads,
                       double* replicates, double* actual, double* predicted, std::int8_t* status) {
    // Each tested row's references: `references` less itself.
    std::vector<std::vector<std::size_t>> lists(n_tested);
    for (std::size_t t = 0; t < n_tested; ++t) {
        for (std::size_t r = 0; r < n_references; ++r)
            if (references[r] != tested[t]) lists[t].push_back(static_cast<std::size_t>(references[r]));
        if (lists[t].size() < kConStatMinDistinct)
            throw std::invalid_argument("every tested model needs at least 5 reference models");
    }
    std::size_t k_big = 0, k_small = ~std::size_t{0};
    for (const auto& l : lists) k_big = std::max(k_big, l.size()), k_small = std::min(k_small, l.size());

    const bool guess = options.random_guess;
    const double gb = options.guess_benchmark, gr = options.guess_reference;
    // The random-guess point's sampling noise: a binomial proportion's standard error.
    const double sd_b = guess ? std::sqrt(gb * (1.0 - gb) / static_cast<double>(n_items)) : 0.0;
    const double sd_r = guess ? std::sqrt(gr * (1.0 - gr) / static_cast<double>(n_reference)) : 0.0;

    const RowMeans bench_means(scores, m, n_items), ref_means(reference, m, n_reference);
    // Tested row t's points (the references drawn by `draws`, all once when null) with the
    // random-guess point (gx, gy), prepared: the number of distinct abscissas left.
    auto points = [&](Scratch& s, std::size_t t, const std::size_t* draws, double gx, double gy) {
        const auto& l = lists[t];
        s.px.clear(), s.py.clear();
        if (guess) s.px.push_back(gx), s.py.push_back(gy);
        for (std::size_t q = 0; q < l.size(); ++q) {
            const std::size_t j = l[draws != nullptr ? draws[q] : q];
            s.px.push_back(s.ref[j]), s.py.push_back(s.bench[j]);
        }
        return prepare_points(s, options.sort);
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // Each tested row's position in `references` (n_references when it is not one): its
    // list is `references` without that position, so the model at list index q is the
    // reference at position q, or q + 1 from that position on.
    std::vector<std::size_t> position(n_tested, n_references);
    for (std::size_t t = 0; t < n_tested; ++t)
        for (std::size_t r = 0; r < n_references; ++r)
            if (references[r] == tested[t]) position[t] = r;
    // Tested row t's count of each reference position from the draw counts `drawn` (per
    // list index) of its list's size.
    auto row_counts = [&](Scratch& s, std::size_t t, const std::vector<std::size_t>& drawn) {
        s.count.assign(n_references, 0);
        const std::size_t skip = position[t];
        for (std::size_t q = 0; q < drawn.size(); ++q) s.count[q < skip ? q : q + 1] = drawn[q];
        return s.count.data();
    };
    auto histogram = [](const std::vector<std::size_t>& draws, std::vector<std::size_t>& out) {
        out.assign(draws.size(), 0);
        for (const std::size_t d : draws) ++out[d];
    };

    std::vector<std::size_t> testable;
    {  // the full data
        Scratch s;
        bench_means(nullptr, s.cb, s.cb16, s.bench);
        ref_means(nullptr, s.cr, s.cr16, s.ref);
        for (std::size_t t = 0; t < n_tested; ++t) {
            const std::size_t i = static_cast<std::size_t>(tested[t]);
            actual[t] = s.bench[i];
            if (points(s, t, nullptr, gr, gb) < kConStatMinDistinct) {
                status[t] = kConStatTooFewDistinct;
                predicted[t] = nan;
                std::fill(replicates + t * n_bootstrap, replicates + (t + 1) * n_bootstrap, nan);
            } else {
                status[t] = kConStatTestable;
                predicted[t] = constat_fit(s, options.lambda, s.ref[i]);
                testable.push_back(t);
            }
        }
    }
    if (testable.empty()) return;
    // With many references, GCV's lambda of a resample is chosen once, on the points of
    // the models its draws pick from `references` itself, and every row is fitted at it.
    const bool share = options.lambda < 0.0 && k_small >= kConStatShareLambda;

    // One attempt of a leaderboard's resample (share): the rows choose their draws among
    // candidates u^1, u^2, ... (draw_candidate: k_big draws below(n_references)) drawn from
    // `draws` as needed. A row that is no reference takes the first candidate with at
    // least kConStatMinDistinct distinct draws; the reference at position t the first
    // whose first k_small draws hold no t and at least kConStatMinDistinct distinct ones.
    // Conditioning i.i.d. uniform draws on avoiding t (and on the distinct count) leaves
    // them i.i.d. uniform on the others (redrawn until distinct enough): each row's law is
    // ConStat's exactly, and the rows taking one candidate share one fit. A reference is
    // in a candidate's k_small draws with probability about 1 - 1/e, so a resample of m
    // models fits about log(m) / log(e / (e - 1)) candidates, not m rows. Lambda: GCV once,
    // on the first candidate's points. The points of a multiset of reference positions
    // given by counts, or by the draw sequence when not sorting, prepared in (ux, uy):
    auto multiset_points = [&](Scratch& s, const std::size_t* count, const std::size_t* seq, std::size_t k,
                               double gx, double gy) {
        if (options.sort) return sorted_points(s, count, guess, gx, gy);
        s.px.clear(), s.py.clear();
        if (guess) s.px.push_back(gx), s.py.push_back(gy);
        for (std::size_t q = 0; q < k; ++q) {
            const std::size_t j = static_cast<std::size_t>(references[seq[q]]);
            s.px.push_back(s.ref[j]), s.py.push_back(s.bench[j]);
        }
        return prepare_points(s, false);
    };
    auto from_candidates = [&](Scratch& s, Philox& draws, const std::vector<std::size_t>& rows, std::vector<std::size_t>& left,
                       std::size_t b, double gx, double gy) {
        auto& u = s.draws_a;
        auto& uncovered = s.seen;  // the rows no candidate has served yet (seen: free here)
        uncovered.assign(rows.begin(), rows.end());
        double lam = options.lambda;
        auto is_reference = [&](std::size_t t) { return position[t] != n_references; };
        for (std::size_t g = 0; !uncovered.empty() && g < kConStatMaxCandidates; ++g) {
            draw_candidate(draws, n_references, k_big, u);
            s.count_a.assign(n_references, 0);  // the candidate's multiset (k_big draws)
            for (std::size_t q = 0; q < k_big; ++q) ++s.count_a[u[q]];
            s.count_b.assign(n_references, 0);  // its first k_small draws: a reference's
            for (std::size_t q = 0; q < k_small; ++q) ++s.count_b[u[q]];
            const bool big_ok = distinct(s.count_a) >= kConStatMinDistinct;
            const bool small_ok = distinct(s.count_b) >= kConStatMinDistinct;
            if (g == 0 && big_ok) {
                const std::size_t n_big = multiset_points(s, s.count_a.data(), u.data(), k_big, gx, gy);
                if (n_big >= kConStatMinDistinct) lam = constat_gcv_lambda(s);
            }
            // the rows taking this candidate: those with k_big draws, then those with k_small
            std::size_t kept = 0;
            for (const bool big : {true, false}) {
                bool ready = false;
                std::size_t n_points = 0;
                for (std::size_t r = 0; r < uncovered.size(); ++r) {
                    const std::size_t t = uncovered[r];
                    if (t == ~std::size_t{0}) continue;  // taken already
                    const bool row_big = lists[t].size() == k_big;
                    if (row_big != big) continue;
                    const bool takes = is_reference(t) ? s.count_b[position[t]] == 0 && (big ? big_ok : small_ok)
                                                       : big_ok;
                    if (!takes) continue;
                    uncovered[r] = ~std::size_t{0};
                    ++kept;
                    if (!ready) {
                        n_points = big ? multiset_points(s, s.count_a.data(), u.data(), k_big, gx, gy)
                                       : multiset_points(s, s.count_b.data(), u.data(), k_small, gx, gy);
                        if (n_points >= kConStatMinDistinct) constat_prepare(s, lam);
                        ready = true;
                    }
                    if (n_points < kConStatMinDistinct) {
                        left.push_back(t);  // ConStat draws this resample again
                        continue;
                    }
                    const std::size_t i = static_cast<std::size_t>(tested[t]);
                    replicates[t * n_bootstrap + b] = s.bench[i] - constat_value(s, s.ref[i]);
                }
            }
            if (kept != 0)
                uncovered.erase(std::remove(uncovered.begin(), uncovered.end(), ~std::size_t{0}), uncovered.end());
        }
        for (const std::size_t t : uncovered) left.push_back(t);  // no candidate: again
    };

    const StreamBlocks streams{key0, key1, n_bootstrap, kConStatBlock};
    for_each_stream_block_claimed(
        streams, n_threads, 1, 1, [] { return Scratch{}; },
        [&](Scratch& s, Philox& gen, std::size_t, std::size_t begin, std::size_t end) {
            std::vector<std::size_t> pending, left;
            for (std::size_t b = begin; b < end; ++b) {
                pending = testable;
                // Attempt a of resample b draws from counter (0, 0, b, a): attempt 0 is the
                // block's own stream, the redraws continue on their own streams.
                for (std::uint64_t a = 0; !pending.empty() && a < kConStatMaxAttempts; ++a) {
                    Philox g = a == 0 ? gen : Philox(key0, key1, 0, 0, b, a);
                    s.idx.resize(std::max(n_items, n_reference));
                    {
                        PackedIndexSampler sampler(g, n_items);
                        sampler.fill(s.idx.data(), n_items);
                        bench_means(s.idx.data(), s.cb, s.cb16, s.bench);
                    }
                    {
                        PackedIndexSampler sampler(g, n_reference);
                        sampler.fill(s.idx.data(), n_reference);
                        ref_means(s.idx.data(), s.cr, s.cr16, s.ref);
                    }
                    double gx = gr, gy = gb;
                    if (guess) {
                        gy = gb + sd_b * normal_from(g);
                        gx = gr + sd_r * normal_from(g);
                    }
                    // The reference models' draws: one set per count of references, each
                    // from the stream as it stands after the items and the noise (a
                    // leaderboard's candidates instead, see from_candidates above).
                    Philox copy = g;
                    if (!share) {
                        draw_models(copy, k_big, s.draws_a, s.seen);
                        if (k_small != k_big) {
                            copy = g;
                            draw_models(copy, k_small, s.draws_b, s.seen);
                        }
                    }
                    if (options.sort) {  // the references in x and in y order, once
                        s.vx.resize(n_references), s.vy.resize(n_references);
                        for (std::size_t r = 0; r < n_references; ++r) {
                            const std::size_t j = static_cast<std::size_t>(references[r]);
                            s.vx[r] = s.ref[j], s.vy[r] = s.bench[j];
                        }
                        for (auto* v : {&s.by_x, &s.by_y}) {
                            v->resize(n_references);
                            std::iota(v->begin(), v->end(), std::size_t{0});
                        }
                        std::sort(s.by_x.begin(), s.by_x.end(), [&](std::size_t i, std::size_t j) { return s.vx[i] < s.vx[j]; });
                        std::sort(s.by_y.begin(), s.by_y.end(), [&](std::size_t i, std::size_t j) { return s.vy[i] < s.vy[j]; });
                        if (!share) {
                            histogram(s.draws_a, s.count_a);
                            if (k_small != k_big) histogram(s.draws_b, s.count_b);
                        }
                    }
                    left.clear();
                    if (share) {
                        from_candidates(s, copy, pending, left, b, gx, gy);
                        pending.swap(left);
                        continue;
                    }
                    double lam = options.lambda;
                    for (const std::size_t t : pending) {
                        const bool big = lists[t].size() == k_big;
                        const auto& draws = big ? s.draws_a : s.draws_b;
                        const std::size_t n_points =
                            options.sort ? sorted_points(s, row_counts(s, t, big ? s.count_a : s.count_b), guess, gx, gy)
                                         : points(s, t, draws.data(), gx, gy);
                        if (n_points < kConStatMinDistinct) {
                            left.push_back(t);  // ConStat draws this resample again
                            continue;
                        }
                        const std::size_t i = static_cast<std::size_t>(tested[t]);
                        replicates[t * n_bootstrap + b] = s.bench[i] - constat_fit(s, lam, s.ref[i]);
                    }
                    pending.swap(left);
                }
                for (const std::size_t t : pending) replicates[t * n_bootstrap + b] = nan;
            }
        });
    for (const std::size_t t : testable) {
        const double* row = replicates + t * n_bootstrap;
        if (std::any_of(row, row + n_bootstrap, [](double v) { return std::isnan(v); }))
            status[t] = kConStatRedrawsExhausted;
    }
}

}  // namespace truescore
