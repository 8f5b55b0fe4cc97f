import COpenBLAS
import Foundation
import SwiftBERT

/// `SwiftBERTBenchmarks gemm [--threads T] [--seconds S] [--m 16,128,4096] [--shapes KxN,...] [--clock cpu|wall]`
///
/// Times, side by side in one run, a Linear layer y = x·Wᵀ + b at BERT shapes three ways:
/// OpenBLAS cblas_sgemm (FP32), and the engine's own Linear path (`LinearLayer`) in FP32 (the
/// packed kernel), INT8 (weights and activations, including the per-call activation
/// quantisation and the bias), INT8 weight-only (FP32 activations) and BF16 (including the
/// per-call rounding of the activations). They run in turn, repeatedly, so machine noise hits them alike;
/// medians are reported, with each result's relative error against FP32.
/// With one thread the default clock is the thread's CPU time: on a shared machine it leaves
/// out the time the process waits for a core, which wall time does not (all three run on the
/// calling thread, OpenBLAS included once set to one thread). `--clock wall` for wall time.
public func runGEMMBenchmark(arguments: [String]) {
    var threads = 1
    var secondsPerShape = 1.0
    var rowCounts = [16, 128, 4096]
    var clock: BenchmarkClock?
    var shapes = [(768, 768), (768, 2304), (768, 3072), (3072, 768), (384, 384), (384, 1536), (1536, 384)]
    var index = 0
    while index < arguments.count {
        let value = index + 1 < arguments.count ? arguments[index + 1] : ""
        switch arguments[index] {
        case "--threads": threads = max(1, Int(value) ?? 1); index += 1
        case "--seconds": secondsPerShape = Double(value) ?? secondsPerShape; index += 1
        case "--m": rowCounts = value.split(separator: ",").compactMap { Int($0) }; index += 1
        case "--clock": clock = BenchmarkClock(rawValue: value); index += 1
        case "--shapes":
            shapes = value.split(separator: ",").compactMap { shape in
                let kn = shape.split(separator: "x").compactMap { Int($0) }
                return kn.count == 2 && kn[0] > 0 && kn[1] > 0 ? (kn[0], kn[1]) : nil
            }
            index += 1
        case "gemm": break
        default: print("unknown argument \(arguments[index]); usage: gemm [--threads T] [--seconds S] [--m 16,128,4096] [--shapes KxN,...] [--clock cpu|wall]"); return
        }
        index += 1
    }
    let environment = ProcessInfo.processInfo.environment
    if threads > 1, environment["OPENBLAS_THREAD_TIMEOUT"] == nil {
        // After each sgemm OpenBLAS's workers spin (sched_yield) for about 2^28 cycles before
        // they sleep, on the cores the engine's helpers need: at 2 threads on a Zen 5 guest the
        // engine's INT8 128x1024x4096 then took 1.6-1.75 ms in some runs, 0.79-1.0 ms with the
        // workers asleep. OpenBLAS reads the timeout (2^4 cycles here) only when it loads, so
        // the benchmark starts again with it.
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        print("could not restart with OPENBLAS_THREAD_TIMEOUT=4 (\(String(cString: strerror(errno)))): the engine's columns share the cores with OpenBLAS's spinning workers")
    }
    let timer = clock ?? (threads == 1 ? .cpu : .wall)
    openblas_set_num_threads(Int32(threads))
    // The load average says how noisy the run was: other processes on a shared machine slow
    // every column, the ratios less so.
    let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "?"
    print("Linear y = x·Wᵀ + b, \(threads) thread(s), medians of \(timer.rawValue) time; OPENBLAS_CORETYPE=\(environment["OPENBLAS_CORETYPE"] ?? "auto"), OPENBLAS_THREAD_TIMEOUT=\(environment["OPENBLAS_THREAD_TIMEOUT"] ?? "default"), load average \(load)")
    print("| M | K | N | sgemm ms | GFLOP/s | packed fp32 ms | GFLOP/s | packed speed-up | int8 ms | GOP/s | int8 speed-up | w8 ms | w8 speed-up | bf16 ms | GFLOP/s | bf16 speed-up | packed rel. err | int8 rel. err | w8 rel. err | bf16 rel. err |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for m in rowCounts {
        for (k, n) in shapes {
            let row = benchmarkShape(m: m, k: k, n: n, threads: threads, seconds: secondsPerShape, clock: timer)
            print(row)
        }
    }
}

