// The tile emulator (swiftbert_amx.h): tile_gemm.h's blocking, the same loops, tails and
// addresses as amx.c, on tiles kept in memory, for machines without AMX (the suite runs
// packing, blocking and edge shapes through it everywhere) and to check the tiles against on
// machines with it.
//
// The instructions' arithmetic, per instruction, as measured bit for bit against the tiles of an
// Emerald Rapids Xeon (TileKernelTests):
// - TDPBUSD: exact int32 sums, wrapping.
// - TDPBF16PS: for each row and column, the even and the odd products of the 16 pairs summed
//   apart by FP32 FMA from zero, then added to each other, then to the accumulator; round to
//   nearest even, bf16 denormal inputs read as zero, denormal results flushed to zero.
// Tile loads and stores move the configured rows of 64 bytes; LDTILECFG and TILEZERO zero.
#include "swiftbert_amx.h"
#include "tile_gemm.h"
#include <math.h>
#include <string.h>

#pragma clang fp contract(off)

typedef struct {
    int rows[8];
    uint8_t data[8][16][64] __attribute__((aligned(64)));
} soft_tiles;

static void soft_configure(soft_tiles *tiles, int rows0, int rows1) {
    tile_rows(rows0, rows1, tiles->rows);
    memset(tiles->data, 0, sizeof tiles->data);
}

static void soft_load(soft_tiles *tiles, int t, const void *p, size_t stride) {
    memset(tiles->data[t], 0, sizeof tiles->data[t]);
    for (int r = 0; r < tiles->rows[t]; r++) memcpy(tiles->data[t][r], (const uint8_t *)p + (size_t)r * stride, 64);
}

static void soft_store(const soft_tiles *tiles, int t, void *p, size_t stride) {
    for (int r = 0; r < tiles->rows[t]; r++) memcpy((uint8_t *)p + (size_t)r * stride, tiles->data[t][r], 64);
}

static uint32_t lane(const soft_tiles *tiles, int t, int row, int column) {
    uint32_t x;
    memcpy(&x, tiles->data[t][row] + column * 4, 4);
    return x;
}

static float bf16_to_float(uint32_t half) {
    uint32_t bits = (half & 0xFFFFu) << 16;
    if ((bits & 0x7F800000u) == 0) bits &= 0x80000000u;  // denormal (or zero) reads as signed zero
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static float flush(float x) {
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

static void soft_dpbf16ps(soft_tiles *tiles, int c, int a, int b) {
    for (int m = 0; m < tiles->rows[c]; m++) {
        for (int n = 0; n < 16; n++) {
            float even = 0.0f, odd = 0.0f;
            for (int k = 0; k < 16; k++) {
                const uint32_t x = lane(tiles, a, m, k), w = lane(tiles, b, k, n);
                // An FMA: the product of two bf16 is exact in FP32, so one rounding, of the sum.
                even = flush(even + bf16_to_float(x) * bf16_to_float(w));
                odd = flush(odd + bf16_to_float(x >> 16) * bf16_to_float(w >> 16));
            }
            float acc;
            const uint32_t bits = lane(tiles, c, m, n);
            memcpy(&acc, &bits, 4);
            acc = flush(acc + flush(even + odd));
            memcpy(tiles->data[c][m] + n * 4, &acc, 4);
        }
    }
}

static void soft_dpbusd(soft_tiles *tiles, int c, int a, int b) {
    for (int m = 0; m < tiles->rows[c]; m++) {
        for (int n = 0; n < 16; n++) {
            uint32_t acc = lane(tiles, c, m, n);  // unsigned: wrapping is defined
            for (int k = 0; k < 16; k++) {
                const uint32_t x = lane(tiles, a, m, k), w = lane(tiles, b, k, n);
                for (int i = 0; i < 4; i++)
                    acc += (uint32_t)((int32_t)(uint8_t)(x >> (8 * i)) * (int32_t)(int8_t)(w >> (8 * i)));
            }
            memcpy(tiles->data[c][m] + n * 4, &acc, 4);
        }
    }
}

#define TILE_STATE soft_tiles tiles;
#define TILE_CONFIGURE(rows0, rows1) soft_configure(&tiles, rows0, rows1)
#define TILE_ZERO(t) memset(tiles.data[t], 0, sizeof tiles.data[t])
#define TILE_LOAD(t, p, stride) soft_load(&tiles, t, p, stride)
#define TILE_STORE(t, p, stride) soft_store(&tiles, t, p, stride)
#define TILE_RELEASE() ((void)0)
#define SOFT_DPBF16PS(c, a, b) soft_dpbf16ps(&tiles, c, a, b)
#define SOFT_DPBUSD(c, a, b) soft_dpbusd(&tiles, c, a, b)

TILE_GEMM(swiftbert_emulated_bf16_gemm, , uint32_t, uint32_t, float, SOFT_DPBF16PS)
TILE_GEMM(swiftbert_emulated_int8_gemm, , uint8_t, int8_t, int32_t, SOFT_DPBUSD)
