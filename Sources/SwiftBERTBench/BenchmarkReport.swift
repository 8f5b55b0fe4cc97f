import Foundation
import SwiftBERT
import SwiftBERTCommandLine
import SwiftBERTKernels

/// The results of a `Benchmark` run: `text` for people (Markdown tables), `json` for scripts.
package struct BenchmarkReport: Sendable {
    package let plan: BenchmarkPlan
    package let environment: BenchmarkEnvironment
    package let models: [Model]
    package let loadAverageAtEnd: String?
    /// Wall time of the whole run.
    package let seconds: Double

    package struct Model: Sendable {
        package let name: String
        package let path: String
        package let config: ModelConfig
        /// One per precision of the plan, in its order.
        package let precisions: [PrecisionFigures]
        /// Threads, then shape, then precision, in the plan's orders.
        package let cells: [Cell]
        /// What was left out and why.
        package let notes: [String]
        /// The name, marked when the weights are random.
        package var label: String { BenchmarkPlan.label(model: name) }

        package func figures(_ precision: Precision) -> PrecisionFigures? { precisions.first { $0.precision == precision } }
    }

    /// What does not depend on the cell.
    package struct PrecisionFigures: Sendable {
        package let precision: Precision
        package let fileBytes: Int
        /// Fastest of this run's loads (one per thread count; the file is in the page cache).
        package let loadSeconds: Double
        package let memory: BenchmarkMemoryProbe.Usage?
        /// Against FP32; nil for FP32 itself and when not measured.
        package let accuracy: BenchmarkAccuracy?
    }

    /// One precision at one shape and thread count.
    package struct Cell: Sendable {
        package let shape: BenchmarkPlan.Shape
        package let threads: Int
        package let precision: Precision
        package let rounds: Int
        package let medianMilliseconds: Double
        package let p90Milliseconds: Double
        /// Median CPU time of the process (all threads) per pass.
        package let cpuMedianMilliseconds: Double
        /// FP32's median over this one; nil for FP32 or when FP32 is not in the plan.
        package let speedUp: Double?
        /// Median milliseconds per pass in each stage, with --profile.
        package let profileMilliseconds: [StageProfile.Stage: Double]?
        /// With --heads: each output head's median milliseconds per pass, after the forward pass.
        package var headMilliseconds: [(name: String, milliseconds: Double)]? = nil

        package var tokensPerSecond: Double { Double(shape.tokens) / (medianMilliseconds / 1e3) }

        /// With --profile: the encoder's Linear layers' multiply-adds, 2·M·N·K summed over the
        /// layers, per second of the stages that run them, in billions (GFLOP/s for FP32 and BF16,
        /// GOP/s for INT8), comparable with `SwiftBERTBenchmarks gemm`'s rates.
        /// Nil where the family does not say what its layers cost (MobileBERT).
        package func linearRate(_ config: ModelConfig) -> Double? {
            guard let profile = profileMilliseconds,
                  let layer = ModelFamilies.family(of: config.encoder).layerMultiplyAdds(config.encoder) else { return nil }
            let seconds = [StageProfile.Stage.qkv, .attentionOutput, .feedForwardIn, .feedForwardOut]
                .reduce(0) { $0 + (profile[$1] ?? 0) } / 1e3
            let operations = 2 * Double(shape.tokens) * Double(config.encoder.numHiddenLayers) * Double(layer.linear)
            return seconds > 0 ? operations / seconds / 1e9 : nil
        }
    }

    // MARK: - JSON

    /// One row per (model, precision, shape, threads), with the model-level figures repeated on
    /// each row so that a row stands alone (a data frame's rows).
    package var json: OrderedJSON {
        .array(models.flatMap { model in model.cells.map { row(model, $0) } })
    }

    /// `json` with one row per line.
    package var jsonText: String {
        guard case .array(let rows) = json, !rows.isEmpty else { return "[]\n" }
        return "[\n" + rows.map(\.text).joined(separator: ",\n") + "\n]\n"
    }

    private func row(_ model: Model, _ cell: Cell) -> OrderedJSON {
        let figures = model.figures(cell.precision)
        let memory = figures?.memory
        var fields: [(String, OrderedJSON)] = [
            ("model", .string(model.name)), ("label", .string(model.label)), ("precision", .string(cell.precision.rawValue)),
            ("batch", .int(cell.shape.batch)), ("seq", .int(cell.shape.sequenceLength)), ("threads", .int(cell.threads)),
            ("rounds", .int(cell.rounds)), ("median_ms", rounded(cell.medianMilliseconds)), ("p90_ms", rounded(cell.p90Milliseconds)),
            ("cpu_median_ms", rounded(cell.cpuMedianMilliseconds)), ("tokens_per_second", rounded(cell.tokensPerSecond, places: 1)),
            ("speedup_vs_fp32", cell.speedUp.map { rounded($0) } ?? .null),
            ("file_bytes", figures.map { .int($0.fileBytes) } ?? .null),
            ("load_ms", figures.map { rounded($0.loadSeconds * 1e3) } ?? .null),
            ("weights_resident_bytes", memory.map { .int($0.weightsResident) } ?? .null),
            ("resident_before_load_bytes", memory.map { .int($0.residentBeforeLoad) } ?? .null),
            ("resident_after_load_bytes", memory.map { .int($0.residentAfterLoad) } ?? .null),
            ("peak_resident_bytes", memory.map { .int($0.peakResident) } ?? .null),
            ("peak_resident_shape", memory.map { .string("\($0.batch)x\($0.sequenceLength)") } ?? .null),
            ("accuracy", figures?.accuracy?.json ?? .null),
        ]
        if let profile = cell.profileMilliseconds {
            fields.append(("profile_ms", .object(StageProfile.Stage.allCases.compactMap { stage in
                profile[stage].map { (stage.rawValue, rounded($0)) }
            })))
            fields.append(("linear_gops", cell.linearRate(model.config).map { rounded($0, places: 1) } ?? .null))
        }
        if let heads = cell.headMilliseconds {
            fields.append(("heads_ms", .object(heads.map { ($0.name, rounded($0.milliseconds)) })))
        }
        fields += [("openblas_core", .string(environment.openBLASCore)),
                   ("openblas_coretype", environment.openBLASCoreType.map { .string($0) } ?? .null)]
        return .object(fields)
    }

    private func rounded(_ value: Double, places: Double = 4) -> OrderedJSON {
        let scale = pow(10, places)
        return .double((value * scale).rounded() / scale)
    }

    // MARK: - Text

    package var text: String {
        var out = header
        for model in models {
            out += "\n" + summary(model)
            out += "\n" + timings(model)
            if plan.profile { out += profiles(model) }
            if plan.timesHeads { out += headTimes(model) }
            if !model.notes.isEmpty { out += "\n" + model.notes.map { "Note: \($0)\n" }.joined() }
        }
        return out
    }

    private var header: String {
        let env = environment
        let coreType = env.openBLASCoreType.map { "OPENBLAS_CORETYPE=\($0)" } ?? "OPENBLAS_CORETYPE unset"
        let rounds = plan.repetitions.map { "\($0) rounds per cell" }
            ?? String(format: "rounds for %g s per cell (at least %d)", plan.seconds, plan.minimumRepetitions)
        return """
            SwiftBERT benchmark: \(plan.precisions.map(\.rawValue).joined(separator: " vs ")), side by side
            OpenBLAS core: \(env.openBLASCore) (\(coreType)); CPU: \(env.cpuModel ?? "unknown"), \(env.processors) processors; \
            load average \(env.loadAverage ?? "?") at start, \(loadAverageAtEnd ?? "?") at end; \(String(format: "%.0f", seconds)) s in all
            Kernels: \(KernelReport.current); attention on the fused Swift kernel (SwiftBERTKernels/Attention/).
            Timing: wall time of one forward pass (encoder only: no tokenizer, no head) on the same token ids; the \
            precisions take turns, one pass each per round; \(rounds). CPU ms: process CPU time (all threads). \
            Speed-up: fp32 median / median.

            """
    }

    private func summary(_ model: Model) -> String {
        let c = model.config.encoder
        let title = "## \(model.label): \(c.numHiddenLayers) layers, hidden \(c.hiddenSize), feed-forward \(c.intermediateSize), "
            + "vocabulary \(c.vocabSize)\n\n"
        let shape = model.precisions.compactMap(\.memory).first.map { " (after \($0.batch)x\($0.sequenceLength))" } ?? ""
        let fp32 = model.figures(.fp32)
        var table = TextTable(["precision", "file", "load", "weights resident", "peak RSS\(shape)", "accuracy vs fp32"],
                              alignments: "lrrrrl")
        for figures in model.precisions {
            func share(_ value: Int?, _ reference: Int?) -> String {
                guard figures.precision != .fp32, let value, let reference, reference > 0 else { return "" }
                return String(format: " (%.0f%%)", 100 * Double(value) / Double(reference))
            }
            let accuracy = figures.precision == .fp32 ? "reference"
                : figures.accuracy?.summary ?? (BenchmarkPlan.hasRandomWeights(model: model.name) ? "n/a (random weights)" : "not measured")
            table.add([
                figures.precision.rawValue,
                byteCount(figures.fileBytes) + share(figures.fileBytes, fp32?.fileBytes),
                String(format: "%.1f ms", figures.loadSeconds * 1e3),
                figures.memory.map { byteCount($0.weightsResident) + share($0.weightsResident, fp32?.memory?.weightsResident) } ?? "n/a",
                figures.memory.map { byteCount($0.peakResident) } ?? "n/a",
                accuracy,
            ])
        }
        return title + table.text
    }

    private func timings(_ model: Model) -> String {
        var table = TextTable(["batch x seq", "threads", "precision", "median ms", "p90 ms", "CPU ms", "tokens/s",
                               "speed-up vs fp32", "rounds"], alignments: "lrlrrrrrr")
        for cell in model.cells {
            table.add([
                cell.shape.description, "\(cell.threads)", cell.precision.rawValue,
                milliseconds(cell.medianMilliseconds), milliseconds(cell.p90Milliseconds), milliseconds(cell.cpuMedianMilliseconds),
                String(format: "%.0f", cell.tokensPerSecond),
                cell.speedUp.map { String(format: "%.2fx", $0) } ?? "", "\(cell.rounds)",
            ])
        }
        return table.text
    }

    /// Per cell: each stage's median ms per pass and share of the pass, per precision.
    private func profiles(_ model: Model) -> String {
        var out = ""
        let cellsPerGroup = model.precisions.count  // this model's: MobileBERT leaves bf16 out of the plan's
        for start in stride(from: 0, to: model.cells.count, by: cellsPerGroup) {
            let group = Array(model.cells[start..<min(start + cellsPerGroup, model.cells.count)])
            guard let first = group.first, group.allSatisfy({ $0.profileMilliseconds != nil }) else { continue }
            let fp32 = group.first { $0.precision == .fp32 }?.profileMilliseconds
            let compared = group.filter { $0.precision != .fp32 && fp32 != nil }
            var table = TextTable(["stage"] + group.map { "\($0.precision.rawValue) ms (share)" }
                                  + compared.map { "fp32/\($0.precision.rawValue)" },
                                  alignments: "l" + String(repeating: "r", count: group.count + compared.count))
            let stages = StageProfile.Stage.allCases.filter { stage in group.contains { ($0.profileMilliseconds?[stage] ?? 0) > 0 } }
            let totals = group.map { $0.profileMilliseconds!.values.reduce(0, +) }
            for stage in stages {
                let values = group.map { $0.profileMilliseconds![stage] ?? 0 }
                table.add([stage.rawValue]
                          + zip(values, totals).map { String(format: "%@ (%.0f%%)", milliseconds($0), 100 * $0 / max($1, 1e-12)) }
                          + compared.map { ratio(fp32?[stage], $0.profileMilliseconds?[stage]) })
            }
            table.add(["total"] + totals.map { milliseconds($0) }
                      + compared.map { ratio(fp32?.values.reduce(0, +), $0.profileMilliseconds?.values.reduce(0, +)) })
            let rates = group.compactMap { cell in
                cell.linearRate(model.config).map { String(format: "%@ %.0f G%@/s", cell.precision.rawValue, $0, cell.precision.quantizesActivations ? "OP" : "FLOP") }
            }
            out += "\nProfile, \(model.label) \(first.shape), \(first.threads) thread\(first.threads == 1 ? "" : "s"): "
                + "median ms per pass in each stage (total: their sum)\n\n" + table.text
                + "\nLinear layers (qkv, attention output, feed-forward in + GELU, feed-forward out), per second of wall time: "
                + rates.joined(separator: ", ") + "\n"
        }
        return out
    }

    /// Per cell: the forward pass and each output head after it, median ms per pass, with the
    /// head's cost as a share of the forward pass.
    private func headTimes(_ model: Model) -> String {
        guard let names = model.cells.first?.headMilliseconds?.map(\.name) else { return "" }
        var table = TextTable(["shape", "threads", "precision", "forward ms"] + names.map { "\($0) ms (of forward)" },
                              alignments: "lrlr" + String(repeating: "r", count: names.count))
        for cell in model.cells {
            table.add(["\(cell.shape)", "\(cell.threads)", cell.precision.rawValue, milliseconds(cell.medianMilliseconds)]
                      + (cell.headMilliseconds ?? []).map { String(format: "%@ (%.1f%%)", milliseconds($0.milliseconds), 100 * $0.milliseconds / cell.medianMilliseconds) })
        }
        return "\nOutput heads, \(model.label): median ms per pass after the forward pass (heads run in FP32)\n\n" + table.text
    }

    private func ratio(_ a: Double?, _ b: Double?) -> String {
        guard let a, let b, b > 0 else { return "" }
        return String(format: "%.2fx", a / b)
    }

    private func milliseconds(_ value: Double) -> String {
        String(format: value < 10 ? "%.3f" : value < 100 ? "%.2f" : "%.1f", value)
    }
}

/// A Markdown table with columns padded to line up in a terminal.
struct TextTable {
    private let header: [String]
    private let rightAligned: [Bool]
    private var rows: [[String]] = []

    /// `alignments`: one letter per column, "l" or "r".
    init(_ header: [String], alignments: String) {
        self.header = header
        rightAligned = header.indices.map { i in
            let letters = Array(alignments)
            return i < letters.count && letters[i] == "r"
        }
    }

    mutating func add(_ row: [String]) { rows.append(row) }

    var text: String {
        let widths = header.indices.map { column in
            ([header] + rows).map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            "| " + header.indices.map { column in
                let cell = cells.indices.contains(column) ? cells[column] : ""
                let padding = String(repeating: " ", count: max(0, widths[column] - cell.count))
                return rightAligned[column] ? padding + cell : cell + padding
            }.joined(separator: " | ") + " |\n"
        }
        let rule = "|" + header.indices.map { column in
            String(repeating: "-", count: widths[column] + 1) + (rightAligned[column] ? ":" : "-")
        }.joined(separator: "|") + "|\n"
        return line(header) + rule + rows.map(line).joined()
    }
}
