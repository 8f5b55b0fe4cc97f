// The tile emulator (swiftbert_amx.h): the same products in plain C, for machines without AMX
// (the suite runs packing, blocking and edge shapes through it everywhere) and to check the
// tiles against on machines with it.
//
// INT8: exact int32 sums, wrapping, so any order gives the tiles' bits.
// BF16: TDPBF16PS's arithmetic, as measured bit for bit against the tiles of an Emerald Rapids
// Xeon (TileKernelTests): for each row and column, within one instruction (16 pairs), the even
// and the odd products are summed apart by FP32 FMA from zero, then added to each other, then
// to the accumulator; round to nearest even, bf16 denormal inputs read as zero, denormal
// results flushed to zero. The same 16-pair steps as amx.c, in order, the last zero-padded.
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

static const void *at(const void *base, size_t stride, int row, int lane) {
    return (const uint8_t *)base + (size_t)row * stride + (size_t)lane * 4;
}

void swiftbert_emulated_bf16_gemm(const uint32_t *a, size_t a_stride, int rows, const uint32_t *b, size_t b_stride,
                                  int cols, int depth, float *c, size_t c_stride, int accumulate) {
    const int steps = (depth + 15) / 16;
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < cols; j++) {
            float *out = (float *)((uint8_t *)c + (size_t)r * c_stride) + j;
            float acc = accumulate ? *out : 0.0f;
            for (int step = 0; step < steps; step++) {
                float even = 0.0f, odd = 0.0f;
                for (int i = 0; i < 16; i++) {
                    const int p = step * 16 + i;
                    // Past the depth the tiles read zero-padded copies: +0 products, as here.
                    const uint32_t x = p < depth ? *(const uint32_t *)at(a, a_stride, r, p) : 0;
                    const uint32_t w = p < depth ? *(const uint32_t *)at(b, b_stride, p, j) : 0;
                    // An FMA: the product of two bf16 is exact in FP32, so one rounding, of the sum.
                    even = flush(even + bf16_to_float(x) * bf16_to_float(w));
                    odd = flush(odd + bf16_to_float(x >> 16) * bf16_to_float(w >> 16));
                }
                acc = flush(acc + flush(even + odd));
            }
            *out = acc;
        }
    }
}

void swiftbert_emulated_int8_gemm(const uint8_t *a, size_t a_stride, int rows, const int8_t *b, size_t b_stride,
                                  int cols, int depth, int32_t *c, size_t c_stride, int accumulate) {
    for (int r = 0; r < rows; r++) {
        const uint8_t *a_row = a + (size_t)r * a_stride;
        for (int j = 0; j < cols; j++) {
            int32_t *out = (int32_t *)((uint8_t *)c + (size_t)r * c_stride) + j;
            uint32_t acc = accumulate ? (uint32_t)*out : 0;  // unsigned: wrapping is defined
            for (int q = 0; q < depth; q++) {
                const int8_t *w = (const int8_t *)at(b, b_stride, q, j);
                for (int i = 0; i < 4; i++) acc += (uint32_t)((int32_t)a_row[q * 4 + i] * (int32_t)w[i]);
            }
            *out = (int32_t)acc;
        }
    }
}
