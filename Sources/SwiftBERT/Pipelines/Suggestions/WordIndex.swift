import Foundation

/// The words a suggester can offer, built once: every whole-word vocabulary entry plus the user's
/// own words, under their folded spelling (lowercase, no accents). A trie over the sorted words:
/// each node's subtree is one contiguous range of words, so the completions of a prefix are a
/// range found in as many steps as the prefix has letters, and the edit-distance search
/// (`EditSearch`) walks each shared prefix once instead of comparing against every word.
struct WordIndex {
    /// A word that the index can offer.
    struct Word {
        /// Folded spelling, as Unicode scalar values: the trie's path to the word.
        let key: [UInt32]
        /// How to show the word when the context does not choose: the user's spelling, else the
        /// vocabulary's (the most probable case variant wins at suggestion time, see `display`).
        var spelling: String
        /// Vocabulary entries spelling this word: case and accent variants of a cased vocabulary
        /// ("The", "the"), whose probabilities add up. For a user's word outside the vocabulary,
        /// its first word piece.
        var ids: [Int32]
        /// Multiplies the summed probability: 1 for vocabulary words; for a user's word of n word
        /// pieces, `pieceFactor`^(n-1), since its first piece's probability is an upper bound.
        var weight: Float
        var isUserWord: Bool
        /// Whether `ids` are whole-word vocabulary entries (rather than a user word's first piece).
        var inVocabulary: Bool
        /// How often the user writes the word, when a word list says (0: not known).
        var count: Int = 0

        /// One word from two entries with the same key: variants' probabilities add up, the
        /// user's spelling wins, and vocabulary entries beat a first-piece estimate.
        func merged(with other: Word) -> Word {
            var word = self
            if other.isUserWord {
                word.spelling = other.spelling
                word.isUserWord = true
                word.count = word.count.addingSaturating(other.count)
            }
            if other.inVocabulary {
                word.ids = inVocabulary ? ids + other.ids : other.ids
                word.weight = 1
                word.inVocabulary = true
            }
            return word
        }
    }

    struct Node {
        /// Words in this subtree, as indices into `words`.
        var words: Range<Int32>
        /// The word that ends at this node, or -1.
        var word: Int32
        /// Children, as a range of `edges`, sorted by letter.
        var edges: Range<Int32>
    }

    struct Edge {
        let letter: UInt32
        var node: Int32
    }

    let words: [Word]
    // What scoring reads for every candidate, flat so a scan over thousands of words stays in cache.
    /// Vocabulary ids of word i: scoreIds[idStart[i]..<idStart[i + 1]].
    private(set) var idStart: [Int32] = [0]
    private(set) var scoreIds: [Int32] = []
    private(set) var weights: [Float] = []
    /// Each word's share of the word list's counts (0 for words without a count).
    private(set) var priors: [Float] = []
    /// Whether any word has a count, so that scores mix in `priors`.
    let hasPriors: Bool
    private(set) var nodes: [Node] = []
    private(set) var edges: [Edge] = []
    /// The longest key: the depth of the trie.
    let longestKey: Int

    /// Words are merged by key (case variants, user words that are vocabulary words), then sorted.
    init(words unsorted: [Word]) {
        var byKey: [[UInt32]: Word] = [:]
        for word in unsorted where !word.key.isEmpty {
            byKey[word.key] = byKey[word.key].map { $0.merged(with: word) } ?? word
        }
        words = byKey.values.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        longestKey = words.map(\.key.count).max() ?? 0
        let total = words.reduce(0) { $0.addingSaturating($1.count) }
        hasPriors = total > 0
        for word in words {
            scoreIds += word.ids
            idStart.append(Int32(scoreIds.count))
            weights.append(word.weight)
            priors.append(total > 0 ? Float(Double(word.count) / Double(total)) : 0)
        }
        _ = build(0..<words.count, depth: 0)
    }

    /// Builds the subtree of `range` (words sharing their first `depth` letters) and returns its node.
    private mutating func build(_ range: Range<Int>, depth: Int) -> Int32 {
        let node = Int32(nodes.count)
        nodes.append(Node(words: Int32(range.lowerBound)..<Int32(range.upperBound), word: -1, edges: 0..<0))
        var i = range.lowerBound
        // Sorted order puts a word before every longer word it is a prefix of.
        if i < range.upperBound, words[i].key.count == depth {
            nodes[Int(node)].word = Int32(i)
            i += 1
        }
        var groups: [(letter: UInt32, range: Range<Int>)] = []
        while i < range.upperBound {
            let letter = words[i].key[depth]
            var j = i + 1
            while j < range.upperBound, words[j].key[depth] == letter { j += 1 }
            groups.append((letter, i..<j))
            i = j
        }
        let first = Int32(edges.count)
        edges += groups.map { Edge(letter: $0.letter, node: -1) }
        nodes[Int(node)].edges = first..<first + Int32(groups.count)
        for (k, group) in groups.enumerated() {
            edges[Int(first) + k].node = build(group.range, depth: depth + 1)
        }
        return node
    }

    static let root: Int32 = 0

    /// The child of `node` along `letter` (binary search: the root of a multilingual vocabulary
    /// has thousands of children).
    func child(of node: Int32, _ letter: UInt32) -> Int32? {
        var lo = Int(nodes[Int(node)].edges.lowerBound), hi = Int(nodes[Int(node)].edges.upperBound)
        while lo < hi {
            let mid = (lo + hi) / 2
            if edges[mid].letter < letter { lo = mid + 1 } else { hi = mid }
        }
        return lo < nodes[Int(node)].edges.upperBound && edges[lo].letter == letter ? edges[lo].node : nil
    }

    /// The node reached by `key`, nil when no word starts with it.
    func node(for key: [UInt32]) -> Int32? {
        var node = Self.root
        for letter in key {
            guard let next = child(of: node, letter) else { return nil }
            node = next
        }
        return nodes.isEmpty ? nil : node
    }

    /// Words starting with the folded `key`.
    func completions(of key: [UInt32]) -> Range<Int32> {
        node(for: key).map { nodes[Int($0)].words } ?? 0..<0
    }

    /// The word spelt exactly `key`, if any.
    func word(spelled key: [UInt32]) -> Int32? {
        node(for: key).flatMap { nodes[Int($0)].word >= 0 ? nodes[Int($0)].word : nil }
    }

    var count: Int { words.count }
}

extension WordIndex.Word {
    static func key(_ folded: String) -> [UInt32] { folded.unicodeScalars.map(\.value) }

    /// The key of any spelling: folded as `foldedWord` does, without building a String for ASCII
    /// (the recent-word count looks up hundreds of words per context).
    static func key<S: StringProtocol>(folding word: S) -> [UInt32] {
        guard word.utf8.allSatisfy({ $0 < 0x80 }) else { return key(foldedWord(word)) }
        return word.utf8.map { UInt32($0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0) }
    }
}

extension Int {
    /// self + other, or Int.max where that overflows: word counts from a user's file may be
    /// anything, and their sum only sets the priors' scale.
    func addingSaturating(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
