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

// Tiles: C00 C01 C10 C11 = 0…3 (rows 0–15 and 16–31 × columns 0–15 and 16–31 of a block),
// A0 A1 = 4, 5, B0 B1 = 6, 7. Each tile row is 64 bytes.
typedef struct {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed, aligned(64))) tile_config;

#define AMX_TARGET __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f")))

// Rows of a block: 16 in the first tile row, the rest (0…16) in the second. An unused tile is
// configured empty.
AMX_TARGET static void configure(int rows0, int rows1) {
    tile_config config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    const int rows[8] = {rows0, rows0, rows1, rows1, rows0, rows1, 16, 16};
    for (int t = 0; t < 8; t++) {
        config.rows[t] = (uint8_t)rows[t];
        config.colsb[t] = rows[t] ? 64 : 0;
    }
    _tile_loadconfig(&config);
}

// The product, blocks of 32 rows × 32 columns, rows outermost (a block's rows of a stay in
// cache while its columns run). Only the last row block can have fewer rows: the configuration
// is loaded for the first and, when it differs, once more for the last.
#define TILE_GEMM(NAME, A_TYPE, B_TYPE, C_TYPE, DP)                                                        \
    AMX_TARGET void NAME(const A_TYPE *a, size_t a_stride, int rows, const B_TYPE *b, size_t b_stride,     \
                         int cols, int depth, C_TYPE *c, size_t c_stride, int accumulate) {                \
        if (rows <= 0 || cols <= 0) return;                                                                \
        const int full = depth / 16, tail = depth % 16, steps = full + (tail ? 1 : 0);                     \
        const uint8_t *a_bytes = (const uint8_t *)a, *b_bytes = (const uint8_t *)b;                        \
        uint8_t *c_bytes = (uint8_t *)c;                                                                   \
        uint8_t a_tail[32 * 64] __attribute__((aligned(64)));                                              \
        uint8_t b_tail[16 * 128] __attribute__((aligned(64)));                                             \
        int configured = -1;                                                                               \
        for (int r = 0; r < rows; r += 32) {                                                               \
            const int block_rows = rows - r < 32 ? rows - r : 32;                                          \
            const int rows0 = block_rows < 16 ? block_rows : 16, rows1 = block_rows - rows0;               \
            if (block_rows != configured) { configure(rows0, rows1); configured = block_rows; }            \
            const uint8_t *a_block = a_bytes + (size_t)r * a_stride;                                       \
            if (tail) {                                                                                    \
                memset(a_tail, 0, sizeof a_tail);                                                          \
                for (int i = 0; i < block_rows; i++)                                                       \
                    memcpy(a_tail + i * 64, a_block + i * a_stride + full * 64, (size_t)tail * 4);         \
            }                                                                                              \
            for (int j = 0; j < cols; j += 32) {                                                           \
                const int two = cols - j >= 32;                                                            \
                uint8_t *c0 = c_bytes + (size_t)r * c_stride + (size_t)j * 4, *c1 = c0 + 16 * c_stride;    \
                if (accumulate) {                                                                          \
                    _tile_loadd(0, c0, c_stride);                                                          \
                    if (two) _tile_loadd(1, c0 + 64, c_stride);                                            \
                    if (rows1) { _tile_loadd(2, c1, c_stride); if (two) _tile_loadd(3, c1 + 64, c_stride); } \
                } else {                                                                                   \
                    _tile_zero(0); _tile_zero(1); if (rows1) { _tile_zero(2); _tile_zero(3); }              \
                }                                                                                          \
                if (tail) {                                                                                \
                    memset(b_tail, 0, sizeof b_tail);                                                      \
                    for (int i = 0; i < tail; i++)                                                         \
                        memcpy(b_tail + i * 128, b_bytes + (size_t)(full * 16 + i) * b_stride + (size_t)j * 4, \
                               two ? 128 : 64);                                                            \
                }                                                                                          \
                for (int step = 0; step < steps; step++) {                                                 \
                    const int whole = step < full;                                                         \
                    const uint8_t *at = whole ? a_block + step * 64 : a_tail;                              \
                    const size_t at_stride = whole ? a_stride : 64;                                        \
                    const uint8_t *bt = whole ? b_bytes + (size_t)step * 16 * b_stride + (size_t)j * 4 : b_tail; \
                    const size_t bt_stride = whole ? b_stride : 128;                                       \
                    _tile_loadd(6, bt, bt_stride);                                                         \
                    if (two) _tile_loadd(7, bt + 64, bt_stride);                                           \
                    _tile_loadd(4, at, at_stride);                                                         \
                    DP(0, 4, 6);                                                                           \
                    if (two) DP(1, 4, 7);                                                                  \
                    if (rows1) {                                                                           \
                        _tile_loadd(5, at + 16 * at_stride, at_stride);                                    \
                        DP(2, 5, 6);                                                                       \
                        if (two) DP(3, 5, 7);                                                              \
                    }                                                                                      \
                }                                                                                          \
                _tile_stored(0, c0, c_stride);                                                             \
                if (two) _tile_stored(1, c0 + 64, c_stride);                                               \
                if (rows1) { _tile_stored(2, c1, c_stride); if (two) _tile_stored(3, c1 + 64, c_stride); } \
            }                                                                                              \
        }                                                                                                  \
        _tile_release();                                                                                   \
    }

TILE_GEMM(swiftbert_amx_bf16_gemm, uint32_t, uint32_t, float, _tile_dpbf16ps)
TILE_GEMM(swiftbert_amx_int8_gemm, uint8_t, int8_t, int32_t, _tile_dpbusd)

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
