import COpenBLAS
import Foundation
import SwiftBERT

/// `SwiftBERTBenchmarks peer --model FOLDER --input FILE.json [--precision fp32|int8|int8-weights]
///                           [--threads 1,2] [--repeats N] [--serve]`
///
/// SwiftBERT's side of `tools/compare_engines.py`: the engine call alone, on token ids another
/// program chose, so that SwiftBERT and other engines are timed on identical inputs.
///
/// FILE.json is `{"workloads": {"NAME": [[[id, ...], ...], ...]}}`: a workload is a list of
/// batches, a batch a list of token-id sequences ([CLS] … [SEP], unpadded). One *call* of a
/// workload encodes its batches in order; its time is the wall time of the `BertModel.encode`
/// calls and nothing else (ids are converted before the clock starts).
///
/// Without `--serve`: every workload at every thread count, one warm-up call then `--repeats`
/// timed calls (default 10), then one JSON object on stdout.
///
/// With `--serve`: a worker kept alive across repetitions, so a harness can interleave engines
/// (A B C A B C …). It reads one JSON request per line on stdin and answers one JSON line each:
///
///     {"op":"info"}                                            the engine, OpenBLAS core, load time
///     {"op":"run","workload":W,"threads":T,"calls":K,"warmup":N}   → {"ms":[K wall times],"cpu_ms":[K process CPU times]}
///     {"op":"keystroke", …as run…}   the same, each call also running the masked-LM head at every
///                                    sequence's [MASK] (the token before [SEP]), as one keystroke of
///                                    `WordSuggester` does; MobileBERT or BERT
///     {"op":"profile","workload":W,"threads":T,"calls":K,"warmup":N}   → {"stage_ms":{stage: ms per call}}
///     {"op":"pool","workload":W,"threads":T}                   → {"pooled":[[mean of the last hidden state]]}
///     {"op":"logits","workload":W,"threads":T}                 → {"logits":[[vocabulary logits at each [MASK]]]}
///                                                                of the first batch, as `keystroke` computes them
///     {"op":"sgemm","workload":W,"threads":T,"calls":K,"warmup":N,"split":"openblas"|"engine"}
///                                                              → {"ms":[…],"cpu_ms":[…],"linear_flops":F,"attention_flops":A}
///     {"op":"quit"}
///
/// `sgemm` times only the encoder's Linear layers (fused QKV, attention output, FFN in, FFN out;
/// every layer its own weights, M = the workload's token count): `split: "engine"` runs them
/// through the engine's own Linear path (`LinearLayer`, FP32: the packed kernel in native
/// builds, column blocks on T threads), `split: "openblas"` as OpenBLAS sgemm calls threaded by
/// OpenBLAS (`openblas_set_num_threads(T)`). FLOPs / time is the GEMM rate at the model's
/// shapes, in this process's configuration (OPENBLAS_CORETYPE included).
public func runPeerBenchmark(arguments: [String]) throws {
    var modelPath: String?
    var inputPath: String?
    var precision = Precision.fp32
    var threadCounts = [1]
    var repeats = 10
    var serve = false
    var index = 0
    let usage = "usage: peer --model FOLDER --input FILE.json [--precision fp32|int8|int8-weights] [--threads 1,2] [--repeats N] [--serve]"
    while index < arguments.count {
        let value = index + 1 < arguments.count ? arguments[index + 1] : ""
        switch arguments[index] {
        case "--model": modelPath = value; index += 1
        case "--input": inputPath = value; index += 1
        case "--precision":
            guard let p = Precision(rawValue: value) else { throw PeerError.usage("unknown precision \(value); \(usage)") }
            precision = p; index += 1
        case "--threads":
            threadCounts = value.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            guard !threadCounts.isEmpty else { throw PeerError.usage("bad --threads \(value); \(usage)") }
            index += 1
        case "--repeats": repeats = max(1, Int(value) ?? repeats); index += 1
        case "--serve": serve = true
        case "peer": break
        default: throw PeerError.usage("unknown argument \(arguments[index]); \(usage)")
        }
        index += 1
    }
    guard let modelPath, let inputPath else { throw PeerError.usage(usage) }

    let workloads = try loadWorkloads(path: inputPath)
    let folder = try ModelLocator.resolve(modelPath)
    var models: [Int: any EncoderModel] = [:]
    for t in threadCounts { models[t] = try loadEncoder(folder: folder, threads: t, precision: precision) }
    let config = models[threadCounts[0]]!.config
    var sgemmBuffers: SgemmModelBuffers?

    func model(_ threads: Int) throws -> any EncoderModel {
        if let m = models[threads] { return m }
        let m = try loadEncoder(folder: folder, threads: threads, precision: precision)
        models[threads] = m
        return m
    }
    func workload(_ name: String) throws -> [[[Int32]]] {
        guard let w = workloads[name] else { throw PeerError.usage("no workload named \(name) in \(inputPath)") }
        return w
    }
    /// Wall time and process CPU time (all threads) of each call, in ms. `keystroke`: the
    /// masked-LM head at each sequence's [MASK] too.
    func timeEncode(_ batches: [[[Int32]]], _ model: any EncoderModel, calls: Int, warmup: Int,
                    keystroke: Bool = false) throws -> (wall: [Double], cpu: [Double]) {
        func encode(_ batch: [[Int32]]) throws -> EncoderOutput {
            let output = try model.encode(batch)
            if keystroke { _ = try model.maskedLMLogits(output, at: batch.indices.map { ($0, batch[$0].count - 2) }) }
            return output
        }
        for _ in 0..<warmup { for batch in batches { _ = try encode(batch) } }
        var wall: [Double] = [], cpu: [Double] = []
        for _ in 0..<calls {
            var total = 0.0, totalCPU = 0.0
            for batch in batches {
                let cpuStart = processCPUMilliseconds()
                let start = DispatchTime.now().uptimeNanoseconds
                let output = try encode(batch)
                total += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
                totalCPU += processCPUMilliseconds() - cpuStart
                withExtendedLifetime(output) {}
            }
            wall.append(total)
            cpu.append(totalCPU)
        }
        return (wall, cpu)
    }
    func info() -> [String: Any] {
        let env = ProcessInfo.processInfo.environment
        return [
            "engine": "SwiftBERT", "precision": precision.rawValue, "model": folder.path,
            "openblas_core": openblas_get_corename().map { String(cString: $0) } ?? "?",
            "openblas_config": openblas_get_config().map { String(cString: $0) } ?? "?",
            "OPENBLAS_CORETYPE": env["OPENBLAS_CORETYPE"] ?? "(unset)",
            "OPENBLAS_L2_SIZE": env["OPENBLAS_L2_SIZE"] ?? "(unset)",
            "load_seconds": models.values.map { ($0 as? BertModel)?.loadSeconds ?? ($0 as? MobileBertModel)?.loadSeconds ?? .nan }.max() ?? 0,
            "hidden_size": config.encoder.hiddenSize, "layers": config.encoder.numHiddenLayers,
            "intermediate_size": config.encoder.intermediateSize, "heads": config.encoder.numAttentionHeads,
        ]
    }

    guard serve else {
        var results: [[String: Any]] = []
        for name in workloads.keys.sorted() {
            for t in threadCounts {
                let (ms, cpu) = try timeEncode(workloads[name]!, try model(t), calls: repeats, warmup: 1)
                results.append(["workload": name, "threads": t, "ms": ms, "cpu_ms": cpu, "median_ms": median(ms)])
            }
        }
        writeJSON(["info": info(), "results": results])
        return
    }

    while let line = readLine() {
        guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
        do {
            guard let request = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let op = request["op"] as? String else { throw PeerError.usage("expected a JSON object with \"op\"") }
            let threads = request["threads"] as? Int ?? threadCounts[0]
            let calls = max(1, request["calls"] as? Int ?? 1)
            let warmup = max(0, request["warmup"] as? Int ?? 0)
            switch op {
            case "info":
                writeJSON(info())
            case "run", "keystroke":
                let (ms, cpu) = try timeEncode(try workload(request["workload"] as? String ?? ""), try model(threads),
                                               calls: calls, warmup: warmup, keystroke: op == "keystroke")
                writeJSON(["ms": ms, "cpu_ms": cpu])
            case "pool":
                // Mean-pooled last hidden states of the workload's first batch, unnormalised: lets the
                // harness check that every engine computed the same thing on the same ids.
                let encoder = try model(threads)
                let output = try encoder.encode(try workload(request["workload"] as? String ?? "")[0])
                var mean = try SentenceHead(encoder)
                (mean.pooling, mean.normalize) = (.mean, false)
                writeJSON(["pooled": mean(output, HeadBatch(threads: encoder.threads))])
            case "logits":
                let batch = try workload(request["workload"] as? String ?? "")[0]
                let m = try model(threads)
                writeJSON(["logits": try m.maskedLMLogits(m.encode(batch), at: batch.indices.map { ($0, batch[$0].count - 2) })])
            case "profile":
                // Where the time goes: per-stage wall time of `calls` calls (after `warmup`), summed.
                let batches = try workload(request["workload"] as? String ?? "")
                let m = try model(threads)
                for _ in 0..<warmup { for batch in batches { _ = try m.encode(batch) } }
                let profile = StageProfile()
                for _ in 0..<calls { for batch in batches { _ = try m.encode(batch, typeIds: nil, profile: profile) } }
                var stages: [String: Double] = [:]
                for (stage, seconds) in profile.seconds { stages[stage.rawValue] = seconds * 1000 / Double(calls) }
                writeJSON(["stage_ms": stages])
            case "sgemm":
                let batches = try workload(request["workload"] as? String ?? "")
                let buffers = sgemmBuffers ?? SgemmModelBuffers(config: config.encoder)
                sgemmBuffers = buffers
                let split = request["split"] as? String ?? "engine"
                let (ms, cpu) = buffers.time(batches: batches, threads: threads, openBLASThreads: split == "openblas",
                                             calls: calls, warmup: warmup)
                writeJSON(["ms": ms, "cpu_ms": cpu, "linear_flops": buffers.linearFLOPs(batches),
                           "attention_flops": buffers.attentionFLOPs(batches)])
            case "quit":
                return
            default:
                throw PeerError.usage("unknown op \(op)")
            }
        } catch {
            writeJSON(["error": "\(error)"])
        }
    }
}

