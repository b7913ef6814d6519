// Samplers driven by a Philox stream: the survey designs of the calibration engine and the
// index draws of the bootstraps (one sampler of each kind; every kernel uses these).
//
// Every sampler takes the stream as an argument and keeps no state that survives a draw
// (the partial Fisher-Yates permutation is restored after each draw), so a sample
// depends only on the stream it was given -- (key, task) and the position in that
// task's sequence -- never on what the thread did before. The draws are simple enough
// that a NumPy reference can reproduce them from Philox.random_raw() value for value.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/portable.hpp"
#include "truescore/random.hpp"

namespace truescore {

// ---- With replacement ------------------------------------------------------------------

// Draws between two Ctrl-C checks in a long resample (a mask: every 2^20 draws).
inline constexpr std::size_t kCancelDraws = (std::size_t{1} << 20) - 1;


// Uniform integers on [0, n), one Philox::below(n) (one raw word, Lemire) per draw.
class BelowSampler {
public:
    BelowSampler(Philox& gen, std::uint64_t n) : gen_(gen), n_(n) {}
    std::uint64_t draw() { return gen_.below(n_); }

private:
    Philox& gen_;
    std::uint64_t n_;
};

// Uniform integers on [0, n), several per 64-bit word: each word is cut into `per_word`
// chunks of k bits (lowest bits first); a chunk x maps to (x * n) >> k and is rejected
// when (x * n) mod 2^k < 2^k mod n (Lemire's method on k-bit words), so every draw is
// exactly uniform. k = 21 for n <= 2^16 (3 draws a word), k = 32 for n <= 2^26 (2 a
// word), otherwise one Philox::below(n) per draw.
class PackedIndexSampler {
public:
    PackedIndexSampler(Philox& gen, std::uint64_t n) : gen_(gen), n_(n) {
        if (n <= (std::uint64_t{1} << 16)) {
            bits_ = 21;
            per_word_ = 3;
        } else if (n <= (std::uint64_t{1} << 26)) {
            bits_ = 32;
            per_word_ = 2;
        } else {
            bits_ = 64;
            per_word_ = 1;
        }
        if (bits_ < 64) {
            mask_ = (std::uint64_t{1} << bits_) - 1;
            threshold_ = (std::uint64_t{1} << bits_) % n;
        }
    }

    std::uint64_t draw() {
        if (bits_ == 64) return gen_.below(n_);
        for (;;) {
            if (left_ == 0) {
                word_ = gen_.next_u64();
                left_ = per_word_;
            }
            const std::uint64_t x = word_ & mask_;
            word_ >>= bits_;
            --left_;
            const std::uint64_t m = x * n_;
            if ((m & mask_) >= threshold_) return m >> bits_;
        }
    }

    // The next `count` draws into out: exactly what `count` calls of draw() return, and
    // the sampler (and its stream) end in the same state. Whole words are taken in
    // batches (Philox::next_words) and cut branch-free, a rejected chunk simply not
    // advancing the output; a batch never holds more chunks than draws still wanted, so
    // no chunk is cut ahead of its turn and the few last draws go through draw().
    void fill(std::uint64_t* out, std::size_t count) {
        if (bits_ == 64) {
            for (std::size_t i = 0; i < count; ++i) out[i] = gen_.below(n_);
            return;
        }
        while (count > 0 && left_ > 0) {  // the current word's chunks come first
            *out++ = draw();
            --count;
        }
        const std::size_t per_word = static_cast<std::size_t>(per_word_);
        std::uint64_t words[kBatchWords];
        while (count >= per_word) {
            const std::size_t w = std::min(kBatchWords, count / per_word);
            gen_.next_words(words, w);
            std::size_t got;
#ifdef TRUESCORE_AVX512
            if (simd::avx512())
                got = per_word == 3 ? cut_wide<21, 3>(words, w, n_, threshold_, out)
                                    : cut_wide<32, 2>(words, w, n_, threshold_, out);
            else
#endif
                got = per_word == 3 ? cut<21, 3>(words, w, n_, threshold_, out)
                                    : cut<32, 2>(words, w, n_, threshold_, out);
            out += got;
            count -= got;
        }
        for (std::size_t i = 0; i < count; ++i) out[i] = draw();
    }

#ifdef TRUESCORE_AVX512
    // Whether draws are cut from words (n <= 2^26), as wide_sum needs.
    bool packed() const { return bits_ < 64; }

