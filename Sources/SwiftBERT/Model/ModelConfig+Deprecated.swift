// The flat `BertConfig` of version 1 read its fields straight off the config; they now live in
// `encoder` and `heads`. These readers keep version-1 code compiling, with a warning that says
// where each field went, for one version.

extension ModelConfig {
    @available(*, deprecated, renamed: "encoder.vocabSize") public var vocabSize: Int { encoder.vocabSize }
    @available(*, deprecated, renamed: "encoder.hiddenSize") public var hiddenSize: Int { encoder.hiddenSize }
    @available(*, deprecated, renamed: "encoder.numHiddenLayers") public var numHiddenLayers: Int { encoder.numHiddenLayers }
    @available(*, deprecated, renamed: "encoder.numAttentionHeads") public var numAttentionHeads: Int { encoder.numAttentionHeads }
    @available(*, deprecated, renamed: "encoder.intermediateSize") public var intermediateSize: Int { encoder.intermediateSize }
    @available(*, deprecated, renamed: "encoder.maxPositionEmbeddings") public var maxPositionEmbeddings: Int { encoder.maxPositionEmbeddings }
    @available(*, deprecated, renamed: "encoder.typeVocabSize") public var typeVocabSize: Int { encoder.typeVocabSize }
    @available(*, deprecated, renamed: "encoder.layerNormEps") public var layerNormEps: Float { encoder.layerNormEps }
    @available(*, deprecated, renamed: "encoder.hiddenAct") public var hiddenAct: String { encoder.hiddenAct }
    @available(*, deprecated, renamed: "encoder.maxSequenceLength") public var maxSequenceLength: Int { encoder.maxSequenceLength }
    @available(*, deprecated, renamed: "encoder.architecture") public var architecture: Architecture? { encoder.architecture }
    @available(*, deprecated, renamed: "encoder.headDim") public var headDim: Int { encoder.headDim }
    @available(*, deprecated, renamed: "encoder.positionLimit") public var positionLimit: Int { encoder.positionLimit }
    @available(*, deprecated, renamed: "encoder.usesTokenTypes") public var usesTokenTypes: Bool { encoder.usesTokenTypes }
    @available(*, deprecated, renamed: "heads.hasMaskedLMHead") public var hasMaskedLMHead: Bool { heads.hasMaskedLMHead }
    @available(*, deprecated, renamed: "heads.hasUntiedDecoder") public var hasUntiedDecoder: Bool { heads.hasUntiedDecoder }
    @available(*, deprecated, renamed: "heads.hasPooler") public var hasPooler: Bool? { heads.hasPooler }
    @available(*, deprecated, renamed: "heads.sentence") public var sentence: SentenceTransformersConfig { heads.sentence }
    @available(*, deprecated, renamed: "heads.task") public var task: TaskHeadConfig? { heads.task }
    @available(*, deprecated, renamed: "heads.hasLexicalWeights") public var hasLexicalWeights: Bool? { heads.hasLexicalWeights }
    @available(*, deprecated, renamed: "heads.colbertDimension") public var colbertDimension: Int? { heads.colbertDimension }
}
