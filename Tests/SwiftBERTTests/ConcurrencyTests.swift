import Foundation
import XCTest
@testable import SwiftBERT

/// One loaded model and tokenizer serve many threads at once: 8 threads embedding at the same
/// time give exactly the vectors of the same calls made one after another (the forward pass is
/// deterministic for a given batch, and nothing is shared between calls but read-only weights).
/// tools/sanitize.sh runs these under ThreadSanitizer.
final class ConcurrencyTests: XCTestCase {
    static let threadCount = 8
    /// Under ThreadSanitizer (tools/sanitize.sh sets SWIFTBERT_SANITIZER) these tests are for
    /// races, which one pass over each parallel region shows; the passes that only check values
    /// again (a second round, the one-thread reference) run in `make test`, not again at
    /// ThreadSanitizer's 5 to 15 times the cost.
    static let underThreadSanitizer = ProcessInfo.processInfo.environment["SWIFTBERT_SANITIZER"] == "thread"

    /// The converted model `name`; under ThreadSanitizer, a folder of links to it whose config
    /// keeps its first layer only. Every layer runs the same parallel regions, so one layer shows
    /// the races six do, at a sixth of ThreadSanitizer's cost (these two tests took 660 of its
    /// 770 s with six). The folder goes when the test ends.
    func modelUnderTest(_ name: String) throws -> URL {
        let folder = try convertedModel(name)
        guard Self.underThreadSanitizer else { return folder }
        let cut = try Self.linkedFolder(to: folder, except: "config.json", named: "one-layer")
        addTeardownBlock { try? FileManager.default.removeItem(at: cut) }
        var config = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("config.json"))) as? [String: Any])
        config["num_hidden_layers"] = 1
        try JSONSerialization.data(withJSONObject: config).write(to: cut.appendingPathComponent("config.json"))
        return cut
    }

    /// Eight different workloads, each a few batches of unequal lengths.
    func workloads() throws -> [[String]] {
        let url = Bundle.module.url(forResource: "Fixtures/sentences", withExtension: "txt")!
        let sentences = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map(String.init)
        return (0..<Self.threadCount).map { t in (0..<6).map { sentences[(t * 37 + $0 * 11) % sentences.count] } }
    }

    func runConcurrently<T>(_ work: @escaping @Sendable (Int) throws -> T) throws -> [T] {
        let results = Locked<[Int: Result<T, Error>]>([:])
        // Real threads, all started before any finishes its work, rather than a pool that may
        // run them one at a time.
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        var threads: [Thread] = []
        for t in 0..<Self.threadCount {
            done.enter()
            let thread = Thread {
                start.wait()
                let result = Result { try work(t) }
                results.update { $0[t] = result }
                done.leave()
            }
            thread.stackSize = 8 << 20
            threads.append(thread)
            thread.start()
        }
        for _ in threads { start.signal() }
        done.wait()
        return try (0..<Self.threadCount).map { try results.value[$0]!.get() }
    }

    func checkModel(_ model: BertModel, tokenizer: Tokenizer, file: StaticString = #filePath, line: UInt = #line) throws {
        let embedder = try SentenceEmbedder(model: model, tokenizer: tokenizer)
        let workloads = try workloads()
        let options = SentenceEmbedder.Options(batchSize: 3)
        let sequential = try workloads.map { try embedder.embed($0, options: options).vectors }
        for round in 0..<(Self.underThreadSanitizer ? 1 : 2) {
            let concurrent = try runConcurrently { t in try embedder.embed(workloads[t], options: options).vectors }
            for t in 0..<Self.threadCount {
                XCTAssertEqual(concurrent[t], sequential[t], "thread \(t), round \(round): same vectors as sequential use", file: file, line: line)
            }
        }
    }

    func testOneModelFromEightThreadsGivesTheSequentialResults() throws {
        let folder = try modelUnderTest("all-MiniLM-L6-v2")
        // Each forward pass also splits its work over 2 threads of its own: 16 busy threads.
        try checkModel(BertModel(folder: folder, threads: 2), tokenizer: Tokenizer.load(folder: folder))
    }

    /// One pass split over 1, 2 or 3 threads gives the same bits, in every precision
    /// (`int8-static` on a quick calibration of its own): each output element (a Linear column block, an attention head, a LayerNorm or quantisation
    /// row) is computed by the same code whichever thread runs it. Six 200-token sequences, so
    /// that every parallel region of the pass is split: the Linear layers split their 1,200 rows
    /// at 2 threads (`Linear.rowSplitMinimum` a thread) and their columns at 3. (Eight, for rows
    /// at 3 threads too, added 90 s to CI's thread-sanitizer step.)
    func testThreadCountsGiveIdenticalHiddenStates() throws {
        let folder = try modelUnderTest("all-MiniLM-L6-v2")
        var ids: [[Int32]] = []
        XCTAssertTrue(6 * 200 >= 2 * Linear.rowSplitMinimum && 6 * 200 < 3 * Linear.rowSplitMinimum)
        for s in 0..<6 {
            let words: [Int32] = (0..<198).map { (i: Int) -> Int32 in Int32(1000 + (s * 7919 + i * 104_729) % 28000) }
            ids.append([101] + words + [102])
        }
        var precisions: [Precision] = [.fp32, .bf16]
        if FileManager.default.fileExists(atPath: folder.appendingPathComponent(Quantizer.fileName).path) {
            precisions += [.int8, .int8Attention, .int8Static]
        }
        let calibrated = precisions.contains(.int8Static) ? try Self.quicklyCalibrated(folder) : nil
        defer { calibrated.map { try? FileManager.default.removeItem(at: $0) } }
        for precision in precisions {
            let folder = precision == .int8Static ? calibrated ?? folder : folder
            // The reference: one thread; under ThreadSanitizer, the 2-thread pass (rows split),
            // against which the 3-thread pass (columns split) is checked.
            let single = try BertModel(folder: folder, threads: Self.underThreadSanitizer ? 2 : 1, precision: precision).encode(ids)
            for threads in Self.underThreadSanitizer ? [3] : [2, 3] {
                let split = try BertModel(folder: folder, threads: threads, precision: precision).encode(ids)
                for s in ids.indices {
                    XCTAssertEqual(split.hiddenStates(s), single.hiddenStates(s), "\(precision) on \(threads) threads, sequence \(s)")
                }
            }
        }
        XCTAssertTrue(precisions.contains(.int8), "no INT8 weights for all-MiniLM-L6-v2: run make setup")
    }

    /// A new temporary folder of links to `folder`'s files but `excluded` (the caller writes that
    /// one, and removes the folder).
    static func linkedFolder(to folder: URL, except excluded: String, named name: String) throws -> URL {
        try SwiftBERTTests.linkedFolder(folder, excluding: [excluded], at: FileManager.default.temporaryDirectory
            .appendingPathComponent("swiftbert-\(name)-\(UUID().uuidString)"))
    }

    /// A folder of links to `folder`'s files with an int8-static file of its own, calibrated on
    /// 16 of Fixtures/calibration.txt's sentences: a file the engine runs (its static
    /// quantisation is a threaded pass of its own), cheap under ThreadSanitizer. How accurate
    /// calibration is, Int8AccuracyTests measures on all 300.
    static func quicklyCalibrated(_ folder: URL) throws -> URL {
        let copy = try linkedFolder(to: folder, except: WeightFiles.int8Static, named: "calibrated")
        let text = try String(contentsOf: Bundle.module.url(forResource: "Fixtures/calibration", withExtension: "txt")!, encoding: .utf8)
        try Quantizer.calibrate(folder: copy, sentences: text.split(separator: "\n").prefix(16).map(String.init))
        return copy
    }

    func testINT8ModelFromEightThreads() throws {
        let folder = try convertedModel("splade-tiny")
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent(Quantizer.fileName).path) else {
            throw XCTSkip("no INT8 weights for splade-tiny: run make setup")
        }
        try checkModel(BertModel(folder: folder, threads: 1, precision: .int8), tokenizer: Tokenizer.load(folder: folder))
    }

    func testFillMaskFromEightThreads() throws {
        let folder = try convertedModel("splade-tiny")
        let fill = try FillMask(model: BertModel(folder: folder, threads: 1), tokenizer: Tokenizer.load(folder: folder))
        let texts = (0..<Self.threadCount).map { "The \(["capital", "river", "king", "city"][$0 % 4]) of France is [MASK]." }
        let sequential = try texts.map { try fill.predict($0, topK: 5).map { $0.candidates.map(\.id) } }
        let concurrent = try runConcurrently { t in try fill.predict(texts[t], topK: 5).map { $0.candidates.map(\.id) } }
        XCTAssertEqual(concurrent, sequential)
    }

    func testTokenizerFromEightThreads() throws {
        let tokenizer = try Tokenizer.load(folder: convertedModel("all-MiniLM-L6-v2"))
        let texts = try workloads().flatMap { $0 } + ["naïve café 東京 [MASK] un##able", String(repeating: "antidisestablishment ", count: 50)]
        let sequential = texts.map { tokenizer.encode($0, maxLength: 64) }
        let concurrent = try runConcurrently { _ in texts.map { tokenizer.encode($0, maxLength: 64) } }
        for encodings in concurrent {
            XCTAssertEqual(encodings.map(\.ids), sequential.map(\.ids))
            XCTAssertEqual(encodings.map(\.offsets), sequential.map(\.offsets))
        }
    }

    /// Loading is concurrent-safe too: eight threads load the same folder at once.
    func testConcurrentLoads() throws {
        let folder = try convertedModel("splade-tiny")
        let sizes = try runConcurrently { _ in try BertModel(folder: folder, threads: 1).parameterCount }
        XCTAssertEqual(Set(sizes).count, 1)
    }
}

/// A value behind a lock, for results gathered from several threads.
final class Locked<Value>: @unchecked Sendable {
    private var stored: Value
    private let lock = NSLock()
    init(_ value: Value) { stored = value }
    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
    func update(_ body: (inout Value) -> Void) { lock.lock(); defer { lock.unlock() }; body(&stored) }
}
