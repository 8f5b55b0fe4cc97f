import Foundation
import SwiftBERTKernels

/// Turns a converted FP32 model into `model.int8.safetensors` beside it: the matrices of
/// `TensorNames.int8Matrices` (every encoder Linear, the masked-LM transform and the
/// word-embedding table, also the tied decoder) become INT8 per output channel (per row for the
/// table), packed for the kernel; biases, LayerNorm parameters, the small position/token-type
/// tables and the heads' Linear layers stay float32.
public enum Quantizer {
    public static let fileName = WeightFiles.int8

    /// What a quantization wrote.
    public struct Report: Sendable {
        public let quantizedTensors: Int
        public let fp32Bytes: Int
        public let int8Bytes: Int
    }

    @discardableResult
    public static func quantize(folder: URL) throws -> Report {
        try write(folder: folder, fileName: fileName, format: "swiftbert-int8") { _, weights, _, _ in (weights, []) }
    }

    /// SmoothQuant's migration strength: how much of an input channel's range moves into the
    /// weights. 0.75 kept MiniLM's embeddings as close to FP32 as per-row scales do (mean cosine
    /// 0.9974 in a PyTorch simulation, min 0.9953); 0.5 left them at 0.983 (docs/int8.md).
    public static let defaultSmoothing: Float = 0.75

    /// Runs the FP32 model over `sentences`, records every encoder Linear layer's input range per
    /// channel, and writes `model.int8-static.safetensors` (`Precision.int8Static`): per channel c,
    /// smoothing s = max|x_c|^α / max|W_c|^(1−α); the weights W·s quantised per output channel;
    /// the input x/s quantised per tensor, asymmetric (a step and a zero point over the recorded
    /// range). A masked-LM model is also run on each sentence with its middle token masked. Layers
    /// the text does not reach (the masked-LM transform) keep per-row scales.
    /// BERT-family models only (BertModel).
    @discardableResult
    public static func calibrate(folder: URL, sentences: [String], smoothing alpha: Float = defaultSmoothing,
                                 maxLength: Int = 512) throws -> Report {
        let texts = sentences.filter { !$0.allSatisfy(\.isWhitespace) }
        guard !texts.isEmpty else {
            throw SwiftBERTError.invalidInput(reason: "the calibration text has no sentences: give a file of real text, one sentence or passage a line")
        }
        guard alpha > 0, alpha < 1 else { throw SwiftBERTError.invalidInput(reason: "smoothing must lie between 0 and 1, got \(alpha)") }
        let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
        guard ModelFamilies.family(of: config.encoder) is BertFamily else {
            throw SwiftBERTError.invalidInput(reason: "\(folder.lastPathComponent) is a \(config.encoder.mobileBert != nil ? "MobileBERT" : config.encoder.architecture?.displayName ?? "rotary") model; int8-static calibrates BERT-family encoders (BERT, RoBERTa, XLM-R, MPNet): use int8 or int8-weights for it")
        }
        let model = try BertModel(folder: folder, precision: .fp32)
        let tokenizer = try Tokenizer.load(folder: folder)
        let ranges = ActivationRanges()
        let limit = min(maxLength, model.config.encoder.positionLimit)
        for start in stride(from: 0, to: texts.count, by: 16) {
            let encodings = texts[start..<min(start + 16, texts.count)].map { tokenizer.encode($0, maxLength: limit) }
            var batch = encodings.map { ($0.ids, $0.typeIds) }
            // A masked-LM model also sees each sentence with its middle token masked: [MASK]'s
            // activations lie far outside those of text (splade-tiny's fill-mask top-1 agreement
            // was 0.77 without them, against 0.95).
            if model.maskedLMHead != nil {
                batch += encodings.filter { $0.ids.count > 2 }.map { encoding in
                    var ids = encoding.ids
                    ids[ids.count / 2] = tokenizer.maskId
                    return (ids, encoding.typeIds)
                }
            }
            _ = try model.encode(batch.map(\.0), typeIds: batch.map(\.1), profile: nil, recordingInto: ranges)
        }
        return try write(folder: folder, fileName: WeightFiles.int8Static, format: "swiftbert-int8-static") { name, weights, n, k in
            guard let range = ranges.ranges[name] else { return (weights, []) }
            return smoothed(weights, n: n, k: k, range: range, alpha: alpha, name: name)
        }
    }