    // gathered_sum's AVX-512 kernel (packed() only): the sum of y[i] over the next
    // `count` draws, draw i to accumulator i mod 4, combined as ((a0 + a1) + (a2 + a3))
    // -- the same draws as fill() and the same additions in the same order, so the same
    // bits. Each batch is 16 Philox blocks in vector registers plus 2 from the integer
    // units (idle otherwise), cut in registers (cut_wide's products; the compress only
    // for the eight words holding a rejected chunk) into a small buffer; the buffer's
    // draws are added in fours (four scalar accumulators) in the gaps of the next
    // batch's rounds -- the additions are a latency chain, the rounds a throughput
    // one -- and its 0 to 3 last draws move to the front of the next buffer. Rao-Wu at
    // n = 10^4 (three 21-bit draws a word): 1.5 -> 0.9 ns per draw on one core of the
    // AMD EPYC development machine.
    //
    // also(i) is called once for every index i drawn (a second, order-free tally over the
    // same draws); NoAlso when there is none.
    template <class Also>
    double wide_sum(const double* y, std::size_t count, Also& also) {
        return per_word_ == 3 ? wide_sum_impl<21, 3>(y, count, also) : wide_sum_impl<32, 2>(y, count, also);
    }

    // The next `total` draws, in draw order, handed to consume(idx, m) in pieces (packed()
    // only): exactly what `total` calls of draw() return. The words are wide_sum's (16
    // Philox blocks in vector registers and 2 from the integer units a batch, cut in
    // registers), and a batch's draws are handed over in the gaps of the next batch's
    // rounds. Unlike wide_sum it keeps no draw back for later calls: the last batch may
    // cut up to a batch's chunks beyond `total`, which are dropped, so the sampler is
    // spent afterwards -- call it once, for the last draws its stream is used for (a
    // stream block's resamples: gathered_sums). A stream block of short resamples then
    // costs what one long resample does, instead of each resample paying for its partial
    // batches.
    //
    // y, if given, is the data the draws index: beyond kPrefetchBytes its values are
    // prefetched a batch before they are handed over (as wide_sum does).
    template <class Consume>
    void wide_stream(std::size_t total, Consume& consume, const double* y = nullptr) {
        const double* far = n_ * sizeof(double) > kPrefetchBytes ? y : nullptr;
        if (per_word_ == 3)
            wide_stream_impl<21, 3>(total, consume, far);
        else
            wide_stream_impl<32, 2>(total, consume, far);
    }
#endif

private:
    static constexpr std::size_t kBatchWords = 128;
    // Data larger than this is prefetched a batch ahead in wide_sum: at n = 10^6 (8 MB) it
    // cut the cost per draw from 6.8 to 2.7-5.1 ns (one thread, AMD EPYC development
    // machine, loaded); at 2.4 MB the gain was lost in the noise, and beyond ~24 MB the
    // misses are more than the prefetches can overlap (10-16 ns either way).
    static constexpr std::size_t kPrefetchBytes = std::size_t{1} << 22;

    // Every chunk of words[0 .. w), lowest bits first; returns the draws written.
    template <int Bits, int PerWord>
    static std::size_t cut(const std::uint64_t* words, std::size_t w, std::uint64_t n, std::uint64_t threshold,
                           std::uint64_t* out) {
        constexpr std::uint64_t mask = (std::uint64_t{1} << Bits) - 1;
        std::size_t j = 0;
        for (std::size_t i = 0; i < w; ++i) {
            std::uint64_t word = words[i];
            for (int c = 0; c < PerWord; ++c) {
                const std::uint64_t m = (word & mask) * n;
                word >>= Bits;
                out[j] = m >> Bits;
                j += (m & mask) >= threshold;
            }
        }
        return j;
    }

#ifdef TRUESCORE_AVX512
    TRUESCORE_AVX512_BEGIN
    // cut() eight words at a time (cut_register on each register of eight), the last
    // w mod 8 by cut(). cut_register's no-rejection path stores all 8 * PerWord draws of
    // its words: out must hold w * PerWord, as fill()'s (w <= count / PerWord) does.
    template <int Bits, int PerWord>
    TRUESCORE_TARGET_AVX512 static std::size_t cut_wide(const std::uint64_t* words, std::size_t w,
                                                        std::uint64_t n, std::uint64_t threshold,
                                                        std::uint64_t* out) {
        const __m512i mask = _mm512_set1_epi64(static_cast<long long>((std::uint64_t{1} << Bits) - 1));
        const __m512i vn = _mm512_set1_epi64(static_cast<long long>(n));
        const __m512i vt = _mm512_set1_epi64(static_cast<long long>(threshold));
        std::size_t j = 0, i = 0;
        for (; i + 8 <= w; i += 8)
            j += cut_register<Bits, PerWord>(_mm512_loadu_si512(words + i), mask, vn, vt, out + j);
        return j + cut<Bits, PerWord>(words + i, w - i, n, threshold, out + j);
    }

