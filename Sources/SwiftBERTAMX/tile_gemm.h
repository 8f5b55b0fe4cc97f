// The tile product's blocking, written once for the hardware (amx.c) and for the emulator's
// software tiles (emulator.c): each file defines the tile operations, then instantiates
// TILE_GEMM. So the emulator runs the very loops, tails and addresses the hardware runs, and
// the suite checks them on every machine; only the instructions differ.
//
// The operations a file defines before including this header:
//   TILE_STATE                      declarations at the top of a product (the software tiles)
//   TILE_CONFIGURE(rows0, rows1)    load the configuration `tile_rows` gives
//   TILE_ZERO(t)  TILE_LOAD(t, p, stride)  TILE_STORE(t, p, stride)  TILE_RELEASE()
//   and a product instruction, DP(c, a, b), passed to TILE_GEMM.
#ifndef SWIFTBERT_TILE_GEMM_H
#define SWIFTBERT_TILE_GEMM_H
#include <stdint.h>
#include <string.h>

// Tiles: C00 C01 C10 C11 = 0…3 (rows 0–15 and 16–31 × columns 0–15 and 16–31 of a block),
// A0 A1 = 4, 5, B0 B1 = 6, 7. Each tile row is 64 bytes. A block's rows: 16 in the first tile
// row, the rest (0…16) in the second; an unused tile is configured empty.
static inline void tile_rows(int rows0, int rows1, int rows[8]) {
    const int r[8] = {rows0, rows0, rows1, rows1, rows0, rows1, 16, 16};
    memcpy(rows, r, sizeof r);
}

// The product, blocks of 32 rows × 32 columns, rows outermost (a block's rows of a stay in
// cache while its columns run). b's columns come in panels of 64 lanes, `b_panel_stride` bytes
// apart (256 when its rows are contiguous): a 32-column block lies within one panel. Only the last row block can have fewer rows: the configuration
// is loaded for the first and, when it differs, once more for the last. A last partial step
// of k reads zero-padded copies of a and b, so no tile reads past them.
#define TILE_GEMM(NAME, ATTR, A_TYPE, B_TYPE, C_TYPE, DP)                                                  \
    ATTR void NAME(const A_TYPE *a, size_t a_stride, int rows, const B_TYPE *b, size_t b_stride,          \
                   size_t b_panel_stride, int cols, int depth, C_TYPE *c, size_t c_stride, int accumulate) { \
        if (rows <= 0 || cols <= 0) return;                                                                \
        TILE_STATE                                                                                         \
        const int full = depth / 16, tail = depth % 16, steps = full + (tail ? 1 : 0);                     \
        const uint8_t *a_bytes = (const uint8_t *)a, *b_bytes = (const uint8_t *)b;                        \
        uint8_t *c_bytes = (uint8_t *)c;                                                                   \
        uint8_t a_tail[32 * 64] __attribute__((aligned(64)));                                              \
        uint8_t b_tail[16 * 128] __attribute__((aligned(64)));                                             \
        int configured = -1;                                                                               \
        for (int r = 0; r < rows; r += 32) {                                                               \
            const int block_rows = rows - r < 32 ? rows - r : 32;                                          \
            const int rows0 = block_rows < 16 ? block_rows : 16, rows1 = block_rows - rows0;               \
            if (block_rows != configured) { TILE_CONFIGURE(rows0, rows1); configured = block_rows; }       \
            const uint8_t *a_block = a_bytes + (size_t)r * a_stride;                                       \
            if (tail) {                                                                                    \
                memset(a_tail, 0, sizeof a_tail);                                                          \
                for (int i = 0; i < block_rows; i++)                                                       \
                    memcpy(a_tail + i * 64, a_block + i * a_stride + full * 64, (size_t)tail * 4);         \
            }                                                                                              \
            for (int j = 0; j < cols; j += 32) {                                                           \
                const int two = cols - j >= 32;                                                            \
                uint8_t *c0 = c_bytes + (size_t)r * c_stride + (size_t)j * 4, *c1 = c0 + 16 * c_stride;    \
                const uint8_t *b_columns = b_bytes + (size_t)(j / 64) * b_panel_stride + (size_t)(j % 64) * 4; \
                if (accumulate) {                                                                          \
                    TILE_LOAD(0, c0, c_stride);                                                            \
                    if (two) TILE_LOAD(1, c0 + 64, c_stride);                                              \
                    if (rows1) { TILE_LOAD(2, c1, c_stride); if (two) TILE_LOAD(3, c1 + 64, c_stride); }   \
                } else {                                                                                   \
                    TILE_ZERO(0); TILE_ZERO(1); if (rows1) { TILE_ZERO(2); TILE_ZERO(3); }                 \
                }                                                                                          \
                if (tail) {                                                                                \
                    memset(b_tail, 0, sizeof b_tail);                                                      \
                    for (int i = 0; i < tail; i++)                                                         \
                        memcpy(b_tail + i * 128, b_columns + (size_t)(full * 16 + i) * b_stride, two ? 128 : 64); \
                }                                                                                          \
                for (int step = 0; step < steps; step++) {                                                 \
                    const int whole = step < full;                                                         \
                    const uint8_t *at = whole ? a_block + step * 64 : a_tail;                              \
                    const size_t at_stride = whole ? a_stride : 64;                                        \
                    const uint8_t *bt = whole ? b_columns + (size_t)step * 16 * b_stride : b_tail;         \
                    const size_t bt_stride = whole ? b_stride : 128;                                       \
                    TILE_LOAD(6, bt, bt_stride);                                                           \
                    if (two) TILE_LOAD(7, bt + 64, bt_stride);                                             \
                    TILE_LOAD(4, at, at_stride);                                                           \
                    DP(0, 4, 6);                                                                           \
                    if (two) DP(1, 4, 7);                                                                  \
                    if (rows1) {                                                                           \
                        TILE_LOAD(5, at + 16 * at_stride, at_stride);                                      \
                        DP(2, 5, 6);                                                                       \
                        if (two) DP(3, 5, 7);                                                              \
                    }                                                                                      \
                }                                                                                          \
                TILE_STORE(0, c0, c_stride);                                                               \
                if (two) TILE_STORE(1, c0 + 64, c_stride);                                                 \
                if (rows1) { TILE_STORE(2, c1, c_stride); if (two) TILE_STORE(3, c1 + 64, c_stride); }     \
            }                                                                                              \
        }                                                                                                  \
        TILE_RELEASE();                                                                                    \
    }
#endif
