#include "truescore/randomization.hpp"
#include "truescore/errors.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/summation.hpp"

namespace truescore {

namespace {

// Bin(n, p) pmf over 0..n: ratios outward from the mode, then normalised, so every
// entry has relative error O(n eps) until it underflows.
std::vector<double> binomial_pmf(std::int64_t n, double p) {
    std::vector<double> f(static_cast<std::size_t>(n) + 1, 0.0);
    if (p <= 0.0) { f[0] = 1.0; return f; }
    if (p >= 1.0) { f[static_cast<std::size_t>(n)] = 1.0; return f; }
    const double odds = p / (1.0 - p);
    std::int64_t mode = static_cast<std::int64_t>(std::floor((static_cast<double>(n) + 1.0) * p));
    mode = std::min(mode, n);
    f[static_cast<std::size_t>(mode)] = 1.0;
    for (std::int64_t k = mode; k < n; ++k)
        f[static_cast<std::size_t>(k + 1)] =
            f[static_cast<std::size_t>(k)] * (static_cast<double>(n - k) / static_cast<double>(k + 1)) * odds;
    for (std::int64_t k = mode; k > 0; --k)
        f[static_cast<std::size_t>(k - 1)] =
            f[static_cast<std::size_t>(k)] * (static_cast<double>(k) / static_cast<double>(n - k + 1)) / odds;
    double total = 0.0;
    {
        // The pmf is unimodal: add both tails inward, towards the mode.
        std::size_t lo = 0, hi = f.size() - 1;
        while (lo < hi) {
            if (f[lo] <= f[hi]) total += f[lo++]; else total += f[hi--];
        }
        total += f[lo];
    }
    for (double& v : f) v /= total;
    return f;
}

std::vector<double> convolve(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> out(a.size() + b.size() - 1, 0.0);
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (i % 1024 == 0) throw_if_cancelled();  // a lattice convolution can run for minutes
        const double ai = a[i];
        if (ai == 0.0) continue;
        double* o = out.data() + i;
        for (std::size_t j = 0; j < b.size(); ++j) o[j] += ai * b[j];
    }
    return out;
}

// Upper and lower tail sums of a pmf on 0..W, each accumulated from its extreme end so
// tiny tails keep their relative precision. ge[k] = P(X >= k), le[k] = P(X <= k).
void tails(const std::vector<double>& f, std::vector<double>& ge, std::vector<double>& le) {
    const std::size_t w = f.size();
    ge.assign(w, 0.0);
    le.assign(w, 0.0);
    double s = 0.0;
    for (std::size_t k = w; k-- > 0;) { s += f[k]; ge[k] = s; }
    s = 0.0;
    for (std::size_t k = 0; k < w; ++k) { s += f[k]; le[k] = s; }
}

// P(A + B >= u) and P(A + B <= u) for independent A (pmf a on 0..) and B (tails of b).
struct SumTails {
    const std::vector<double>& a;
    const std::vector<double>& b_ge;
    const std::vector<double>& b_le;

