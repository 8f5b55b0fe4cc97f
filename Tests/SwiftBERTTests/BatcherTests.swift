import Foundation
import XCTest
@testable import SwiftBERT
#if Server
@testable import SwiftBERTServer
#endif

/// The server's batcher in-process: requests of different clients share forward passes, and one
/// client's bad input must fail that client alone.
final class BatcherTests: XCTestCase {
    #if Server
    /// swift-metrics takes one bootstrap per process.
    static let metrics = ServerMetrics.bootstrap()

    /// all-MiniLM-L6-v2 on one thread, and a batcher over it that has not started.
    private func miniLMBatcher(_ limits: Batcher.Limits) throws -> (any EncoderModel, Batcher) {
        let model = try loadEncoder(folder: convertedModel("all-MiniLM-L6-v2"), threads: 1)
        return (model, Batcher(model: model, name: "minilm", limits: limits, metrics: Self.metrics))
    }

    /// A request holding a token id outside the vocabulary, queued together with a good request
    /// before the batching thread starts (so both would share one forward pass): the good one
    /// gets its vectors, the bad one an error naming its own input. Before the check moved into
    /// `Batcher.run`, the shared pass threw and both failed, the good one with "sequence 1 holds
    /// token id …", another client's input.
    func testOneRequestsBadTokenIdFailsThatRequestAlone() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 4096, maxWait: .milliseconds(200), queueCapacity: 64))
        let head = try SentenceHead(model)
        let batch = HeadBatch(threads: 1)
        let good: [[Int32]] = [[101, 7592, 2088, 102], [101, 2088, 102]]
        let bad: [[Int32]] = [[101, 7592, 102], [101, Int32(model.config.encoder.vocabSize), 102]]
        let badReturned = Flag()
        let badResult = Task {
            defer { badReturned.set() }
            return try await batcher.run(bad, head: head, batch: batch, timeout: .seconds(30))
        }
        // Queued (before the check moved into `run`) or refused at once (after).
        try await waitUntil { batcher.queueDepth == bad.count || badReturned.isSet }
        let goodResult = Task { try await batcher.run(good, head: head, batch: batch, timeout: .seconds(30)) }
        try await waitUntil { batcher.queueDepth >= good.count }
        batcher.start()
        defer { batcher.stop() }

        let vectors = try await goodResult.value
        XCTAssertEqual(vectors.count, good.count)
        for (vector, ids) in zip(vectors, good) {
            let alone = try head(model.encode([ids]), batch)[0]
            XCTAssertEqual(vector.count, alone.count)
            XCTAssertLessThan(zip(vector, alone).map { abs($0 - $1) }.max() ?? 1, 1e-5)
        }
        do {
            _ = try await badResult.value
            XCTFail("a token id outside the vocabulary was accepted")
        } catch let SwiftBERTError.invalidInput(reason) {
            XCTAssertEqual(reason, "input 1 holds token id \(model.config.encoder.vocabSize), outside the vocabulary of \(model.config.encoder.vocabSize)")
        }
    }

    /// Clients take turns in the batches: a one-sequence request queued behind another client's
    /// 400 sequences is in the first batch, not after all of them (in arrival order a one-text
    /// request waited 30 s behind one 2,048-text request over HTTP, until that one timed out). The sequences of one client
    /// keep their order, and every request gets what a pass of its own gives.
    func testClientsTakeTurnsInTheBatches() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 64, maxWait: .milliseconds(1), queueCapacity: 4096))
        let head = try SentenceHead(model)
        let batch = HeadBatch(threads: 1)
        let many: [[Int32]] = (0..<400).map { (i: Int) -> [Int32] in
            let words: [Int32] = (0..<28).map { (j: Int) -> Int32 in Int32(1000 + (i * 31 + j * 7) % 5000) }
            return [101] + words + [102]
        }
        let one: [[Int32]] = [[101, 7592, 2088, 102]]
        let manyResult = Task { try await RequestBody.$client.withValue("127.0.0.2") { try await batcher.run(many, head: head, batch: batch, timeout: .seconds(60)) } }
        try await waitUntil { batcher.queueDepth == many.count }
        let oneResult = Task { try await RequestBody.$client.withValue("127.0.0.3") { try await batcher.run(one, head: head, batch: batch, timeout: .seconds(60)) } }
        try await waitUntil { batcher.queueDepth == many.count + 1 }
        batcher.start()
        defer { batcher.stop() }

        let oneVector = try await oneResult.value
        // Two 30-token sequences a batch: the one request was in the first, most of the other's wait.
        XCTAssertGreaterThan(batcher.queueDepth, 200, "the one-sequence request waited behind the other client's sequences")
        let alone = try head(model.encode(one), batch)[0]
        XCTAssertLessThan(zip(oneVector[0], alone).map { abs($0 - $1) }.max() ?? 1, 1e-5)
        let manyVectors = try await manyResult.value
        for index in [0, 1, 199, 399] {
            let own = try head(model.encode([many[index]]), batch)[0]
            XCTAssertLessThan(zip(manyVectors[index], own).map { abs($0 - $1) }.max() ?? 1, 1e-5, "sequence \(index)")
        }
        XCTAssertEqual(batcher.queueDepth, 0)
    }

    /// A request whose tokens need more of the model's time than --request-timeout, at the
    /// fastest rate of its recent passes, is refused before it queues (it was computed until its
    /// timeout, then answered 503). Before 4 passes have run (cold ones among them) nothing is refused.
    /// (A budget of 8 tokens: the rate comes from passes of at least half of it.)
    func testARequestThatCannotFinishInTimeIsRefusedBeforeItQueues() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 8, maxWait: .milliseconds(1), queueCapacity: 64, requestTimeout: .nanoseconds(1)))
        batcher.start()
        defer { batcher.stop() }
        let head = try SentenceHead(model)
        let sequences: [[Int32]] = [[101, 7592, 2088, 102], [101, 2088, 102]]
        for pass in 1...4 {
            let outputs = try await batcher.run(sequences, head: head, batch: HeadBatch(threads: 1), timeout: .seconds(30))
            XCTAssertEqual(outputs.count, 2, "refused after \(pass - 1) passes, before the 4th")
        }
        do {
            _ = try await batcher.run(sequences, head: head, batch: HeadBatch(threads: 1), timeout: .seconds(30))
            XCTFail("7 tokens were queued though a pass takes more than 1 ns a token")
        } catch let Batcher.Failure.longerThanTimeout(tokens, tokensPerSecond, limit) {
            XCTAssertEqual(tokens, 7)
            XCTAssertGreaterThan(tokensPerSecond, 0)
            XCTAssertLessThan(Double(tokens) / tokensPerSecond, 10, "the rate is of seconds, not of a unit off by 10^9")
            XCTAssertEqual(limit, 1e-9)
        }
        XCTAssertEqual(batcher.queueDepth, 0, "nothing of a refused request is queued")
    }

    /// A request that could finish in time alone but not behind the queued work is refused at
    /// once (503 with Retry-After), not answered 503 after --request-timeout with its passes
    /// computed for no one; so is one that, taking its turns, would make a request queued before
    /// it late. The rate is set by hand (4 passes of 0.1 s for 4,000 tokens): 1 s of timeout is
    /// 40,000 tokens. Before, such requests queued, and every one near the limit timed out.
    func testARequestThatWouldTimeOutInTheQueueIsRefusedAtOnce() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 4096, maxWait: .milliseconds(1), queueCapacity: 400,
                                                       requestTimeout: .seconds(1)))
        for _ in 1...4 { batcher.recordPassCost(seconds: 0.1, tokens: 4000) }
        let head = try SentenceHead(model)
        let long: [Int32] = [101] + Array(repeating: 7592, count: 398) + [102]  // 400 tokens
        func send(_ count: Int, from client: String) -> Task<[[Float]], Error> {
            let sequences = Array(repeating: long, count: count)
            return Task { try await RequestBody.$client.withValue(client) { try await batcher.run(sequences, head: head, batch: HeadBatch(threads: 1), timeout: .seconds(30)) } }
        }
        // The batching thread has not started: what is accepted waits.
        let first = send(50, from: "127.0.0.2")  // 20,000 tokens: 0.5 s alone
        try await waitUntil { batcher.queueDepth == 50 }
        // Its 20 after 19 of the first's (15,600 tokens); the first's 50 after these 20 (28,000).
        let second = send(20, from: "127.0.0.3")
        try await waitUntil { batcher.queueDepth == 70 }
        do {
            // 60 more: 0.6 s alone, but its client's 80 come after the first's 50: 52,000 tokens.
            _ = try await send(60, from: "127.0.0.3").value
            XCTFail("a request that would time out in the queue was queued")
        } catch let Batcher.Failure.behindTooMuchWork(seconds, limit) {
            XCTAssertEqual(seconds, 52_000 * 0.1 / 4000, accuracy: 1e-9)
            XCTAssertEqual(limit, 1)
        }
        do {
            // 32 from a third client would finish in time (33,200 tokens), but the first's last
            // would then come after 40,800 tokens: past its second.
            _ = try await send(32, from: "127.0.0.4").value
            XCTFail("a request that makes an earlier one late was queued")
        } catch let Batcher.Failure.wouldMakeOthersLate(seconds, limit) {
            XCTAssertEqual(seconds, 28_000 * 0.1 / 4000, accuracy: 1e-9, "what the first needs without it")
            XCTAssertEqual(limit, 1)
        }
        XCTAssertEqual(batcher.queueDepth, 70, "nothing of the refused requests is queued")
        // 5 from the third client delay the first to 30,000 tokens and the second to 17,600: taken.
        let small = send(5, from: "127.0.0.4")
        try await waitUntil { batcher.queueDepth == 75 }
        for task in [first, second, small] { task.cancel() }
        for task in [first, second, small] { _ = try? await task.value }
    }

    /// The same bound with 200 clients waiting (as behind a proxy that names each user): a
    /// newcomer's 3 sequences run in the third round, after each other client's first two (or
    /// fewer, if it has fewer), which the test adds up client by client.
    func testTheQueuesWorkIsCountedOverManyClients() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 4096, maxWait: .milliseconds(1), queueCapacity: 2000,
                                                       requestTimeout: .seconds(1)))
        let head = try SentenceHead(model)
        func sequence(_ tokens: Int) -> [Int32] { [101] + Array(repeating: 7592, count: tokens - 2) + [102] }
        func send(_ sequences: [[Int32]], from client: String) -> Task<[[Float]], Error> {
            Task { try await RequestBody.$client.withValue(client) { try await batcher.run(sequences, head: head, batch: HeadBatch(threads: 1), timeout: .seconds(30)) } }
        }
        // No pass measured yet, so nothing is refused while the crowd queues.
        var tasks: [Task<[[Float]], Error>] = [], queued = 0, expected = 3 * 120
        for c in 0..<200 {
            let count = c % 3 + 1, tokens = 130 + c % 7
            tasks.append(send(Array(repeating: sequence(tokens), count: count), from: "10.0.\(c / 100).\(c % 100)"))
            queued += count
            expected += min(count, 2) * tokens
            let depth = queued
            try await waitUntil { batcher.queueDepth == depth }
        }
        for _ in 1...4 { batcher.recordPassCost(seconds: 0.1, tokens: 4000) }
        XCTAssertGreaterThan(expected, 40_000, "more than 1 s of work at 4,000 tokens per 0.1 s")
        do {
            _ = try await send(Array(repeating: sequence(120), count: 3), from: "10.9.9.9").value
            XCTFail("a request that would time out in the queue was queued")
        } catch let Batcher.Failure.behindTooMuchWork(seconds, limit) {
            XCTAssertEqual(seconds, Double(expected) * 0.1 / 4000, accuracy: 1e-9)
            XCTAssertEqual(limit, 1)
        }
        XCTAssertEqual(batcher.queueDepth, queued, "nothing of the refused request is queued")
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
    }

    /// One client may fill three quarters of the queue, and no more: the rest stays for other
    /// clients, whose requests are taken though the first one keeps sending. Before, one client's
    /// requests could fill the queue, and another's one text got 503 "queue full".
    func testOneClientCannotFillTheQueueForOthers() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 4096, maxWait: .milliseconds(1), queueCapacity: 8))
        XCTAssertEqual(batcher.limits.perClientCapacity, 6)
        let head = try SentenceHead(model)
        let three: [[Int32]] = Array(repeating: [101, 7592, 2088, 102], count: 3)
        func send(_ sequences: [[Int32]], from client: String) -> Task<[[Float]], Error> {
            Task { try await RequestBody.$client.withValue(client) { try await batcher.run(sequences, head: head, batch: HeadBatch(threads: 1), timeout: .seconds(30)) } }
        }
        let first = send(three, from: "127.0.0.2"), second = send(three, from: "127.0.0.2")
        try await waitUntil { batcher.queueDepth == 6 }
        do {
            _ = try await send([[101, 7592, 102]], from: "127.0.0.2").value
            XCTFail("a seventh sequence of one client was queued")
        } catch let Batcher.Failure.clientShareFull(waiting, perClient) {
            XCTAssertEqual([waiting, perClient], [6, 6])
        }
        do {
            _ = try await send(three, from: "127.0.0.3").value
            XCTFail("3 more sequences fit a queue of 8 holding 6")
        } catch let Batcher.Failure.queueFull(capacity) {
            XCTAssertEqual(capacity, 8)
        }
        let other = send([[101, 2088, 102], [101, 7592, 102]], from: "127.0.0.3")
        try await waitUntil { batcher.queueDepth == 8 }
        batcher.start()
        defer { batcher.stop() }
        let outputs = try await [first.value, second.value, other.value]
        XCTAssertEqual(outputs.map(\.count), [3, 3, 2])
        do {
            _ = try await send(Array(repeating: [101, 102], count: 7), from: "127.0.0.4").value
            XCTFail("a request of 7 sequences was queued though one client may hold 6")
        } catch let Batcher.Failure.largerThanQueue(sequences, capacity, perClient) {
            XCTAssertEqual([sequences, capacity, perClient], [7, 8, 6])
        }
    }

    /// A client whose requests timed out (or which went away) and that sends again is served:
    /// the answered requests' sequences no longer count against its share or the queue, though
    /// no batch has run to drop them (before, it got a 429 "share full" for sequences no one waited for).
    func testAnsweredRequestsLeaveTheClientsShare() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 4096, maxWait: .milliseconds(1), queueCapacity: 8))
        let head = try SentenceHead(model)
        let six: [[Int32]] = Array(repeating: [101, 7592, 2088, 102], count: 6)
        func send(_ sequences: [[Int32]], from client: String, timeout: Duration) -> Task<[[Float]], Error> {
            Task { try await RequestBody.$client.withValue(client) { try await batcher.run(sequences, head: head, batch: HeadBatch(threads: 1), timeout: timeout) } }
        }
        // The batching thread has not started: the six wait until their timeout answers them.
        do {
            _ = try await send(six, from: "127.0.0.2", timeout: .milliseconds(50)).value
            XCTFail("a request answered with no batching thread")
        } catch is RequestTimeout {}
        XCTAssertEqual(batcher.queueDepth, 6, "no batch has dropped them yet")
        let retry = send(six, from: "127.0.0.2", timeout: .seconds(30))
        try await waitUntil { batcher.queueDepth == 6 }
        // The queue of 8 holds the retry's 6; another client's 2 fit beside them.
        let other = send([[101, 2088, 102], [101, 7592, 102]], from: "127.0.0.3", timeout: .seconds(30))
        try await waitUntil { batcher.queueDepth == 8 }
        batcher.start()
        defer { batcher.stop() }
        let outputs = try await [retry.value, other.value]
        XCTAssertEqual(outputs.map(\.count), [6, 2])
        XCTAssertEqual(outputs[0][0], outputs[0][5], "the same text gives the same vector")
    }

    /// A sentence pair (token type 1) sent to a model whose checkpoint has one token type is
    /// that request's fault: refused before batching, in the request's own terms.
    func testTokenTypeTheModelLacksIsRefusedBeforeBatching() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 4096, maxWait: .milliseconds(1), queueCapacity: 64))
        do {
            _ = try await batcher.run([[101, 7592, 102]], typeIds: [[0, 0, Int32(model.config.encoder.typeVocabSize)]], head: SentenceHead(model),
                                      batch: HeadBatch(threads: 1), timeout: .seconds(5))
            XCTFail("a token type outside the model's was accepted")
        } catch let SwiftBERTError.invalidInput(reason) {
            XCTAssertEqual(reason, "input 0 holds token type id \(model.config.encoder.typeVocabSize); the model has \(model.config.encoder.typeVocabSize) types")
        }
        XCTAssertEqual(batcher.queueDepth, 0, "nothing of a refused request is queued")
    }

    /// A [CLS]-pooled request and a mean-pooled one in one shared pass: the last layer runs the
    /// first's [CLS] rows and all of the second's (`HeadRows`), and each gets what a pass of its
    /// own over every row gives, bit for bit.
    func testHeadsReadingDifferentRowsShareAPass() async throws {
        let (model, batcher) = try miniLMBatcher(.init(maxBatchTokens: 4096, maxWait: .milliseconds(200), queueCapacity: 64))
        var clsPooled = try SentenceHead(model)
        clsPooled.pooling = .cls
        let cls = clsPooled
        let mean = try SentenceHead(model)
        let batch = HeadBatch(threads: 1)
        let first: [[Int32]] = [[101, 7592, 2088, 102], [101, 2088, 2003, 2307, 102]]
        let second: [[Int32]] = [[101, 2307, 7592, 102], [101, 2088, 102]]
        let clsResult = Task { try await batcher.run(first, head: cls, batch: batch, timeout: .seconds(30)) }
        try await waitUntil { batcher.queueDepth >= first.count }
        let meanResult = Task { try await batcher.run(second, head: mean, batch: batch, timeout: .seconds(30)) }
        try await waitUntil { batcher.queueDepth >= first.count + second.count }
        batcher.start()
        defer { batcher.stop() }
        let (clsVectors, meanVectors) = (try await clsResult.value, try await meanResult.value)
        XCTAssertEqual(clsVectors.map { $0.map(\.bitPattern) }, try cls(model.encode(first), batch).map { $0.map(\.bitPattern) })
        XCTAssertEqual(meanVectors.map { $0.map(\.bitPattern) }, try mean(model.encode(second), batch).map { $0.map(\.bitPattern) })
    }

    private func waitUntil(_ condition: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { return XCTFail("timed out waiting for the queue") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
    #else
    func testSkippedWithoutServer() throws {
        throw XCTSkip("this build has no server: the package trait Server is off (`make test` turns it on; tools/sanitize.sh leaves it off)")
    }
    #endif
}

#if Server
/// A flag one task sets and another polls.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
#endif
