/// Where a normalized scalar came from: a range of code points in the original text.
/// HF keeps one such range per normalized byte; every step maps one original scalar to
/// zero or more output scalars, so a range is always one code point (empty only where a
/// normalizer step inserts before the first scalar of an empty piece).
struct SourceSpan: Equatable {
    var start: Int
    var end: Int
}

/// Normalized scalars with their source spans, in step.
struct NormalizedText {
    var scalars: [UInt32] = []
    var spans: [SourceSpan] = []

    mutating func removeAll() {
        scalars.removeAll(keepingCapacity: true)
        spans.removeAll(keepingCapacity: true)
    }

    @inline(__always)
    mutating func append(_ scalar: UInt32, _ span: SourceSpan) {
        scalars.append(scalar)
        spans.append(span)
    }
}

/// HF's BertNormalizer: clean_text, handle_chinese_chars, strip_accents (NFD, then drop Mn)
/// and lowercase, in that order, each step as HF applies it to the whole string, fused into
/// one pass. Spans follow HF's alignment rules, including its canonical reordering of marks.
struct BertNormalizer: Sendable {
    var cleanText = true
    var handleChineseChars = true
    var stripAccents = true
    var lowercase = true
    /// NFD alone (the NFD normalizer): strip_accents' decomposition, its nonspacing marks kept.
    var keepsMarks = false

    /// Normalizes `input[range]`; spans are indices into `input`.
    func normalize(_ input: UnsafeBufferPointer<UInt32>, _ range: Range<Int>,
                   into out: inout NormalizedText, scratch: inout NormalizerScratch) {
        var state = Pass(normalizer: self, segmentStart: range.lowerBound)
        swap(&state.buffers, &scratch)
        defer { swap(&state.buffers, &scratch) }
        for index in range {
            let scalar = input[index]
            let span = SourceSpan(start: index, end: index + 1)
            if scalar < 0x80 && state.buffers.pendingMarks.isEmpty {
                appendASCII(scalar, span, &state, &out)
            } else {
                state.clean(scalar, span, &out)
            }
        }
        state.flushMarks(&out)
    }

    /// The common case in one step: nothing to decompose, reorder or insert.
    @inline(__always)
    private func appendASCII(_ scalar: UInt32, _ span: SourceSpan, _ state: inout Pass, _ out: inout NormalizedText) {
        var scalar = scalar
        if cleanText {
            if scalar < 0x20 || scalar == 0x7F {
                guard scalar == 0x09 || scalar == 0x0A || scalar == 0x0D else { return }
                scalar = 0x20
            }
        }
        if lowercase, scalar >= 0x41, scalar <= 0x5A { scalar += 0x20 }
        state.lastConsumed = span
        out.append(scalar, span)
    }

    /// State of one normalization pass over a segment.
    private struct Pass {
        let normalizer: BertNormalizer
        var buffers = NormalizerScratch()
        /// NFD: span of the last consumed input scalar (continuations share it).
        var lastConsumed: SourceSpan

        init(normalizer: BertNormalizer, segmentStart: Int) {
            self.normalizer = normalizer
            lastConsumed = SourceSpan(start: segmentStart, end: segmentStart)
        }

        /// clean_text, then handle_chinese_chars.
        mutating func clean(_ scalar: UInt32, _ span: SourceSpan, _ out: inout NormalizedText) {
            let traits = UnicodeData.traits(scalar)
            var scalar = scalar
            if normalizer.cleanText {
                if traits.contains(.control) { return }
                if traits.contains(.cleanWhitespace) { scalar = 0x20 }
            }
            if normalizer.handleChineseChars && traits.contains(.chinese) {
                // HF's transform: both spaces take the ideograph's span (seen once a
                // pre-tokenizer keeps spaces, e.g. Split or Metaspace after BertNormalizer).
                decompose(0x20, span, out: &out)
                decompose(scalar, span, out: &out)
                decompose(0x20, span, out: &out)
            } else {
                decompose(scalar, span, out: &out)
            }
        }