    double at_least(std::int64_t u) const {
        const std::int64_t wb = static_cast<std::int64_t>(b_ge.size()) - 1;
        double s = 0.0;
        for (std::int64_t k = static_cast<std::int64_t>(a.size()) - 1; k >= 0; --k) {
            const std::int64_t j = u - k;
            if (j > wb) break;  // B cannot reach; larger j for smaller k
            s += a[static_cast<std::size_t>(k)] * (j <= 0 ? 1.0 : b_ge[static_cast<std::size_t>(j)]);
        }
        return std::min(1.0, s);
    }
    double at_most(std::int64_t u) const {
        const std::int64_t wb = static_cast<std::int64_t>(b_le.size()) - 1;
        double s = 0.0;
        for (std::int64_t k = 0; k < static_cast<std::int64_t>(a.size()); ++k) {
            const std::int64_t j = u - k;
            if (j < 0) break;
            s += a[static_cast<std::size_t>(k)] * (j >= wb ? 1.0 : b_le[static_cast<std::size_t>(j)]);
        }
        return std::min(1.0, s);
    }
};

// Integer division rounding towards -inf / +inf.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

// p-values for U = shift + (a null variable), where (K + 1) U - total is the (scaled)
// statistic; at_least(u) / at_most(u) are the null variable's tails P(. >= u) / P(. <= u).
// One reading for every exact null (the binary sums' SumTails, the lattice's LatticeTails).
template <class AtLeast, class AtMost>
RandomizationPValues p_values_from(const AtLeast& at_least, const AtMost& at_most, std::int64_t shift,
                                   std::int64_t kp1, std::int64_t total, std::int64_t u_obs) {
    RandomizationPValues r{};
    r.p_greater = at_least(u_obs - shift);
    r.p_less = at_most(u_obs - shift);
    const std::int64_t dev = kp1 * u_obs - total;
    const std::int64_t a = dev < 0 ? -dev : dev;
    if (a == 0) {
        r.p_two_sided = 1.0;
    } else {
        // |(K+1) U - total| >= a  <=>  U >= ceil((total + a)/(K+1)) or U <= floor((total - a)/(K+1))
        const std::int64_t hi = ceil_div(total + a, kp1), lo = floor_div(total - a, kp1);
        r.p_two_sided = std::min(1.0, at_least(hi - shift) + at_most(lo - shift));
    }
    return r;
}

}  // namespace

RandomizationPValues randomization_test_binary(const std::int64_t* n_by_sum, int n_forms,
                                               std::int64_t u_obs) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    const std::int64_t kp1 = n_forms + 1;
    // Parents summing to K + 1 always contribute 1; to 0, nothing. The informative ones
    // contribute Bin(n_s, s / (K + 1)); the largest group goes last (tails, O(n) sum).
    std::int64_t shift = n_by_sum[kp1], total = kp1 * n_by_sum[kp1];
    int last = -1;
    for (int s = 1; s <= n_forms; ++s) {
        if (n_by_sum[s] < 0) throw std::invalid_argument("negative parent count");
        total += s * n_by_sum[s];
        if (n_by_sum[s] > 0 && (last < 0 || n_by_sum[s] > n_by_sum[last])) last = s;
    }
    std::vector<double> a{1.0};
    for (int s = 1; s <= n_forms; ++s) {
        if (s == last || n_by_sum[s] == 0) continue;
        a = convolve(a, binomial_pmf(n_by_sum[s], static_cast<double>(s) / static_cast<double>(kp1)));
    }
    std::vector<double> b{1.0};
    if (last > 0) b = binomial_pmf(n_by_sum[last], static_cast<double>(last) / static_cast<double>(kp1));
    std::vector<double> ge, le;
    tails(b, ge, le);
    const SumTails st{a, ge, le};
    return p_values_from([&st](std::int64_t u) { return st.at_least(u); },
                         [&st](std::int64_t u) { return st.at_most(u); }, shift, kp1, total, u_obs);
}

