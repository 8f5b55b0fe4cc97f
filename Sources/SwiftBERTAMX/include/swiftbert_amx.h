// AMX tile kernels and their emulator, for SwiftBERTKernels/AMX (TileBackend.swift).
//
// Why C: Swift cannot emit tile instructions. Each call computes a whole product, so tile
// state never crosses a Swift call (LLVM does not preserve it): it loads the tile
// configuration, runs its blocks, stores them and releases the tiles before it returns.
//
// One product serves the Linear layers and attention:
//
//     c[r][j] (+)= Σ_p a[r][p] · b[p][j]      r < rows, j < cols (a multiple of 16), p < depth
//
// in 32-bit lanes: `a` holds each row's lanes (BF16 pairs along k, even k low; or u8 quads),
// `b` one row of `cols` lanes per pair or quad of k, its columns in panels of 64 lanes
// `b_panel_stride` bytes apart (the packed weights: 64-channel panels, 256 bytes a row, so a
// call covers several panels; attention: Kᵀ or V packed per head, rows contiguous, so 256).
// Strides are in bytes. Tiles are
// 2 × 2 accumulators of 16 rows × 16 columns, k in steps of 16 lanes; a last partial step
// reads zero-padded copies, so no tile reads past a, b or the lanes given.
#ifndef SWIFTBERT_AMX_H
#define SWIFTBERT_AMX_H
#include <stddef.h>
#include <stdint.h>

/// What this process may run: bit 0 tiles (CPUID AMX-TILE, OSXSAVE, XCR0 bits 17 and 18, and
/// the kernel granted ARCH_REQ_XCOMP_PERM for XTILEDATA, read back), bit 1 AMX-BF16, bit 2
/// AMX-INT8. 0 when any step fails; no tile instruction runs here. Call once per process,
/// before workers start (the permission is the process's).
int swiftbert_amx_enable(void);

/// BF16 pairs into FP32 (TDPBF16PS). `accumulate` adds to what c holds, else overwrites it.
void swiftbert_amx_bf16_gemm(const uint32_t *a, size_t a_stride, int rows, const uint32_t *b, size_t b_stride,
                             size_t b_panel_stride, int cols, int depth, float *c, size_t c_stride, int accumulate);
/// The same in plain C, with TDPBF16PS's arithmetic as the hardware does it (emulator.c).
void swiftbert_emulated_bf16_gemm(const uint32_t *a, size_t a_stride, int rows, const uint32_t *b, size_t b_stride,
                                  size_t b_panel_stride, int cols, int depth, float *c, size_t c_stride, int accumulate);

/// u8 quads of activations × s8 quads of weights into int32, wrapping (TDPBUSD).
void swiftbert_amx_int8_gemm(const uint8_t *a, size_t a_stride, int rows, const int8_t *b, size_t b_stride,
                             size_t b_panel_stride, int cols, int depth, int32_t *c, size_t c_stride, int accumulate);
/// The same in plain C.
void swiftbert_emulated_int8_gemm(const uint8_t *a, size_t a_stride, int rows, const int8_t *b, size_t b_stride,
                                  size_t b_panel_stride, int cols, int depth, int32_t *c, size_t c_stride, int accumulate);

/// For the roofline: `iterations` × 4 tile products (tdpbusd when `int8`, else tdpbf16ps) on
/// resident tiles. Only after swiftbert_amx_enable() said yes.
void swiftbert_amx_peak_loop(int int8, long iterations);
#endif
