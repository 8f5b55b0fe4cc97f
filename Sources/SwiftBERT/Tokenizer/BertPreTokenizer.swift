/// HF's BertPreTokenizer: split on whitespace (dropped), then isolate every punctuation scalar.
enum BertPreTokenizer {
    /// Calls `body` with each word of `scalars[range]`, in order.
    @inline(__always)
    static func forEachWord(_ scalars: UnsafeBufferPointer<UInt32>, _ range: Range<Int>,
                            _ body: (Range<Int>) -> Void) {
        let asciiKinds = Self.asciiKinds  // once, not a lazy-global check per scalar
        var wordStart = -1
        var index = range.lowerBound
        while index < range.upperBound {
            let scalar = scalars[index]
            let kind = scalar < 0x80 ? asciiKinds[Int(scalar)] : kind(of: scalar)
            if kind == .letter {
                if wordStart < 0 { wordStart = index }
            } else {
                if wordStart >= 0 { body(wordStart..<index); wordStart = -1 }
                if kind == .punctuation { body(index..<index + 1) }
            }
            index += 1
        }
        if wordStart >= 0 { body(wordStart..<range.upperBound) }
    }

    private enum Kind: UInt8 { case letter, whitespace, punctuation }

    private static let asciiKinds: [Kind] = (0..<128).map { kind(of: UInt32($0)) }

    private static func kind(of scalar: UInt32) -> Kind {
        let traits = UnicodeData.traits(scalar)
        if traits.contains(.whitespace) { return .whitespace }
        if traits.contains(.punctuation) { return .punctuation }
        return .letter
    }
}