private func benchmarkShape(m: Int, k: Int, n: Int, threads: Int, seconds: Double, clock: BenchmarkClock) -> String {
    var random = BenchmarkRandom(seed: UInt64(m * 1_000_003 + k * 1009 + n))
    let x = (0..<(m * k)).map { _ in random.activation() }
    let w = (0..<(n * k)).map { _ in random.normal() * 0.03 }
    let bias = (0..<n).map { _ in random.normal() * 0.1 }
    var yFloat = [Float](repeating: 0, count: m * n)
    var yInt8 = [Float](repeating: 0, count: m * n)
    var yWeightOnly = [Float](repeating: 0, count: m * n)
    var yPacked = [Float](repeating: 0, count: m * n)
    var yBF16 = [Float](repeating: 0, count: m * n)
    func layer(_ precision: Precision) -> LinearLayer {
        try! LinearLayer(weights: w, bias: bias, n: n, k: k, precision: precision)  // shapes are valid by construction
    }
    let (packedFloat, int8, weightOnly, bf16) = (layer(.fp32), layer(.int8), layer(.int8Weights), layer(.bf16))

    let runs: [() -> Void] = [
        {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(m), Int32(n), Int32(k),
                        1, x, Int32(k), w, Int32(k), 0, &yFloat, Int32(n))
        },
        { int8(x, m: m, into: &yInt8, threads: threads) },
        { weightOnly(x, m: m, into: &yWeightOnly, threads: threads) },
        { packedFloat(x, m: m, into: &yPacked, threads: threads) },
        { bf16(x, m: m, into: &yBF16, threads: threads) },
    ]
    var times = [[Double]](repeating: [], count: runs.count)
    for run in runs { run() }  // warm-up: page faults, caches, thread pool
    let start = DispatchTime.now().uptimeNanoseconds
    repeat {
        for (i, run) in runs.enumerated() {
            let t0 = clock.milliseconds()
            run()
            times[i].append(clock.milliseconds() - t0)
        }
    } while times[0].count < 5 || (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < seconds && times[0].count < 200)

    for i in 0..<m { for j in 0..<n { yFloat[i * n + j] += bias[j] } }
    let medians = times.map { $0.sorted()[$0.count / 2] }
    let operations = 2.0 * Double(m) * Double(n) * Double(k)
    func rate(_ ms: Double) -> String { String(format: "%.0f", operations / ms / 1e6) }
    return String(format: "| %d | %d | %d | %.3f | %@ | %.3f | %@ | %.2fx | %.3f | %@ | %.2fx | %.3f | %.2fx | %.3f | %@ | %.2fx | %.1e | %.4f | %.4f | %.4f |",
                  m, k, n, medians[0], rate(medians[0]), medians[3], rate(medians[3]), medians[0] / medians[3],
                  medians[1], rate(medians[1]), medians[0] / medians[1],
                  medians[2], medians[0] / medians[2], medians[4], rate(medians[4]), medians[0] / medians[4],
                  relativeError(yPacked, yFloat), relativeError(yInt8, yFloat), relativeError(yWeightOnly, yFloat),
                  relativeError(yBF16, yFloat))
}

enum BenchmarkClock: String {
    case cpu, wall

    func milliseconds() -> Double {
        switch self {
        case .wall:
            return Double(DispatchTime.now().uptimeNanoseconds) / 1e6
        case .cpu:
            var now = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
            return Double(now.tv_sec) * 1e3 + Double(now.tv_nsec) / 1e6
        }
    }
}

/// ‖a − b‖ / ‖b‖.
private func relativeError(_ a: [Float], _ b: [Float]) -> Float {
    var difference: Double = 0, norm: Double = 0
    for i in a.indices {
        difference += Double(a[i] - b[i]) * Double(a[i] - b[i])
        norm += Double(b[i]) * Double(b[i])
    }
    return Float((difference / max(norm, 1e-30)).squareRoot())
}

/// Deterministic data: normal weights, and activations shaped like a transformer's hidden
/// states (mostly normal, a few channels with large values), which is what makes per-token
/// quantisation lose accuracy.
private struct BenchmarkRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    mutating func uniform() -> Float {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return (Float(state >> 40) + 0.5) / Float(1 << 24)
    }

    mutating func normal() -> Float {
        (-2 * log(uniform())).squareRoot() * cos(2 * .pi * uniform())
    }

    mutating func activation() -> Float {
        uniform() < 0.01 ? normal() * 8 : normal()
    }
}
