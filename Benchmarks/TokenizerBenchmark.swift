import Foundation
import SwiftBERT

/// Tokenizer speed on the fixture corpus (Tests/SwiftBERTTests/Fixtures/tokenizer/corpus.jsonl),
/// single-threaded, counted as tools/bench_tokenizer.py counts HF `tokenizers`: len(ids) with
/// [CLS]/[SEP], no truncation, no padding. Best pass out of repeated passes.
///
///     swift run -c release SwiftBERTBenchmarks tokenizer [--model all-MiniLM-L6-v2] [--seconds 5]
///
/// `--tokenizer-json PATH --corpus PATH` measures another tokenizer.json on another JSON-lines
/// corpus (records with "text"), e.g. the multilingual fixtures:
///
///     swift run -c release SwiftBERTBenchmarks tokenizer \
///         --tokenizer-json Tests/SwiftBERTTests/Fixtures/multilingual/xlmr-unigram/tokenizer.json \
///         --corpus Tests/SwiftBERTTests/Fixtures/multilingual/reference.jsonl
///
/// `--passes N` runs exactly N passes instead (fixed work, for `perf stat` or callgrind).
func runTokenizerBenchmark(arguments: [String]) throws {
    func option(_ name: String) -> String? {
        arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
    }
    let model = option("--model") ?? "all-MiniLM-L6-v2"
    let seconds = option("--seconds").flatMap(Double.init) ?? 5
    let passes = option("--passes").flatMap(Int.init)
    let root = benchmarkRepositoryRoot()
    let texts = try corpusTexts(option("--corpus").map { URL(fileURLWithPath: $0) }
        ?? root.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/tokenizer/corpus.jsonl"))

    let loadStart = DispatchTime.now()
    let tokenizer = try option("--tokenizer-json").map { try Tokenizer(tokenizerJSON: URL(fileURLWithPath: $0)) }
        ?? Tokenizer.load(folder: root.appendingPathComponent("weights/.cache/hf/\(model)"))
    let loadSeconds = Double(DispatchTime.now().uptimeNanoseconds - loadStart.uptimeNanoseconds) / 1e9
    let bytes = texts.reduce(0) { $0 + $1.utf8.count }
    print("SwiftBERT tokenizer, \(option("--tokenizer-json") ?? model), \(texts.count) lines, \(String(format: "%.2f", Double(bytes) / 1e6)) MB UTF-8, 1 thread, loaded in \(String(format: "%.0f", loadSeconds * 1e3)) ms")

    measureTokens("encode (per line)", seconds: seconds, passes: passes) {
        texts.reduce(0) { $0 + tokenizer.encode($1).ids.count }
    }
    measureTokens("tokenize (no specials)", seconds: seconds, passes: passes) {
        texts.reduce(0) { $0 + tokenizer.tokenize($1).count }
    }
}

/// Runs `pass` until `seconds` have gone by (or `passes` times); prints tokens per second
/// of the fastest pass.
private func measureTokens(_ name: String, seconds: Double, passes: Int?, _ pass: () -> Int) {
    var best = Double.infinity
    var tokens = 0
    var done = 0
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    repeat {
        let start = DispatchTime.now().uptimeNanoseconds
        tokens = pass()
        best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        done += 1
    } while passes.map { done < $0 } ?? (DispatchTime.now().uptimeNanoseconds < deadline)
    let rate = Double(tokens) / best
    print("\(name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(String(format: "%12.0f", rate)) tokens/s   (\(tokens) tokens, best pass \(String(format: "%.1f", best * 1e3)) ms)")
}

private func corpusTexts(_ url: URL) throws -> [String] {
    struct Line: Decodable { let text: String? }
    let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
    return try lines.compactMap { try JSONDecoder().decode(Line.self, from: Data($0.utf8)).text }
}

/// The current folder if it holds the corpus (as `swift run` does), else the folder above this file.
private func benchmarkRepositoryRoot() -> URL {
    let current = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    if FileManager.default.fileExists(atPath: current.appendingPathComponent("Tests/SwiftBERTTests/Fixtures").path) {
        return current
    }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
}