// ---- The exact lattice test in near-linear time ------------------------------------------
//
// Parents with the same multiset of (shifted) values share one null distribution: a
// "type" t with multiplicities m_t(k) (k = 0..w_t, summing to K + 1) and c_t parents. The
// informative sum V = U - shift has generating function prod_t (m_t(x) / (K + 1))^{c_t}.
//
// A tail P(V >= x) is computed under an exponential tilt: every weight m_t(k) becomes
// m_t(k) z^k, with z chosen so that the tilted mean of V is near x. Then
//     P(V >= x) = (K + 1)^{-n} z^{-x} sum_{v >= x} F(v) z^{-(v - x)},   F = prod_t (m_t z^k)^{c_t},
// and the sum is dominated by F near its centre, so F can be truncated where its mass is
// negligible (ends holding < 1e-40 of it) and stays a few standard deviations wide: the
// powers are built by one Horner pass over the bits of the c_t (square, then multiply by
// the types whose bit is set), each step a direct convolution of non-negative numbers
// (every entry keeps its relative precision; no FFT). z is taken from a grid on which
// m z^k is an exact double for every k <= max w_t, so the per-parent weights carry no
// rounding error that n parents would multiply; the huge prefactor is summed in long
// double. A certificate bounds the truncated mass against the result; when it fails the
// pass is redone without truncation.
namespace {

struct LatticeType {
    std::vector<double> mult;  // m(k), k = 0..w
    std::int64_t count;
};

// out = a (*) b, direct; a holds the long operand.
void convolve_into(const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& out) {
    out.assign(a.size() + b.size() - 1, 0.0);
    for (std::size_t j = 0; j < b.size(); ++j) {
        throw_if_cancelled();
        const double bj = b[j];
        if (bj == 0.0) continue;
        double* o = out.data() + j;
        for (std::size_t i = 0; i < a.size(); ++i) o[i] += bj * a[i];
    }
}

// out = a (*) a, using the symmetry (each cross term once, doubled exactly).
void square_into(const std::vector<double>& a, std::vector<double>& out) {
    const std::size_t w = a.size();
    out.assign(2 * w - 1, 0.0);
    for (std::size_t i = 0; i < w; ++i) {
        if (i % 256 == 0) throw_if_cancelled();
        const double ai = a[i];
        if (ai == 0.0) continue;
        out[2 * i] += ai * ai;
        const double twice = 2.0 * ai;
        double* o = out.data() + i;
        for (std::size_t j = i + 1; j < w; ++j) o[j] += twice * a[j];
    }
}

struct TiltedPower {
    std::vector<double> g, h;  // V = (value of g index) + (value of h index), F = g (*) h
    std::int64_t g_off = 0, h_off = 0;
    std::int64_t scale2 = 0;  // F_true = F * 2^scale2
    double dropped = 0.0;     // bound on the dropped mass, relative to the total
    double z = 1.0;
    long double log_z = 0.0L;
    long double log_mass = 0.0L;  // log of F's exact total mass, sum_t c_t log sum_k m_t(k) z^k
};

// Drop the ends holding at most `tol` of the mass (relative), rescale by a power of two.
void trim_and_rescale(std::vector<double>& f, std::int64_t& off, std::int64_t& scale2, double tol,
                      double weight, double& dropped) {
    double total = 0.0, peak = 0.0;
    for (double v : f) { total += v; peak = std::max(peak, v); }
    std::size_t lo = 0, hi = f.size();
    double cut = 0.0;
    const double budget = tol * total;
    while (hi - lo > 1) {
        const double next = std::min(f[lo], f[hi - 1]);
        if (cut + next > budget) break;
        cut += next;
        if (f[lo] <= f[hi - 1]) ++lo; else --hi;
    }
    if (lo > 0 || hi < f.size()) {
        f.erase(f.begin() + static_cast<std::ptrdiff_t>(hi), f.end());
        f.erase(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(lo));
        off += static_cast<std::int64_t>(lo);
    }
    dropped += weight * (total > 0.0 ? cut / total : 0.0);
    const int e = std::ilogb(peak);
    if (e != 0) {
        const double factor = std::ldexp(1.0, -e);  // exact
        for (double& v : f) v *= factor;
        scale2 += e;
    }
}

TiltedPower tilted_power(const std::vector<LatticeType>& types, int grid_bits, std::int64_t z_exp,
                         std::int64_t z_frac, double tol) {
    TiltedPower out;
    // z = (2^grid_bits + z_frac) * 2^(z_exp - grid_bits): its powers up to max w are exact.
    const double q = std::ldexp(1.0, grid_bits) + static_cast<double>(z_frac);
    out.z = std::ldexp(q, static_cast<int>(z_exp - grid_bits));
    out.log_z = static_cast<long double>(z_exp - grid_bits) * std::log(2.0L) +
                std::log(static_cast<long double>(q));
    std::vector<std::vector<double>> tilted(types.size());
    std::vector<std::int64_t> type_scale(types.size(), 0);
    int top = 0;
    for (std::size_t t = 0; t < types.size(); ++t) {
        const auto& m = types[t].mult;
        tilted[t].resize(m.size());
        double zk = 1.0;
        double peak = 0.0;
        long double mass = 0.0L;
        for (std::size_t k = 0; k < m.size(); ++k) {
            tilted[t][k] = m[k] * zk;  // exact
            peak = std::max(peak, tilted[t][k]);
            mass += static_cast<long double>(tilted[t][k]);
            zk *= out.z;
        }
        out.log_mass += static_cast<long double>(types[t].count) * std::log(mass);
        // peak near 1 (an exact power-of-two factor), so products of many cannot overflow
        type_scale[t] = std::ilogb(peak);
        const double factor = std::ldexp(1.0, static_cast<int>(-type_scale[t]));
        for (double& v : tilted[t]) v *= factor;
        for (int b = 62; b >= 0; --b)
            if ((types[t].count >> b) & 1) { top = std::max(top, b); break; }
    }
    std::vector<double> g{1.0}, tmp;
    for (int b = top; b >= 1; --b) {
        if (b < top) {
            square_into(g, tmp);
            g.swap(tmp);
            out.g_off *= 2;
            out.scale2 *= 2;
            out.dropped *= 2.0;
        }
        for (std::size_t t = 0; t < types.size(); ++t) {
            if (!((types[t].count >> b) & 1)) continue;
            convolve_into(g, tilted[t], tmp);
            g.swap(tmp);
            out.scale2 += type_scale[t];
        }
        trim_and_rescale(g, out.g_off, out.scale2, tol, 1.0, out.dropped);
    }
    // The last bit: F = g (*) g (*) prod_{bit 0} types = g (*) h, never formed.
    std::vector<double> h;
    if (top == 0) {
        h = {1.0};
        g = {1.0};
    } else {
        h = g;
        out.h_off = out.g_off;
        out.scale2 *= 2;
        out.dropped *= 2.0;
    }
    for (std::size_t t = 0; t < types.size(); ++t) {
        if (!(types[t].count & 1)) continue;
        convolve_into(h, tilted[t], tmp);
        h.swap(tmp);
        out.scale2 += type_scale[t];
    }
    std::int64_t h_scale = 0;
    trim_and_rescale(h, out.h_off, h_scale, tol, 1.0, out.dropped);
    out.scale2 += h_scale;
    out.g.swap(g);
    out.h.swap(h);
    return out;
}

// sum_{v >= x} F(v) z^{-(v - x)} (upper) or sum_{v <= x} F(v) z^{(x - v)} (lower), and the
// total mass of F (both in the scaled units of `tp`). O(width), in long double: these
// sums run over thousands of entries and must not add their own rounding drift.
struct WeightedTail {
    long double tail;
    long double mass;
};

WeightedTail weighted_tail(const TiltedPower& tp, std::int64_t x, bool upper) {
    const std::vector<double>& g = tp.g;
    const std::vector<double>& h = tp.h;
    const std::int64_t nh = static_cast<std::int64_t>(h.size());
    // th[k] = sum_{k' >= k} h[k'] z^{-(k' - k)} (upper) / sum_{k' <= k} h[k'] z^{(k - k')} (lower)
    std::vector<long double> th(h.size());
    const long double r = upper ? 1.0L / static_cast<long double>(tp.z) : static_cast<long double>(tp.z);
    long double s = 0.0L, mass_h = 0.0L, mass_g = 0.0L;
    if (upper) {
        for (std::int64_t k = nh - 1; k >= 0; --k) { s = h[k] + s * r; th[k] = s; }
    } else {
        for (std::int64_t k = 0; k < nh; ++k) { s = h[k] + s * r; th[k] = s; }
    }
    for (double v : h) mass_h += v;
    for (double v : g) mass_g += v;
    // F(v) with v = g_off + j + h_off + k: entry j of g meets entry k = x - g_off - h_off - j
    // of h at v = x; beyond h's ends the weighted tail continues geometrically.
    long double tail = 0.0L;
    const std::int64_t base = x - tp.g_off - tp.h_off;
    const std::int64_t ng = static_cast<std::int64_t>(g.size());
    for (std::int64_t j = 0; j < ng; ++j) {
        const std::int64_t k = base - j;
        long double t;
        if (upper) {
            if (k >= nh) continue;
            t = k < 0 ? th[0] * std::pow(r, static_cast<long double>(-k)) : th[static_cast<std::size_t>(k)];
        } else {
            if (k < 0) continue;
            t = k >= nh ? th[static_cast<std::size_t>(nh - 1)] * std::pow(r, static_cast<long double>(k - (nh - 1)))
                        : th[static_cast<std::size_t>(k)];
        }
        tail += g[static_cast<std::size_t>(j)] * t;
    }
    return {tail, mass_g * mass_h};
}

// Mean of V under the tilt e^{theta k}.
double tilted_mean(const std::vector<LatticeType>& types, double theta) {
    double mean = 0.0;
    for (const auto& t : types) {
        const std::size_t w = t.mult.size() - 1;
        double num = 0.0, den = 0.0;
        for (std::size_t k = 0; k <= w; ++k) {
            // shift the exponent so the largest weight is e^0
            const double e = theta >= 0.0 ? theta * (static_cast<double>(k) - static_cast<double>(w))
                                          : theta * static_cast<double>(k);
            const double wk = t.mult[k] * std::exp(e);
            num += wk * static_cast<double>(k);
            den += wk;
        }
        mean += static_cast<double>(t.count) * num / den;
    }
    return mean;
}

}  // namespace

