// The tile emulator (swiftbert_amx.h): the same blocks in plain C, for machines without AMX
// (the suite runs packing, blocking and edge shapes through it everywhere) and to check the
// tiles against on machines with it.
//
// INT8: exact int32 sums, wrapping, so any order gives the tiles' bits.
// BF16: TDPBF16PS as Intel's SDM (vol. 2, "TDPBF16PS") gives it: for each row and column,
// within one instruction (16 pairs), the even and the odd products are summed apart by FP32
// FMA from zero, then added to each other, then to the accumulator; round to nearest even,
// bf16 denormal inputs read as zero, denormal results flushed to zero. The blocks take the
// same 16-pair steps as amx.c, in order, with the last one zero-padded.
#include "swiftbert_amx.h"
#include <math.h>
#include <string.h>

#pragma clang fp contract(off)

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

/// Lane j (0…63) of pair p of a panel, or of activations' row: zero past `count`.
static uint32_t lane(const uint32_t *row, int p, int count) { return p < count ? row[p] : 0; }

void swiftbert_emulated_bf16_block(const uint32_t *a, size_t a_stride, int rows,
                                   const uint32_t *b, int k_pairs, float *c) {
    const int steps = (k_pairs + 15) / 16;
    for (int r = 0; r < rows; r++) {
        const uint32_t *a_row = (const uint32_t *)((const uint8_t *)a + r * a_stride);
        for (int j = 0; j < 64; j++) {
            float acc = 0.0f;
            for (int step = 0; step < steps; step++) {
                float even = 0.0f, odd = 0.0f;
                for (int i = 0; i < 16; i++) {
                    const int p = step * 16 + i;
                    const uint32_t x = lane(a_row, p, k_pairs), w = p < k_pairs ? b[(size_t)p * 64 + j] : 0;
                    // An FMA: the product of two bf16 is exact in FP32, so one rounding, of the sum.
                    even = flush(even + bf16_to_float(x) * bf16_to_float(w));
                    odd = flush(odd + bf16_to_float(x >> 16) * bf16_to_float(w >> 16));
                }
                acc = flush(acc + flush(even + odd));
            }
            c[r * 64 + j] = acc;
        }
    }
}

void swiftbert_emulated_int8_block(const uint8_t *a, size_t a_stride, int rows,
                                   const int8_t *b, int k_quads, int32_t *c) {
    for (int r = 0; r < rows; r++) {
        const uint8_t *a_row = a + r * a_stride;
        for (int j = 0; j < 64; j++) {
            uint32_t acc = 0;  // unsigned: wrapping is defined
            for (int q = 0; q < k_quads; q++)
                for (int i = 0; i < 4; i++)
                    acc += (uint32_t)((int32_t)a_row[q * 4 + i] * (int32_t)b[(size_t)q * 256 + j * 4 + i]);
            c[r * 64 + j] = (int32_t)acc;
        }
    }
}
