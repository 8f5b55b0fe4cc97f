/// A token string compared and hashed by its Unicode scalars (its UTF-8 bytes), as HF's Rust
/// tokenizers compare pieces. Swift's String == and hashing use canonical equivalence, under which
/// "\u{0622}" and "\u{0627}\u{0653}", two pieces with two ids in EmbeddingGemma's vocabulary, are
/// one key. Every vocabulary and added-token lookup keys by this.
struct ExactString: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    let string: String

    init(_ string: String) { self.string = string }
    init(stringLiteral value: String) { string = value }

    var description: String { string }

    static func == (a: ExactString, b: ExactString) -> Bool {
        var x = a.string, y = b.string  // withUTF8 is mutating: it may make a foreign string native
        return x.withUTF8 { p in y.withUTF8 { q in p.count == q.count && p.elementsEqual(q) } }
    }

    func hash(into hasher: inout Hasher) {
        var copy = string
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
