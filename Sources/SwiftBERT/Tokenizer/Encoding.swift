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
    /// 1 for the tokens the template added ([CLS], [SEP], <s>, …) and for padding, 0 for the
    /// tokens of the text, a special token written in the text included: HF's
    /// `special_tokens_mask`, which the token-classification pipeline skips by.
    public var specialTokensMask: [Int32]

    /// `specialTokensMask` nil: 1 for padding, 0 for every other token.
    public init(ids: [Int32], typeIds: [Int32], attentionMask: [Int32], tokens: [String],
                offsets: [Range<Int>], wasTruncated: Bool, specialTokensMask: [Int32]? = nil) {
        self.ids = ids
        self.typeIds = typeIds
        self.attentionMask = attentionMask
        self.tokens = tokens
        self.offsets = offsets
        self.wasTruncated = wasTruncated
        self.specialTokensMask = specialTokensMask ?? attentionMask.map { 1 - $0 }
    }

    public var count: Int { ids.count }
}
