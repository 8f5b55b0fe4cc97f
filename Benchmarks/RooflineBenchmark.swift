import Foundation
import SwiftBERT
import SwiftBERTKernels
import SwiftBERTVNNI
import SwiftBERTAMX

/// `SwiftBERTBenchmarks roofline [--model all-MiniLM-L6-v2] [--seq 128] [--seconds 10] [--precision fp32,bf16,int8,int8-attention,int8-static]`
///
/// 1. This core's peaks, from register-only loops on one thread: FP32 FMA (vfmadd, 16 multiply-
///    adds per instruction), INT8 VNNI (vpdpbusd, 64) and BF16 (vdpbf16ps, 32), each with 16
///    independent accumulators so latency is hidden. The best of 5 rounds (thread CPU time).
///    Where AMX runs (TileBackend), also the tiles' peaks: tdpbusd and tdpbf16ps on resident
///    tiles, four accumulators (swiftbert_amx_peak_loop); the BF16 and INT8 Linear stages then
///    count against them.
/// 2. One sequence of `--seq` tokens through the model at one thread, the precisions taking
///    turns each round, with a `StageProfile`: per stage the median time, the FLOPs it does (a
///    multiply-add is 2; INT8 counts integer operations the same way) and the rate achieved
///    against the peak of the instruction that stage runs on. `bf16` runs vdpbf16ps where
///    `BF16Product.preferred` picks it (AMD), otherwise BF16 widened to FP32 and FMA, so its
///    stages count against whichever of the two peaks this CPU's kernels use
///    (`KernelReport.current.bf16Linear`). Attention's products run in FP32 (FMA) in `fp32`,
///    `int8` and `int8-weights`, in BF16 in `bf16`, and on vpdpbusd in `int8-attention` and
///    `int8-static` (`Int8Attention`: QKᵀ on vpdpbusd, P·V on vpdpwssd, which does half of
///    vpdpbusd's multiply-adds an instruction, so its ceiling is two thirds of that peak);
///    LayerNorm, embeddings, softmax and GELU are not counted as FLOPs.
func runRooflineBenchmark(arguments: [String]) throws {
    func option(_ name: String) -> String? {
        arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
    }
    let modelName = option("--model") ?? "all-MiniLM-L6-v2"
    let tokens = option("--seq").flatMap(Int.init) ?? 128
    let seconds = option("--seconds").flatMap(Double.init) ?? 10
    let requested = (option("--precision") ?? "fp32,bf16,int8,int8-attention,int8-static").split(separator: ",").compactMap { Precision(rawValue: String($0)) }

    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "?"
    print("Roofline, one thread; load average \(load) at start")
    let peaks = measurePeaks()
    print("\n| instruction | operations per instruction | peak (best of 5) | instructions per ns |")
    print("|---|--:|--:|--:|")
    for peak in peaks {
        print("| \(peak.name) | \(Int(peak.perInstruction)) | \(String(format: "%.1f", peak.gigaOps)) G\(peak.unit)/s | "
              + "\(String(format: "%.2f", peak.gigaOps / peak.perInstruction)) |")
    }

    let folder = URL(fileURLWithPath: modelName.contains("/") ? modelName : "weights/\(modelName)")
    let models = try requested.compactMap { precision -> (any EncoderModel)? in
        do { return try loadEncoder(folder: folder, threads: 1, precision: precision) } catch SwiftBERTError.fileNotFound {
            print("(\(precision.rawValue) skipped: no \(precision.fileName); run `bert quantize`)")
            return nil
        }
    }
    guard let config = models.first?.config else { return }
    guard let layer = ModelFamilies.family(of: config.encoder).layerMultiplyAdds(config.encoder) else {
        print("\n\(modelName): its family does not say what its layers cost, so no rates")
        return
    }
    let ids = [[Int32(101)] + (0..<(tokens - 2)).map { Int32(1000 + ($0 * 7919) % 20000) } + [Int32(102)]]
    var stageTimes = [[StageProfile.Stage: [Double]]](repeating: [:], count: models.count)
    var totals = [[Double]](repeating: [], count: models.count)
    for model in models { _ = try model.encode(ids) }  // warm-up
    let start = DispatchTime.now().uptimeNanoseconds
    repeat {
        for (i, model) in models.enumerated() {
            let profile = StageProfile()
            let t0 = DispatchTime.now().uptimeNanoseconds
            _ = try model.encode(ids, typeIds: nil, profile: profile)
            totals[i].append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            for (stage, s) in profile.seconds { stageTimes[i][stage, default: []].append(s * 1000) }
        }
    } while Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < seconds || totals[0].count < 5

    // Per stage, 2 operations per multiply-add; attention as if every query saw every key.
    let (t, layers) = (Double(tokens), Double(config.encoder.numHiddenLayers))
    let flops: [StageProfile.Stage: Double] = [
        .qkv: 2 * t * Double(layer.qkv) * layers,
        .attention: 4 * t * t * Double(layer.attentionWidth) * layers,  // QKᵀ and P·V over all heads
        .attentionOutput: 2 * t * Double(layer.attentionOutput) * layers,
        .feedForwardIn: 2 * t * Double(layer.feedForwardIn) * layers,
        .feedForwardOut: 2 * t * Double(layer.feedForwardOut) * layers,
    ]
    let bf16OnDotInstruction = BF16Product.preferred.rawValue.contains("vdpbf16ps")
    let (bf16OnTiles, int8OnTiles) = (TileBackend.preferred == .hardware, TileBackend.preferred == .hardware)
    print("\nBF16 kernels: \(KernelReport.current.bf16Linear)")
    func peak(for stage: StageProfile.Stage, _ precision: Precision) -> Peak? {
        guard flops[stage] != nil else { return nil }
        switch (stage, precision) {
        case (.attention, .bf16): return peaks.first { $0.kind == (bf16OnDotInstruction ? .bf16 : .fp32) }
        case (_, .bf16) where bf16OnTiles: return peaks.first { $0.kind == .tileBF16 }
        case (_, .bf16): return peaks.first { $0.kind == (bf16OnDotInstruction ? .bf16 : .fp32) }  // Linear layers
        case (.attention, .int8Attention), (.attention, .int8Static): return peaks.first { $0.kind == .int8 }
        case (.attention, _): return peaks.first { $0.kind == .fp32 }
        case (_, .int8), (_, .int8Attention), (_, .int8Static): return peaks.first { $0.kind == (int8OnTiles ? .tileInt8 : .int8) }
        default: return peaks.first { $0.kind == .fp32 }  // FP32 Linear, INT8 weight-only
        }
    }
    let rounds = totals[0].count
    print("\n\(modelName), 1 × \(tokens) tokens, 1 thread, \(rounds) rounds (precisions in turn); per stage the median "
          + "and the best (least) time of a pass, the rate from the best; load average "
          + "\((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "?") at end")
    print("\n| stage | GFLOP | " + models.map { p in
        ["median", "best", "G(FL)OP/s", "of peak"].map { "\(p.precision.rawValue) \($0)" }.joined(separator: " | ")
    }.joined(separator: " | ") + " |")
    print("|---|--:|" + String(repeating: "--:|--:|--:|--:|", count: models.count))
    func row(_ name: String, work: Double?, times: [[Double]], peak: (Precision) -> Peak?) {
        var cells = [name, work.map { String(format: "%.3f", $0 / 1e9) } ?? ""]
        for (i, model) in models.enumerated() {
            let best = times[i].min() ?? 0
            cells += [String(format: "%.2f ms", median(times[i])), String(format: "%.2f ms", best)]
            if let work, best > 0 {
                let rate = work / (best / 1000) / 1e9
                cells.append(String(format: "%.1f", rate))
                cells.append(peak(model.precision).map { String(format: "%.0f %% %@", rate / $0.gigaOps * 100, $0.short) } ?? "")
            } else {
                cells += ["", ""]
            }
        }
        print("| " + cells.joined(separator: " | ") + " |")
    }
    for stage in StageProfile.Stage.allCases {
        row(stage.rawValue, work: flops[stage], times: stageTimes.map { $0[stage] ?? [0] }) { peak(for: stage, $0) }
    }
    row("whole pass", work: flops.values.reduce(0, +), times: totals) { _ in nil }
}

