import Foundation
import SwiftBERT
import SwiftBERTVNNI

/// `SwiftBERTBenchmarks roofline [--model all-MiniLM-L6-v2] [--seq 128] [--seconds 10] [--precision fp32,bf16,int8]`
///
/// 1. This core's peaks, from register-only loops on one thread: FP32 FMA (vfmadd, 16 multiply-
///    adds per instruction), INT8 VNNI (vpdpbusd, 64) and BF16 (vdpbf16ps, 32), each with 16
///    independent accumulators so latency is hidden. The best of 5 rounds (thread CPU time).
/// 2. One sequence of `--seq` tokens through the model at one thread, the precisions taking
///    turns each round, with a `StageProfile`: per stage the median time, the FLOPs it does (a
///    multiply-add is 2; INT8 counts integer operations the same way) and the rate achieved
///    against the peak of the instruction that stage runs on. Attention runs on OpenBLAS sgemm
///    (FP32) in every precision; LayerNorm, embeddings and GELU are not counted as FLOPs.
func runRooflineBenchmark(arguments: [String]) throws {
    func option(_ name: String) -> String? {
        arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
    }
    let modelName = option("--model") ?? "all-MiniLM-L6-v2"
    let tokens = option("--seq").flatMap(Int.init) ?? 128
    let seconds = option("--seconds").flatMap(Double.init) ?? 10
    let requested = (option("--precision") ?? "fp32,bf16,int8").split(separator: ",").compactMap { Precision(rawValue: String($0)) }

    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "?"
    print("Roofline, one thread; load average \(load) at start")
    let peaks = measurePeaks()
    let clock = nominalMegahertz()
    print("\n| instruction | peak (best of 5) | per cycle at the nominal \(clock.map { String(format: "%.0f MHz", $0) } ?? "? MHz") |")
    print("|---|--:|--:|")
    for peak in peaks {
        let perCycle = clock.map { String(format: "%.1f", peak.gigaOps * 1000 / $0) } ?? "?"
        print("| \(peak.name) | \(String(format: "%.1f", peak.gigaOps)) G\(peak.unit)/s | \(perCycle) \(peak.unit)/cycle |")
    }

    let folder = URL(fileURLWithPath: modelName.contains("/") ? modelName : "weights/\(modelName)")
    let models = try requested.compactMap { precision -> BertModel? in
        do { return try BertModel(folder: folder, threads: 1, precision: precision) } catch BertError.fileNotFound {
            print("(\(precision.rawValue) skipped: no \(precision.fileName); run `bert quantize`)")
            return nil
        }
    }
    guard let config = models.first?.config else { return }
    let ids = [[Int32(101)] + (0..<(tokens - 2)).map { Int32(1000 + ($0 * 7919) % 20000) } + [Int32(102)]]
    var stageTimes = [[StageProfile.Stage: [Double]]](repeating: [:], count: models.count)
    var totals = [[Double]](repeating: [], count: models.count)
    for model in models { _ = try model.encode(ids) }  // warm-up
    let start = DispatchTime.now().uptimeNanoseconds
    repeat {
        for (i, model) in models.enumerated() {
            let profile = StageProfile()
            let t0 = DispatchTime.now().uptimeNanoseconds
            _ = try model.encode(ids, profile: profile)
            totals[i].append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            for (stage, s) in profile.seconds { stageTimes[i][stage, default: []].append(s * 1000) }
        }
    } while Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < seconds || totals[0].count < 5

    let (t, h, ffn, layers) = (Double(tokens), Double(config.hiddenSize), Double(config.intermediateSize), Double(config.numHiddenLayers))
    let flops: [StageProfile.Stage: Double] = [
        .qkv: 2 * t * h * 3 * h * layers,
        .attention: 4 * t * t * h * layers,  // QKᵀ and P·V over all heads
        .attentionOutput: 2 * t * h * h * layers,
        .feedForwardIn: 2 * t * h * ffn * layers,
        .feedForwardOut: 2 * t * ffn * h * layers,
    ]
    func peak(for stage: StageProfile.Stage, _ precision: Precision) -> Peak? {
        let linear = stage != .attention && flops[stage] != nil
        switch (linear, precision) {
        case (true, .bf16): return peaks.first { $0.kind == .bf16 }
        case (true, .int8): return peaks.first { $0.kind == .int8 }
        case (false, _) where flops[stage] == nil: return nil
        default: return peaks.first { $0.kind == .fp32 }  // FP32 Linear, INT8 weight-only, attention
        }
    }
    let rounds = totals[0].count
    print("\n\(modelName), 1 × \(tokens) tokens, 1 thread, \(rounds) rounds (precisions in turn); medians; load average "
          + "\((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "?") at end")
    print("\n| stage | GFLOP | " + models.map { "\($0.precision.rawValue) ms | G(FL)OP/s | of peak" }.joined(separator: " | ") + " |")
    print("|---|--:|" + String(repeating: "--:|--:|--:|", count: models.count))
    for stage in StageProfile.Stage.allCases {
        var cells = [stage.rawValue, flops[stage].map { String(format: "%.3f", $0 / 1e9) } ?? ""]
        for (i, model) in models.enumerated() {
            let ms = median(stageTimes[i][stage] ?? [0])
            cells.append(String(format: "%.2f", ms))
            if let work = flops[stage], let p = peak(for: stage, model.precision) {
                let rate = work / (ms / 1000) / 1e9
                cells += [String(format: "%.1f", rate), String(format: "%.0f %% %@", rate / p.gigaOps * 100, p.short)]
            } else {
                cells += ["", ""]
            }
        }
        print("| " + cells.joined(separator: " | ") + " |")
    }
    let allFlops = flops.values.reduce(0, +)
    var cells = ["whole pass", String(format: "%.3f", allFlops / 1e9)]
    for i in models.indices {
        let ms = median(totals[i])
        cells += [String(format: "%.2f", ms), String(format: "%.1f", allFlops / (ms / 1000) / 1e9), ""]
    }
    print("| " + cells.joined(separator: " | ") + " |")
}