    // The accepted draws (in draw order) of the eight words in `word` to out; returns how
    // many. The chunks' products (x * n, 32 x 32-bit multiplies) are permuted into draw
    // order, word by word, lowest chunk first; each register of eight then keeps its
    // accepted draws in order (compress), unless none was rejected. out must have room
    // for all 8 * PerWord draws.
    template <int Bits, int PerWord>
    TRUESCORE_TARGET_AVX512 static inline __attribute__((always_inline)) std::size_t cut_register(
        __m512i word, __m512i mask, __m512i vn, __m512i vt, std::uint64_t* out) {
        // The chunks' products in draw order, PerWord registers of eight.
        __m512i q[PerWord];
        if constexpr (PerWord == 3) {
            const __m512i p0 = _mm512_mul_epu32(_mm512_and_si512(word, mask), vn);
            const __m512i p1 = _mm512_mul_epu32(_mm512_and_si512(_mm512_srli_epi64(word, Bits), mask), vn);
            const __m512i p2 = _mm512_mul_epu32(_mm512_and_si512(_mm512_srli_epi64(word, 2 * Bits), mask), vn);
            // Draw order: p0[0] p1[0] p2[0] p0[1] p1[1] p2[1] ... p2[7].
            const __m512i a = _mm512_permutex2var_epi64(p0, _mm512_setr_epi64(0, 8, 0, 1, 9, 0, 2, 10), p1);
            q[0] = _mm512_mask_permutexvar_epi64(a, 0x24, _mm512_setr_epi64(0, 0, 0, 0, 0, 1, 0, 0), p2);
            const __m512i b = _mm512_permutex2var_epi64(p0, _mm512_setr_epi64(0, 3, 11, 0, 4, 12, 0, 5), p1);
            q[1] = _mm512_mask_permutexvar_epi64(b, 0x49, _mm512_setr_epi64(2, 0, 0, 3, 0, 0, 4, 0), p2);
            const __m512i c = _mm512_permutex2var_epi64(p0, _mm512_setr_epi64(13, 0, 6, 14, 0, 7, 15, 0), p1);
            q[2] = _mm512_mask_permutexvar_epi64(c, 0x92, _mm512_setr_epi64(0, 5, 0, 0, 6, 0, 0, 7), p2);
        } else {
            static_assert(PerWord == 2 && Bits == 32, "two 32-bit chunks a word");
            const __m512i p0 = _mm512_mul_epu32(word, vn);  // the low 32 bits of each lane
            const __m512i p1 = _mm512_mul_epu32(_mm512_srli_epi64(word, 32), vn);
            q[0] = _mm512_permutex2var_epi64(p0, _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), p1);
            q[1] = _mm512_permutex2var_epi64(p0, _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15), p1);
        }
        // Usually no chunk of the eight words is rejected: then the draws are stored as
        // they are, without compressing.
        __m512i lowest = _mm512_and_si512(q[0], mask);
        for (int r = 1; r < PerWord; ++r) lowest = _mm512_min_epu64(lowest, _mm512_and_si512(q[r], mask));
        if (TRUESCORE_LIKELY(_mm512_cmplt_epu64_mask(lowest, vt) == 0)) {
            for (int r = 0; r < PerWord; ++r) _mm512_storeu_si512(out + 8 * r, _mm512_srli_epi64(q[r], Bits));
            return 8 * PerWord;
        }
        std::size_t j = 0;
        for (int r = 0; r < PerWord; ++r) j += keep<Bits>(q[r], mask, vt, out + j);
        return j;
    }

    // cut_register over the words of `blocks` Philox blocks in memory.
    template <int Bits, int PerWord, std::size_t Blocks>
    TRUESCORE_TARGET_AVX512 static inline __attribute__((always_inline)) std::size_t cut_words(
        const std::uint64_t* words, __m512i mask, __m512i vn, __m512i vt, std::uint64_t* out) {
        static_assert(Blocks % 2 == 0, "two blocks a register");
        std::size_t got = 0;
        for (std::size_t k = 0; k < Blocks / 2; ++k)
            got += cut_register<Bits, PerWord>(_mm512_load_si512(words + 8 * k), mask, vn, vt, out + got);
        return got;
    }

    template <int Bits, int PerWord, class Also>
    TRUESCORE_TARGET_AVX512 double wide_sum_impl(const double* y, std::size_t count, Also& also) {
        double acc[4] = {0.0, 0.0, 0.0, 0.0};
        std::size_t i = 0;  // draws added so far
        // One draw at a time up to the next block boundary with no chunk left in a word.
        while (i < count && (left_ != 0 || !gen_.at_block())) {
            const std::uint64_t k = draw();
            acc[i & 3] += y[k];
            also(k);
            ++i;
        }
        // A batch: kWideBlocks Philox blocks in vector registers and kScalarBlocks more
        // from the integer units, in that order in the stream. The scalar blocks' words
        // are cut (from memory) one batch later, just before the next batch's vector
        // blocks: the same order, and the stores have long landed by then.
        constexpr std::size_t kScalarBlocks = 2;
        constexpr std::size_t kVectorChunks = Philox::kWideBlocks * 4 * PerWord;
        constexpr std::size_t kScalarChunks = kScalarBlocks * 4 * PerWord;
        if (count - i >= kVectorChunks + kScalarChunks) {
            const __m512i mask = _mm512_set1_epi64(static_cast<long long>((std::uint64_t{1} << Bits) - 1));
            const __m512i vn = _mm512_set1_epi64(static_cast<long long>(n_));
            const __m512i vt = _mm512_set1_epi64(static_cast<long long>(threshold_));
            // Two buffers: the draws cut in one batch are added while the next batch is
            // generated (in the rounds' gaps) and cut into the other. s[l] is accumulator
            // (i0 + l) mod 4: draws are added in fours from draw i0 on, a batch's 0 to 3
            // last draws moving to the front of the next batch's buffer.
            const std::size_t i0 = i;
            const bool far = n_ * sizeof(double) > kPrefetchBytes;
            double s0 = acc[i0 & 3], s1 = acc[(i0 + 1) & 3], s2 = acc[(i0 + 2) & 3], s3 = acc[(i0 + 3) & 3];
            alignas(64) std::uint64_t buffers[2][kVectorChunks + kScalarChunks + 8];
            alignas(64) std::uint64_t scalar_words[2][4 * kScalarBlocks];
            std::uint64_t* cur = buffers[0];
            std::uint64_t* next = buffers[1];
            std::uint64_t* words = scalar_words[0];  // the scalar blocks not cut yet
            std::uint64_t* spare = scalar_words[1];
            // cur[from .. to) (to - from a multiple of 4) into the accumulators. This
            // lambda and the round hook below carry no TRUESCORE_TARGET_AVX512 (or both
            // would need it): GCC does not inline a function with that target into one
            // without it, and a call per round (registers spilled, the sums in memory)
            // cost a quarter of the speed on the Intel Xeon (1.14 -> 1.40 ns per draw,
            // one core, when only this one had it).
            auto add_fours = [&](std::size_t from, std::size_t to) {
                for (std::size_t q = from; q < to; q += 4) {
                    s0 += y[cur[q]];
                    s1 += y[cur[q + 1]];
                    s2 += y[cur[q + 2]];
                    s3 += y[cur[q + 3]];
                    also(cur[q]);
                    also(cur[q + 1]);
                    also(cur[q + 2]);
                    also(cur[q + 3]);
                }
            };
            __m512i w[8];
            gen_.next_wide<kScalarBlocks>(w, words, [](int) {});
            std::size_t j = 0;  // draws in cur
            for (int k = 0; k < 8; ++k) j += cut_register<Bits, PerWord>(w[k], mask, vn, vt, cur + j);
            std::size_t drawn = i + j;  // draws cut so far
            std::size_t check = i + kCancelDraws + 1;
            // Draws added per round: a buffer holds at most 3 + kVectorChunks + kScalarChunks.
            constexpr std::size_t kPerRound = ((kVectorChunks + kScalarChunks + 3) / 4 + 9) / 10 * 4;
            for (;;) {
                const std::size_t whole = j & ~std::size_t{3};
                const std::size_t left = j - whole;
                // A batch never cuts more chunks than draws still wanted (fill()'s rule);
                // the scalar blocks not cut yet count as cut.
                if (count - drawn - kScalarChunks < kVectorChunks + kScalarChunks) {
                    add_fours(0, whole);
                    i += whole;
                    for (std::size_t q = 0; q < left; ++q) next[q] = cur[whole + q];
                    j = left + cut_words<Bits, PerWord, kScalarBlocks>(words, mask, vn, vt, next + left);
                    drawn += j - left;
                    std::swap(cur, next);
                    break;
                }
                // A resample of 10^9 draws takes seconds: Ctrl-C is checked every 2^20 draws.
                if (i >= check) {
                    throw_if_cancelled();
                    check = i + kCancelDraws + 1;
                }
                for (std::size_t q = 0; q < left; ++q) next[q] = cur[whole + q];
                gen_.next_wide<kScalarBlocks>(w, spare, [&](int round) {
                    const std::size_t r = static_cast<std::size_t>(round);
                    add_fours(kPerRound * r, std::min(whole, kPerRound * (r + 1)));
                });
                i += whole;
                // The previous batch's scalar blocks, then this batch's vector blocks.
                j = left + cut_words<Bits, PerWord, kScalarBlocks>(words, mask, vn, vt, next + left);
                for (int k = 0; k < 8; ++k) j += cut_register<Bits, PerWord>(w[k], mask, vn, vt, next + j);
                // Data beyond the caches: ask for this buffer's values now, a batch before
                // they are added (the rounds between hide the memory latency). Changes
                // nothing but when the values arrive.
                if (far) {
                    for (std::size_t q = left; q < j; ++q)
                        _mm_prefetch(reinterpret_cast<const char*>(y + next[q]), _MM_HINT_T0);
                }
                drawn += j - left;
                std::swap(cur, next);
                std::swap(words, spare);
            }
            // The draws cut and not added yet: in fours, then one by one.
            const std::size_t whole = j & ~std::size_t{3};
            add_fours(0, whole);
            i += whole;
            const double lanes[4] = {s0, s1, s2, s3};
            for (int l = 0; l < 4; ++l) acc[(i0 + static_cast<std::size_t>(l)) & 3] = lanes[l];
            for (std::size_t q = whole; q < j; ++q, ++i) {
                acc[i & 3] += y[cur[q]];
                also(cur[q]);
            }
        }
        // The last draws (fewer than a batch's chunks): fill()'s smaller batches.
        std::uint64_t rest[256];
        while (i < count) {
            const std::size_t c = std::min<std::size_t>(256, count - i);
            fill(rest, c);
            for (std::size_t q = 0; q < c; ++q, ++i) {
                acc[i & 3] += y[rest[q]];
                also(rest[q]);
            }
        }
        return (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }

    template <int Bits, int PerWord, class Consume>
    TRUESCORE_TARGET_AVX512 void wide_stream_impl(std::size_t total, Consume& consume, const double* far) {
        std::size_t done = 0;  // draws handed over
        // One draw at a time up to the next block boundary with no chunk left in a word.
        while (done < total && (left_ != 0 || !gen_.at_block())) {
            const std::uint64_t k = draw();
            consume(&k, std::size_t{1});
            ++done;
        }
        if (done == total) return;
        constexpr std::size_t kScalarBlocks = 2;
        constexpr std::size_t kChunks = (Philox::kWideBlocks + kScalarBlocks) * 4 * PerWord;
        constexpr std::size_t kPerRound = ((kChunks + 9) / 10 + 3) / 4 * 4;  // whole fours
        const __m512i mask = _mm512_set1_epi64(static_cast<long long>((std::uint64_t{1} << Bits) - 1));
        const __m512i vn = _mm512_set1_epi64(static_cast<long long>(n_));
        const __m512i vt = _mm512_set1_epi64(static_cast<long long>(threshold_));
        // cur holds the draws cut and not handed over yet, in stream order: 0 to 3 carried
        // from the previous buffer, the previous batch's scalar blocks, this batch's vector
        // blocks; `words` holds this batch's scalar blocks, cut with the next batch. Only
        // whole fours are handed over during the rounds (the 0 to 3 left move to the front
        // of the next buffer), so every piece but the last starts at a stream position
        // that is a multiple of 4 past the first piece's.
        alignas(64) std::uint64_t buffers[2][kChunks + 3];
        alignas(64) std::uint64_t scalar_words[2][4 * kScalarBlocks];
        std::uint64_t* cur = buffers[0];
        std::uint64_t* next = buffers[1];
        std::uint64_t* words = scalar_words[0];
        std::uint64_t* spare = scalar_words[1];
        __m512i w[8];
        gen_.next_wide<kScalarBlocks>(w, words, [](int) {});
        std::size_t j = 0;
        for (int k = 0; k < 8; ++k) j += cut_register<Bits, PerWord>(w[k], mask, vn, vt, cur + j);
        std::size_t check = done + kCancelDraws + 1;
        while (total - done > j) {
            // A stream of 10^9 draws takes seconds: Ctrl-C is checked every 2^20 draws.
            if (done >= check) {
                throw_if_cancelled();
                check = done + kCancelDraws + 1;
            }
            const std::size_t whole = j & ~std::size_t{3};
            const std::size_t left = j - whole;
            for (std::size_t q = 0; q < left; ++q) next[q] = cur[whole + q];
            const std::uint64_t* ready = cur;
            gen_.next_wide<kScalarBlocks>(w, spare, [&](int round) {
                const std::size_t from = kPerRound * static_cast<std::size_t>(round);
                const std::size_t to = std::min(whole, from + kPerRound);
                if (from < to) consume(ready + from, to - from);
            });
            done += whole;
            j = left + cut_words<Bits, PerWord, kScalarBlocks>(words, mask, vn, vt, next + left);
            for (int k = 0; k < 8; ++k) j += cut_register<Bits, PerWord>(w[k], mask, vn, vt, next + j);
            if (far != nullptr) {
                for (std::size_t q = left; q < j; ++q)
                    _mm_prefetch(reinterpret_cast<const char*>(far + next[q]), _MM_HINT_T0);
            }
            std::swap(cur, next);
            std::swap(words, spare);
        }
        consume(cur, total - done);  // what was cut beyond `total` is dropped: spent
    }

    // The accepted draws of eight products q (in draw order) to out, in order; returns
    // how many.
    template <int Bits>
    TRUESCORE_TARGET_AVX512 static std::size_t keep(__m512i q, __m512i mask, __m512i threshold,
                                                    std::uint64_t* out) {
        const __mmask8 ok = _mm512_cmpge_epu64_mask(_mm512_and_si512(q, mask), threshold);
        const __m512i v = _mm512_maskz_compress_epi64(ok, _mm512_srli_epi64(q, Bits));
        const unsigned got = static_cast<unsigned>(popcount32(ok));
        _mm512_mask_storeu_epi64(out, static_cast<__mmask8>((1u << got) - 1u), v);
        return got;
    }
    TRUESCORE_AVX512_END
#endif

    Philox& gen_;
    std::uint64_t n_;
    int bits_ = 64;
    int per_word_ = 1;
    std::uint64_t mask_ = 0;
    std::uint64_t threshold_ = 0;
    std::uint64_t word_ = 0;
    int left_ = 0;
};