private struct Peak {
    enum Kind { case fp32, int8, bf16, tileInt8, tileBF16 }
    let kind: Kind
    let name: String
    let short: String
    let unit: String
    let gigaOps: Double
    /// Operations (a multiply-add is 2) per instruction.
    var perInstruction: Double {
        switch kind { case .fp32: 32; case .int8: 128; case .bf16: 64; case .tileInt8: 2 * 16 * 16 * 64; case .tileBF16: 2 * 16 * 16 * 32 }
    }
}

// The loops: 16 independent accumulators (latency × throughput needs about 12), operands in
// registers, distinct start values (identical chains would be merged into one), written out
// by hand: through a generic helper with closures, or with SIMD16 arguments (passed in xmm
// pieces), LLVM split the FMA loop into 256-bit halves; operands loaded from memory it does not.

@inline(never)
private func fmaLoop(_ iterations: Int, _ operands: UnsafePointer<SIMD16<Float>>) -> Float {
    let (x, w) = (operands[0], operands[1])
    var (a0, a1, a2, a3, a4, a5, a6, a7) = (w, w + 1, w + 2, w + 3, w + 4, w + 5, w + 6, w + 7)
    var (b0, b1, b2, b3, b4, b5, b6, b7) = (w + 8, w + 9, w + 10, w + 11, w + 12, w + 13, w + 14, w + 15)
    for _ in 0..<iterations {
        a0.addProduct(x, w); a1.addProduct(x, w); a2.addProduct(x, w); a3.addProduct(x, w)
        a4.addProduct(x, w); a5.addProduct(x, w); a6.addProduct(x, w); a7.addProduct(x, w)
        b0.addProduct(x, w); b1.addProduct(x, w); b2.addProduct(x, w); b3.addProduct(x, w)
        b4.addProduct(x, w); b5.addProduct(x, w); b6.addProduct(x, w); b7.addProduct(x, w)
    }
    return (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + b0 + b1 + b2 + b3 + b4 + b5 + b6 + b7).sum()
}

