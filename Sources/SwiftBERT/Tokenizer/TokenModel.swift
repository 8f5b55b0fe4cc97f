/// tokenizer.json's model: how a pre-tokenized word becomes token ids.
enum TokenModel: Sendable {
    case wordPiece(WordPiece)
    case unigram(Unigram)
    case bpe(BPE)

    @inline(__always)
    func tokenize(_ text: NormalizedText, _ word: Range<Int>, into sink: inout TokenSink) {
        switch self {
        case let .wordPiece(model): model.tokenize(text, word, into: &sink)
        case let .unigram(model): model.tokenize(text, word, into: &sink)
        case let .bpe(model): model.tokenize(text, word, into: &sink)
        }
    }
}
