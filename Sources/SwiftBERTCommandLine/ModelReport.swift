import Foundation
import SwiftBERT
import SwiftBERTKernels

/// What `bert info` shows about a converted model: its shape, size on disk, what it can run,
/// and what loading it cost.
package struct ModelReport: Sendable {
    package struct File: Sendable { package let name: String; package let bytes: Int }

    package let name: String
    package let path: String
    package let architecture: String
    package let config: ModelConfig
    package let parameters: Int
    package let files: [File]
    /// Why a precision does not load the model: in a few words with what to do, for the table,
    /// and the whole error, for JSON.
    package struct Unavailable: Sendable {
        package let reason: String
        package let error: String
    }

    /// Each precision and whether the model loads with it (why not, if not).
    package let precisions: [(precision: Precision, unavailable: Unavailable?)]
    package let loadSeconds: Double
    /// Seconds spent reading the vocabulary, when the caller timed it.
    package let tokenizerLoadSeconds: Double?
    /// VmRSS right after loading, in bytes (nil off Linux).
    package let residentBytes: Int?
    /// The kernels this build runs (``KernelReport/current``).
    package let kernels = KernelReport.current

    /// Describes `model`, loaded with `precision`. Call right after loading it, for a meaningful
    /// resident size; the precision check then loads the model again, once per other precision.
    package init(model: any EncoderModel, precision loaded: Precision = .fp32, tokenizerLoadSeconds: Double? = nil) {
        self.tokenizerLoadSeconds = tokenizerLoadSeconds
        residentBytes = ProcessMemory.residentBytes()
        config = model.config
        name = model.folder.lastPathComponent
        path = model.folder.path
        let family = (model.config.encoder.architecture ?? .bert).className
        let task = model.config.heads.task.map { $0.kind == .sequenceClassification ? "ForSequenceClassification" : "ForTokenClassification" }
        architecture = "\(family)\(task ?? (model.config.heads.hasMaskedLMHead ? "ForMaskedLM" : "Model")) (heads: \(model.heads.map(\.rawValue).joined(separator: ", ")))"
        parameters = model.parameterCount
        loadSeconds = model.loadSeconds
        let fm = FileManager.default
        files = ((try? fm.contentsOfDirectory(atPath: model.folder.path)) ?? []).sorted().compactMap { file in
            let attributes = try? fm.attributesOfItem(atPath: model.folder.appendingPathComponent(file).path)
            guard let size = attributes?[.size] as? NSNumber, attributes?[.type] as? FileAttributeType == .typeRegular else { return nil }
            return File(name: file, bytes: size.intValue)
        }
        let folder = model.folder
        precisions = Precision.allCases.map { precision in
            if precision == loaded { return (precision, nil) }
            do { _ = try loadEncoder(folder: folder, threads: 1, precision: precision); return (precision, nil) }
            catch { return (precision, Unavailable(reason: Self.reason(error, precision: precision, folder: folder), error: "\(error)")) }
        }
    }

    /// The few words of `Unavailable.reason`: the precision's weights file not made yet, with the
    /// command that makes it, or else the error itself (a family that does not run it).
    static func reason(_ error: Error, precision: Precision, folder: URL) -> String {
        if case let .fileNotFound(path, _)? = error as? SwiftBERTError, path.hasSuffix("/" + precision.fileName) {
            return precision == .int8Static
                ? "not calibrated (make \(precision.fileName) with `bert quantize --calibrate SENTENCES.txt \(folder.path)`)"
                : "not quantized (make \(precision.fileName) with `bert quantize \(folder.path)`)"
        }
        return oneLine("\(error)")
    }

    package var json: OrderedJSON {
        .object([
            ("name", .string(name)), ("path", .string(path)), ("architecture", .string(architecture)),
            ("layers", .int(config.encoder.numHiddenLayers)), ("hidden_size", .int(config.encoder.hiddenSize)),
            ("attention_heads", .int(config.encoder.numAttentionHeads)), ("intermediate_size", .int(config.encoder.intermediateSize)),
            ("vocabulary_size", .int(config.encoder.vocabSize)), ("max_sequence_length", .int(config.encoder.maxSequenceLength)),
            ("max_position_embeddings", .int(config.encoder.maxPositionEmbeddings)), ("parameters", .int(parameters)),
            ("pooling", .string(config.heads.sentence.pooling.rawValue)), ("masked_lm_head", .bool(config.heads.hasMaskedLMHead)),
            ("files", .object(files.map { ($0.name, .int($0.bytes)) })),
            ("precisions", .array(precisions.filter { $0.unavailable == nil }.map { .string($0.precision.rawValue) })),
            ("precisions_unavailable", .object(precisions.compactMap { p in p.unavailable.map { (p.precision.rawValue, .string($0.error)) } })),
            ("load_seconds", .double(loadSeconds)),
            ("tokenizer_load_seconds", tokenizerLoadSeconds.map { .double($0) } ?? .null),
            ("resident_bytes", residentBytes.map { .int($0) } ?? .null),
            ("kernels", .object([
                ("build", .string(kernels.build.rawValue)), ("fp32_linear", .string(kernels.fp32Linear)),
                ("int8_linear", .string(kernels.int8Linear)), ("bf16_linear", .string(kernels.bf16Linear)),
                ("matrix_unit", .string(kernels.matrixUnit)),
                ("cpu_features", .array(kernels.cpuFeatures.map { .string($0) })),
                ("advice", kernels.advice.map { .string($0) } ?? .null),
            ])),
        ])
    }

    package var text: String {
        let available = precisions.filter { $0.unavailable == nil }.map(\.precision.rawValue).joined(separator: ", ")
        // The precisions missing for one reason together: "int8, int8-weights: not quantized (...)".
        var reasons: [String] = [], missingFor: [String: [String]] = [:]
        for case let (precision, unavailable?) in precisions {
            if missingFor[unavailable.reason] == nil { reasons.append(unavailable.reason) }
            missingFor[unavailable.reason, default: []].append(precision.rawValue)
        }
        let missing = reasons.map { "\(missingFor[$0]!.joined(separator: ", ")): \($0)" }
        let millions = String(format: "%.1f", Double(parameters) / 1e6)
        var loadTime = String(format: "%.1f ms weights", loadSeconds * 1000)
        if let tokenizerLoadSeconds { loadTime += String(format: ", %.1f ms tokenizer", tokenizerLoadSeconds * 1000) }
        var rows: [(String, String)] = [
            ("model", name), ("path", path), ("architecture", architecture),
            ("layers", "\(config.encoder.numHiddenLayers)"), ("hidden size", "\(config.encoder.hiddenSize)"),
            ("attention heads", "\(config.encoder.numAttentionHeads) (head size \(config.encoder.headDim))"),
            ("intermediate size", "\(config.encoder.intermediateSize)"),
            ("vocabulary", "\(config.encoder.vocabSize) tokens"),
            ("max tokens", "\(config.encoder.maxSequenceLength) (\(config.encoder.rotary != nil ? "rotary positions to" : "position table") \(config.encoder.maxPositionEmbeddings))"),
            ("parameters", "\(parameters.formatted(separator: ",")) (\(millions) M)"),
            ("pooling", config.heads.sentence.pooling.rawValue),
            ("precisions", ([available] + missing).joined(separator: "; ")),
        ]
        rows += files.map { ("file", "\($0.name)  \(byteCount($0.bytes))") }
        rows.append(("load time", loadTime))
        rows.append(("resident memory", residentBytes.map { byteCount($0) + " (VmRSS after load)" } ?? "unknown"))
        rows.append(("kernels", kernels.description))
        rows.append(("cpu features", kernels.cpuFeatures.isEmpty ? "unknown" : kernels.cpuFeatures.joined(separator: " ")))
        if let advice = kernels.advice { rows.append(("faster build", advice)) }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.rightPadded(to: width) + "  " + $0.1 + "\n" }.joined()
    }
}

/// This process's memory, from /proc/self/status (Linux).
package enum ProcessMemory {
    /// VmRSS: resident set size now, in bytes.
    package static func residentBytes() -> Int? { statusField("VmRSS") }
    /// VmHWM: the peak resident set size, in bytes.
    package static func peakResidentBytes() -> Int? { statusField("VmHWM") }

    static func statusField(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kilobytes = Int(fields[1]) else { return nil }
            return kilobytes * 1024
        }
        return nil
    }
}

/// "86.1 MiB".
package func byteCount(_ bytes: Int) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes), unit = 0
    while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f ", value) + units[unit]
}

extension Int {
    func formatted(separator: String) -> String {
        let digits = String(magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out += separator }
            out.append(c)
        }
        return (self < 0 ? "-" : "") + out
    }
}