namespace {

class LatticeTails {
public:
    LatticeTails(std::vector<LatticeType> types, std::int64_t kp1) : types_(std::move(types)), kp1_(kp1) {
        for (const auto& t : types_) {
            const std::int64_t w = static_cast<std::int64_t>(t.mult.size()) - 1;
            w_max_ = std::max(w_max_, w);
            v_max_ += w * t.count;
            n_inf_ += t.count;
        }
        int bits_m = 0;
        while ((std::int64_t{1} << bits_m) <= kp1_) ++bits_m;
        grid_bits_ = w_max_ > 0 ? static_cast<int>(std::max<std::int64_t>(0, (53 - bits_m) / w_max_ - 1)) : 0;
        max_exp_ = w_max_ > 0 ? 900 / w_max_ - 1 : 0;
        for (const auto& t : types_) {  // mean and variance of V untilted
            double m1 = 0.0, m2 = 0.0, tot = 0.0;
            for (std::size_t k = 0; k < t.mult.size(); ++k) {
                const double kd = static_cast<double>(k);
                tot += t.mult[k];
                m1 += t.mult[k] * kd;
                m2 += t.mult[k] * kd * kd;
            }
            m1 /= tot;
            mean0_ += static_cast<double>(t.count) * m1;
            sd0_ += static_cast<double>(t.count) * (m2 / tot - m1 * m1);
        }
        sd0_ = std::sqrt(sd0_);
    }