private enum PeerError: Error, CustomStringConvertible {
    case usage(String)
    var description: String { if case .usage(let s) = self { return s } else { return "" } }
}

private func loadWorkloads(path: String) throws -> [String: [[[Int32]]]] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
          let workloads = root["workloads"] as? [String: Any] else {
        throw PeerError.usage("\(path): expected {\"workloads\": {NAME: [[[ids]]]}}")
    }
    var out: [String: [[[Int32]]]] = [:]
    for (name, value) in workloads {
        guard let batches = value as? [[[Int]]], !batches.isEmpty else {
            throw PeerError.usage("\(path): workload \(name) is not a list of batches of id lists")
        }
        out[name] = batches.map { $0.map { $0.map { Int32($0) } } }
    }
    return out
}

/// CPU time of the whole process (every thread), in ms: with one thread, the call's time minus the
/// time it waited for a core on a shared machine.
private func processCPUMilliseconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) * 1e3 + Double(now.tv_nsec) / 1e6
}

private func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

private func writeJSON(_ object: Any) {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    FileHandle.standardOutput.write(data)
    FileHandle.standardOutput.write(Data("\n".utf8))
}

/// The encoder's Linear layers as plain sgemm calls, with one weight set per layer (so the
/// weights stream from memory as they do in the engine), activations sized on first use.
private final class SgemmModelBuffers {
    /// (K, N) of each Linear layer of one encoder layer, in the engine's order.
    let shapes: [(k: Int, n: Int)]
    let layers: Int
    let hidden: Int
    /// Per layer and shape: the raw weights (for sgemm) and the same as the engine's Linear layer.
    let weights: [[(raw: UnsafeMutablePointer<Float>, layer: LinearLayer)]]
    var x: UnsafeMutablePointer<Float>?
    var y: UnsafeMutablePointer<Float>?
    var rows = 0

