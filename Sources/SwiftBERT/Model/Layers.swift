import Foundation

// One type per Hugging Face module, each loading itself by the converted checkpoint's tensor
// names (see Converter), so code and weights map one to one. Weights are pointers into the
// memory-mapped file: loading copies nothing.

/// A weight matrix [rows × cols] in the precision its file holds: `NAME.weight` (float32, from
/// the converter) or `NAME.weight_packed` + `NAME.weight_scale` (INT8, from the quantizer).
enum WeightMatrix {
    case float32(UnsafePointer<Float>)
    /// float32 repacked at load for `packedSGEMM` (the encoder's Linear layers).
    case packedFloat32(PackedFloatMatrix)
    case int8(PackedInt8Matrix)

    init(_ file: SafeTensorsFile, _ name: String, rows: Int, cols: Int) throws {
        if file.tensors[name + ".weight_packed"] != nil {
            let packed = try file.bytes(name + ".weight_packed", dtype: .i8)
            let scales = try file.floats(name + ".weight_scale", shape: [rows])
            self = .int8(try PackedInt8Matrix(rows: rows, cols: cols, packed: packed, scales: scales,
                                              source: "\(file.path): \(name)"))
        } else {
            self = .float32(try file.floats(name + ".weight", shape: [rows, cols]).baseAddress!)
        }
    }

    /// Row n as floats (an embedding lookup).
    func row(_ n: Int, cols: Int, into out: UnsafeMutablePointer<Float>) {
        switch self {
        case .float32(let w): out.update(from: w + n * cols, count: cols)
        case .packedFloat32(let w):
            let panel = w.storage + (n / PackedFloatMatrix.panelWidth) * w.panelStride + n % PackedFloatMatrix.panelWidth
            for k in 0..<cols { out[k] = panel[k * PackedFloatMatrix.panelWidth] }
        case .int8(let w): w.dequantizeRow(n, into: out)
        }
    }

    /// y[:, columns] = x · W[columns]ᵀ + bias[columns], y with row stride `rows` (the matrix's N).
    /// INT8 with a `quantized` workspace multiplies INT8 activations (quantised there once per
    /// call, shared by all columns); without one it is weight-only (float activations).
    func multiply(_ x: UnsafePointer<Float>, m: Int, rows n: Int, cols k: Int, bias: UnsafePointer<Float>,
                  into y: UnsafeMutablePointer<Float>, columns: Range<Int>, quantized: Int8Workspace?) {
        switch self {
        case .float32(let w):
            matmulTransposedB(x, lda: k, w + columns.lowerBound * k, ldb: k, y + columns.lowerBound, ldc: n,
                              m: m, n: columns.count, k: k)
            for r in 0..<m {
                let row = y + r * n + columns.lowerBound
                let b = bias + columns.lowerBound
                for c in 0..<columns.count { row[c] += b[c] }
            }
        case .packedFloat32(let w):
            packedSGEMM(x, m: m, weights: w, bias: bias, output: y, columns: columns)
        case .int8(let w):
            if let quantized {
                int8GEMM(quantized, weights: w, bias: bias, output: y, columns: columns)
            } else {
                int8WeightOnlyLinear(x, m: m, weights: w, bias: bias, output: y, columns: columns)
            }
        }
    }

    var isInt8: Bool { if case .int8 = self { return true } else { return false } }

    /// Whether the kernel works on 64-channel panels (thread blocks should not split one).
    var isPanelled: Bool { if case .float32 = self { return false } else { return true } }
}

/// y = x·Wᵀ + b with W stored [out, in] as PyTorch stores it.
struct Linear {
    let weight: WeightMatrix
    let bias: UnsafePointer<Float>
    let inFeatures: Int
    let outFeatures: Int

    init(_ file: SafeTensorsFile, _ prefix: String, in inFeatures: Int, out outFeatures: Int) throws {
        let stored = try WeightMatrix(file, prefix, rows: outFeatures, cols: inFeatures)
        #if SWIFTBERT_NATIVE_ISA
        if case .float32(let w) = stored {
            // Repacked once for the FP32 kernel; the mapped original is not read again.
            weight = .packedFloat32(PackedFloatMatrix(w, rows: outFeatures, cols: inFeatures))
            file.releasePages(of: prefix + ".weight")
        } else {
            weight = stored
        }
        #else
        // Portable builds (no FMA or AVX-512 known at compile time) leave FP32 to OpenBLAS,
        // which picks its kernels for the CPU at run time.
        weight = stored
        #endif
        bias = try file.floats(prefix + ".bias", shape: [outFeatures]).baseAddress!
        self.inFeatures = inFeatures
        self.outFeatures = outFeatures
    }

