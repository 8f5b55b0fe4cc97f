import SwiftBERTKernels

/// A vocabulary entry with its probability.
package struct ScoredToken: Sendable, Equatable {
    package let id: Int32
    package let probability: Float
}

/// Softmax over a logits vector (max-subtracted, so it never overflows).
package func softmax(_ logits: [Float]) -> [Float] {
    var out = logits
    out.withUnsafeMutableBufferPointer { softmaxRows($0.baseAddress!, rows: 1, cols: $0.count, stride: $0.count) }
    return out
}

/// The indices of `scores`, best first; equal scores keep their input order, as Python's sorted
/// does (labels in label order, documents in the order given).
package func bestFirst(_ scores: [Float]) -> [Int] {
    scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
}

/// The k most probable entries, best first; ties keep the lower id first, as torch.topk does on CPU.
/// `allowed` filters candidates (for example whole words only) before ranking.
package func topK(_ probabilities: [Float], k: Int, where allowed: ((Int32) -> Bool)? = nil) -> [ScoredToken] {
    guard k > 0 else { return [] }
    // A bounded selection: keep the best k in a small sorted array instead of sorting 30k entries.
    var best: [ScoredToken] = []
    best.reserveCapacity(k + 1)
    for (i, p) in probabilities.enumerated() {
        if best.count == k, p <= best[k - 1].probability { continue }
        let id = Int32(i)
        if let allowed, !allowed(id) { continue }
        var slot = best.count
        while slot > 0, best[slot - 1].probability < p { slot -= 1 }
        best.insert(ScoredToken(id: id, probability: p), at: slot)
        if best.count > k { best.removeLast() }
    }
    return best
}
