import Foundation

/// What the BERT pipeline needs to know about one Unicode scalar, as Hugging Face `tokenizers` sees it.
///
/// HF mixes three Unicode versions, and so must we to give the same ids:
/// - general categories (control, punctuation, nonspacing mark) come from the `unicode_categories`
///   crate, whose tables are Unicode 8.0: scalars assigned later count as unassigned, and a handful
///   whose category changed since keep their 8.0 category (`categoryChangedSince8`);
/// - NFD and canonical combining classes come from `unicode-normalization` at Unicode 9.0;
/// - lowercasing and whitespace come from Rust's `char`, which follows current Unicode, as Swift does.
/// Tests/SwiftBERTTests/TokenizerUnicodeTests.swift checks every code point against HF.
struct ScalarTraits: OptionSet, Sendable {
    /// Flags in the low bits; the canonical combining class in the top byte.
    let rawValue: UInt32

    /// Dropped by clean_text: NUL, U+FFFD, and Cc/Cf/Co other than tab, LF and CR.
    static let control = ScalarTraits(rawValue: 1 << 0)
    /// Turned into a space by clean_text: tab, LF, CR and Rust's `char::is_whitespace`.
    static let cleanWhitespace = ScalarTraits(rawValue: 1 << 1)
    /// Rust's `char::is_whitespace` (White_Space): where the pre-tokenizer splits.
    static let whitespace = ScalarTraits(rawValue: 1 << 2)
    /// ASCII symbols and punctuation, and Unicode 8.0 category P*: isolated by the pre-tokenizer.
    static let punctuation = ScalarTraits(rawValue: 1 << 3)
    /// CJK ideographs that handle_chinese_chars surrounds with spaces.
    static let chinese = ScalarTraits(rawValue: 1 << 4)
    /// Unicode 8.0 category Mn: dropped by strip_accents after NFD.
    static let nonspacingMark = ScalarTraits(rawValue: 1 << 5)
    /// Has a canonical decomposition in Unicode 9.0.
    static let decomposes = ScalarTraits(rawValue: 1 << 6)
    /// Canonical combining class other than 0 in Unicode 9.0 (reordered by NFD).
    static let combining = ScalarTraits(rawValue: 1 << 7)
    /// Lowercasing maps it to something else.
    static let changesWhenLowercased = ScalarTraits(rawValue: 1 << 8)
    /// Nothing to do for it in any step: the common case for letters.
    static let plain: ScalarTraits = []

    /// Canonical combining class (Unicode 9.0).
    var combiningClass: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 24) }

    init(rawValue: UInt32) { self.rawValue = rawValue }

    init(flags: ScalarTraits, combiningClass: UInt8) {
        rawValue = flags.rawValue | UInt32(combiningClass) << 24
    }
}

enum UnicodeData {
    /// Traits of one scalar: a table lookup for planes 0 and 1, computed beyond.
    @inline(__always)
    static func traits(_ value: UInt32) -> ScalarTraits {
        if value < 0x10000 { return basicPlane[Int(value)] }
        if value < 0x20000 { return supplementaryPlane[Int(value &- 0x10000)] }
        return computeTraits(value)
    }

    /// Canonical decomposition (Unicode 9.0), fully decomposed; only for scalars with `.decomposes`.
    static func decomposition(_ value: UInt32, into out: inout [UInt32]) {
        out.removeAll(keepingCapacity: true)
        if isHangulSyllable(value) {
            appendHangulDecomposition(value, to: &out)
        } else if value < 0x10000, case let index = Int(basicDecompositions.index[Int(value)]), index > 0 {
            let storage = basicDecompositions.storage
            out.append(contentsOf: storage[(index + 1)...(index + Int(storage[index]))])
        } else if let mapped = decompositions[value] {
            out.append(contentsOf: mapped)
        } else {
            out.append(value)
        }
    }

    /// Rust's `char::to_lowercase` (can be several scalars, e.g. U+0130 → i + U+0307).
    static func lowercase(_ value: UInt32, into out: inout [UInt32]) {
        out.removeAll(keepingCapacity: true)
        if value < 0x10000, case let single = basicLowercase[Int(value)], single != 0 {
            out.append(UInt32(single))
            return
        }
        guard let scalar = Unicode.Scalar(value) else { out.append(value); return }
        for s in scalar.properties.lowercaseMapping.unicodeScalars { out.append(s.value) }
    }

    /// Builds the Basic Multilingual Plane tables now rather than in the first encode
    /// (plane 1, emoji and historic scripts, is built when first met).
    static func prepare() {
        _ = basicPlane.count + basicDecompositions.index.count + basicLowercase.count
    }

    // MARK: - Tables, built on first use

    private static let basicPlane: [ScalarTraits] = (0..<0x10000).map { computeTraits(UInt32($0)) }
    private static let supplementaryPlane: [ScalarTraits] = (0x10000..<0x20000).map { computeTraits(UInt32($0)) }

    /// BMP decompositions: `index[scalar]` points at [count, scalars...] in `storage` (0: none).
    private static let basicDecompositions: (index: [UInt16], storage: [UInt32]) = {
        var index = [UInt16](repeating: 0, count: 0x10000)
        var storage: [UInt32] = [0]
        for (value, parts) in decompositions where value < 0x10000 {
            index[Int(value)] = UInt16(storage.count)
            storage.append(UInt32(parts.count))
            storage += parts
        }
        return (index, storage)
    }()

    /// BMP scalars whose lowercase is one BMP scalar: that scalar (0: none, or not that simple).
    private static let basicLowercase: [UInt16] = (0..<0x10000).map { value in
        guard let scalar = Unicode.Scalar(UInt32(value)), scalar.properties.isCased else { return 0 }
        let lower = Array(scalar.properties.lowercaseMapping.unicodeScalars)
        guard lower.count == 1, lower[0] != scalar, lower[0].value < 0x10000 else { return 0 }
        return UInt16(lower[0].value)
    }