    init(weight: WeightMatrix, bias: UnsafePointer<Float>, inFeatures: Int, outFeatures: Int) {
        (self.weight, self.bias, self.inFeatures, self.outFeatures) = (weight, bias, inFeatures, outFeatures)
    }

    /// y[rows × out] = x[rows × in]·Wᵀ + b, output columns split across threads; `epilogue` runs
    /// on each thread's columns right after they are computed (while they are in cache).
    func callAsFunction(_ x: UnsafePointer<Float>, rows: Int, into y: UnsafeMutablePointer<Float>, threads: Int,
                        quantized: Int8Workspace? = nil,
                        then epilogue: ((UnsafeMutablePointer<Float>, Range<Int>) -> Void)? = nil) {
        if weight.isInt8, let quantized { quantizeRows(x, m: rows, k: inFeatures, into: quantized) }
        // The kernels work on 64-channel panels; keep thread blocks on panel bounds.
        let ranges = splitRange(outFeatures, parts: threads, align: weight.isPanelled ? 64 : 16)
        parallelFor(ranges.count, threads: threads) { part, _ in
            weight.multiply(x, m: rows, rows: outFeatures, cols: inFeatures, bias: bias, into: y,
                            columns: ranges[part], quantized: quantized)
            epilogue?(y, ranges[part])
        }
    }
}

struct LayerNorm {
    let gamma: UnsafePointer<Float>
    let beta: UnsafePointer<Float>
    let size: Int
    let eps: Float

    init(_ file: SafeTensorsFile, _ prefix: String, size: Int, eps: Float) throws {
        gamma = try file.floats(prefix + ".weight", shape: [size]).baseAddress!
        beta = try file.floats(prefix + ".bias", shape: [size]).baseAddress!
        self.size = size
        self.eps = eps
    }

    /// x = LayerNorm(x + residual), in place.
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?, rows: Int) {
        addLayerNorm(x, residual: residual, rows: rows, cols: size, gamma: gamma, beta: beta, eps: eps)
    }
}

/// Where each sequence of a batch lies in the packed token matrix. Sequences are stored back to
/// back without padding, so no work is spent on pad tokens and padding cannot change a result.
struct PackedSequences {
    let lengths: [Int]
    let starts: [Int]
    var tokenCount: Int { (starts.last ?? 0) + (lengths.last ?? 0) }

    init(lengths: [Int]) {
        self.lengths = lengths
        var starts: [Int] = []
        var offset = 0
        for length in lengths { starts.append(offset); offset += length }
        self.starts = starts
    }
}

/// word + position + token type embeddings, then LayerNorm.
struct BertEmbeddings {
    let wordEmbeddings: WeightMatrix
    let positionEmbeddings: UnsafePointer<Float>
    let tokenTypeEmbeddings: UnsafePointer<Float>
    let layerNorm: LayerNorm
    let hidden: Int

    init(_ file: SafeTensorsFile, _ config: BertConfig) throws {
        let h = config.hiddenSize
        hidden = h
        wordEmbeddings = try WeightMatrix(file, "embeddings.word_embeddings", rows: config.vocabSize, cols: h)
        positionEmbeddings = try file.floats("embeddings.position_embeddings.weight", shape: [config.maxPositionEmbeddings, h]).baseAddress!
        tokenTypeEmbeddings = try file.floats("embeddings.token_type_embeddings.weight", shape: [config.typeVocabSize, h]).baseAddress!
        layerNorm = try LayerNorm(file, "embeddings.LayerNorm", size: h, eps: config.layerNormEps)
    }

    /// out[T × H] for the packed token ids (already validated against the vocabulary sizes).
    func forward(ids: [Int32], typeIds: [Int32], sequences: PackedSequences, into out: UnsafeMutablePointer<Float>) {
        for (s, start) in sequences.starts.enumerated() {
            for position in 0..<sequences.lengths[s] {
                let t = start + position
                let row = out + t * hidden
                wordEmbeddings.row(Int(ids[t]), cols: hidden, into: row)
                let pos = positionEmbeddings + position * hidden
                let type = tokenTypeEmbeddings + Int(typeIds[t]) * hidden
                for c in 0..<hidden { row[c] += pos[c] + type[c] }
            }
        }
        layerNorm(out, residual: nil, rows: sequences.tokenCount)
    }
}

/// Multi-head self-attention with Q, K and V computed by one fused Linear.
struct BertSelfAttention {
    let qkv: Linear
    let heads: Int
    let headDim: Int