    // P(V >= x) (upper) or P(V <= x) (lower).
    double tail(std::int64_t x, bool upper) {
        if (upper ? x <= 0 : x >= v_max_) return 1.0;
        if (upper ? x > v_max_ : x < 0) return 0.0;
        double p = 0.0;
        // Any tilt gives the exact identity; a power already built serves when its weights
        // do not grow over the tail (z >= 1 for an upper tail) and its certificate holds.
        for (const auto& c : cache_)
            if ((upper ? c.tp.z >= 1.0 : c.tp.z <= 1.0) && evaluate(c.tp, c.tol, x, upper, p)) return p;
        const double xd = static_cast<double>(x);
        const bool near = std::fabs(xd - mean0_) <= 4.0 * sd0_;
        if (max_exp_ > 0 && !near && (upper ? xd <= mean0_ : xd >= mean0_)) {
            // The far probable side: 1 - the opposite tail (tilted, and usually sharing its
            // tilt with a query already made). Complements of at most 1/2 keep the relative
            // precision of the tail they come from.
            const double q = tail(upper ? x - 1 : x + 1, !upper);
            if (q <= 0.5) return 1.0 - q;
        }
        std::int64_t z_exp = 0, z_frac = 0;
        if (max_exp_ > 0 && !near) choose_tilt(xd, upper, z_exp, z_frac);
        if (evaluate(power(z_exp, z_frac, kTrimMass), kTrimMass, x, upper, p)) return p;
        evaluate(power(z_exp, z_frac, 0.0), 0.0, x, upper, p);  // untruncated: always holds
        return p;
    }

private:
    static constexpr double kTrimMass = 1e-40;  // mass share each truncation may drop

