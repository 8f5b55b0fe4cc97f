import Foundation
import SwiftBERT
import SwiftBERTBench
#if canImport(Glibc)
import Glibc
#endif

/// Word suggestions: quality and latency on real English text the feature was not tuned on.
///
///     swift run -c release SwiftBERTBenchmarks suggest [--model splade-tiny] [--limit 0]
///         [--test Apache-2.0,MPL-2.0,Artistic,CC0-1.0] [--train GPL-3,LGPL-2.1,GFDL-1.3]
///
/// Texts are Debian's license texts in /usr/share/common-licenses (present on every Debian
/// system): the frequency baseline counts words of the --train texts; the --test texts, which
/// share no file with them, the tests or the tuning (done on GPL-2 and BSD), are typed word by
/// word (`TypingSimulation`). Reported: keystroke savings and top-3 next-word accuracy for the
/// frequency baseline, the hand-rolled masked-LM and `WordSuggester` step by step (the model
/// alone, then with recent words and passed-over words, then with the training text's word
/// counts as the user's word list: the full suggester); the full suggester's latency per
/// keystroke on one thread; and how often it puts the word meant in its top 3 for a synthetic
/// typo. `--limit N` types only the first N words of each test text (a quick run). Options of
/// the full suggester for tuning: --frequency-weight, --recency-weight, --typo-factor,
/// --passed-over-factor, --context-tokens. `--latency-only` types with the full suggester only;
/// `--precision int8-weights` runs the model with INT8 weights (see docs/int8.md).
func runSuggestBenchmark(arguments: [String]) throws {
    func option(_ name: String) -> String? {
        arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
    }
    let licenses = URL(fileURLWithPath: option("--texts") ?? "/usr/share/common-licenses")
    let modelName = option("--model") ?? "splade-tiny"
    let wordLimit = option("--limit").flatMap(Int.init) ?? 0
    let testNames = (option("--test") ?? "Apache-2.0,MPL-2.0,Artistic,CC0-1.0").split(separator: ",").map(String.init)
    let trainNames = (option("--train") ?? "GPL-3,LGPL-2.1,GFDL-1.3").split(separator: ",").map(String.init)
    precondition(Set(testNames).isDisjoint(with: trainNames), "the test and training texts must be different files")
    func read(_ name: String) throws -> String {
        let text = try String(contentsOf: licenses.appendingPathComponent(name), encoding: .utf8)
        guard wordLimit > 0 else { return text }
        // The first N words, cut after the Nth word so the text stays the same text.
        var words = 0, end = text.startIndex, inWord = false
        for i in text.indices {
            if text[i].isLetter { if !inWord { words += 1; if words > wordLimit { break } }; inWord = true } else { inWord = false }
            end = text.index(after: i)
        }
        return String(text[..<end])
    }
    let tests = try testNames.map(read)
    let training = try trainNames.map { try String(contentsOf: licenses.appendingPathComponent($0), encoding: .utf8) }.joined(separator: "\n")

    let folder = try ModelLocator.resolve(modelName)
    let precision = option("--precision").flatMap(Precision.init(rawValue:)) ?? .fp32
    let latencyOnly = arguments.contains("--latency-only")
    let model = try loadEncoder(folder: folder, threads: 1, precision: precision)
    let tokenizer = try Tokenizer.load(folder: folder)
    // The model alone: no recent words, no passed-over words, no word list.
    var modelOnly = WordSuggester.Options()
    modelOnly.recencyWeight = 0
    modelOnly.passedOverFactor = 1
    let buildStart = DispatchTime.now()
    let suggester = try WordSuggester(model: model, tokenizer: tokenizer, options: modelOnly)
    let buildMs = milliseconds(since: buildStart)
    let words = tests.map { TypingSimulation.normalizedWhitespace($0).split(whereSeparator: { !$0.isLetter }).count }.reduce(0, +)
    print("Word suggestions, \(modelName) (\(precision.rawValue)), 1 thread; test: \(testNames.joined(separator: " ")) (\(words) words); "
          + "baseline trained on \(trainNames.joined(separator: " ")); index of \(suggester.wordCount) words built in \(String(format: "%.0f", buildMs)) ms")

    // Quality: the same simulated typing for every predictor.
    // The full suggester also gets the baseline's knowledge: the training text's words, counted,
    // as the word list of a user who writes such texts.
    var options = WordSuggester.Options()
    if let weight = option("--frequency-weight").flatMap(Float.init) { options.frequencyWeight = weight }
    if let tokens = option("--context-tokens").flatMap(Int.init) { options.contextTokens = tokens }
    if let weight = option("--recency-weight").flatMap(Float.init) { options.recencyWeight = weight }
    if let factor = option("--typo-factor").flatMap(Float.init) { options.typoFactor = factor }
    if let factor = option("--passed-over-factor").flatMap(Float.init) { options.passedOverFactor = factor }
    let full = try WordSuggester(model: model, tokenizer: tokenizer, userWords: UserWord.counted(in: training), options: options)
    let timed = TimedSuggester(full)
    let predictors: [(String, WordPredictor)] = latencyOnly ? [("WordSuggester: full", timed)] : [
        ("word frequency (baseline)", FrequencyBaseline(trainingText: training)),
        ("masked-LM, hand-rolled (unfiltered)", HandRolledMaskedLM(model: model, tokenizer: tokenizer)),
        ("WordSuggester: masked-LM alone", suggester),
        ("WordSuggester: + recent words, passed-over words (defaults, no word list)", try WordSuggester(model: model, tokenizer: tokenizer)),
        ("WordSuggester: + the training text's word counts (full)", timed),
    ]
    print("\n| predictor | keystroke savings | top-3 next-word accuracy | seconds |")
    print("|---|---:|---:|---:|")
    for (name, predictor) in predictors {
        let start = DispatchTime.now()
        let result = try tests.map { try TypingSimulation.run($0, predictor: predictor, topK: 3) }.reduce(TypingSimulation.Result(), +)
        print("| \(name) | \(percent(result.keystrokeSavings)) | \(percent(result.nextWordAccuracy)) | \(String(format: "%.1f", milliseconds(since: start) / 1000)) |")
    }

    // Latency of the suggester's keystrokes in that run (one thread).
    print("\nLatency per keystroke (full WordSuggester, 1 thread, \(timed.all.count) keystrokes):")
    print("| keystrokes | count | median ms | p99 ms | max ms | CPU median ms | CPU p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (name, samples) in [("all", timed.all), ("first of a word (forward pass)", timed.withModel), ("later letters (cached context)", timed.cached)] {
        let wall = samples.map(\.wall).sorted(), cpu = samples.map(\.cpu).sorted()
        print("| \(name) | \(wall.count) | \(ms(quantile(wall, 0.5))) | \(ms(quantile(wall, 0.99))) | \(ms(wall.last ?? 0)) | "
              + "\(ms(quantile(cpu, 0.5))) | \(ms(quantile(cpu, 0.99))) |")
    }
    var load = [Double](repeating: 0, count: 3)
    if getloadavg(&load, 3) == 3 { print("(load average \(String(format: "%.2f", load[0])) on \(ProcessInfo.processInfo.activeProcessorCount) cores)") }

    guard !latencyOnly else { return }

    // Corrections: each word of 3+ letters typed with one synthetic typo, then the top 3 checked.
    var generator = SplitMix64(seed: 8)
    var typos = 0, top1 = 0, top3 = 0
    for text in tests {
        let chars = Array(TypingSimulation.normalizedWhitespace(text))
        var i = 0
        while i < chars.count {
            guard chars[i].isLetter else { i += 1; continue }
            var end = i
            while end < chars.count, chars[end].isLetter { end += 1 }
            let word = String(chars[i..<end]).lowercased()
            if word.count >= 3, let typo = makeTypo(word, &generator) {
                let offered = try full.suggest(String(chars[max(0, i - 1500)..<i]) + typo, topK: 3).map { $0.word.lowercased() }
                typos += 1
                if offered.first == word { top1 += 1 }
                if offered.contains(word) { top3 += 1 }
            }
            i = end
        }
    }
    print("\nOne synthetic typo per word of 3+ letters (neighbour key, swap, omission, doubled key), \(typos) words: "
          + "word meant first \(percent(Double(top1) / Double(max(typos, 1)))), in top 3 \(percent(Double(top3) / Double(max(typos, 1))))")
}