// Scratch per thread for gathered_sum: indices drawn (and summed) per batch, a multiple
// of 4 (so draw i of a run still goes to accumulator i mod 4).
inline constexpr std::size_t kIndexChunk = 1024;

// No second tally (gathered_sum's also).
struct NoAlso {
    void operator()(std::uint64_t) const {}
};

// gathered_sums' consumer: takes draws in stream order, run r being draws
// [r per, (r + 1) per); adds draw i of a run to accumulator i mod 4 (and, Weighted, w[i]
// to the run's tally) and hands each finished run to emit(r, (a0 + a1) + (a2 + a3),
// tally). Inside a run, four lanes take the draws by stream position mod 4, four at a time
// (wide_stream's pieces start at multiples of 4); a run that starts at position s mod 4
// has accumulator i = lane (i + s) mod 4 -- the same draws in the same order, so the same
// bits. Only the draws around a run's ends, and pieces that do not start on a four, are
// added one by one. The tally is kept in four lanes and summed: exact for integer weights
// whose totals stay below 2^53 (cluster sizes), whatever the order. A call works on local
// copies of the state (the caller's index stores could alias integer members, which
// would keep them in memory).
template <class Emit, bool Weighted>
struct RunSums {
    const double* y;
    const double* w;  // Weighted only
    std::size_t per;
    Emit& emit;
    std::size_t run = 0;
    std::size_t taken = 0;   // draws of the current run so far
    std::size_t phase = 0;   // stream position mod 4 of the next draw
    std::size_t start = 0;   // stream position mod 4 of the current run's first draw
    double lane[4] = {0.0, 0.0, 0.0, 0.0};
    double tally[4] = {0.0, 0.0, 0.0, 0.0};

