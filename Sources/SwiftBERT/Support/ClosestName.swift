/// The one of `names` that `given` most likely misspells, for a "did you mean" in an error: the
/// same name in other case (`all-minilm-l6-v2`), else the only name within two edits (a letter
/// dropped, added, changed or swapped with its neighbour). Nil when none is close or two are.
package func closestName(to given: String, among names: [String]) -> String? {
    let lowered = given.lowercased()
    if let same = names.first(where: { $0.lowercased() == lowered }) { return same }
    let distances = names.map { (name: $0, distance: editDistance(lowered, $0.lowercased(), atMost: 2)) }
    let close = distances.filter { $0.distance <= 2 }
    guard let best = close.min(by: { $0.distance < $1.distance }),
          close.filter({ $0.distance == best.distance }).count == 1 else { return nil }
    return best.name
}

/// Optimal string alignment distance (Levenshtein with adjacent transpositions) over Unicode
/// scalars, or `limit + 1` once it is certain to exceed `limit` (names differing in length by
/// more, or every cell of a row above it), so long names cost little.
func editDistance(_ a: String, _ b: String, atMost limit: Int) -> Int {
    let a = Array(a.unicodeScalars), b = Array(b.unicodeScalars)
    guard abs(a.count - b.count) <= limit else { return limit + 1 }
    if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
    var previous2 = [Int](repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        var rowMinimum = i
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            var d = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d = min(d, previous2[j - 2] + 1) }
            current[j] = d
            rowMinimum = min(rowMinimum, d)
        }
        if rowMinimum > limit { return limit + 1 }
        (previous2, previous, current) = (previous, current, previous2)
    }
    return previous[b.count]
}
