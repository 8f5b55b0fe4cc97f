// The tile kernels (swiftbert_amx.h): tile_gemm.h's blocking on the AMX instructions. Compiled
// for every x86-64 build: the target attribute enables the AMX instructions in these functions
// only, and Swift calls them only after swiftbert_amx_enable() said yes.
#include "swiftbert_amx.h"
#include "tile_gemm.h"
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

typedef struct {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed, aligned(64))) tile_config;

#define AMX_TARGET __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f")))

// The configuration tile_gemm.h's blocks use (tile_rows); an unused tile is configured empty.
AMX_TARGET static void configure(int rows0, int rows1) {
    tile_config config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    int rows[8];
    tile_rows(rows0, rows1, rows);
    for (int t = 0; t < 8; t++) {
        config.rows[t] = (uint8_t)rows[t];
        config.colsb[t] = rows[t] ? 64 : 0;
    }
    _tile_loadconfig(&config);
}

#define TILE_STATE
#define TILE_CONFIGURE(rows0, rows1) configure(rows0, rows1)
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_LOAD(t, p, stride) _tile_loadd(t, p, stride)
#define TILE_STORE(t, p, stride) _tile_stored(t, p, stride)
#define TILE_RELEASE() _tile_release()

TILE_GEMM(swiftbert_amx_bf16_gemm, AMX_TARGET, uint32_t, uint32_t, float, _tile_dpbf16ps)
TILE_GEMM(swiftbert_amx_int8_gemm, AMX_TARGET, uint8_t, int8_t, int32_t, _tile_dpbusd)

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