    inline __attribute__((always_inline)) void operator()(const std::uint64_t* idx, std::size_t m) {
        double l0 = lane[0], l1 = lane[1], l2 = lane[2], l3 = lane[3];
        double t0 = tally[0], t1 = tally[1], t2 = tally[2], t3 = tally[3];
        std::size_t got = taken, ph = phase, s0 = start, r = run;
        const double* const yy = y;
        const double* const ww = w;
        const std::size_t n_per = per;
        auto one = [&](std::uint64_t k) {  // one draw into lane ph
            const double v = yy[k];
            double tv = 0.0;
            if constexpr (Weighted) tv = ww[k];
            switch (ph) {
                case 0: l0 += v; t0 += tv; break;
                case 1: l1 += v; t1 += tv; break;
                case 2: l2 += v; t2 += tv; break;
                default: l3 += v; t3 += tv; break;
            }
            ph = (ph + 1) & 3;
        };
        while (m > 0) {
            const std::size_t take = std::min(m, n_per - got);
            std::size_t q = 0;
            for (; q < take && ph != 0; ++q) one(idx[q]);
            for (; q + 4 <= take; q += 4) {
                l0 += yy[idx[q]];
                l1 += yy[idx[q + 1]];
                l2 += yy[idx[q + 2]];
                l3 += yy[idx[q + 3]];
                if constexpr (Weighted) {
                    t0 += ww[idx[q]];
                    t1 += ww[idx[q + 1]];
                    t2 += ww[idx[q + 2]];
                    t3 += ww[idx[q + 3]];
                }
            }
            for (; q < take; ++q) one(idx[q]);
            idx += take;
            m -= take;
            got += take;
            if (got == n_per) {
                const double l[4] = {l0, l1, l2, l3};
                const double a0 = l[s0], a1 = l[(s0 + 1) & 3], a2 = l[(s0 + 2) & 3], a3 = l[(s0 + 3) & 3];
                emit(r, (a0 + a1) + (a2 + a3), (t0 + t1) + (t2 + t3));
                ++r;
                got = 0;
                s0 = ph;
                l0 = l1 = l2 = l3 = 0.0;
                t0 = t1 = t2 = t3 = 0.0;
            }
        }
        lane[0] = l0;
        lane[1] = l1;
        lane[2] = l2;
        lane[3] = l3;
        tally[0] = t0;
        tally[1] = t1;
        tally[2] = t2;
        tally[3] = t3;
        taken = got;
        phase = ph;
        start = s0;
        run = r;
    }
};