private struct Peak {
    enum Kind { case fp32, int8, bf16 }
    let kind: Kind
    let name: String
    let short: String
    let unit: String
    let gigaOps: Double
}

/// Runs `step` on 16 independent accumulators for `iterations` rounds; the sum keeps the work.
@inline(__always)
private func sixteenChains<V>(_ iterations: Int, _ start: V, _ step: (V) -> V, _ sum: (V, V) -> V) -> V {
    var (a0, a1, a2, a3, a4, a5, a6, a7) = (start, start, start, start, start, start, start, start)
    var (b0, b1, b2, b3, b4, b5, b6, b7) = (start, start, start, start, start, start, start, start)
    for _ in 0..<iterations {
        a0 = step(a0); a1 = step(a1); a2 = step(a2); a3 = step(a3); a4 = step(a4); a5 = step(a5); a6 = step(a6); a7 = step(a7)
        b0 = step(b0); b1 = step(b1); b2 = step(b2); b3 = step(b3); b4 = step(b4); b5 = step(b5); b6 = step(b6); b7 = step(b7)
    }
    return [a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7].reduce(a0, sum)
}

/// Operands the optimiser cannot see through.
@inline(never)
private func opaque<T>(_ value: T) -> T { value }

private func measurePeaks() -> [Peak] {
    let iterations = 4_000_000
    let chains = 16.0 * Double(iterations)
    /// Best rate of `rounds` timed runs of `body`, in operations per ns.
    func best(_ operationsPerInstruction: Double, _ body: () -> Float) -> Double {
        var sink: Float = 0, bestRate = 0.0
        for _ in 0..<5 {
            let t0 = BenchmarkClock.cpu.milliseconds()
            sink += body()
            let ms = BenchmarkClock.cpu.milliseconds() - t0
            bestRate = max(bestRate, chains * operationsPerInstruction / (ms * 1e6))
        }
        if sink == 42 { print("") }  // keeps the loops' results alive
        return bestRate
    }
    var peaks: [Peak] = []
    let x = opaque(SIMD16<Float>(repeating: 1e-7)), y = opaque(SIMD16<Float>(repeating: 0.5))
    let fma = best(2 * 16) {
        sixteenChains(iterations, opaque(SIMD16<Float>()), { var a = $0; a.addProduct(x, y); return a }, +).sum()
    }
    peaks.append(Peak(kind: .fp32, name: "FP32 FMA (vfmadd231ps zmm)", short: "FMA", unit: "FLOP", gigaOps: fma))
    #if SWIFTBERT_VNNI
    let u = opaque(SIMD16<Int32>(repeating: 0x0101_0101)), s = opaque(SIMD16<Int32>(repeating: 0x01FF_01FF))
    let vnni = best(2 * 64) {
        Float(sixteenChains(iterations, opaque(SIMD16<Int32>()), { dotBytes($0, unsigned: u, signed: s) }, &+).wrappedSum())
    }
    peaks.append(Peak(kind: .int8, name: "INT8 VNNI (vpdpbusd zmm)", short: "VNNI", unit: "OP", gigaOps: vnni))
    #endif
    #if SWIFTBERT_BF16
    let p = opaque(SIMD16<UInt32>(repeating: 0x3380_3380)), q = opaque(SIMD16<UInt32>(repeating: 0x3F00_3F00))
    let bf16 = best(2 * 32) {
        sixteenChains(iterations, opaque(SIMD16<Float>()), { dotBF16Pairs($0, p, q) }, +).sum()
    }
    peaks.append(Peak(kind: .bf16, name: "BF16 (vdpbf16ps zmm)", short: "BF16", unit: "FLOP", gigaOps: bf16))
    #endif
    return peaks
}

/// The clock /proc/cpuinfo reports (on a VM, the nominal one: the core may run faster).
private func nominalMegahertz() -> Double? {
    guard let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
          let line = info.split(separator: "\n").first(where: { $0.hasPrefix("cpu MHz") }) else { return nil }
    return line.split(separator: ":").last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}
