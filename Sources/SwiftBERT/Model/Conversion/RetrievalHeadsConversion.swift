import Foundation

extension Converter {
    /// BGE-M3's extra heads, torch.save files beside its checkpoint: `sparse_linear.pt`
    /// (Linear(hidden, 1), the lexical weights) and `colbert_linear.pt` (Linear(hidden, d), the
    /// ColBERT vectors). Their tensors go into the converted file under FlagEmbedding's module
    /// names, and the config says which heads the model has. A folder without them: nothing.
    static func readRetrievalHeads(_ source: URL, into config: inout ModelConfig) throws -> [SafeTensorsWriter.Entry] {
        var entries: [SafeTensorsWriter.Entry] = []
        let h = config.encoder.hiddenSize
        for (file, module) in [("sparse_linear.pt", TensorNames.sparseLinear), ("colbert_linear.pt", TensorNames.colbertLinear)] {
            let url = source.appendingPathComponent(file)
            guard FileManager.default.fileExists(atPath: url.path) else { continue }
            let checkpoint = try TorchCheckpoint(path: url.path)
            func fail(_ reason: String) -> SwiftBERTError { .invalidWeights(path: url.path, reason: reason + "; give the \(file) that was saved with the checkpoint") }
            guard let shape = checkpoint.shape("weight"), shape.count == 2, shape[1] == h, shape[0] > 0 else {
                throw fail("'weight' is \(checkpoint.shape("weight").map { "\($0)" } ?? "missing"), not [n, \(h)] (hidden_size \(h))")
            }
            let n = shape[0]
            if module == TensorNames.sparseLinear, n != 1 { throw fail("'weight' has \(n) rows; the sparse head has one") }
            if let extra = checkpoint.names.first(where: { $0 != "weight" && $0 != "bias" }) {
                throw fail("it holds '\(printable(extra))' besides a Linear layer's weight and bias")
            }
            let bias: [Float]
            if checkpoint.shape("bias") == nil {
                bias = [Float](repeating: 0, count: n)  // Linear(bias=False): a zero bias is exact
            } else {
                guard checkpoint.shape("bias") == [n] else { throw fail("'bias' is \(checkpoint.shape("bias")!), not [\(n)]") }
                bias = try checkpoint.floatArray("bias")
            }
            entries.append(.init(name: module + ".weight", shape: [n, h], floats: try checkpoint.floatArray("weight")))
            entries.append(.init(name: module + ".bias", shape: [n], floats: bias))
            if module == TensorNames.sparseLinear { config.heads.hasLexicalWeights = true } else { config.heads.colbertDimension = n }
        }
        return entries
    }
}
