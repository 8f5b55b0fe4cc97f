/// The WordPiece model: greedy longest-match-first over a vocabulary, with continuation pieces.
///
/// Lookups walk a trie of Unicode scalars, so the longest vocabulary entry at a position is
/// found in one pass over the word, without building substrings or hashing them.
struct WordPiece: Sendable {
    let unknownId: Int32
    let maxInputCharsPerWord: Int
    private let trie: ScalarTrie
    private let wordRoot: Int32
    private let continuationRoot: Int32

    /// `vocabulary` maps each token to its id; entries starting with `continuationPrefix`
    /// ("##") are the pieces that may follow another piece of the same word.
    /// nil if the vocabulary is too large for the trie (millions of tokens).
    init?(vocabulary: [ExactString: Int32], unknownId: Int32, continuationPrefix: String, maxInputCharsPerWord: Int) {
        var trie = ScalarTrie()
        wordRoot = trie.addNode()
        continuationRoot = trie.addNode()
        let prefix = Array(continuationPrefix.unicodeScalars)
        for (token, id) in vocabulary {
            let scalars = Array(token.string.unicodeScalars)
            if !prefix.isEmpty, scalars.starts(with: prefix) {
                trie.insert(scalars[prefix.count...], id: id, from: continuationRoot)
            }
            // Whole-word entries: an entry like "##" itself can also start a word.
            trie.insert(scalars[...], id: id, from: wordRoot)
        }
        guard trie.nodeCount < ScalarTrie.maxNodes else { return nil }
        trie.finish(directNodes: 2)
        self.trie = trie
        self.unknownId = unknownId
        self.maxInputCharsPerWord = maxInputCharsPerWord
    }

    /// Appends the pieces of one pre-tokenized word (`text.scalars[word]`), or a single
    /// unknown token for the whole word if it is too long or some part matches nothing.
    func tokenize(_ text: NormalizedText, _ word: Range<Int>, into sink: inout TokenSink) {
        guard !word.isEmpty else { return }
        let wordSpan = text.spans[word.lowerBound].start..<text.spans[word.upperBound - 1].end  // HF: (0, word.len)
        if word.count > maxInputCharsPerWord {
            sink.appendModelToken(unknownId, wordSpan)
            return
        }
        let mark = sink.count
        var start = word.lowerBound
        text.scalars.withUnsafeBufferPointer { scalars in
            while start < word.upperBound {
                var node = start == word.lowerBound ? wordRoot : continuationRoot
                var bestId: Int32 = -1
                var bestEnd = start
                var position = start
                while position < word.upperBound {
                    node = trie.child(of: node, scalars[position])
                    if node < 0 { break }
                    position += 1
                    let id = trie.tokenId(node)
                    if id >= 0 { bestId = id; bestEnd = position }
                }
                if bestId < 0 {
                    sink.removeLast(sink.count - mark)
                    sink.appendModelToken(unknownId, wordSpan)
                    return
                }
                sink.appendModelToken(bestId, text.spans[start].start..<text.spans[bestEnd - 1].end)
                start = bestEnd
            }
        }
    }
}

/// A trie over Unicode scalars. Edges live in one open-addressing hash table of 8-byte
/// entries, (node, scalar) key and target packed together so a step touches one slot; the
/// ASCII edges out of the two roots, taken by almost every word, are direct tables.
struct ScalarTrie: Sendable {
    /// Node ids, scalars and targets each fit in 21 bits: [node | scalar | target] in a UInt64.
    static let maxNodes = 1 << 21
    private static let fieldMask: UInt64 = (1 << 21) - 1
    private static let emptyEntry = UInt64.max

    private var tokenIds: [Int32] = []
    private var entries: [UInt64] = []
    private var entryMask = 0
    /// node * 128 + ASCII scalar → child, for nodes below `directNodeCount`.
    private var directEdges: [Int32] = []
    private var directNodeCount: Int32 = 0
    private var edgeLookup: [UInt64: Int32] = [:]

    var nodeCount: Int { tokenIds.count }

    mutating func addNode() -> Int32 {
        tokenIds.append(-1)
        return Int32(tokenIds.count - 1)
    }

    mutating func insert(_ scalars: ArraySlice<Unicode.Scalar>, id: Int32, from root: Int32) {
        var node = root
        for scalar in scalars {
            let key = Self.key(node, scalar.value)
            if let next = edgeLookup[key] {
                node = next
            } else {
                let next = addNode()
                edgeLookup[key] = next
                node = next
            }
        }
        tokenIds[Int(node)] = id
    }

    /// Builds the lookup tables; call once after the last insert, with fewer than `maxNodes`
    /// nodes. `directNodes` is how many nodes (from 0: the roots) get a direct ASCII table.
    mutating func finish(directNodes: Int32) {
        var capacity = 16
        while capacity < edgeLookup.count * 2 { capacity *= 2 }
        entries = Array(repeating: Self.emptyEntry, count: capacity)
        entryMask = capacity - 1
        directNodeCount = directNodes
        directEdges = Array(repeating: -1, count: Int(directNodes) * 128)
        for (key, target) in edgeLookup {
            var slot = Self.slot(key, entryMask)
            while entries[slot] != Self.emptyEntry { slot = (slot + 1) & entryMask }
            entries[slot] = key << 21 | UInt64(target)
            let node = Int32(truncatingIfNeeded: key >> 21), scalar = Int(key & Self.fieldMask)
            if node < directNodes && scalar < 128 { directEdges[Int(node) * 128 + scalar] = target }
        }
        edgeLookup = [:]
    }

    @inline(__always)
    func tokenId(_ node: Int32) -> Int32 { tokenIds[Int(node)] }

    /// The node reached from `node` by `scalar`, or -1.
    @inline(__always)
    func child(of node: Int32, _ scalar: UInt32) -> Int32 {
        if scalar < 128 && node < directNodeCount { return directEdges[Int(node) &* 128 &+ Int(scalar)] }
        let key = Self.key(node, scalar)
        var slot = Self.slot(key, entryMask)
        while true {
            let entry = entries[slot]
            if entry >> 21 == key { return Int32(truncatingIfNeeded: entry & Self.fieldMask) }
            if entry == Self.emptyEntry { return -1 }
            slot = (slot &+ 1) & entryMask
        }
    }

    @inline(__always)
    private static func key(_ node: Int32, _ scalar: UInt32) -> UInt64 {
        UInt64(UInt32(bitPattern: node)) << 21 | UInt64(scalar)
    }

    @inline(__always)
    private static func slot(_ key: UInt64, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
    }
}
