// AMX tile kernels and their emulator, for SwiftBERTKernels/AMX (TileGEMM.swift).
//
// Why C: Swift cannot emit tile instructions. Each function computes a whole block, so tile
// state never crosses a Swift call (LLVM does not preserve it): it loads the tile
// configuration, loops over K, stores the block and releases the tiles before it returns.
//
// The block: up to 32 rows × one 64-channel panel of the packed weights, written to `c`,
// 32 rows of 64 values (row stride 64). Weights are read in the packed layouts the vector
// kernels read (PackedBF16Matrix, PackedInt8Matrix): per K-pair or K-quad of a panel, 256
// bytes, 4 bytes for each of 64 channels. A tile of weights is 16 of those rows, 16 channels
// wide: one packed copy serves both the vector kernels and the tiles.
#ifndef SWIFTBERT_AMX_H
#define SWIFTBERT_AMX_H
#include <stddef.h>
#include <stdint.h>

/// What this process may run: bit 0 tiles (CPUID AMX-TILE, OSXSAVE, XCR0 bits 17 and 18, and
/// the kernel granted ARCH_REQ_XCOMP_PERM for XTILEDATA, read back), bit 1 AMX-BF16, bit 2
/// AMX-INT8. 0 when any step fails; no tile instruction runs here. Call once per process,
/// before workers start (the permission is the process's).
int swiftbert_amx_enable(void);

/// c[r][j] = Σ_k a[r][k] · b[k][j] over `k_pairs` pairs of bf16, r < rows (1…32), j < 64, as
/// TDPBF16PS adds. a: rows of bf16 pairs (even k low), `a_stride` bytes apart. b: a panel,
/// 64 lanes per pair.
void swiftbert_amx_bf16_block(const uint32_t *a, size_t a_stride, int rows,
                              const uint32_t *b, int k_pairs, float *c);
/// The same in plain C, with TDPBF16PS's arithmetic as Intel's SDM gives it.
void swiftbert_emulated_bf16_block(const uint32_t *a, size_t a_stride, int rows,
                                   const uint32_t *b, int k_pairs, float *c);

/// c[r][j] = Σ_k a[r][k] · b[k][j] over `k_quads` quads, u8 activations × s8 weights into
/// int32 (TDPBUSD, wrapping). a: rows of bytes, `a_stride` bytes apart. b: a panel, 256
/// bytes per quad.
void swiftbert_amx_int8_block(const uint8_t *a, size_t a_stride, int rows,
                              const int8_t *b, int k_quads, int32_t *c);
/// For the roofline: `iterations` × 4 tile products (tdpbusd when `int8`, else tdpbf16ps) on
/// resident tiles. Only after swiftbert_amx_enable() said yes.
void swiftbert_amx_peak_loop(int int8, long iterations);

/// The same in plain C.
void swiftbert_emulated_int8_block(const uint8_t *a, size_t a_stride, int rows,
                                   const int8_t *b, int k_quads, int32_t *c);
#endif