#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
@inline(never)
private func vnniLoop(_ iterations: Int, _ u: SIMD16<Int32>, _ s: SIMD16<Int32>) -> Float {
    var (a0, a1, a2, a3, a4, a5, a6, a7) = (s, s &+ 1, s &+ 2, s &+ 3, s &+ 4, s &+ 5, s &+ 6, s &+ 7)
    var (b0, b1, b2, b3, b4, b5, b6, b7) = (s &+ 8, s &+ 9, s &+ 10, s &+ 11, s &+ 12, s &+ 13, s &+ 14, s &+ 15)
    for _ in 0..<iterations {
        a0 = dotBytes(a0, unsigned: u, signed: s); a1 = dotBytes(a1, unsigned: u, signed: s)
        a2 = dotBytes(a2, unsigned: u, signed: s); a3 = dotBytes(a3, unsigned: u, signed: s)
        a4 = dotBytes(a4, unsigned: u, signed: s); a5 = dotBytes(a5, unsigned: u, signed: s)
        a6 = dotBytes(a6, unsigned: u, signed: s); a7 = dotBytes(a7, unsigned: u, signed: s)
        b0 = dotBytes(b0, unsigned: u, signed: s); b1 = dotBytes(b1, unsigned: u, signed: s)
        b2 = dotBytes(b2, unsigned: u, signed: s); b3 = dotBytes(b3, unsigned: u, signed: s)
        b4 = dotBytes(b4, unsigned: u, signed: s); b5 = dotBytes(b5, unsigned: u, signed: s)
        b6 = dotBytes(b6, unsigned: u, signed: s); b7 = dotBytes(b7, unsigned: u, signed: s)
    }
    let sum = a0 &+ a1 &+ a2 &+ a3 &+ a4 &+ a5 &+ a6 &+ a7 &+ b0 &+ b1 &+ b2 &+ b3 &+ b4 &+ b5 &+ b6 &+ b7
    return Float(sum.wrappedSum())
}
#endif

