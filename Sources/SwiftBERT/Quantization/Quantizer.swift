import Foundation

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
        let config = try BertConfig.load(from: folder.appendingPathComponent("config.json"))
        let source = try SafeTensorsFile(path: folder.appendingPathComponent(WeightFiles.fp32).path)
        let matrices = TensorNames.int8Matrices(config)
        let quantized = Set(matrices.map { $0.name + ".weight" })
        var entries: [SafeTensorsWriter.Entry] = []
        for matrix in matrices {
            let (n, k) = (matrix.rows, matrix.cols)
            let weights = try source.floats(matrix.name + ".weight", shape: [n, k])
            let (int8, scales) = PackedInt8Matrix.quantize(weights: weights.baseAddress!, n: n, k: k)
            let packed = int8.withUnsafeBufferPointer { PackedInt8Matrix.packedLayout(int8: $0.baseAddress!, n: n, k: k) }
            entries.append(.init(name: matrix.name + ".weight_packed", dtype: .i8, shape: [packed.count],
                                 data: packed.withUnsafeBytes { Data($0) }))
            entries.append(.init(name: matrix.name + ".weight_scale", shape: [n], floats: scales))
        }
        for (name, info) in source.tensors where !quantized.contains(name) {
            entries.append(.init(name: name, dtype: info.dtype, shape: info.shape,
                                 data: Data(try source.bytes(name, dtype: info.dtype))))
        }
        let destination = folder.appendingPathComponent(fileName)
        try SafeTensorsWriter.write(entries, metadata: ["format": "swiftbert-int8", "format_version": Converter.formatVersion,
                                                        "layout": "panels of \(panelWidth) channels x \(Int8PanelLayout.kGroup) k"],
                                    to: destination.path)
        let size = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) ?? 0
        return Report(quantizedTensors: matrices.count, fp32Bytes: source.fileSize, int8Bytes: size)
    }
}
