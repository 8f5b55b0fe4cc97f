import Foundation

/// HF's Unigram model (SentencePiece): the Viterbi path of highest total piece score over each
/// word, unknown characters fused into one piece, written as <0xNN> byte pieces when the model
/// has byte fallback.
struct Unigram: Sendable {
    private let trie: ScalarTrie
    private let scores: [Double]
    private let unknownId: Int32?
    private let unknownScore: Double
    /// ids of <0x00>…<0xFF>, when byte fallback is on and all 256 exist.
    private let byteIds: [Int32]?

    /// HF's kUnkPenalty: an unknown character scores this much below the worst piece.
    private static let unknownPenalty = 10.0

    /// `pieces[id]` is (piece, score). nil when the vocabulary is too large for the trie.
    init?(pieces: [(String, Double)], unknownId: Int?, byteFallback: Bool) {
        var trie = ScalarTrie()
        let root = trie.addNode()
        var minimum = Double.infinity
        for (id, (piece, score)) in pieces.enumerated() {
            minimum = min(minimum, score)
            let scalars = Array(piece.unicodeScalars)
            if !scalars.isEmpty { trie.insert(scalars[...], id: Int32(id), from: root) }
        }
        guard trie.nodeCount < ScalarTrie.maxNodes else { return nil }
        trie.finish(directNodes: 1)
        self.trie = trie
        scores = pieces.map(\.1)
        self.unknownId = unknownId.map(Int32.init)
        unknownScore = (pieces.isEmpty ? 0 : minimum) - Self.unknownPenalty
        if byteFallback {
            var ids = Dictionary(pieces.enumerated().map { (ExactString($0.element.0), Int32($0.offset)) }, uniquingKeysWith: { _, last in last })
            var table: [Int32] = []
            for byte in 0..<256 {
                guard let id = ids[ExactString(String(format: "<0x%02X>", byte))] else { break }
                table.append(id)
            }
            ids = [:]
            byteIds = table.count == 256 ? table : nil
        } else {
            byteIds = nil
        }
    }

    private struct Best {
        var score = 0.0
        var start = -1
        var id: Int32 = 0
    }

    func tokenize(_ text: NormalizedText, _ word: Range<Int>, into sink: inout TokenSink) {
        guard !word.isEmpty else { return }
        let n = word.count
        var best = [Best](repeating: Best(), count: n + 1)
        text.scalars.withUnsafeBufferPointer { scalars in
            for start in 0..<n {
                let base = best[start].score
                var node: Int32 = 0
                var hasSingle = false
                var end = start
                while end < n {
                    node = trie.child(of: node, scalars[word.lowerBound + end])
                    if node < 0 { break }
                    end += 1
                    let id = trie.tokenId(node)
                    guard id >= 0 else { continue }
                    let candidate = scores[Int(id)] + base
                    if best[end].start < 0 || candidate > best[end].score {
                        best[end] = Best(score: candidate, start: start, id: id)
                    }
                    if end == start + 1 { hasSingle = true }
                }
                if !hasSingle {
                    let candidate = unknownScore + base
                    if best[start + 1].start < 0 || candidate > best[start + 1].score {
                        best[start + 1] = Best(score: candidate, start: start, id: unknownId ?? -1)
                    }
                }
            }
        }
        // Back from the end; consecutive unknown pieces are fused.
        var pieces: [(start: Int, end: Int, id: Int32)] = []
        var end = n
        while end > 0 {
            let node = best[end]
            let isUnknown = unknownId != nil && node.id == unknownId
            if isUnknown, let last = pieces.last, last.id == node.id {
                pieces[pieces.count - 1].start = node.start
            } else {
                pieces.append((node.start, end, node.id))
            }
            end = node.start
        }
        for piece in pieces.reversed() {
            let span = text.spans[word.lowerBound + piece.start].start..<text.spans[word.lowerBound + piece.end - 1].end
            guard piece.id >= 0 else { continue }  // no unknown piece in the model: HF fails, we drop
            guard piece.id == unknownId else {
                sink.appendModelToken(piece.id, span)
                continue
            }
            // An unknown run: its own piece if the fused text is one, else bytes, else <unk>.
            let scalars = text.scalars[(word.lowerBound + piece.start)..<(word.lowerBound + piece.end)]
            if let id = pieceId(scalars), id != unknownId {
                sink.appendModelToken(id, span)
            } else if let byteIds {
                var bytes: [UInt8] = []
                for scalar in scalars { PrecompiledCharsmap.appendUTF8(scalar, to: &bytes) }
                for byte in bytes { sink.appendModelToken(byteIds[Int(byte)], span) }
            } else {
                var view = String.UnicodeScalarView()
                for value in scalars { view.append(Unicode.Scalar(value) ?? "\u{FFFD}") }
                sink.append(piece.id, token: String(view), span)
            }
        }
    }

    private func pieceId(_ scalars: ArraySlice<UInt32>) -> Int32? {
        var node: Int32 = 0
        for scalar in scalars {
            node = trie.child(of: node, scalar)
            if node < 0 { return nil }
        }
        let id = trie.tokenId(node)
        return id >= 0 ? id : nil
    }
}
