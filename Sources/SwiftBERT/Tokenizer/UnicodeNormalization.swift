import Foundation

/// HF's NFC, NFKC and NFKD normalizers, as `unicode-normalization-alignments` computes them: each
/// output scalar with a "change" (0: replaces the next input scalar, +1: inserted, -n: replaces the
/// next input scalar and removes n more), which `NormalizedText.transform` turns into spans.
///
/// The algorithm is the crate's, step for step, so its alignment quirks come out the same:
/// - decomposition: every input scalar is decomposed (canonically or for compatibility, fully); the
///   first scalar of a decomposition gets change 0, the others +1; runs of combining marks are then
///   stably sorted by canonical combining class, each scalar keeping its change;
/// - composition (NFC, NFKC): the crate's recomposition state machine; a composite takes change
///   `starter + mark - 1` (so "e" 0 + U+0301 +1 gives "é" 0, and "e" 0 + a separate U+0301 0 gives -1).
///
/// Tables are Unicode 9.0, as pinned by the crate (`unicode-normalization` 0.1.x): scalars assigned
/// later neither decompose nor compose and have combining class 0. Decompositions never change once
/// assigned, so Foundation's (newer) normalization, restricted to scalars of age ≤ 9.0, gives them.
enum UnicodeNormalization {
    enum Form: Sendable {
        case nfc, nfkc, nfkd

        var compatibility: Bool { self != .nfc }
        var composes: Bool { self != .nfkd }
    }

    /// Scalars below this never change under any form (and never compose with what follows).
    static let unchangedBelow: UInt32 = 0xA0

    /// The normalized scalars of `scalars` with the crate's changes.
    static func changes(_ scalars: [UInt32], form: Form) -> [(UInt32, Int)] {
        let decomposed = decompose(scalars, compatibility: form.compatibility)
        return form.composes ? recompose(decomposed) : decomposed
    }

    /// The crate's Decompositions iterator.
    static func decompose(_ scalars: [UInt32], compatibility: Bool) -> [(UInt32, Int)] {
        var out: [(UInt32, Int)] = []
        out.reserveCapacity(scalars.count + 8)
        // Scalars not yet emitted: (class, scalar, change); the pending run of marks starts at `readyEnd`.
        var buffer: [(UInt8, UInt32, Int)] = []
        var sortScratch: [(UInt8, UInt32, Int)] = []
        var parts: [UInt32] = []
        func sortPending() {
            // Stable sort by combining class of the pending block (its starter, class 0, stays
            // first), then everything is ready.
            CanonicalOrdering.sort(&buffer, scratch: &sortScratch) { $0.0 }
            for (_, scalar, change) in buffer { out.append((scalar, change)) }
            buffer.removeAll(keepingCapacity: true)
        }
        func push(_ scalar: UInt32, first: Bool) {
            let combiningClass = scalar < 0x300 ? 0 : UnicodeData.traits(scalar).combiningClass
            if combiningClass == 0 { sortPending() }
            buffer.append((combiningClass, scalar, first ? 0 : 1))
        }
        for scalar in scalars {
            decomposition(scalar, compatibility: compatibility, into: &parts)
            if parts.isEmpty {
                push(scalar, first: true)
            } else {
                for (i, part) in parts.enumerated() { push(part, first: i == 0) }
            }
        }
        sortPending()
        return out
    }

    /// The crate's Recompositions iterator over a decomposition.
    static func recompose(_ input: [(UInt32, Int)]) -> [(UInt32, Int)] {
        var out: [(UInt32, Int)] = []
        out.reserveCapacity(input.count)
        var composee: (UInt32, Int)?
        var lastClass: UInt8?
        var buffer: [(UInt32, Int)] = []
        for (scalar, change) in input {
            let combiningClass = scalar < 0x300 ? 0 : UnicodeData.traits(scalar).combiningClass
            guard let k = composee else {
                if combiningClass != 0 {
                    out.append((scalar, change))
                } else {
                    composee = (scalar, change)
                }
                continue
            }
            if let last = lastClass {
                if last >= combiningClass {
                    // Blocked from the composee.
                    if combiningClass == 0 {
                        out.append(k)
                        out.append(contentsOf: buffer)
                        buffer.removeAll(keepingCapacity: true)
                        composee = (scalar, change)
                        lastClass = nil
                    } else {
                        buffer.append((scalar, change))
                        lastClass = combiningClass
                    }
                    continue
                }
                if let composed = compose(k.0, scalar) {
                    composee = (composed, k.1 + change - 1)
                } else {
                    buffer.append((scalar, change))
                    lastClass = combiningClass
                }
            } else {
                if let composed = compose(k.0, scalar) {
                    composee = (composed, k.1 + change - 1)
                } else if combiningClass == 0 {
                    out.append(k)
                    composee = (scalar, change)
                } else {
                    buffer.append((scalar, change))
                    lastClass = combiningClass
                }
            }
        }
        if let k = composee { out.append(k) }
        out.append(contentsOf: buffer)
        return out
    }

