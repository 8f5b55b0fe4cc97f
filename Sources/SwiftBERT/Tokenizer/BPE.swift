import Foundation

/// HF's BPE model: each word starts as its characters, then the adjacent pair with the best
/// (lowest) merge rank is merged, leftmost first, until no pair has a merge.
struct BPE: Sendable {
    /// (left id, right id) → (rank, merged id).
    private let merges: [UInt64: (rank: Int32, id: Int32)]
    private let characterIds: [UInt32: Int32]
    private let vocabulary: [String: Int32]
    private let unknownId: Int32?
    private let fuseUnknown: Bool
    private let byteIds: [Int32]?
    private let ignoreMerges: Bool

    struct MergeError: Error { let reason: String }

    init(vocabulary: [String: Int32], merges pairs: [(String, String)], unknownToken: String?,
         fuseUnknown: Bool, byteFallback: Bool, ignoreMerges: Bool) throws {
        var merges: [UInt64: (rank: Int32, id: Int32)] = [:]
        merges.reserveCapacity(pairs.count)
        for (rank, (left, right)) in pairs.enumerated() {
            guard let a = vocabulary[left], let b = vocabulary[right] else {
                throw MergeError(reason: "merge \(rank) (\(printable(left)) \(printable(right))) names a token that is not in the vocabulary")
            }
            guard let merged = vocabulary[left + right] else {
                throw MergeError(reason: "merge \(rank) gives \(printable(left + right)), which is not in the vocabulary")
            }
            let key = Self.key(a, b)
            if merges[key] == nil { merges[key] = (Int32(rank), merged) }
        }
        self.merges = merges
        var characters: [UInt32: Int32] = [:]
        for (token, id) in vocabulary {
            let scalars = token.unicodeScalars
            if scalars.count == 1, let scalar = scalars.first { characters[scalar.value] = id }
        }
        characterIds = characters
        self.vocabulary = vocabulary
        unknownId = unknownToken.flatMap { vocabulary[$0] }
        self.fuseUnknown = fuseUnknown
        self.ignoreMerges = ignoreMerges
        if byteFallback {
            let table = (0..<256).compactMap { vocabulary[String(format: "<0x%02X>", $0)] }
            byteIds = table.count == 256 ? table : nil
        } else {
            byteIds = nil
        }
    }

    @inline(__always)
    private static func key(_ a: Int32, _ b: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: a)) << 32 | UInt64(UInt32(bitPattern: b))
    }

    private struct Symbol {
        var id: Int32
        var start: Int
        var end: Int
    }

    func tokenize(_ text: NormalizedText, _ word: Range<Int>, into sink: inout TokenSink) {
        guard !word.isEmpty else { return }
        func span(_ start: Int, _ end: Int) -> Range<Int> {
            text.spans[start].start..<text.spans[end - 1].end
        }
        if ignoreMerges, let id = vocabulary[Self.string(text.scalars[word])] {
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
        // Merge the best-ranked pair, leftmost on ties, until none is left.
        while symbols.count > 1 {
            var bestRank = Int32.max, bestIndex = -1, bestId: Int32 = 0
            for k in 0..<(symbols.count - 1) {
                if let merge = merges[Self.key(symbols[k].id, symbols[k + 1].id)], merge.rank < bestRank {
                    bestRank = merge.rank
                    bestIndex = k
                    bestId = merge.id
                }
            }
            guard bestIndex >= 0 else { break }
            symbols[bestIndex] = Symbol(id: bestId, start: symbols[bestIndex].start, end: symbols[bestIndex + 1].end)
            symbols.remove(at: bestIndex + 1)
        }
        for symbol in symbols {
            sink.appendModelToken(symbol.id, span(symbol.start, symbol.end))
        }
    }

    private static func string(_ scalars: ArraySlice<UInt32>) -> String {
        var view = String.UnicodeScalarView()
        for value in scalars { view.append(Unicode.Scalar(value) ?? "\u{FFFD}") }
        return String(view)
    }
}