/// Times each call of a suggester and notes whether it ran the model. Wall-clock time is what
/// the user waits; the thread's CPU time is the work itself, without the time the thread waited
/// for a core on a busy machine (one thread: the engine runs on the calling thread).
private final class TimedSuggester: WordPredictor {
    struct Sample { let wall: Double, cpu: Double }
    let suggester: WordSuggester
    var all: [Sample] = [], withModel: [Sample] = [], cached: [Sample] = []

    init(_ suggester: WordSuggester) { self.suggester = suggester }

    func words(for text: String, topK: Int) throws -> [String] {
        let runs = suggester.modelRuns
        let cpuStart = threadCPUMilliseconds()
        let start = DispatchTime.now()
        let words = try suggester.suggest(text, topK: topK).map(\.word)
        let sample = Sample(wall: milliseconds(since: start), cpu: threadCPUMilliseconds() - cpuStart)
        all.append(sample)
        if suggester.modelRuns > runs { withModel.append(sample) } else { cached.append(sample) }
        return words
    }
}

private func threadCPUMilliseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e3 + Double(time.tv_nsec) / 1e6
}

/// One typing error in a word: a neighbouring key, two letters swapped, a letter left out, or
/// a key pressed twice. nil when the chosen error cannot change the word.
private func makeTypo(_ word: String, _ generator: inout SplitMix64) -> String? {
    var letters = Array(word)
    let at = Int(generator.next() % UInt64(letters.count))
    switch generator.next() % 4 {
    case 0:
        let neighbours = Array("abcdefghijklmnopqrstuvwxyz".unicodeScalars).filter {
            KeyboardLayout.qwerty.areNeighbours(letters[at].unicodeScalars.first!, $0)
        }
        guard !neighbours.isEmpty else { return nil }
        letters[at] = Character(neighbours[Int(generator.next() % UInt64(neighbours.count))])
    case 1:
        guard at + 1 < letters.count, letters[at] != letters[at + 1] else { return nil }
        letters.swapAt(at, at + 1)
    case 2:
        letters.remove(at: at)
    default:
        letters.insert(letters[at], at: at)
    }
    let typo = String(letters)
    return typo == word ? nil : typo
}

/// A small deterministic generator, so every run makes the same typos.
private struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private func milliseconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
}

private func quantile(_ sorted: [Double], _ q: Double) -> Double {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.up)) - 1)]
}

private func ms(_ value: Double) -> String { String(format: "%.3f", value) }
private func percent(_ value: Double) -> String { String(format: "%.1f%%", value * 100) }