    // The tail from one tilted power; false when its truncation certificate fails.
    bool evaluate(const TiltedPower& tp, double tol, std::int64_t x, bool upper, double& p) const {
        const WeightedTail wt = weighted_tail(tp, x, upper);
        // the dropped mass can move the tail by at most dropped * mass (weights <= 1)
        if (tol > 0.0 && !(tp.dropped * wt.mass <= 1e-15L * wt.tail)) return false;
        if (wt.tail <= 0.0L) { p = 0.0; return true; }
        // P = (tail / mass of F) * (exact mass of F) / (K + 1)^n * z^-x: dividing by the
        // computed mass cancels the rounding drift the squarings share across entries.
        const long double log_p = std::log(wt.tail) - std::log(wt.mass) + tp.log_mass -
                                  static_cast<long double>(n_inf_) * std::log(static_cast<long double>(kp1_)) -
                                  static_cast<long double>(x) * tp.log_z;
        p = std::min(1.0, static_cast<double>(std::exp(log_p)));
        return true;
    }

    void choose_tilt(double x, bool upper, std::int64_t& z_exp, std::int64_t& z_frac) const {
        if (upper ? x <= mean0_ : x >= mean0_) return;  // the probable side: no tilt
        const double theta_max = (static_cast<double>(max_exp_) + 0.5) * std::log(2.0);
        double lo = upper ? 0.0 : -theta_max, hi = upper ? theta_max : 0.0;
        for (int it = 0; it < 48; ++it) {
            const double mid = 0.5 * (lo + hi);
            if (tilted_mean(types_, mid) < x) lo = mid; else hi = mid;
        }
        const double y = 0.5 * (lo + hi) / std::log(2.0);
        double e = std::floor(y);
        const double scale = std::ldexp(1.0, grid_bits_);
        double i = std::nearbyint((std::exp2(y - e) - 1.0) * scale);
        if (i >= scale) { e += 1.0; i = 0.0; }
        if (e > static_cast<double>(max_exp_)) { e = static_cast<double>(max_exp_); i = 0.0; }
        if (e < -static_cast<double>(max_exp_)) { e = -static_cast<double>(max_exp_); i = 0.0; }
        z_exp = static_cast<std::int64_t>(e);
        z_frac = static_cast<std::int64_t>(i);
    }

    const TiltedPower& power(std::int64_t z_exp, std::int64_t z_frac, double tol) {
        for (const auto& c : cache_)
            if (c.z_exp == z_exp && c.z_frac == z_frac && c.tol == tol) return c.tp;
        cache_.push_back({z_exp, z_frac, tol, tilted_power(types_, grid_bits_, z_exp, z_frac, tol)});
        return cache_.back().tp;
    }

    struct Cached {
        std::int64_t z_exp, z_frac;
        double tol;
        TiltedPower tp;
    };
    std::vector<LatticeType> types_;
    std::int64_t kp1_;
    std::int64_t w_max_ = 0, v_max_ = 0, n_inf_ = 0, max_exp_ = 0;
    int grid_bits_ = 0;
    double mean0_ = 0.0, sd0_ = 0.0;
    std::deque<Cached> cache_;  // references into it stay valid
};

}  // namespace

