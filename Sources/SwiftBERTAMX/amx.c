// The tile kernels (swiftbert_amx.h). Compiled for every x86-64 build: the target attribute
// enables the AMX instructions in these functions only, and Swift calls them only after
// swiftbert_amx_enable() said yes.
#include "swiftbert_amx.h"
#include <cpuid.h>
#include <immintrin.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

int swiftbert_amx_enable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    const int tile = (d >> 24) & 1, bf16 = (d >> 22) & 1, int8 = (d >> 25) & 1;
    if (!tile) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return 0;  // OSXSAVE: xgetbv is allowed
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    const unsigned long long xcr0 = ((unsigned long long)hi << 32) | lo;
    if ((xcr0 & (3ull << 17)) != (3ull << 17)) return 0;  // XTILECFG and XTILEDATA enabled by the OS
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return 0;
    unsigned long long permitted = 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &permitted) != 0) return 0;
    if (!(permitted & (1ull << XFEATURE_XTILEDATA))) return 0;
    return 1 | bf16 << 1 | int8 << 2;
}

// Tiles: C00 C01 C10 C11 = 0…3 (rows 0–15 and 16–31 × channels 0–15 and 16–31 of a half
// panel), A0 A1 = 4, 5, B0 B1 = 6, 7. Each tile row is 64 bytes.
typedef struct {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed, aligned(64))) tile_config;

#define AMX_TARGET __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f")))

AMX_TARGET static void configure(int rows0, int rows1) {
    tile_config config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    const int rows[8] = {rows0, rows0, rows1, rows1, rows0, rows1, 16, 16};
    for (int t = 0; t < 8; t++) {
        config.rows[t] = (uint8_t)rows[t];
        config.colsb[t] = rows[t] ? 64 : 0;  // an unused tile is configured empty
    }
    _tile_loadconfig(&config);
}

// One block. K runs in steps of 16 four-byte lanes (one 64-byte tile row: 16 bf16 pairs or
// 16 u8 quads); a last partial step reads zero-padded copies, so no tile reads past the
// activations or the panel, and the zeros add nothing.
#define TILE_BLOCK(NAME, A_TYPE, B_TYPE, C_TYPE, DP)                                              \
    AMX_TARGET void NAME(const A_TYPE *a, size_t a_stride, int rows, const B_TYPE *b, int k_lanes, \
                         C_TYPE *c) {                                                             \
        const int rows0 = rows < 16 ? rows : 16, rows1 = rows - rows0;                            \
        const int full = k_lanes / 16, tail = k_lanes % 16;                                       \
        const uint8_t *a_bytes = (const uint8_t *)a, *b_bytes = (const uint8_t *)b;               \
        uint8_t a_tail[32 * 64] __attribute__((aligned(64)));                                     \
        uint8_t b_tail[16 * 256] __attribute__((aligned(64)));                                    \
        if (tail) {                                                                               \
            memset(a_tail, 0, sizeof a_tail);                                                     \
            memset(b_tail, 0, sizeof b_tail);                                                     \
            for (int r = 0; r < rows; r++)                                                        \
                memcpy(a_tail + r * 64, a_bytes + r * a_stride + full * 64, (size_t)tail * 4);    \
            memcpy(b_tail, b_bytes + (size_t)full * 16 * 256, (size_t)tail * 256);                \
        }                                                                                         \
        configure(rows0, rows1);                                                                  \
        for (int half = 0; half < 2; half++) {                                                    \
            _tile_zero(0);                                                                        \
            _tile_zero(1);                                                                        \
            if (rows1) { _tile_zero(2); _tile_zero(3); }                                          \
            for (int step = 0; step < full + (tail ? 1 : 0); step++) {                            \
                const uint8_t *at = step < full ? a_bytes + step * 64 : a_tail;                   \
                const size_t at_stride = step < full ? a_stride : 64;                             \
                const uint8_t *bt = (step < full ? b_bytes + (size_t)step * 16 * 256 : b_tail) + half * 128; \
                _tile_loadd(6, bt, 256);                                                          \
                _tile_loadd(7, bt + 64, 256);                                                     \
                _tile_loadd(4, at, at_stride);                                                    \
                DP(0, 4, 6);                                                                      \
                DP(1, 4, 7);                                                                      \
                if (rows1) {                                                                      \
                    _tile_loadd(5, at + 16 * at_stride, at_stride);                               \
                    DP(2, 5, 6);                                                                  \
                    DP(3, 5, 7);                                                                  \
                }                                                                                 \
            }                                                                                     \
            _tile_stored(0, c + half * 32, 256);                                                  \
            _tile_stored(1, c + half * 32 + 16, 256);                                             \
            if (rows1) {                                                                          \
                _tile_stored(2, c + 16 * 64 + half * 32, 256);                                    \
                _tile_stored(3, c + 16 * 64 + half * 32 + 16, 256);                               \
            }                                                                                     \
        }                                                                                         \
        _tile_release();                                                                          \
    }

TILE_BLOCK(swiftbert_amx_bf16_block, uint32_t, uint32_t, float, _tile_dpbf16ps)
TILE_BLOCK(swiftbert_amx_int8_block, uint8_t, int8_t, int32_t, _tile_dpbusd)

// The roofline's tile peak (Benchmarks/RooflineBenchmark.swift): `iterations` × 4 products on
// resident tiles (zeros), four independent accumulators, no loads.
AMX_TARGET void swiftbert_amx_peak_loop(int int8, long iterations) {
    configure(16, 16);
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    _tile_zero(4); _tile_zero(5); _tile_zero(6); _tile_zero(7);
    if (int8) {
        for (long i = 0; i < iterations; i++) {
            _tile_dpbusd(0, 4, 6); _tile_dpbusd(1, 4, 7); _tile_dpbusd(2, 5, 6); _tile_dpbusd(3, 5, 7);
        }
    } else {
        for (long i = 0; i < iterations; i++) {
            _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_release();
}
