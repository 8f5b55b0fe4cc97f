import Foundation

/// SentencePiece's `precompiled_charsmap` (tokenizer.json's Precompiled normalizer): a
/// darts-clone double-array trie over UTF-8 bytes whose values are offsets into a blob of
/// NUL-terminated replacement strings. Read exactly as HF's spm_precompiled reads it:
/// [u32 LE: trie size in bytes][trie units: u32 LE each][replacement strings].
struct PrecompiledCharsmap: Sendable {
    private let units: [UInt32]
    private let replacements: [UInt8]

    init(base64: String) throws {
        guard let data = Data(base64Encoded: base64) else { throw CharsmapError("precompiled_charsmap is not base64") }
        try self.init(bytes: [UInt8](data))
    }

    init(bytes: [UInt8]) throws {
        guard bytes.count >= 4 else { throw CharsmapError("precompiled_charsmap is shorter than its 4-byte header") }
        let trieSize = Int(UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
        let unitCount = trieSize / 4
        guard unitCount >= 1, 4 + unitCount * 4 <= bytes.count else {
            throw CharsmapError("precompiled_charsmap's trie (\(trieSize) bytes) does not fit in its \(bytes.count) bytes")
        }
        var units = [UInt32](repeating: 0, count: unitCount)
        for i in 0..<unitCount {
            let at = 4 + i * 4
            units[i] = UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
        let blob = Array(bytes[(4 + unitCount * 4)...])
        guard String(validatingUTF8Bytes: blob) != nil else {
            throw CharsmapError("precompiled_charsmap's replacement strings are not UTF-8")
        }
        self.units = units
        replacements = blob
    }

    struct CharsmapError: Error { let reason: String; init(_ reason: String) { self.reason = reason } }

    // darts-clone unit fields, as spm_precompiled decodes them.
    @inline(__always) private static func hasLeaf(_ unit: UInt32) -> Bool { (unit >> 8) & 1 == 1 }
    @inline(__always) private static func value(_ unit: UInt32) -> Int { Int(unit & ((1 << 31) - 1)) }
    @inline(__always) private static func label(_ unit: UInt32) -> UInt32 { unit & ((1 << 31) | 0xFF) }
    @inline(__always) private static func offset(_ unit: UInt32) -> Int { Int((unit >> 10) << ((unit & (1 << 9)) >> 6)) }

    /// The replacement of the shortest key that is a prefix of `key` (spm_precompiled's
    /// `transform`: the first result of common_prefix_search), or nil.
    func transform(_ key: [UInt8]) -> [UInt32]? {
        var position = Self.offset(units[0])
        for byte in key {
            if byte == 0 { break }
            position ^= Int(byte)
            guard position < units.count else { return nil }
            let unit = units[position]
            guard Self.label(unit) == UInt32(byte) else { return nil }
            position ^= Self.offset(unit)
            guard position < units.count else { return nil }
            if Self.hasLeaf(unit) { return replacement(at: Self.value(units[position])) }
        }
        return nil
    }

    private func replacement(at index: Int) -> [UInt32]? {
        guard index <= replacements.count else { return nil }
        var end = index
        while end < replacements.count && replacements[end] != 0 { end += 1 }
        guard let text = String(validatingUTF8Bytes: replacements[index..<end]) else { return nil }
        return text.unicodeScalars.map(\.value)
    }

    /// HF's Precompiled normalizer: each grapheme cluster shorter than 6 UTF-8 bytes is looked
    /// up whole (and replaced whole by the shortest matching key's replacement, as HF does);
    /// otherwise each of its scalars is looked up alone. Alignments follow HF: a replacement
    /// that is longer adds scalars after the first, a shorter one removes the rest.
    func normalize(_ text: inout NormalizedText, pieceStart: Int) {
        guard !text.scalars.isEmpty else { return }
        var changes: [(UInt32, Int)] = []
        changes.reserveCapacity(text.scalars.count)
        var modified = false
        var key: [UInt8] = []
        var position = 0
        for grapheme in Self.graphemeLengths(text.scalars) {
            let range = position..<(position + grapheme)
            position += grapheme
            key.removeAll(keepingCapacity: true)
            for i in range { Self.appendUTF8(text.scalars[i], to: &key) }
            if key.count < 6, let replacement = transform(key) {
                modified = true
                Self.replace(&changes, oldCount: grapheme, with: replacement)
                continue
            }
            for i in range {
                key.removeAll(keepingCapacity: true)
                Self.appendUTF8(text.scalars[i], to: &key)
                if let replacement = transform(key) {
                    modified = true
                    Self.replace(&changes, oldCount: 1, with: replacement)
                } else {
                    changes.append((text.scalars[i], 0))
                }
            }
        }
        if modified { text.transform(changes, initialOffset: 0, pieceStart: pieceStart) }
    }

    /// tokenizers' `replace` helper of the Precompiled normalizer.
    private static func replace(_ changes: inout [(UInt32, Int)], oldCount: Int, with new: [UInt32]) {
        let difference = new.count - oldCount
        for scalar in new { changes.append((scalar, 0)) }
        if difference > 0 {
            for k in (changes.count - difference)..<changes.count { changes[k].1 = 1 }
        } else if difference < 0, !changes.isEmpty {
            changes[changes.count - 1].1 += difference
        }
    }

    /// Lengths in scalars of the extended grapheme clusters of `scalars`.
    private static func graphemeLengths(_ scalars: [UInt32]) -> [Int] {
        var view = String.UnicodeScalarView()
        for value in scalars { view.append(Unicode.Scalar(value) ?? "\u{FFFD}") }
        return String(view).map { $0.unicodeScalars.count }
    }

    @inline(__always)
    static func appendUTF8(_ value: UInt32, to bytes: inout [UInt8]) {
        switch value {
        case ..<0x80: bytes.append(UInt8(value))
        case ..<0x800:
            bytes.append(UInt8(0xC0 | value >> 6)); bytes.append(UInt8(0x80 | value & 0x3F))
        case ..<0x10000:
            bytes.append(UInt8(0xE0 | value >> 12)); bytes.append(UInt8(0x80 | value >> 6 & 0x3F))
            bytes.append(UInt8(0x80 | value & 0x3F))
        default:
            bytes.append(UInt8(0xF0 | value >> 18)); bytes.append(UInt8(0x80 | value >> 12 & 0x3F))
            bytes.append(UInt8(0x80 | value >> 6 & 0x3F)); bytes.append(UInt8(0x80 | value & 0x3F))
        }
    }
}

extension String {
    /// The string these bytes encode, or nil when they are not valid UTF-8.
    init?<C: Collection>(validatingUTF8Bytes bytes: C) where C.Element == UInt8 {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var view = String.UnicodeScalarView()
        while true {
            switch decoder.decode(&iterator) {
            case let .scalarValue(scalar): view.append(scalar)
            case .emptyInput: self = String(view); return
            case .error: return nil
            }
        }
    }
}