RandomizationPValues randomization_test_lattice(const std::int64_t* values, std::size_t n,
                                                int n_forms) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    const std::size_t kp1 = static_cast<std::size_t>(n_forms) + 1;
    std::int64_t shift = 0, total = 0, u_obs = 0;
    // Parents grouped by the sorted multiset of their values minus their minimum.
    std::map<std::vector<std::int64_t>, std::int64_t> counts;
    std::vector<std::int64_t> key(kp1);
    for (std::size_t i = 0; i < n; ++i) {
        if (i % 65536 == 0) throw_if_cancelled();
        const std::int64_t* v = values + i * kp1;
        std::int64_t lo = v[0], hi = v[0];
        for (std::size_t j = 0; j < kp1; ++j) {
            if (v[j] < 0) throw std::invalid_argument("lattice values must be non-negative");
            lo = std::min(lo, v[j]);
            hi = std::max(hi, v[j]);
            total += v[j];
        }
        u_obs += v[0];
        shift += lo;
        if (hi == lo) continue;
        for (std::size_t j = 0; j < kp1; ++j) key[j] = v[j] - lo;
        std::sort(key.begin(), key.end());
        ++counts[key];
    }
    std::vector<LatticeType> types;
    types.reserve(counts.size());
    for (const auto& kv : counts) {
        LatticeType t;
        t.mult.assign(static_cast<std::size_t>(kv.first.back()) + 1, 0.0);
        for (std::int64_t v : kv.first) t.mult[static_cast<std::size_t>(v)] += 1.0;
        t.count = kv.second;
        types.push_back(std::move(t));
    }
    LatticeTails tails(std::move(types), static_cast<std::int64_t>(kp1));
    return p_values_from([&tails](std::int64_t u) { return tails.tail(u, true); },
                         [&tails](std::int64_t u) { return tails.tail(u, false); }, shift,
                         static_cast<std::int64_t>(kp1), total, u_obs);
}

RandomizationPValues randomization_test_monte_carlo(const double* values, std::size_t n,
                                                    int n_forms, std::size_t n_draws,
                                                    std::uint64_t key0, std::uint64_t key1,
                                                    int n_threads) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    if (n_draws < 1) throw argument_error("n_resamples", " must be at least 1");
    const std::size_t kp1 = static_cast<std::size_t>(n_forms) + 1;
    const double kd = static_cast<double>(n_forms);
    // gap[i * kp1 + j]: the parent's gap if label j were the public one.
    std::vector<double> gap(n * kp1);
    for (std::size_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (std::size_t j = 0; j < kp1; ++j) s += values[i * kp1 + j];
        for (std::size_t j = 0; j < kp1; ++j) {
            const double v = values[i * kp1 + j];
            gap[i * kp1 + j] = v - (s - v) / kd;
        }
    }
    double t_obs = 0.0;
    for (std::size_t i = 0; i < n; ++i) t_obs += gap[i * kp1];
    // Ties within rounding count as at least as extreme (conservative).
    const double tol = 1e-9 * std::max(1.0, static_cast<double>(n) * 1e-3);
    struct Counts {
        std::uint64_t ge = 0, le = 0, two = 0;
    };
    std::atomic<std::uint64_t> cge{0}, cle{0}, ctwo{0};
    const StreamBlocks streams{key0, key1, n_draws, kReplicateBlock};
    for_each_stream_block(
        streams, n_threads, kMinDrawsPerThread, [] { return Counts{}; },
        [&](Counts& c, Philox& gen, std::size_t, std::size_t, std::size_t) {
            double t = 0.0;
            for (std::size_t i = 0; i < n; ++i) t += gap[i * kp1 + gen.below(kp1)];
            c.ge += t >= t_obs - tol;
            c.le += t <= t_obs + tol;
            c.two += std::fabs(t) >= std::fabs(t_obs) - tol;
        },
        [&](const Counts& c) {
            cge += c.ge;
            cle += c.le;
            ctwo += c.two;
        });
    const double denom = static_cast<double>(n_draws) + 1.0;
    return {(1.0 + static_cast<double>(cge)) / denom, (1.0 + static_cast<double>(cle)) / denom,
            (1.0 + static_cast<double>(ctwo)) / denom};
}

namespace {

// Smallest L <= max_den with every score within rounding of a multiple of 1/L, or 0.
std::int64_t lattice_denominator(const double* v, std::size_t count, std::int64_t max_den) {
    for (std::int64_t den = 1; den <= max_den; ++den) {
        const double l = static_cast<double>(den);
        bool ok = true;
        for (std::size_t i = 0; i < count && ok; ++i) {
            const double x = v[i] * l;
            ok = std::fabs(x - std::floor(x + 0.5)) <= 1e-9 * l;
        }
        if (ok) return den;
    }
    return 0;
}

}  // namespace

