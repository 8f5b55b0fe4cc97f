// What the kernels are shaped for, in one place: AVX-512's 16-lane vectors and 32 registers,
// and the caches of the CPUs they were measured on (Zen 4 and 5, Sapphire and Emerald Rapids).
// The tiles themselves (rows × 64 channels in 16-lane accumulators) are in MicroKernel.swift;
// a kernel for another instruction set (AMX tiles, NEON) chooses its shapes here.

// MARK: The Linear layers' GEMM

/// Output channels per panel: four 16-lane vectors.
public let panelWidth = 64

/// Calls of up to this many rows go panel by panel, prefetching (`panelGEMM`): below about 30
/// rows a panel's bytes take longer to come from memory than its arithmetic takes (FP32 and
/// INT8 read 128/M bytes a cycle at two instructions a cycle, against about 5 from memory).
let streamingRows = 48

/// Packed panels up to this size are kept in L1 across row tiles (`panelGEMM`): INT8 panels
/// at k ≤ 512 (24 KiB at MiniLM's 384). L1D is 32 KiB on Zen 4, 48 KiB on Zen 5 and on Intel
/// since Ice Lake.
let l1PanelBytes = 32 * 1024
/// ... for calls of up to this many rows. Beyond, the output goes to memory, and panel by
/// panel its writes went down thousands of rows 256 bytes at a time: MiniLM 32x128's INT8 QKV
/// took 15-40 % longer than with whole rows of tiles written in turn.
let l1PanelRows = 512
/// Larger calls run panels in groups of about this many bytes of weights, which stay in L2
/// while every row block runs over them (`panelGEMM`, and `tileGEMM` on AMX tiles).
let l2PanelGroupBytes = 512 * 1024

// MARK: Attention

/// Queries per block: four 6-row tiles share each load of Kᵀ and V from L2.
let attentionQueryBlock = 24
/// Keys per block: a 24 × 256 score block is 24 KiB, in L1 with the rows of Kᵀ and V it meets.
/// (INT8 MiniLM at 512 tokens, CPU time of a pass: 24 × 256 33.9 ms, 24 × 128 35.5, 12 × 256 35.0,
/// 6 × 512 33.7: within noise of the best, with the smaller score block.)
let attentionKeyBlock = 256

// MARK: Threads

/// Multiply-adds below which a region is not worth a second thread: about 2 µs of FP32 work,
/// against the 1–1.5 µs a region's hand-over and uneven finish cost (measured at MiniLM 1x128,
/// two threads: 0.3 µs until the helper starts, about 1 µs between the two threads' ends).
let parallelWorkPerThread = 1 << 18

/// Multiply-adds of the FP32 kernel counted for one element of a row-wise pass (LayerNorm, INT8
/// quantisation, BF16 rounding), to size their regions by the same threshold as the Linear
/// layers'. LayerNorm measured about 20 (MiniLM 1x128: 0.17 ns an element, 0.008 ns an FP32
/// multiply-add): a 128 × 384 LayerNorm (about 9 µs) runs on two threads, a 16 × 384 one alone.
let rowPassWorkPerElement = 20
