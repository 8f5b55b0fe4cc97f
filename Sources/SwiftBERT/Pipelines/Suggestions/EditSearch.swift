import Foundation

/// Letter keys by row, for telling which keys are neighbours: a slip to a neighbouring key is
/// the most common typo on a touch keyboard, so it costs less than any other substitution.
public struct KeyboardLayout: Sendable {
    /// Rows from the top, each staggered half a key right of the one above (as on QWERTY).
    public let rows: [String]
    private let neighbours: Set<UInt64>

    public init(rows: [String]) {
        self.rows = rows
        let grid = rows.map { Array($0.unicodeScalars) }
        var pairs = Set<UInt64>()
        for (r, row) in grid.enumerated() {
            for (c, key) in row.enumerated() {
                // Same row left and right; the row below is shifted right, so its keys c-1 and c touch key c.
                var touching: [(Int, Int)] = [(r, c - 1), (r, c + 1), (r + 1, c - 1), (r + 1, c)]
                touching += [(r - 1, c), (r - 1, c + 1)]
                for (rr, cc) in touching where grid.indices.contains(rr) && grid[rr].indices.contains(cc) {
                    pairs.insert(Self.pair(key.value, grid[rr][cc].value))
                }
            }
        }
        neighbours = pairs
    }

    public static let qwerty = KeyboardLayout(rows: ["qwertyuiop", "asdfghjkl", "zxcvbnm"])

    /// Whether two (lowercase) letters are on touching keys.
    public func areNeighbours(_ a: Unicode.Scalar, _ b: Unicode.Scalar) -> Bool {
        neighbours.contains(Self.pair(a.value, b.value))
    }

    func areNeighbours(_ a: UInt32, _ b: UInt32) -> Bool { neighbours.contains(Self.pair(a, b)) }

    private static func pair(_ a: UInt32, _ b: UInt32) -> UInt64 { UInt64(a) << 32 | UInt64(b) }
}

/// What each kind of typing error costs in the edit distance between the word meant and the
/// letters typed (Damerau-Levenshtein, optimal string alignment, with weights). One unit is
/// one ordinary error; the suggester turns a cost c into a likelihood `typoFactor`^c.
public struct TypingErrorModel: Sendable {
    /// A wrong letter.
    public var substitution: Float = 1
    /// A wrong letter on a key touching the right one.
    public var neighbourSubstitution: Float = 0.5
    /// Two neighbouring letters swapped ("teh").
    public var transposition: Float = 0.75
    /// A letter of the word left out.
    public var omission: Float = 1
    /// A letter typed that the word does not have.
    public var insertion: Float = 1
    /// The same key pressed twice ("helllo").
    public var repeatedInsertion: Float = 0.5
    public var layout: KeyboardLayout = .qwerty

    public init() {}

    /// Largest cost a correction may have for a typed word of `length` letters: none for one
    /// letter (every word is close), one error up to five letters, two from six on.
    public func maxCost(forLength length: Int) -> Float {
        length < 2 ? 0 : length <= 5 ? 1 : 2
    }

    func substitutionCost(meant: UInt32, typed: UInt32) -> Float {
        meant == typed ? 0 : layout.areNeighbours(meant, typed) ? neighbourSubstitution : substitution
    }
}

/// Words of a `WordIndex` within an edit cost of the typed letters, found by walking the trie
/// with one row of the edit-distance table per node and cutting every branch whose row is
/// already over the bound: only the prefixes near the typed letters are visited.
struct EditSearch {
    /// A set of words and the cost of typing the letters when meaning them.
    struct Match: Equatable {
        let words: Range<Int32>
        let cost: Float
    }

    let index: WordIndex
    let errors: TypingErrorModel
    let typed: [UInt32]
    let maxCost: Float
    /// Also match words whose beginning is near the typed letters ("univerd" for "university"),
    /// at the cost of that beginning: corrected completions.
    let matchesPrefixes: Bool

    /// rows[d] is the edit-cost row for the word prefix of length d on the current path.
    private var rows: [[Float]]
    private var path: [UInt32]
    private var matches: [Match] = []

    init(index: WordIndex, errors: TypingErrorModel, typed: [UInt32], maxCost: Float, matchesPrefixes: Bool) {
        (self.index, self.errors, self.typed, self.maxCost, self.matchesPrefixes) = (index, errors, typed, maxCost, matchesPrefixes)
        let n = typed.count
        rows = Array(repeating: Array(repeating: 0, count: n + 1), count: index.longestKey + 1)
        path = Array(repeating: 0, count: index.longestKey + 1)
        // Row 0: nothing of the word yet, so every typed letter is an extra one.
        for j in stride(from: 1, through: n, by: 1) { rows[0][j] = rows[0][j - 1] + insertionCost(at: j) }
    }

    /// Every word (or range of words) within `maxCost`, each with its cost.
    mutating func run() -> [Match] {
        guard !typed.isEmpty, !index.nodes.isEmpty else { return [] }
        let start = matchesPrefixes && rows[0][typed.count] <= maxCost ? rows[0][typed.count] : Float.infinity
        visit(WordIndex.root, depth: 0, bestPrefix: start)
        return matches
    }

    /// The typed letter j (1-based) is extra: cheaper when it repeats the letter before it.
    private func insertionCost(at j: Int) -> Float {
        j >= 2 && typed[j - 1] == typed[j - 2] ? errors.repeatedInsertion : errors.insertion
    }

    private mutating func visit(_ node: Int32, depth d: Int, bestPrefix: Float) {
        let n = typed.count
        // A swap reaches back two rows: a branch is dead only when this row is over the bound too.
        let swapReach = rows[d].min()! + errors.transposition
        for e in index.nodes[Int(node)].edges {
            let edge = index.edges[Int(e)]
            let c = edge.letter
            path[d + 1] = c
            // rows[d + 1] from rows[d] (and rows[d - 1] for a swap of the last two letters).
            var rowMin = rows[d][0] + errors.omission
            rows[d + 1][0] = rowMin
            for j in stride(from: 1, through: n, by: 1) {
                let t = typed[j - 1]
                var cost = rows[d][j] + errors.omission                         // the word's letter not typed
                cost = min(cost, rows[d + 1][j - 1] + insertionCost(at: j))     // a typed letter the word lacks
                cost = min(cost, rows[d][j - 1] + errors.substitutionCost(meant: c, typed: t))
                if j >= 2, d >= 1, c == typed[j - 2], path[d] == t, c != t {
                    cost = min(cost, rows[d - 1][j - 2] + errors.transposition)
                }
                rows[d + 1][j] = cost
                rowMin = min(rowMin, cost)
            }
            let full = rows[d + 1][n]
            let best = matchesPrefixes ? min(bestPrefix, full) : full
            let child = index.nodes[Int(edge.node)]
            let canImprove = rowMin <= maxCost || swapReach <= maxCost
            if !canImprove {
                // With prefixes, every word below costs what its best beginning on this path cost.
                if matchesPrefixes, best <= maxCost { matches.append(Match(words: child.words, cost: best)) }
                continue
            }
            if child.word >= 0, best <= maxCost { matches.append(Match(words: child.word..<child.word + 1, cost: best)) }
            visit(edge.node, depth: d + 1, bestPrefix: best)
        }
    }
}