    /// W·s per column, and the tensors of the input's quantisation (`StaticInt8Input`).
    private static func smoothed(_ weights: UnsafePointer<Float>, n: Int, k: Int, range: ActivationRanges.Range,
                                 alpha: Float, name: String) -> (UnsafePointer<Float>, [SafeTensorsWriter.Entry]) {
        var smoothing = [Float](repeating: 1, count: k)
        for c in 0..<k {
            var weightMax: Float = 0
            for row in 0..<n { weightMax = max(weightMax, abs(weights[row * k + c])) }
            let inputMax = max(-range.low[c], range.high[c])
            smoothing[c] = pow(max(inputMax, 1e-5), alpha) / pow(max(weightMax, 1e-5), 1 - alpha)
        }
        let scaled = UnsafeMutablePointer<Float>.allocate(capacity: n * k)
        for row in 0..<n { for c in 0..<k { scaled[row * k + c] = weights[row * k + c] * smoothing[c] } }
        // The smoothed input's range over every channel, 0 inside it (so zero is exact).
        var (low, high): (Float, Float) = (0, 0)
        for c in 0..<k { low = min(low, range.low[c] / smoothing[c]); high = max(high, range.high[c] / smoothing[c]) }
        let step = high > low ? (high - low) / 255 : 1
        let zeroPoint = min(max((-low / step).rounded(), 0), 255)
        let multipliers = smoothing.map { 1 / ($0 * step) }
        return (UnsafePointer(scaled), [
            .init(name: name + StaticInt8Input.multipliersSuffix, shape: [k], floats: multipliers),
            .init(name: name + StaticInt8Input.zeroPointSuffix, shape: [1], floats: [zeroPoint]),
            .init(name: name + StaticInt8Input.stepSuffix, shape: [1], floats: [step]),
        ])
    }

    /// Writes `fileName` beside the FP32 file: each of `TensorNames.int8Matrices`' weights as
    /// `transform` gives them (with any tensors of its own), quantised and packed; every other
    /// tensor as it is.
    private static func write(folder: URL, fileName: String, format: String,
                              transform: (_ name: String, _ weights: UnsafePointer<Float>, _ n: Int, _ k: Int)
                                  -> (UnsafePointer<Float>, [SafeTensorsWriter.Entry])) throws -> Report {
        let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
        let source = try SafeTensorsFile(path: folder.appendingPathComponent(WeightFiles.fp32).path)
        let matrices = TensorNames.int8Matrices(config)
        let quantized = Set(matrices.map { $0.name + ".weight" })
        var entries: [SafeTensorsWriter.Entry] = []
        for matrix in matrices {
            let (n, k) = (matrix.rows, matrix.cols)
            let original = try source.floats(matrix.name + ".weight", shape: [n, k]).baseAddress!
            let (weights, extra) = transform(matrix.name, original, n, k)
            defer { if weights != original { weights.deallocate() } }
            let (int8, scales) = PackedInt8Matrix.quantize(weights: weights, n: n, k: k)
            let packed = int8.withUnsafeBufferPointer { PackedInt8Matrix.packedLayout(int8: $0.baseAddress!, n: n, k: k) }
            entries.append(.init(name: matrix.name + ".weight_packed", dtype: .i8, shape: [packed.count],
                                 data: packed.withUnsafeBytes { Data($0) }))
            entries.append(.init(name: matrix.name + ".weight_scale", shape: [n], floats: scales))
            entries += extra
        }
        for (name, info) in source.tensors where !quantized.contains(name) {
            entries.append(.init(name: name, dtype: info.dtype, shape: info.shape,
                                 data: Data(try source.bytes(name, dtype: info.dtype))))
        }
        let destination = folder.appendingPathComponent(fileName)
        try SafeTensorsWriter.write(entries, metadata: ["format": format, "format_version": Converter.formatVersion,
                                                        "layout": "panels of \(panelWidth) channels x \(Int8PanelLayout.kGroup) k"],
                                    to: destination.path)
        let size = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) ?? 0
        return Report(quantizedTensors: matrices.count, fp32Bytes: source.fileSize, int8Bytes: size)
    }
}
