// Counter-based random numbers: Philox4x64-10 (Salmon, Moraes, Dror & Shaw, SC 2011).
//
// Its raw 64-bit stream equals numpy.random.Philox for the same key and counter, so a
// NumPy reference can reproduce any stream of ours draw for draw. Every task of a study
// gets its own stream from (key, task index) -- counter words 2 and 3 hold the task
// index, words 0 and 1 count blocks within the task -- so which thread, process or
// machine runs a task never changes what it draws.
#pragma once

#include <cstdint>

namespace truescore {

class Philox {
public:
    // counter as NumPy's Philox(counter=...) takes it: the first block is generated from
    // counter + 1, exactly as NumPy does.
    Philox(std::uint64_t key0, std::uint64_t key1, std::uint64_t c0 = 0, std::uint64_t c1 = 0,
           std::uint64_t c2 = 0, std::uint64_t c3 = 0)
        : key_{key0, key1}, ctr_{c0, c1, c2, c3} {}

    // The stream of task `task` under `key`: NumPy's Philox(key=key, counter=[0, 0, lo, hi]).
    static Philox for_task(std::uint64_t key0, std::uint64_t key1, std::uint64_t task) {
        return Philox(key0, key1, 0, 0, task, 0);
    }

    std::uint64_t next_u64() {
        if (pos_ == 4) refill();
        return buf_[pos_++];
    }

    // Uniform on [0, 1) with 53 random bits, as numpy.random.Generator.random().
    double next_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

    // Uniform integer on [0, n), n >= 1, unbiased (Lemire's multiply-and-reject).
    std::uint64_t below(std::uint64_t n) {
        std::uint64_t x = next_u64();
        unsigned __int128 m = static_cast<unsigned __int128>(x) * n;
        std::uint64_t low = static_cast<std::uint64_t>(m);
        if (low < n) {
            const std::uint64_t threshold = (0 - n) % n;
            while (low < threshold) {
                x = next_u64();
                m = static_cast<unsigned __int128>(x) * n;
                low = static_cast<std::uint64_t>(m);
            }
        }
        return static_cast<std::uint64_t>(m >> 64);
    }

private:
    static void mulhilo(std::uint64_t a, std::uint64_t b, std::uint64_t* hi, std::uint64_t* lo) {
        const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
        *hi = static_cast<std::uint64_t>(p >> 64);
        *lo = static_cast<std::uint64_t>(p);
    }

    void refill() {
        // Increment the 256-bit counter, then encrypt it with 10 rounds.
        if (++ctr_[0] == 0 && ++ctr_[1] == 0 && ++ctr_[2] == 0) ++ctr_[3];
        std::uint64_t x0 = ctr_[0], x1 = ctr_[1], x2 = ctr_[2], x3 = ctr_[3];
        std::uint64_t k0 = key_[0], k1 = key_[1];
        for (int round = 0; round < 10; ++round) {
            if (round > 0) {
                k0 += 0x9E3779B97F4A7C15ULL;
                k1 += 0xBB67AE8584CAA73BULL;
            }
            std::uint64_t hi0, lo0, hi1, lo1;
            mulhilo(0xD2E7470EE14C6C93ULL, x0, &hi0, &lo0);
            mulhilo(0xCA5A826395121157ULL, x2, &hi1, &lo1);
            const std::uint64_t y0 = hi1 ^ x1 ^ k0, y2 = hi0 ^ x3 ^ k1;
            x0 = y0;
            x1 = lo1;
            x2 = y2;
            x3 = lo0;
        }
        buf_[0] = x0;
        buf_[1] = x1;
        buf_[2] = x2;
        buf_[3] = x3;
        pos_ = 0;
    }

    std::uint64_t key_[2];
    std::uint64_t ctr_[4];
    std::uint64_t buf_[4] = {0, 0, 0, 0};
    int pos_ = 4;
};

}  // namespace truescore
