import Foundation

/// HF's BPE model: each word starts as its characters, then the adjacent pair with the best
/// (lowest) merge rank is merged, leftmost first, until no pair has a merge.
struct BPE: Sendable {
    /// (left id, right id) → (rank, merged id).
    private let merges: [UInt64: (rank: Int32, id: Int32)]
    private let characterIds: [UInt32: Int32]
    private let vocabulary: [ExactString: Int32]
    private let unknownId: Int32?
    private let fuseUnknown: Bool
    private let byteIds: [Int32]?
    private let ignoreMerges: Bool

    struct MergeError: Error { let reason: String }

    init(vocabulary: [ExactString: Int32], merges pairs: [(String, String)], unknownToken: String?,
         fuseUnknown: Bool, byteFallback: Bool, ignoreMerges: Bool) throws {
        var merges: [UInt64: (rank: Int32, id: Int32)] = [:]
        merges.reserveCapacity(pairs.count)
        for (rank, (left, right)) in pairs.enumerated() {
            guard let a = vocabulary[ExactString(left)], let b = vocabulary[ExactString(right)] else {
                throw MergeError(reason: "merge \(rank) (\(printable(left)) \(printable(right))) names a token that is not in the vocabulary")
            }
            guard let merged = vocabulary[ExactString(left + right)] else {
                throw MergeError(reason: "merge \(rank) gives \(printable(left + right)), which is not in the vocabulary")
            }
            let key = Self.key(a, b)
            if merges[key] == nil { merges[key] = (Int32(rank), merged) }
        }
        self.merges = merges
        var characters: [UInt32: Int32] = [:]
        for (token, id) in vocabulary {
            let scalars = token.string.unicodeScalars
            if scalars.count == 1, let scalar = scalars.first { characters[scalar.value] = id }
        }
        characterIds = characters
        self.vocabulary = vocabulary
        unknownId = unknownToken.flatMap { vocabulary[ExactString($0)] }
        self.fuseUnknown = fuseUnknown
        self.ignoreMerges = ignoreMerges
        if byteFallback {
            let table = (0..<256).compactMap { vocabulary[ExactString(String(format: "<0x%02X>", $0))] }
            byteIds = table.count == 256 ? table : nil
        } else {
            byteIds = nil
        }
    }

    @inline(__always)
    private static func key(_ a: Int32, _ b: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: a)) << 32 | UInt64(UInt32(bitPattern: b))
    }

    /// A symbol of the word being merged. The symbols form a doubly linked list in text order,
    /// so a merge unlinks its right symbol in O(1); `previous`/`next` are -1 at the ends.
    private struct Symbol {
        var id: Int32
        var start: Int
        var end: Int
        var previous = -1
        var next = -1
        var isMerged = false
    }

    func tokenize(_ text: NormalizedText, _ word: Range<Int>, into sink: inout TokenSink) {
        guard !word.isEmpty else { return }
        func span(_ start: Int, _ end: Int) -> Range<Int> {
            text.spans[start].start..<text.spans[end - 1].end
        }
        if ignoreMerges, let id = vocabulary[ExactString(Self.string(text.scalars[word]))] {
            sink.appendModelToken(id, span(word.lowerBound, word.upperBound))
            return
        }
        var symbols: [Symbol] = []
        symbols.reserveCapacity(word.count)
        for i in word {
            let scalar = text.scalars[i]
            if let id = characterIds[scalar] {
                symbols.append(Symbol(id: id, start: i, end: i + 1))
            } else if let byteIds {
                var bytes: [UInt8] = []
                PrecompiledCharsmap.appendUTF8(scalar, to: &bytes)
                for byte in bytes { symbols.append(Symbol(id: byteIds[Int(byte)], start: i, end: i + 1)) }
            } else if let unknownId {
                if fuseUnknown, let last = symbols.last, last.id == unknownId, last.end == i {
                    symbols[symbols.count - 1].end = i + 1
                } else {
                    symbols.append(Symbol(id: unknownId, start: i, end: i + 1))
                }
            }  // no unknown token: HF drops the character
        }
        mergeAll(&symbols)
        var k = symbols.isEmpty ? -1 : 0  // the first symbol is never merged away
        while k >= 0 {
            sink.appendModelToken(symbols[k].id, span(symbols[k].start, symbols[k].end))
            k = symbols[k].next
        }
    }

    /// Merges the best-ranked pair, leftmost on ties, until none is left: HF's word.rs merge_all.
    /// A rescan of the word per merge is quadratic, and one word is as long as the text makes it
    /// (issue 44: 25,000 combining marks took 6.5 s). Instead the candidate pairs wait in a
    /// min-heap keyed by (rank, position of the left symbol); an entry is checked against the
    /// list when it comes out, since merges around it may have changed its pair. O(n log n).
    private func mergeAll(_ symbols: inout [Symbol]) {
        guard symbols.count > 1 else { return }
        for k in symbols.indices {
            symbols[k].previous = k - 1
            symbols[k].next = k + 1 < symbols.count ? k + 1 : -1
        }
        var queue = MergeQueue()
        queue.reserveCapacity(symbols.count)
        /// The rank of the pair starting at `left`, if it has a merge.
        func pairRank(_ left: Int) -> (rank: Int32, id: Int32)? {
            let right = symbols[left].next
            guard right >= 0 else { return nil }
            return merges[Self.key(symbols[left].id, symbols[right].id)]
        }
        func enqueue(_ left: Int) {
            if let merge = pairRank(left) { queue.push(rank: merge.rank, position: left) }
        }
        for k in symbols.indices { enqueue(k) }
        while let candidate = queue.pop() {
            let left = candidate.position
            // Stale: the left symbol was merged into its neighbour, or its pair is another now.
            // A pair's rank names the pair, so an equal rank means the same pair.
            guard !symbols[left].isMerged, let merge = pairRank(left), merge.rank == candidate.rank else { continue }
            let right = symbols[left].next, after = symbols[right].next
            symbols[left].id = merge.id
            symbols[left].end = symbols[right].end
            symbols[left].next = after
            if after >= 0 { symbols[after].previous = left }
            symbols[right].isMerged = true
            if symbols[left].previous >= 0 { enqueue(symbols[left].previous) }
            enqueue(left)
        }
    }

    private static func string(_ scalars: ArraySlice<UInt32>) -> String {
        var view = String.UnicodeScalarView()
        for value in scalars { view.append(Unicode.Scalar(value) ?? "\u{FFFD}") }
        return String(view)
    }
}

/// A binary min-heap of merge candidates, (rank, position) packed in one UInt64 so that the
/// integer order is the merge order: best rank first, then leftmost. A position fits in 32 bits:
/// a word of 2^32 symbols would need 160 GB for them.
private struct MergeQueue {
    private var entries: [UInt64] = []

    mutating func reserveCapacity(_ capacity: Int) { entries.reserveCapacity(capacity) }

    mutating func push(rank: Int32, position: Int) {
        entries.append(UInt64(UInt32(bitPattern: rank)) << 32 | UInt64(UInt32(truncatingIfNeeded: position)))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child] < entries[parent] else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (rank: Int32, position: Int)? {
        guard let top = entries.first else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < entries.count && entries[left] < entries[smallest] { smallest = left }
                if right < entries.count && entries[right] < entries[smallest] { smallest = right }
                guard smallest != parent else { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return (Int32(bitPattern: UInt32(top >> 32)), Int(top & 0xFFFF_FFFF))
    }
}
