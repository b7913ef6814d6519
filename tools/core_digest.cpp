// A digest of the C++ core's results on fixed inputs, one line per kernel: the same lines
// from every compiler and CPU mean bit-identical results. tools/check-compilers.sh builds
// it for x86-64 and for aarch64 (run under qemu-user) and compares the two outputs.
//
// Inputs come from a splitmix64 stream defined here, so nothing but the kernels under test
// is shared between the builds. Each kernel also runs with its vector paths capped (the
// betting interval's plain loops), which must give the same bits.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "truescore/betting.hpp"
#include "truescore/compare.hpp"
#include "truescore/contamination.hpp"
#include "truescore/portable.hpp"
#include "truescore/random.hpp"
#include "truescore/sampling.hpp"
#include "truescore/sequence.hpp"
#include "truescore/signflip.hpp"

namespace {

struct Digest {
    std::uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a, 64 bits
    void bytes(const void* p, std::size_t n) {
        const unsigned char* c = static_cast<const unsigned char*>(p);
        for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 0x100000001B3ULL;
    }
    void word(std::uint64_t w) { bytes(&w, sizeof w); }
    void real(double x) {
        std::uint64_t w;
        std::memcpy(&w, &x, sizeof w);
        word(w);
    }
    template <class T>
    void all(const std::vector<T>& v) {
        for (const T& x : v) word(static_cast<std::uint64_t>(x));
    }
    void reals(const std::vector<double>& v) {
        for (double x : v) real(x);
    }
};

struct SplitMix {
    std::uint64_t s;
    std::uint64_t next() {
        std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

void print(const char* name, const Digest& d) { std::printf("%-28s %016llx\n", name, static_cast<unsigned long long>(d.h)); }

}  // namespace

int main() {
    SplitMix rng{20261202};
    const int threads = 2;

    {  // the portable operations themselves, on a stream of words
        Digest d;
        for (int i = 0; i < 100000; ++i) {
            const std::uint64_t a = rng.next(), b = rng.next() >> (i % 64);
            std::uint64_t lo, rem;
            d.word(truescore::mul_wide_u64(a, b, &lo));
            d.word(lo);
            const std::uint64_t den = b | 1;
            d.word(truescore::div_wide_u64(a % den, lo, den, &rem));
            d.word(rem);
            d.word(static_cast<std::uint64_t>(truescore::popcount64(a)));
        }
        print("portable", d);
    }

    std::vector<double> diffs(1000);
    for (double& x : diffs) x = rng.uniform() * 2.0 - 1.0;

    {  // the bootstrap: PackedIndexSampler on Philox, with AVX-512 where the CPU has it
        Digest d;
        std::vector<double> out(3000);
        truescore::bootstrap_means(diffs.data(), diffs.size(), out.size(), 17, 29, out.data(), threads);
        d.reals(out);
        print("bootstrap_means", d);
    }
    {  // sign flips: exact counts and Monte Carlo with confidence bounds
        Digest d;
        const truescore::SignFlipCounts exact = truescore::sign_flip_counts(diffs.data(), 18, true, 0, 1, 2, threads);
        d.word(static_cast<std::uint64_t>(exact.greater));
        d.word(static_cast<std::uint64_t>(exact.less));
        d.word(static_cast<std::uint64_t>(exact.two_sided));
        const truescore::SignFlipResult mc = truescore::sign_flip_test(diffs.data(), 300, false, 5000, 3, 4, 0.025, threads);
        d.real(mc.lower);
        d.real(mc.upper);
        print("sign_flip", d);
    }
    {  // the exchangeability test, dense batch
        Digest d;
        const std::size_t shards = 64, m = 199;
        std::vector<double> canonical(shards), permuted(shards * m);
        for (double& x : permuted) x = -4000.0 + 60.0 * rng.uniform();
        for (std::size_t i = 0; i < shards; ++i) canonical[i] = permuted[i * m] + 10.0 * rng.uniform();
        std::vector<std::int64_t> count(shards);
        std::vector<double> p(shards), mean(shards), sd(shards), z(shards);
        truescore::rank_tests_dense(canonical.data(), permuted.data(), shards, m, m,
                                    {count.data(), p.data(), mean.data(), sd.data(), z.data()}, threads);
        d.all(count);
        d.reals(p);
        d.reals(mean);
        d.reals(sd);
        d.reals(z);
        print("rank_tests_dense", d);
    }
    {  // the betting interval on every vector path the build has, and the proportional allocation
        std::vector<double> gaps(400);
        for (double& x : gaps) x = static_cast<double>(static_cast<int>(rng.next() % 3)) - 1.0;
        std::vector<std::uint64_t> levels;
        const int best = truescore::betting_vector_level();
        Digest first;
        bool same = true;
        for (int level = best; level >= 0; --level) {
            truescore::simd::cap_level(level);
            Digest d;
            for (std::size_t n : {std::size_t{50}, std::size_t{400}}) {
                const truescore::GapInterval iv = truescore::betting_interval(gaps.data(), n, 5000.0, 0.05);
                d.real(iv.low);
                d.real(iv.high);
            }
            if (level == best) first = d;
            same = same && d.h == first.h;
        }
        truescore::simd::cap_level(truescore::simd::kAvx512Level);
        print("betting_interval", first);
        std::printf("%-28s %s\n", "betting_vector_paths", same ? "identical" : "DIFFER");
        Digest a;
        const std::size_t sizes[] = {3000000000000ULL, 5000000000007ULL, 1000000000001ULL, 0};
        a.all(truescore::proportional_allocation(sizes, 4, 4000000000003ULL));
        print("proportional_allocation", a);
    }
    {  // the confidence sequence: one reading, the incremental sequence fed one at a time, first hits
        std::vector<double> x(300);
        for (double& v : x) v = static_cast<double>(static_cast<int>(rng.next() % 3)) / 2.0;
        Digest d;
        for (const double pop : {0.0, 2000.0}) {
            for (const std::int64_t horizon : {std::int64_t{0}, std::int64_t{300}}) {
                const truescore::SequenceEnds e = truescore::sequence_bounds(x.data(), x.size(), pop, 0.05, horizon);
                d.real(e.low);
                d.real(e.high);
                truescore::BettingSequence seq(pop, 0.05, horizon);
                for (std::size_t t = 0; t < x.size(); ++t) {
                    seq.extend(&x[t], 1);
                    const truescore::SequenceEnds r = t % 50 == 49 ? seq.exact_bounds() : seq.bounds();
                    d.real(r.low);
                    d.real(r.high);
                }
                d.word(static_cast<std::uint64_t>(seq.work()));
            }
        }
        std::vector<double> m = {0.45, 0.5, 0.55};
        std::vector<std::int64_t> up(3), down(3);
        truescore::sequence_first_hits(x.data(), 3, 100, m.data(), 2000.0, 0.05, 0, up.data(), down.data());
        d.all(up);
        d.all(down);
        print("betting_sequence", d);
    }
    return 0;
}