    /// The full decomposition of `scalar` (empty when it has none): canonical, or compatibility.
    static func decomposition(_ scalar: UInt32, compatibility: Bool, into out: inout [UInt32]) {
        out.removeAll(keepingCapacity: true)
        if scalar < (compatibility ? 0xA0 : 0xC0) { return }
        if compatibility {
            if (0xAC00...0xD7A3).contains(scalar) {
                UnicodeData.decomposition(scalar, into: &out)
            } else if let parts = compatibilityDecompositions[scalar] {
                out.append(contentsOf: parts)
            }
        } else if UnicodeData.traits(scalar).contains(.decomposes) {
            UnicodeData.decomposition(scalar, into: &out)
        }
    }

    /// The primary composite of `first` and `second` (Unicode 9.0), Hangul included.
    static func compose(_ first: UInt32, _ second: UInt32) -> UInt32? {
        // Hangul: L + V, then LV + T.
        if (0x1100...0x1112).contains(first) && (0x1161...0x1175).contains(second) {
            return 0xAC00 + ((first - 0x1100) * 21 + (second - 0x1161)) * 28
        }
        if (0xAC00...0xD7A3).contains(first) && (first - 0xAC00) % 28 == 0 && (0x11A8...0x11C2).contains(second) {
            return first + (second - 0x11A7)
        }
        guard second >= 0x300 else { return nil }
        return compositions[UInt64(first) << 32 | UInt64(second)]
    }

    /// Scalars of age ≤ 9.0 that may have a compatibility decomposition (all canonical ones included).
    private static let decomposableBlocks: [ClosedRange<UInt32>] = [
        0x00A0...0x33FF, 0xA000...0xABFF, 0xF900...0xFFEF, 0x10000...0x1F2FF, 0x2F800...0x2FA1F,
    ]

    /// Full compatibility decompositions of Unicode 9.0 scalars, Hangul syllables aside.
    private static let compatibilityDecompositions: [UInt32: [UInt32]] = {
        var table: [UInt32: [UInt32]] = [:]
        for value in decomposableBlocks.joined() {
            guard let scalar = Unicode.Scalar(value), let age = scalar.properties.age, age.major <= 9 else { continue }
            if (0x3400...0x4DBF).contains(value) { continue }
            let decomposed = String(scalar).decomposedStringWithCompatibilityMapping.unicodeScalars.map(\.value)
            if decomposed != [value] { table[value] = decomposed }
        }
        return table
    }()

    /// Primary composites of Unicode 9.0 (Hangul aside), keyed by first << 32 | second: every scalar
    /// that NFC keeps and that decomposes canonically, split into the composite of all but its last
    /// decomposed scalar, and that last scalar.
    private static let compositions: [UInt64: UInt32] = {
        var table: [UInt64: UInt32] = [:]
        var parts: [UInt32] = []
        for value in decomposableBlocks.joined() where !(0xAC00...0xD7A3).contains(value) {
            guard UnicodeData.traits(value).contains(.decomposes), let scalar = Unicode.Scalar(value) else { continue }
            guard String(scalar).precomposedStringWithCanonicalMapping.unicodeScalars.map(\.value) == [value] else { continue }
            UnicodeData.decomposition(value, into: &parts)
            guard parts.count >= 2 else { continue }
            let head = String(String.UnicodeScalarView(parts.dropLast().compactMap(Unicode.Scalar.init)))
            let first = head.precomposedStringWithCanonicalMapping.unicodeScalars.map(\.value)
            guard first.count == 1 else { continue }
            table[UInt64(first[0]) << 32 | UInt64(parts[parts.count - 1])] = value
        }
        return table
    }()
}

/// Canonical ordering: the stable sort by combining class of a run of marks that NFD, NFKD and
/// strip_accents make (the unicode-normalization crate's sort_by_key). A run is as long as the
/// text makes it (issue 44: 80,000 mark pairs took 5.6 s in an insertion sort), so a long run
/// takes a counting sort over the 256 classes, linear; a short one, nearly every run, an
/// insertion sort, with no table to clear. Both are stable, so the order is the same.
enum CanonicalOrdering {
    /// Runs up to this long take the insertion sort: at most 32 × 32 / 2 moves, about what the
    /// counting sort's 256 counters cost.
    static let insertionSortLimit = 32

    static func sort<Mark>(_ marks: inout [Mark], scratch: inout [Mark], combiningClass: (Mark) -> UInt8) {
        guard marks.count > insertionSortLimit else {
            for i in marks.indices.dropFirst() {
                let mark = marks[i], markClass = combiningClass(mark)
                var j = i
                while j > 0 && combiningClass(marks[j - 1]) > markClass {
                    marks[j] = marks[j - 1]
                    j -= 1
                }
                marks[j] = mark
            }
            return
        }
        // starts[c]: where class c's marks go; filled in input order, so equal classes keep theirs.
        var starts = [Int](repeating: 0, count: 257)
        for mark in marks { starts[Int(combiningClass(mark)) + 1] += 1 }
        for c in 1...256 { starts[c] += starts[c - 1] }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: marks)
        for mark in scratch {
            let c = Int(combiningClass(mark))
            marks[starts[c]] = mark
            starts[c] += 1
        }
    }
}