        /// strip_accents' NFD with HF's alignment rules: an output scalar tagged "change 0"
        /// takes the span of the next input scalar, a continuation the span of the last one.
        mutating func decompose(_ scalar: UInt32, _ span: SourceSpan, out: inout NormalizedText) {
            guard normalizer.stripAccents else {
                lower(scalar, span, &out)
                return
            }
            let traits = scalar < 0x80 ? .plain : UnicodeData.traits(scalar)
            buffers.pendingSpans.append(span)
            if !traits.contains(.decomposes) {
                push(scalar, isContinuation: false, traits: traits, &out)
                return
            }
            UnicodeData.decomposition(scalar, into: &buffers.decomposition)
            let parts = buffers.decomposition
            for (i, part) in parts.enumerated() {
                push(part, isContinuation: i > 0, traits: UnicodeData.traits(part), &out)
            }
        }

        private mutating func push(_ scalar: UInt32, isContinuation: Bool, traits: ScalarTraits,
                                   _ out: inout NormalizedText) {
            if traits.contains(.combining) {
                buffers.pendingMarks.append(PendingMark(scalar: scalar, combiningClass: traits.combiningClass,
                                                        isContinuation: isContinuation))
                return
            }
            // A starter ends the run of marks before it: sort and emit them first.
            flushMarks(&out)
            emitDecomposed(scalar, isContinuation: isContinuation, &out)
        }

        /// Stable sort by combining class, as the unicode-normalization crate does.
        mutating func flushMarks(_ out: inout NormalizedText) {
            guard !buffers.pendingMarks.isEmpty else { return }
            var marks = buffers.pendingMarks
            buffers.pendingMarks = []
            CanonicalOrdering.sort(&marks, scratch: &buffers.sortedMarks) { $0.combiningClass }
            for mark in marks {
                emitDecomposed(mark.scalar, isContinuation: mark.isContinuation, &out)
            }
            marks.removeAll(keepingCapacity: true)
            buffers.pendingMarks = marks
        }

        /// Assigns the span, then drops nonspacing marks (the filter step of strip_accents).
        private mutating func emitDecomposed(_ scalar: UInt32, isContinuation: Bool, _ out: inout NormalizedText) {
            if !isContinuation, buffers.pendingSpanHead < buffers.pendingSpans.count {
                lastConsumed = buffers.pendingSpans[buffers.pendingSpanHead]
                buffers.pendingSpanHead += 1
                if buffers.pendingSpanHead == buffers.pendingSpans.count {
                    buffers.pendingSpans.removeAll(keepingCapacity: true)
                    buffers.pendingSpanHead = 0
                }
            }
            if scalar >= 0x80 && !normalizer.keepsMarks && UnicodeData.traits(scalar).contains(.nonspacingMark) { return }
            lower(scalar, lastConsumed, &out)
        }

        /// lowercase: every scalar of the mapping keeps the span of the scalar it came from.
        private mutating func lower(_ scalar: UInt32, _ span: SourceSpan, _ out: inout NormalizedText) {
            guard normalizer.lowercase else {
                out.append(scalar, span)
                return
            }
            if scalar < 0x80 {
                out.append(scalar >= 0x41 && scalar <= 0x5A ? scalar + 0x20 : scalar, span)
            } else if UnicodeData.traits(scalar).contains(.changesWhenLowercased) {
                UnicodeData.lowercase(scalar, into: &buffers.lowercase)
                for part in buffers.lowercase { out.append(part, span) }
            } else {
                out.append(scalar, span)
            }
        }
    }
}

/// Buffers reused across segments, so the slow path allocates once per encode, not per scalar.
struct NormalizerScratch {
    /// NFD: combining marks waiting for canonical reordering.
    var pendingMarks: [PendingMark] = []
    /// NFD: the counting sort's copy of a long run of marks.
    var sortedMarks: [PendingMark] = []
    /// NFD: spans of the input scalars not yet consumed by an output scalar, oldest first.
    var pendingSpans: [SourceSpan] = []
    var pendingSpanHead = 0
    var decomposition: [UInt32] = []
    var lowercase: [UInt32] = []
}

/// A combining mark held back by NFD, with HF's "change" tag: a continuation is the
/// second or later scalar of one decomposition.
struct PendingMark {
    var scalar: UInt32
    var combiningClass: UInt8
    var isContinuation: Bool
}
