/// A tokenized text (or text pair), ready to feed a BERT model.
public struct Encoding: Sendable, Equatable {
    public var ids: [Int32]
    /// 0 for the first text and its [CLS]/[SEP], 1 for the second text of a pair and its [SEP].
    public var typeIds: [Int32]
    /// 1 for real tokens, 0 for padding.
    public var attentionMask: [Int32]
    public var tokens: [String]
    /// Code-point offsets into the original text (into the pair's own text for its tokens),
    /// as HF reports them for Python strings; 0..<0 for special tokens and padding.
    public var offsets: [Range<Int>]
    /// Tokens were dropped to fit `maxLength`.
    public var wasTruncated: Bool

    public init(ids: [Int32], typeIds: [Int32], attentionMask: [Int32], tokens: [String],
                offsets: [Range<Int>], wasTruncated: Bool) {
        self.ids = ids
        self.typeIds = typeIds
        self.attentionMask = attentionMask
        self.tokens = tokens
        self.offsets = offsets
        self.wasTruncated = wasTruncated
    }

    public var count: Int { ids.count }
}