    init(_ file: SafeTensorsFile, _ prefix: String, _ config: BertConfig) throws {
        qkv = try Linear(file, prefix + ".qkv", in: config.hiddenSize, out: 3 * config.hiddenSize)
        heads = config.numAttentionHeads
        headDim = config.headDim
    }

    /// context[T × H] = softmax(Q·Kᵀ/√d)·V per sequence and head, from the fused [T × 3H] projections.
    func forward(qkv qkvBuffer: UnsafePointer<Float>, sequences: PackedSequences,
                 context: UnsafeMutablePointer<Float>, scores: [UnsafeMutablePointer<Float>], threads: Int) {
        let h = heads * headDim, ld = 3 * h
        let scale = 1 / Float(headDim).squareRoot()
        parallelFor(sequences.lengths.count * heads, threads: threads) { task, worker in
            let s = task / heads, head = task % heads
            let n = sequences.lengths[s], start = sequences.starts[s]
            let q = qkvBuffer + start * ld + head * headDim
            let k = q + h, v = q + 2 * h
            let p = scores[worker]
            matmulTransposedB(q, lda: ld, k, ldb: ld, p, ldc: n, m: n, n: n, k: headDim, alpha: scale)
            softmaxRows(p, rows: n, cols: n, stride: n)
            matmul(p, lda: n, v, ldb: ld, context + start * h + head * headDim, ldc: h, m: n, n: headDim, k: n)
        }
    }
}

/// Self-attention, output projection, then LayerNorm over the residual.
struct BertAttention {
    let selfAttention: BertSelfAttention
    let output: Linear
    let layerNorm: LayerNorm

    init(_ file: SafeTensorsFile, _ prefix: String, _ config: BertConfig) throws {
        selfAttention = try BertSelfAttention(file, prefix + ".self", config)
        output = try Linear(file, prefix + ".output.dense", in: config.hiddenSize, out: config.hiddenSize)
        layerNorm = try LayerNorm(file, prefix + ".output.LayerNorm", size: config.hiddenSize, eps: config.layerNormEps)
    }
}

/// One encoder layer: attention block then feed-forward block, each post-LN with a residual.
struct BertLayer {
    let attention: BertAttention
    let intermediate: Linear
    let output: Linear
    let layerNorm: LayerNorm

    init(_ file: SafeTensorsFile, _ prefix: String, _ config: BertConfig) throws {
        attention = try BertAttention(file, prefix + ".attention", config)
        intermediate = try Linear(file, prefix + ".intermediate.dense", in: config.hiddenSize, out: config.intermediateSize)
        output = try Linear(file, prefix + ".output.dense", in: config.intermediateSize, out: config.hiddenSize)
        layerNorm = try LayerNorm(file, prefix + ".output.LayerNorm", size: config.hiddenSize, eps: config.layerNormEps)
    }
}

/// The masked-LM head: transform (dense, GELU, LayerNorm), then the decoder (usually tied to the
/// word embeddings) plus bias.
struct BertMaskedLMHead {
    let transform: Linear
    let layerNorm: LayerNorm
    /// hidden → vocabulary logits; its weight is usually the word-embedding table.
    let decoder: Linear
    let hidden: Int

    init(_ file: SafeTensorsFile, _ config: BertConfig, wordEmbeddings: WeightMatrix) throws {
        let h = config.hiddenSize
        transform = try Linear(file, "cls.predictions.transform.dense", in: h, out: h)
        layerNorm = try LayerNorm(file, "cls.predictions.transform.LayerNorm", size: h, eps: config.layerNormEps)
        let weight = config.hasUntiedDecoder
            ? try WeightMatrix(file, "cls.predictions.decoder", rows: config.vocabSize, cols: h)
            : wordEmbeddings
        let bias = try file.floats("cls.predictions.bias", shape: [config.vocabSize]).baseAddress!
        decoder = Linear(weight: weight, bias: bias, inFeatures: h, outFeatures: config.vocabSize)
        hidden = h
    }

    /// Vocabulary logits [rows × V] for the given hidden rows [rows × H]. With INT8 weights the
    /// head keeps float activations (weight-only): a masked-LM's top candidates are often a few
    /// hundredths of a logit apart, and it runs on the mask positions only, so this costs nothing.
    func logits(_ x: UnsafePointer<Float>, rows: Int, into out: UnsafeMutablePointer<Float>, threads: Int) {
        let t = UnsafeMutablePointer<Float>.allocate(capacity: rows * hidden)
        defer { t.deallocate() }
        transform(x, rows: rows, into: t, threads: 1)
        gelu(t, count: rows * hidden)
        layerNorm(t, residual: nil, rows: rows)
        decoder(t, rows: rows, into: out, threads: threads)
    }
}