RandomizationOutcome randomization_test(const double* public_scores, const double* fresh,
                                        std::size_t n, int n_forms, int method,
                                        std::int64_t max_denominator, std::size_t n_draws,
                                        std::uint64_t key0, std::uint64_t key1, int n_threads) {
    if (n_forms < 1) throw argument_error("fresh", " must hold at least one fresh form per parent");
    if (n < 2) throw argument_error("public", " needs at least 2 parents; got " + std::to_string(n));
    if (method < 0 || method > 2) throw std::invalid_argument("unknown randomization method");
    const std::size_t k = static_cast<std::size_t>(n_forms), kp1 = k + 1;
    RandomizationOutcome out{};
    // One pass: validate, detect binary labels, count label sums and informative parents.
    bool binary = true;
    std::vector<std::int64_t> n_by_sum(kp1 + 1, 0);
    std::int64_t u_obs = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double p0 = public_scores[i];
        if (!(p0 >= 0.0 && p0 <= 1.0))  // also catches NaN; inf is outside [0, 1]
            throw argument_error("public", " must hold finite scores in [0, 1]; parent " +
                                        std::to_string(i) + " holds " + std::to_string(p0));
        bool b = (p0 == 0.0 || p0 == 1.0), same = true;
        std::int64_t ones = p0 != 0.0;
        const double* f = fresh + i * k;
        for (std::size_t j = 0; j < k; ++j) {
            const double x = f[j];
            if (!(x >= 0.0 && x <= 1.0))
                throw argument_error("fresh", " must hold finite scores in [0, 1]; parent " +
                                            std::to_string(i) + " holds " + std::to_string(x));
            b = b && (x == 0.0 || x == 1.0);
            same = same && x == p0;
            ones += x != 0.0;
        }
        out.informative += same ? 0 : 1;
        if (binary && b) {
            ++n_by_sum[static_cast<std::size_t>(ones)];
            u_obs += p0 != 0.0;
        }
        binary = binary && b;
    }
    const double kd = static_cast<double>(k);
    out.statistic = 0.0 + pairwise_sum(n, [&](std::size_t i) {
                        double s = 0.0;
                        for (std::size_t j = 0; j < k; ++j) s += fresh[i * k + j];
                        return public_scores[i] - s / kd;
                    });
    std::vector<double> values;
    if (!binary || method == 2) {
        values.resize(n * kp1);
        for (std::size_t i = 0; i < n; ++i) {
            values[i * kp1] = public_scores[i];
            for (std::size_t j = 0; j < k; ++j) values[i * kp1 + 1 + j] = fresh[i * k + j];
        }
    }
    const std::int64_t den = method == 2 ? 0
                             : binary    ? 1
                                         : lattice_denominator(values.data(), values.size(), max_denominator);
    if (method == 1 && den == 0)
        throw std::invalid_argument(
            "method='exact' needs scores on a lattice {0, 1/L, ..., 1} with L <= " +
            std::to_string(max_denominator) + "; these are not: use method='auto' or 'monte_carlo'");
    out.denominator = den;
    if (den == 1) {
        out.p = randomization_test_binary(n_by_sum.data(), n_forms, u_obs);
        out.method = 0;
    } else if (den > 1) {
        std::vector<std::int64_t> ints(values.size());
        const double l = static_cast<double>(den);
        for (std::size_t i = 0; i < values.size(); ++i)
            ints[i] = static_cast<std::int64_t>(std::floor(values[i] * l + 0.5));
        out.p = randomization_test_lattice(ints.data(), n, n_forms);
        out.method = 1;
    } else {
        out.p = randomization_test_monte_carlo(values.data(), n, n_forms, n_draws, key0, key1,
                                               n_threads);
        out.method = 2;
    }
    return out;
}

}  // namespace truescore