#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
@inline(never)
private func bf16Loop(_ iterations: Int, _ start: SIMD16<Float>, _ p: SIMD16<UInt32>, _ q: SIMD16<UInt32>) -> Float {
    let w = start
    var (a0, a1, a2, a3, a4, a5, a6, a7) = (w, w + 1, w + 2, w + 3, w + 4, w + 5, w + 6, w + 7)
    var (b0, b1, b2, b3, b4, b5, b6, b7) = (w + 8, w + 9, w + 10, w + 11, w + 12, w + 13, w + 14, w + 15)
    for _ in 0..<iterations {
        a0 = dotBF16Pairs(a0, p, q); a1 = dotBF16Pairs(a1, p, q); a2 = dotBF16Pairs(a2, p, q); a3 = dotBF16Pairs(a3, p, q)
        a4 = dotBF16Pairs(a4, p, q); a5 = dotBF16Pairs(a5, p, q); a6 = dotBF16Pairs(a6, p, q); a7 = dotBF16Pairs(a7, p, q)
        b0 = dotBF16Pairs(b0, p, q); b1 = dotBF16Pairs(b1, p, q); b2 = dotBF16Pairs(b2, p, q); b3 = dotBF16Pairs(b3, p, q)
        b4 = dotBF16Pairs(b4, p, q); b5 = dotBF16Pairs(b5, p, q); b6 = dotBF16Pairs(b6, p, q); b7 = dotBF16Pairs(b7, p, q)
    }
    return (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + b0 + b1 + b2 + b3 + b4 + b5 + b6 + b7).sum()
}
#endif

/// Operands the optimiser cannot see through.
@inline(never)
private func opaque<T>(_ value: T) -> T { value }

private func measurePeaks() -> [Peak] {
    let iterations = 4_000_000
    let instructions = 16.0 * Double(iterations)
    /// Best rate of 5 timed runs of `body`, in operations per ns (G/s).
    func best(_ operationsPerInstruction: Double, _ body: () -> Float) -> Double {
        var sink: Float = 0, bestRate = 0.0
        for _ in 0..<5 {
            let t0 = BenchmarkClock.cpu.milliseconds()
            sink += body()
            let ms = BenchmarkClock.cpu.milliseconds() - t0
            bestRate = max(bestRate, instructions * operationsPerInstruction / (ms * 1e6))
        }
        if sink == 42 { print("") }  // keeps the loops' results alive
        return bestRate
    }
    var peaks: [Peak] = []
    let operands = [SIMD16<Float>((0..<16).map { Float($0) * 1e-8 }), SIMD16<Float>((0..<16).map { 0.5 + Float($0) / 64 })]
    let fma = best(2 * 16) { fmaLoop(iterations, operands) }
    peaks.append(Peak(kind: .fp32, name: "FP32 FMA (vfmadd231ps zmm)", short: "FMA", unit: "FLOP", gigaOps: fma))
    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
    let vnni = best(2 * 64) {
        vnniLoop(iterations, opaque(SIMD16<Int32>(repeating: 0x0101_0101)), opaque(SIMD16<Int32>(repeating: 0x01FF_01FF)))
    }
    peaks.append(Peak(kind: .int8, name: "INT8 VNNI (vpdpbusd zmm)", short: "VNNI", unit: "OP", gigaOps: vnni))
    #endif
    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
    let bf16 = best(2 * 32) {
        bf16Loop(iterations, opaque(SIMD16<Float>()), opaque(SIMD16<UInt32>(repeating: 0x3380_3380)),
                 opaque(SIMD16<UInt32>(repeating: 0x3F00_3F00)))
    }
    peaks.append(Peak(kind: .bf16, name: "BF16 (vdpbf16ps zmm)", short: "BF16", unit: "FLOP", gigaOps: bf16))
    #endif
    if TileBackend.hardwareAvailable {
        // Tiles resident, four accumulators: the ceiling of a tile kernel (issue 47).
        func tiles(_ int8: Bool) -> Double {
            let iterations = 1_000_000, perInstruction = 2.0 * 16 * 16 * (int8 ? 64 : 32)
            var bestRate = 0.0
            for _ in 0..<5 {
                let t0 = BenchmarkClock.cpu.milliseconds()
                swiftbert_amx_peak_loop(int8 ? 1 : 0, iterations)
                bestRate = max(bestRate, 4 * Double(iterations) * perInstruction / ((BenchmarkClock.cpu.milliseconds() - t0) * 1e6))
            }
            return bestRate
        }
        peaks.append(Peak(kind: .tileInt8, name: "INT8 tiles (tdpbusd)", short: "AMX", unit: "OP", gigaOps: tiles(true)))
        peaks.append(Peak(kind: .tileBF16, name: "BF16 tiles (tdpbf16ps)", short: "AMX", unit: "FLOP", gigaOps: tiles(false)))
    }
    return peaks
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}
