import Foundation

// One type per Hugging Face module, each loading itself by the converted checkpoint's tensor
// names (see Converter), so code and weights map one to one. Weights are pointers into the
// memory-mapped file: loading copies nothing.

/// y = x·Wᵀ + b with W stored [out, in] as PyTorch stores it.
struct Linear {
    let weight: UnsafePointer<Float>
    let bias: UnsafePointer<Float>
    let inFeatures: Int
    let outFeatures: Int

    init(_ file: SafeTensorsFile, _ prefix: String, in inFeatures: Int, out outFeatures: Int) throws {
        weight = try file.floats(prefix + ".weight", shape: [outFeatures, inFeatures]).baseAddress!
        bias = try file.floats(prefix + ".bias", shape: [outFeatures]).baseAddress!
        self.inFeatures = inFeatures
        self.outFeatures = outFeatures
    }

    /// y[rows × out] = x[rows × in]·Wᵀ + b, output columns split across threads.
    func callAsFunction(_ x: UnsafePointer<Float>, rows: Int, into y: UnsafeMutablePointer<Float>, threads: Int,
                        then epilogue: ((UnsafeMutablePointer<Float>, Range<Int>) -> Void)? = nil) {
        let ranges = splitRange(outFeatures, parts: threads)
        parallelFor(ranges.count, threads: threads) { part, _ in
            let cols = ranges[part]
            matmulTransposedB(x, lda: inFeatures, weight + cols.lowerBound * inFeatures, ldb: inFeatures,
                              y + cols.lowerBound, ldc: outFeatures, m: rows, n: cols.count, k: inFeatures)
            for r in 0..<rows {
                let row = y + r * outFeatures + cols.lowerBound
                let b = bias + cols.lowerBound
                for c in 0..<cols.count { row[c] += b[c] }
            }
            epilogue?(y, cols)
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
    let wordEmbeddings: UnsafePointer<Float>
    let positionEmbeddings: UnsafePointer<Float>
    let tokenTypeEmbeddings: UnsafePointer<Float>
    let layerNorm: LayerNorm
    let hidden: Int

    init(_ file: SafeTensorsFile, _ config: BertConfig) throws {
        let h = config.hiddenSize
        hidden = h
        wordEmbeddings = try file.floats("embeddings.word_embeddings.weight", shape: [config.vocabSize, h]).baseAddress!
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
                let word = wordEmbeddings + Int(ids[t]) * hidden
                let pos = positionEmbeddings + position * hidden
                let type = tokenTypeEmbeddings + Int(typeIds[t]) * hidden
                for c in 0..<hidden { row[c] = word[c] + pos[c] + type[c] }
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
    let decoder: UnsafePointer<Float>
    let bias: UnsafePointer<Float>
    let vocabSize: Int
    let hidden: Int

    init(_ file: SafeTensorsFile, _ config: BertConfig, wordEmbeddings: UnsafePointer<Float>) throws {
        let h = config.hiddenSize
        transform = try Linear(file, "cls.predictions.transform.dense", in: h, out: h)
        layerNorm = try LayerNorm(file, "cls.predictions.transform.LayerNorm", size: h, eps: config.layerNormEps)
        decoder = config.hasUntiedDecoder
            ? try file.floats("cls.predictions.decoder.weight", shape: [config.vocabSize, h]).baseAddress!
            : wordEmbeddings
        bias = try file.floats("cls.predictions.bias", shape: [config.vocabSize]).baseAddress!
        vocabSize = config.vocabSize
        hidden = h
    }

    /// Vocabulary logits [rows × V] for the given hidden rows [rows × H].
    func logits(_ x: UnsafePointer<Float>, rows: Int, into out: UnsafeMutablePointer<Float>, threads: Int) {
        let t = UnsafeMutablePointer<Float>.allocate(capacity: rows * hidden)
        defer { t.deallocate() }
        transform(x, rows: rows, into: t, threads: 1)
        gelu(t, count: rows * hidden)
        layerNorm(t, residual: nil, rows: rows)
        let ranges = splitRange(vocabSize, parts: threads, align: 64)
        parallelFor(ranges.count, threads: threads) { part, _ in
            let cols = ranges[part]
            matmulTransposedB(t, lda: hidden, decoder + cols.lowerBound * hidden, ldb: hidden,
                              out + cols.lowerBound, ldc: vocabSize, m: rows, n: cols.count, k: hidden)
            for r in 0..<rows {
                let row = out + r * vocabSize
                for c in cols { row[c] += bias[c] }
            }
        }
    }
}