    init(config: EncoderConfig) {
        let h = config.hiddenSize, f = config.intermediateSize
        let shapes = [(k: h, n: 3 * h), (k: h, n: h), (k: h, n: f), (k: f, n: h)]
        self.shapes = shapes
        layers = config.numHiddenLayers
        hidden = h
        var state: UInt32 = 12345
        weights = (0..<config.numHiddenLayers).map { _ in
            shapes.map { shape in
                let w = UnsafeMutablePointer<Float>.allocate(capacity: shape.k * shape.n)
                for i in 0..<(shape.k * shape.n) {
                    state = state &* 1664525 &+ 1013904223
                    w[i] = (Float(state >> 8) / Float(1 << 24) - 0.5) * 0.05
                }
                let layer = try! LinearLayer(weights: Array(UnsafeBufferPointer(start: w, count: shape.k * shape.n)),
                                             bias: [Float](repeating: 0, count: shape.n), n: shape.n, k: shape.k, precision: .fp32)
                return (w, layer)
            }
        }
    }

    func tokens(_ batches: [[[Int32]]]) -> [Int] { batches.map { $0.reduce(0) { $0 + $1.count } } }

    func linearFLOPs(_ batches: [[[Int32]]]) -> Double {
        let perToken = shapes.reduce(0.0) { $0 + 2.0 * Double($1.k * $1.n) }
        return perToken * Double(layers) * Double(tokens(batches).reduce(0, +))
    }

