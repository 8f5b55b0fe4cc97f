import Foundation

/// Turns a converted FP32 model into `model.int8.safetensors` beside it: every encoder Linear,
/// the masked-LM transform and the word-embedding table (also the tied decoder) become INT8 per
/// output channel (per row for the table), packed for the kernel; biases, LayerNorm parameters
/// and the small position/token-type tables stay float32.
public enum Quantizer {
    public static let fileName = "model.int8.safetensors"

    public struct Report: Sendable {
        public let quantizedTensors: Int
        public let fp32Bytes: Int
        public let int8Bytes: Int
    }

    /// Names (without `.weight`) of the matrices that become INT8.
    static func quantizedMatrices(_ config: BertConfig) -> [(name: String, rows: Int, cols: Int)] {
        let h = config.hiddenSize, ffn = config.intermediateSize
        var out = [("embeddings.word_embeddings", config.vocabSize, h)]
        for l in 0..<config.numHiddenLayers {
            let p = "encoder.layer.\(l)."
            out += [(p + "attention.self.qkv", 3 * h, h), (p + "attention.output.dense", h, h),
                    (p + "intermediate.dense", ffn, h), (p + "output.dense", h, ffn)]
        }
        if config.hasMaskedLMHead { out.append(("cls.predictions.transform.dense", h, h)) }
        if config.hasUntiedDecoder { out.append(("cls.predictions.decoder", config.vocabSize, h)) }
        return out
    }

    @discardableResult
    public static func quantize(folder: URL) throws -> Report {
        let config = try BertConfig.load(from: folder.appendingPathComponent("config.json"))
        let source = try SafeTensorsFile(path: folder.appendingPathComponent("model.safetensors").path)
        let matrices = quantizedMatrices(config)
        let quantized = Set(matrices.map { $0.name + ".weight" })
        var entries: [SafeTensorsWriter.Entry] = []
        for (name, rows, cols) in matrices {
            let weights = try source.floats(name + ".weight", shape: [rows, cols])
            let (int8, scales) = PackedInt8Matrix.quantize(weights: weights.baseAddress!, rows: rows, cols: cols)
            let packed = int8.withUnsafeBufferPointer { PackedInt8Matrix.packedLayout(int8: $0.baseAddress!, rows: rows, cols: cols) }
            entries.append(.init(name: name + ".weight_packed", dtype: .i8, shape: [packed.count],
                                 data: packed.withUnsafeBytes { Data($0) }))
            entries.append(.init(name: name + ".weight_scale", shape: [rows], floats: scales))
        }
        for (name, info) in source.tensors where !quantized.contains(name) {
            entries.append(.init(name: name, dtype: info.dtype, shape: info.shape,
                                 data: Data(try source.bytes(name, dtype: info.dtype))))
        }
        let destination = folder.appendingPathComponent(fileName)
        try SafeTensorsWriter.write(entries, metadata: ["format": "swiftbert-int8", "format_version": Converter.formatVersion,
                                                        "layout": "panels of \(Int8PanelLayout.panelWidth) channels x \(Int8PanelLayout.kGroup) k"],
                                    to: destination.path)
        let size = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) ?? 0
        return Report(quantizedTensors: matrices.count, fp32Bytes: source.fileSize, int8Bytes: size)
    }
}

extension PackedInt8Matrix {
    /// Row n of the matrix, dequantised: an embedding lookup straight from the packed layout.
    func dequantizeRow(_ n: Int, into out: UnsafeMutablePointer<Float>) {
        let base = packed.baseAddress!.assumingMemoryBound(to: Int8.self)
        let scale = scales[n]
        for k in 0..<cols {
            out[k] = Float(base[Int8PanelLayout.offset(row: n, col: k, cols: cols)]) * scale
        }
    }
}