// The sum of y[i] over `count` draws of `pick`, in four accumulators (draw i to
// accumulator i mod 4, added in draw order), combined as ((a0 + a1) + (a2 + a3)); also(i)
// is called for every index drawn (an order-free second tally over the same draws).
// scratch holds kIndexChunk indices.
template <class Also = NoAlso>
inline double gathered_sum(PackedIndexSampler& pick, const double* y, std::size_t count,
                           std::uint64_t* scratch, Also also = Also{}) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    if (!simd::avx512()) {
        // Without the AVX-512 kernels, drawing one index at a time is the faster of the
        // two (the same draws: fill() is count draw()s).
        auto add = [&](double& a) {
            const std::uint64_t k = pick.draw();
            a += y[k];
            also(k);
        };
        std::size_t i = 0;
        for (; i + 4 <= count; i += 4) {
            // A resample of 10^9 draws takes seconds: Ctrl-C is checked every 2^20 draws
            // (the same additions in the same order, so the same bits).
            if ((i & kCancelDraws) == 0 && i != 0) throw_if_cancelled();
            add(acc[0]);
            add(acc[1]);
            add(acc[2]);
            add(acc[3]);
        }
        for (; i < count; ++i) add(acc[i & 3]);
        return (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
#ifdef TRUESCORE_AVX512
    if (pick.packed()) return pick.wide_sum(y, count, also);
#endif
    // n > 2^26: one below() per draw, in batches.
    for (std::size_t first = 0; first < count; first += kIndexChunk) {
        if ((first & kCancelDraws) == 0 && first != 0) throw_if_cancelled();
        const std::size_t c = std::min(kIndexChunk, count - first);
        pick.fill(scratch, c);
        std::size_t i = 0;
        for (; i + 4 <= c; i += 4) {
            acc[0] += y[scratch[i]];
            acc[1] += y[scratch[i + 1]];
            acc[2] += y[scratch[i + 2]];
            acc[3] += y[scratch[i + 3]];
        }
        for (; i < c; ++i) acc[i & 3] += y[scratch[i]];
        for (i = 0; i < c; ++i) also(scratch[i]);
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// gathered_sum over `runs` runs of `per` draws in a row, run r's sum (and, with a weight
// per index, its tally of w[i] over the same draws in draw order) handed to
// emit(r, sum, tally): bit for bit what `runs` calls of gathered_sum give (draw i of a run
// to accumulator i mod 4, ((a0 + a1) + (a2 + a3))), the tally 0 without weights. With the
// AVX-512 kernels the runs' draws come from one wide_stream, so `pick` is spent afterwards:
// use it for a stream block's last draws only.
template <class Emit>
inline void gathered_sums(PackedIndexSampler& pick, const double* y, const double* w, std::size_t per,
                          std::size_t runs, std::uint64_t* scratch, Emit emit) {
    if (runs == 0) return;
#ifdef TRUESCORE_AVX512
    if (simd::avx512() && pick.packed() && per > 0) {
        if (w == nullptr) {
            RunSums<Emit, false> sums{y, w, per, emit};
            pick.wide_stream(per * runs, sums, y);
        } else {
            RunSums<Emit, true> sums{y, w, per, emit};
            pick.wide_stream(per * runs, sums, y);
        }
        return;
    }
#endif
    for (std::size_t r = 0; r < runs; ++r) {
        double tally = 0.0;
        double sum;
        if (w == nullptr)
            sum = gathered_sum(pick, y, per, scratch);
        else
            sum = gathered_sum(pick, y, per, scratch, [&tally, w](std::uint64_t c) { tally += w[c]; });
        emit(r, sum, tally);
    }
}

// With replacement: out[i] = below(N).
void draw_with_replacement(Philox& rng, std::size_t population_size, std::size_t n,
                           std::uint32_t* out);

// ---- Without replacement ---------------------------------------------------------------

// Without replacement from positions [0, N): partial Fisher-Yates,
//     for i in 0..n-1: j = i + below(N - i); swap(perm[i], perm[j]); out[i] = perm[i]
// over the identity permutation, then the swaps are undone in reverse so the next draw
// starts from the identity again. O(n) per draw; 4 N bytes of state.
class FisherYatesSampler {
public:
    explicit FisherYatesSampler(std::size_t population_size);
    std::size_t population_size() const { return perm_.size(); }
    // n distinct positions of [begin, begin + size) (a stratum), in draw order; n <= size.
    void draw(Philox& rng, std::size_t begin, std::size_t size, std::size_t n, std::uint32_t* out);
    void draw(Philox& rng, std::size_t n, std::uint32_t* out) { draw(rng, 0, perm_.size(), n, out); }

private:
    std::vector<std::uint32_t> perm_;
    std::vector<std::uint32_t> swaps_;
};

// Stratified simple random sampling: stratum h holds positions [offsets[h], offsets[h+1])
// and contributes allocation[h] units drawn by Fisher-Yates within it, strata in order.
// The strata must pass check_strata for a sampler of the population's size.
void draw_stratified(FisherYatesSampler& sampler, Philox& rng, const std::size_t* offsets,
                     std::size_t n_strata, const std::size_t* allocation, std::uint32_t* out);

// Throws std::invalid_argument unless the n_strata + 1 offsets run non-decreasing from 0
// to population_size and allocation[h] <= offsets[h+1] - offsets[h]. Returns the sample
// size, the sum of the allocation.
std::size_t check_strata(const std::size_t* offsets, std::size_t n_strata, const std::size_t* allocation,
                         std::size_t population_size);

// Proportional allocation by largest remainder: n_h = floor(n N_h / N), then the units
// left over go to the largest remainders (n N_h mod N), ties to the lower stratum.
// Exact integer arithmetic; sums to n, and n_h <= N_h.
std::vector<std::size_t> proportional_allocation(const std::size_t* stratum_sizes,
                                                 std::size_t n_strata, std::size_t n);

// Floyd's algorithm for s distinct values of [0, m) (O(s) work, whatever m):
// for j = m - s .. m - 1, t = below(j + 1); append j if t was already chosen, else append
// t. The chosen values are appended to `out` in that order. The set of chosen values is a
// bitmap of m bits when m <= max(2^20, 64 s) (a bit test per draw; the bits set are
// cleared after the draw, so the bitmap is never scanned), else an open-addressing table
// of capacity a power of two >= 2s (0 = empty slot, value v stored as v + 1), cleared at
// each draw. Either set gives the same values: only the draws decide them.
class FloydSampler {
public:
    void draw(Philox& rng, std::uint64_t m, std::uint64_t s, std::vector<std::uint64_t>& out) {
        out.clear();
        if (s == 0) return;
        if (m <= std::max<std::uint64_t>(std::uint64_t{1} << 20, 64 * s)) {
            const std::size_t words = static_cast<std::size_t>((m + 63) / 64);
            if (bits_.size() < words) bits_.resize(words, 0);
            std::uint64_t* bits = bits_.data();
            // The s words the draws take (one each, but for a rejection, which is rare: a
            // rejected draw reads on into the later words, and the stream after them),
            // generated in bulk: the same words in the same order as below() would read.
            const std::size_t want = static_cast<std::size_t>(s);
            if (raw_.size() < want) raw_.resize(want);
            rng.next_words(raw_.data(), want);
            std::size_t used = 0;
            const std::uint64_t* raw = raw_.data();
            auto next = [&] { return used < want ? raw[used++] : rng.next_u64(); };
            for (std::uint64_t j = m - s; j < m; ++j) {
                const std::uint64_t t = Philox::below_from(next, j + 1);
                std::uint64_t& word = bits[t >> 6];
                const std::uint64_t bit = std::uint64_t{1} << (t & 63);
                // t is new: take t; else j (never chosen before: every earlier value is < j).
                const std::uint64_t v = (word & bit) ? j : t;
                bits[v >> 6] |= std::uint64_t{1} << (v & 63);
                out.push_back(v);
            }
            for (const std::uint64_t v : out) bits[v >> 6] = 0;  // clear what was set
            return;
        }
        std::size_t cap = 16;
        while (cap < 2 * s) cap <<= 1;
        if (table_.size() < cap) table_.resize(cap);
        std::fill(table_.begin(), table_.begin() + static_cast<std::ptrdiff_t>(cap), 0);
        mask_ = cap - 1;
        for (std::uint64_t j = m - s; j < m; ++j) {
            const std::uint64_t t = rng.below(j + 1);
            const std::uint64_t v = insert(t) ? t : (insert(j), j);
            out.push_back(v);
        }
    }

private:
    // True if v was absent (and is now present).
    bool insert(std::uint64_t v) {
        std::size_t slot = static_cast<std::size_t>((v * 0x9E3779B97F4A7C15ULL) >> 20) & mask_;
        while (table_[slot] != 0) {
            if (table_[slot] == v + 1) return false;
            slot = (slot + 1) & mask_;
        }
        table_[slot] = v + 1;
        return true;
    }

    std::vector<std::uint64_t> table_;
    std::vector<std::uint64_t> bits_;  // all zero between draws
    std::vector<std::uint64_t> raw_;   // the bitmap path's words
    std::size_t mask_ = 0;
};

// ---- Other designs ---------------------------------------------------------------------

// Bernoulli (Poisson with equal probabilities): unit k is in the sample when the k-th
// next_double() < p. Writes the included positions in order; returns how many.
std::size_t draw_bernoulli(Philox& rng, std::size_t population_size, double p, std::uint32_t* out);

// Counts per category of a without-replacement sample of n from a population holding
// counts[v] units of category v (the multivariate hypergeometric distribution), by
// sequential conditional hypergeometric draws. Each draw is exact inversion of the
// hypergeometric pmf (log-factorials from a table) enumerated outward from the mode,
// one next_double() per category but the last: O(sd) work, not O(n).
class HypergeometricSampler {
public:
    explicit HypergeometricSampler(std::size_t max_population);
    // X ~ Hypergeometric(population N, successes K, draws m); K, m <= N <= max_population.
    std::size_t draw(Philox& rng, std::size_t population, std::size_t successes, std::size_t draws) const;
    // out[v] for v < n_categories; sum(counts) <= max_population, n <= sum(counts).
    void draw_counts(Philox& rng, const std::int64_t* counts, std::size_t n_categories, std::size_t n,
                     std::int64_t* out) const;

private:
    double log_pmf(std::size_t population, std::size_t successes, std::size_t draws, std::size_t k) const;
    std::vector<double> log_factorial_;
};

}  // namespace truescore