    /// Q·Kᵀ and P·V: 2 · 2 · L² · H per sequence and layer.
    func attentionFLOPs(_ batches: [[[Int32]]]) -> Double {
        let squares = batches.reduce(0.0) { $0 + $1.reduce(0.0) { $0 + Double($1.count * $1.count) } }
        return 4.0 * squares * Double(hidden) * Double(layers)
    }

    func time(batches: [[[Int32]]], threads: Int, openBLASThreads: Bool, calls: Int, warmup: Int) -> (wall: [Double], cpu: [Double]) {
        let counts = tokens(batches)
        let maxRows = counts.max() ?? 1
        let maxWidth = shapes.map { max($0.k, $0.n) }.max()!
        if maxRows > rows {
            x?.deallocate(); y?.deallocate()
            let newX = UnsafeMutablePointer<Float>.allocate(capacity: maxRows * maxWidth)
            for i in 0..<(maxRows * maxWidth) { newX[i] = Float(i % 97) / 97 - 0.5 }
            x = newX
            y = .allocate(capacity: maxRows * maxWidth)
            rows = maxRows
        }
        let x = self.x!, y = self.y!
        openblas_set_num_threads(Int32(openBLASThreads ? threads : 1))
        defer { openblas_set_num_threads(1) }  // what BertModel expects
        func pass() {
            for m in counts {
                for layer in weights {
                    for (shape, w) in zip(shapes, layer) {
                        if openBLASThreads {
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(m), Int32(shape.n), Int32(shape.k),
                                        1, x, Int32(shape.k), w.raw, Int32(shape.k), 0, y, Int32(shape.n))
                        } else {
                            w.layer(x, m: m, into: y, threads: threads)
                        }
                    }
                }
            }
        }
        for _ in 0..<warmup { pass() }
        var wall: [Double] = [], cpu: [Double] = []
        for _ in 0..<calls {
            let cpuStart = processCPUMilliseconds()
            let start = DispatchTime.now().uptimeNanoseconds
            pass()
            wall.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            cpu.append(processCPUMilliseconds() - cpuStart)
        }
        return (wall, cpu)
    }
}
