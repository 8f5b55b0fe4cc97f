import Foundation
import SwiftBERT
import SwiftBERTCommandLine

/// How close a quantised precision stays to FP32 on real sentences, measured the way
/// Tests/SwiftBERTTests/Int8AccuracyTests.swift measures it.
package enum BenchmarkAccuracy: Sendable, Equatable {
    /// Models without a masked-LM head: cosine between this precision's sentence embeddings
    /// and FP32's, mean and smallest.
    case embeddings(meanCosine: Double, minCosine: Double, sentences: Int)
    /// Models with a masked-LM head, one masked word per sentence: the share of sentences whose
    /// top-1 word matches FP32's, and the mean share of FP32's top 5 in this top 5.
    case fillMask(top1Agreement: Double, top5Overlap: Double, maskedSentences: Int)

    /// "cosine mean 0.99745, min 0.99353 (300 sentences)".
    package var summary: String {
        switch self {
        case let .embeddings(mean, smallest, count):
            return String(format: "cosine mean %.5f, min %.5f (%d sentences)", mean, smallest, count)
        case let .fillMask(top1, top5, count):
            return String(format: "top-1 agreement %.3f, top-5 overlap %.3f (%d masked sentences)", top1, top5, count)
        }
    }

    var json: OrderedJSON {
        switch self {
        case let .embeddings(mean, smallest, count):
            return .object([("measure", .string("embedding cosine vs fp32")), ("mean_cosine", .double(rounded(mean))),
                            ("min_cosine", .double(rounded(smallest))), ("sentences", .int(count))])
        case let .fillMask(top1, top5, count):
            return .object([("measure", .string("fill-mask agreement vs fp32")), ("top1_agreement", .double(rounded(top1))),
                            ("top5_overlap", .double(rounded(top5))), ("sentences", .int(count))])
        }
    }

    /// Six decimals: more than the figures mean, without binary noise (0.9700000000000001).
    private func rounded(_ value: Double) -> Double { (value * 1e6).rounded() / 1e6 }

    /// Each precision other than FP32 against FP32: fill-mask agreement when the model has a
    /// masked-LM head, else sentence-embedding cosine.
    static func measure(folder: URL, tokenizer: Tokenizer, precisions: [Precision], sentences: [String],
                        threads: Int) throws -> [Precision: BenchmarkAccuracy] {
        let compared = precisions.filter { $0 != .fp32 }
        guard !compared.isEmpty, !sentences.isEmpty else { return [:] }
        let reference = try loadTimedModel(folder: folder, threads: threads, precision: .fp32)
        var figures: [Precision: BenchmarkAccuracy] = [:]
        if reference.config.heads.hasMaskedLMHead {
            let masked = maskedSentences(sentences, tokenizer: tokenizer)
            let expected = try topFive(FillMask(model: reference, tokenizer: tokenizer), masked)
            for precision in compared {
                let model = try loadTimedModel(folder: folder, threads: threads, precision: precision)
                let found = try topFive(FillMask(model: model, tokenizer: tokenizer), masked)
                let top1 = zip(expected, found).filter { $0.first == $1.first }.count
                let overlap = zip(expected, found).reduce(0.0) { $0 + Double(Set($1.0).intersection($1.1).count) / 5 }
                figures[precision] = .fillMask(top1Agreement: Double(top1) / Double(max(masked.count, 1)),
                                               top5Overlap: overlap / Double(max(masked.count, 1)), maskedSentences: masked.count)
            }
        } else {
            let expected = try SentenceEmbedder(model: reference, tokenizer: tokenizer).embed(sentences).vectors
            for precision in compared {
                let model = try loadTimedModel(folder: folder, threads: threads, precision: precision)
                let found = try SentenceEmbedder(model: model, tokenizer: tokenizer).embed(sentences).vectors
                let cosines = zip(expected, found).map { Double(cosineSimilarity($0, $1)) }
                figures[precision] = .embeddings(meanCosine: cosines.reduce(0, +) / Double(cosines.count),
                                                 minCosine: cosines.min() ?? .nan, sentences: cosines.count)
            }
        }
        return figures
    }

    private static func topFive(_ fill: FillMask, _ texts: [String]) throws -> [[Int32]] {
        try texts.map { try fill.predict($0, topK: 5)[0].candidates.map(\.id) }
    }

    /// One mask per sentence (the model's own token: [MASK], or <mask> for RoBERTa and XLM-R), by
    /// Int8AccuracyTests' rule: of the words made only of letters, at least 3 long and one
    /// vocabulary entry (after a space, as RoBERTa's word-start pieces are), the middle one (its
    /// first occurrence between spaces). Sentences without such a word are left out.
    package static func maskedSentences(_ sentences: [String], tokenizer: Tokenizer) -> [String] {
        guard let mask = tokenizer.token(of: tokenizer.maskId) else { return [] }
        return sentences.compactMap { sentence in
            let words = sentence.split(separator: " ").filter { word in
                word.allSatisfy(\.isLetter) && word.count >= 3 && tokenizer.tokenize(" \(word)").count == 1
            }
            guard let word = words.dropFirst(words.count / 2).first, let range = sentence.range(of: " \(word) ") else { return nil }
            return sentence.replacingCharacters(in: range, with: " \(mask) ")
        }
    }
}

/// The real sentences behind the accuracy figures: by default the 300 lines of
/// Tests/SwiftBERTTests/Fixtures/sentences.txt (from Debian's license texts).
package enum BenchmarkSentences {
    package static let fixture = "Tests/SwiftBERTTests/Fixtures/sentences.txt"

    /// The fixture in the checkout beside a weights directory `ModelLocator` searches
    /// ($SWIFTBERT_HOME, the current folder, the checkout `bert` was built in).
    package static func defaultFile() -> URL? {
        ModelLocator.searchDirectories.map { $0.deletingLastPathComponent().appendingPathComponent(fixture) }
            .first { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// Non-empty lines of a UTF-8 file.
    /// Read as `bert embed --input` reads: a missing file, invalid UTF-8 (its line and byte)
    /// and an empty file each get their own error. Blank lines are left out.
    package static func load(_ url: URL) throws -> [String] {
        let sentences = try TextRecordReader(.file(url.path)).readAll().map(\.text).filter { !$0.allSatisfy(\.isWhitespace) }
        guard !sentences.isEmpty else {
            throw StreamError.emptyInput(source: url.path, skipped: 0,
                                         expected: ExpectedInput("sentences", advice: "give a file of real text, one sentence or passage a line"))
        }
        return sentences
    }
}