    /// Scalars whose general category changed after Unicode 8.0: HF still sees the 8.0 one.
    private static func categoryChangedSince8(_ value: UInt32) -> Unicode.GeneralCategory? {
        switch value {
        case 0x166D: return .otherPunctuation  // CANADIAN SYLLABICS CHI SIGN, So since 12.0
        case 0x1734: return .nonspacingMark    // HANUNOO SIGN PAMUDPOD, Mc since 14.0
        case 0x1885: return .otherLetter       // MONGOLIAN LETTER ALI GALI BALUDA, Mn since 9.0
        case 0x1886: return .otherLetter       // MONGOLIAN LETTER ALI GALI THREE BALUDA, Mn since 9.0
        case 0xA9BD: return .spacingMark       // JAVANESE CONSONANT SIGN KERET, Mn since 12.0
        case 0x111C9: return .otherPunctuation // SHARADA SANDHI MARK, Mn since 11.0
        case 0x1171E: return .nonspacingMark   // AHOM CONSONANT SIGN MEDIAL RA, Mc since 14.0
        default: return nil
        }
    }

    /// Canonical decompositions of Unicode 9.0 scalars, Hangul syllables aside (computed).
    /// Built once from Foundation's NFD over the blocks that hold decomposable scalars.
    private static let decompositions: [UInt32: [UInt32]] = {
        var table: [UInt32: [UInt32]] = [:]
        for value in decomposableBlocks.joined() {
            guard let scalar = Unicode.Scalar(value), let age = scalar.properties.age, age.major <= 9 else { continue }
            let decomposed = String(scalar).decomposedStringWithCanonicalMapping.unicodeScalars.map(\.value)
            if decomposed != [value] { table[value] = decomposed }
        }
        return table
    }()

    private static func isHangulSyllable(_ value: UInt32) -> Bool { (0xAC00...0xD7A3).contains(value) }

    /// Hangul syllables decompose by arithmetic, not by table.
    private static func appendHangulDecomposition(_ value: UInt32, to out: inout [UInt32]) {
        let index = value - 0xAC00
        out.append(0x1100 + index / 588)
        out.append(0x1161 + (index % 588) / 28)
        if index % 28 != 0 { out.append(0x11A7 + index % 28) }
    }

    private static func categoryInUnicode8(_ scalar: Unicode.Scalar, age: Unicode.Version?) -> Unicode.GeneralCategory? {
        if let old = categoryChangedSince8(scalar.value) { return old }
        guard let age, age.major <= 8 else { return nil }
        return scalar.properties.generalCategory
    }

    static func isChinese(_ value: UInt32) -> Bool {
        switch value {
        case 0x4E00...0x9FFF, 0x3400...0x4DBF, 0x20000...0x2A6DF, 0x2A700...0x2B73F,
             0x2B740...0x2B81F, 0x2B920...0x2CEAF, 0xF900...0xFAFF, 0x2F800...0x2FA1F:
            return true
        default:
            return false
        }
    }

    private static func isASCIIPunctuation(_ value: UInt32) -> Bool {
        (0x21...0x2F).contains(value) || (0x3A...0x40).contains(value)
            || (0x5B...0x60).contains(value) || (0x7B...0x7E).contains(value)
    }

    /// Where Unicode 9.0 has canonical decompositions, Hangul syllables aside.
    private static let decomposableBlocks: [ClosedRange<UInt32>] = [
        0x00C0...0x30FF, 0xF900...0xFB4F, 0x11000...0x115FF, 0x1D100...0x1D1FF, 0x2F800...0x2FA1F,
    ]

    static func computeTraits(_ value: UInt32) -> ScalarTraits {
        // Planes 2 and 3 hold only CJK ideographs (and unassigned code points).
        if value >= 0x20000 && value < 0x40000 && !(0x2F800...0x2FA1F).contains(value) {
            return isChinese(value) ? .chinese : .plain
        }
        guard let scalar = Unicode.Scalar(value) else { return .plain }
        let properties = scalar.properties
        let age = properties.age
        var traits: ScalarTraits = []
        let category = categoryInUnicode8(scalar, age: age)
        let isTabOrNewline = value == 0x09 || value == 0x0A || value == 0x0D
        if value == 0 || value == 0xFFFD {
            traits.insert(.control)
        } else if !isTabOrNewline, let category,
                  [.control, .format, .privateUse, .surrogate].contains(category) {
            traits.insert(.control)
        }
        if properties.isWhitespace { traits.insert(.whitespace) }
        if isTabOrNewline || properties.isWhitespace { traits.insert(.cleanWhitespace) }
        if isASCIIPunctuation(value) { traits.insert(.punctuation) }
        switch category {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
             .initialPunctuation, .finalPunctuation, .otherPunctuation:
            traits.insert(.punctuation)
        case .nonspacingMark:
            traits.insert(.nonspacingMark)
        default:
            break
        }
        if isChinese(value) { traits.insert(.chinese) }
        if isHangulSyllable(value)
            || decomposableBlocks.contains(where: { $0.contains(value) }) && decompositions[value] != nil {
            traits.insert(.decomposes)
        }
        var combiningClass: UInt8 = 0
        if let age, age.major <= 9 {
            combiningClass = properties.canonicalCombiningClass.rawValue
            if combiningClass != 0 { traits.insert(.combining) }
        }
        if properties.isCased, properties.lowercaseMapping.unicodeScalars.elementsEqual([scalar]) == false {
            traits.insert(.changesWhenLowercased)
        }
        return ScalarTraits(flags: traits, combiningClass: combiningClass)
    }
}
