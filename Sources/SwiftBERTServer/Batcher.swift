#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// Dynamic batching for one model, shared by every route: requests from any connection queue
/// their sequences here, each with the head that answers it (sentence pooling, SPLADE,
/// classification, token vectors), and one dedicated thread takes them in batches (bounded by
/// tokens per batch and by how long the first waiting sequence may wait), runs one forward pass
/// of the encoder off the event loops, then each request's head over its own sequences. A
/// request is answered once all its sequences are done. The queue is bounded: a request that
/// does not fit now is refused at once (503, retry later), one that could never fit with 413.
final class Batcher: @unchecked Sendable {
    struct Limits: Sendable {
        /// Tokens per forward pass (a single longer sequence still runs alone).
        var maxBatchTokens: Int
        /// How long the oldest queued sequence may wait for others to join its batch.
        var maxWait: Duration
        /// Sequences waiting at most.
        var queueCapacity: Int
        /// The longest a request may take (--request-timeout): one whose tokens need more of the
        /// model's time than this, even at the fastest rate of its recent passes, is refused.
        var requestTimeout: Duration? = nil

        /// The most one client may have waiting: a quarter of the queue stays for the others, so
        /// that one client filling it never has another's request refused as "queue full".
        var perClientCapacity: Int { queueCapacity - queueCapacity / 4 }
    }

    enum Failure: Error, Equatable {
        /// Waiting helps: the queue has no room now.
        case queueFull(capacity: Int)
        /// Waiting never helps: the request alone holds more sequences than one client may queue.
        case largerThanQueue(sequences: Int, capacity: Int, perClient: Int)
        /// Waiting for its own requests helps: the client already has `waiting` sequences queued,
        /// and these would take it past its share.
        case clientShareFull(waiting: Int, perClient: Int)
        /// Waiting never helps: at the model's fastest recent rate (tokens per second of its
        /// forward passes), the request's tokens take longer than `limit` seconds.
        case longerThanTimeout(tokens: Int, tokensPerSecond: Double, limit: Double)
        /// Waiting helps: the request could finish in time alone, but not behind the work queued
        /// before its turns come (`seconds` at the fastest recent rate, against `limit`).
        case behindTooMuchWork(seconds: Double, limit: Double)
        /// Waiting helps: taking the request now would make requests queued before it miss their
        /// timeout; one of them needs `seconds` more.
        case wouldMakeOthersLate(seconds: Double, limit: Double)
        case stopped
    }

    /// One queued sequence of a request.
    private struct Item {
        let ids: [Int32]
        let typeIds: [Int32]?
        let request: any BatchedRequest
        let index: Int
        let arrival: ContinuousClock.Instant
    }

    /// One client's waiting sequences, in arrival order.
    private struct ClientQueue {
        var items: [Item] = []
        var head = 0
        var first: Item? { head < items.count ? items[head] : nil }
        var count: Int { items.count - head }

        /// Drops the sequences of requests already answered (timed out, client gone), which would
        /// otherwise count against the client and the queue until a batch reached them; returns how many.
        mutating func removeFinished() -> Int {
            let before = count
            items = items[head...].filter { !$0.request.isFinished }
            head = 0
            return before - items.count
        }

        mutating func removeFirst() {
            head += 1
            if head == items.count { items.removeAll(keepingCapacity: true); head = 0 }
            else if head > 1024, head * 2 > items.count { items.removeFirst(head); head = 0 }
        }
    }

    let model: any EncoderModel
    let limits: Limits
    let metrics: ServerMetrics
    let modelName: String
    private let condition = NSCondition()
    /// Waiting sequences by client (`RequestBody.client`: the sender's address, or the client a
    /// trusted proxy names). Batches take them in turns, one sequence per client per round, so
    /// a one-text request is in the next batch however many sequences another client queued
    /// (in arrival order it waited behind all of them: 30 s behind one 2,048-text request, until that one timed out).
    private var queues: [String: ClientQueue] = [:]
    /// Clients with waiting sequences, in the order their turns come; the first is served first.
    private var turns: [String] = []
    private var queuedCount = 0
    /// Seconds per token of the last passes (a ring), for what a request will cost before it queues.
    private var passCosts: [Double] = []
    private var nextPassCost = 0
    private static let passCostsKept = 32
    private static let passesBeforeRefusing = 4
    private var stopping = false
    private var thread: Thread?

    init(model: any EncoderModel, name: String, limits: Limits, metrics: ServerMetrics) {
        self.model = model
        self.modelName = name
        self.limits = limits
        self.metrics = metrics
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "bert-batcher-\(modelName)"
        self.thread = thread
        thread.start()
    }

    /// Lets the thread finish the queued work, then end.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    var queueDepth: Int {
        condition.lock(); defer { condition.unlock() }
        return queuedCount
    }

    /// `head`'s output for each pre-tokenised sequence, in order, from forward passes shared with
    /// other requests. Throws a `Failure` at once when the queue cannot take the sequences.
    func run<H: Head>(_ sequences: [[Int32]], typeIds: [[Int32]]? = nil, head: H, batch: HeadBatch,
                      timeout: Duration) async throws -> [H.Output] {
        // Each request's own sequences are checked here, before they join other requests' in a
        // shared forward pass, whose failure would fail every request batched with them.
        for (index, ids) in sequences.enumerated() {
            try model.validate(ids, typeIds: typeIds?[index], name: "input \(index)")
        }
        try refuseIfTooLongForTheTimeout(tokens: sequences.reduce(0) { $0 + $1.count })
        let request = HeadRequest(head: head, batch: batch, count: sequences.count)
        let client = RequestBody.client
        // Cancelled (its client has gone: Handler.respond), the request is finished, and its
        // queued sequences are skipped, not computed for no one.
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                guard request.wait(continuation) else { return }
                let arrival = ContinuousClock.now
                do {
                    try enqueue(sequences.indices.map {
                        Item(ids: sequences[$0], typeIds: typeIds?[$0], request: request, index: $0, arrival: arrival)
                    }, client: client)
                } catch {
                    request.finish(error)
                    return
                }
                request.scheduleTimeout(timeout)
            }
        } onCancel: {
            request.finish(CancellationError())
        }
        return request.outputs
    }

    /// A request that cannot finish within the request timeout however the queue goes is refused
    /// before it queues, not computed for 30 s and then answered 503 (which a client retries).
    /// The bound takes the fastest of the recent full passes, so it refuses only what could not
    /// finish even at that rate, in passes of its own; none is refused before the fourth.
    private func refuseIfTooLongForTheTimeout(tokens: Int) throws {
        guard let limit = limits.requestTimeout?.seconds else { return }
        // A few passes first: the first ones run cold (the weights' pages, the caches).
        let fastest: Double? = condition.withLock { passCosts.count >= Self.passesBeforeRefusing ? passCosts.min() : nil }
        guard let fastest, fastest > 0, Double(tokens) * fastest > limit else { return }
        throw Failure.longerThanTimeout(tokens: tokens, tokensPerSecond: 1 / fastest, limit: limit)
    }

    /// A request that would time out in the queue is refused now with 503 and Retry-After, not
    /// answered 503 after `--request-timeout` with its passes computed for no one; so is one
    /// whose sequences, taking their turns, would make requests queued before it miss theirs
    /// (else every request near the limit times out together). The batches take turns, so a
    /// client's last sequence is done once its own sequences have run and, of every other
    /// client's, as many as the rounds before it: the least work ahead of it, at the fastest
    /// recent rate. Requests that arrive later only add to that, so nothing refused here could
    /// have finished. Called with the lock held, on every request: O(queued sequences + clients),
    /// so thousands of clients behind a proxy do not make each admission quadratic.
    private func refuseIfBehindTooMuchWork(_ items: [Item], client: String) throws {
        guard let limit = limits.requestTimeout?.seconds, passCosts.count >= Self.passesBeforeRefusing,
              let fastest = passCosts.min(), fastest > 0 else { return }
        // Each client's tokens in its first k waiting sequences (answered ones skipped), k = 0…;
        // the requester's without (`before`) and with (`after`) this request.
        var others: [(sums: [Int], lastArrival: ContinuousClock.Instant)] = []
        var before = [0]
        for name in turns {
            guard let queue = queues[name] else { continue }
            var sums = [0], lastArrival: ContinuousClock.Instant?
            for item in queue.items[queue.head...] where !item.request.isFinished {
                sums.append(sums.last! + item.ids.count)
                lastArrival = item.arrival
            }
            if name == client { before = sums } else if let lastArrival { others.append((sums, lastArrival)) }
        }
        var after = before
        for item in items { after.append(after.last! + item.ids.count) }
        // The work of the first r rounds, every client with `before`: Σ of each client's first
        // min(r, waiting) sequences = the sums of those still in their turns at r, plus the
        // totals of those done before r.
        let rounds = max(after.count, others.map(\.sums.count).max() ?? 0)
        var inTurn = [Int](repeating: 0, count: rounds), doneAt = [Int](repeating: 0, count: rounds + 1)
        for sums in others.map(\.sums) + [before] {
            for (r, tokens) in sums.enumerated() { inTurn[r] += tokens }
            doneAt[sums.count] += sums.last!
        }
        var work = [Int](repeating: 0, count: rounds), done = 0
        for r in 0..<rounds { done += doneAt[r]; work[r] = inTurn[r] + done }
        func workWithRequest(_ r: Int) -> Int {
            work[r] - before[min(r, before.count - 1)] + after[min(r, after.count - 1)]
        }
        // A client's last sequence runs in round `count − 1`: its own tokens, plus the others'
        // in the rounds before (its own first count − 1 taken out of `work`).
        func seconds(_ sums: [Int], _ work: (Int) -> Int) -> Double {
            let r = max(sums.count - 2, 0)
            return Double(sums.last! + work(r) - sums[r]) * fastest
        }
        let mine = seconds(after, workWithRequest)
        if mine > limit { throw Failure.behindTooMuchWork(seconds: mine, limit: limit) }
        let now = ContinuousClock.now
        for other in others {
            let left = limit - other.lastArrival.duration(to: now).seconds
            let without = seconds(other.sums) { work[$0] }
            // A request already late is not protected at others' cost.
            if seconds(other.sums, workWithRequest) > left, without <= left {
                throw Failure.wouldMakeOthersLate(seconds: without, limit: limit)
            }
        }
    }

    private func enqueue(_ items: [Item], client: String) throws {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { throw Failure.stopped }
        guard items.count <= limits.perClientCapacity else {
            throw Failure.largerThanQueue(sequences: items.count, capacity: limits.queueCapacity, perClient: limits.perClientCapacity)
        }
        // A client that gave up on a request (or saw it time out) and sends again is not refused
        // for the sequences no one waits for: they leave the count first.
        if queues[client] != nil { queuedCount -= queues[client]!.removeFinished() }
        let waiting = queues[client]?.count ?? 0
        guard waiting + items.count <= limits.perClientCapacity else {
            throw Failure.clientShareFull(waiting: waiting, perClient: limits.perClientCapacity)
        }
        if queuedCount + items.count > limits.queueCapacity {
            // Only when the queue looks full: a pass over every client's sequences.
            for name in turns { queuedCount -= queues[name]!.removeFinished() }
        }
        guard queuedCount + items.count <= limits.queueCapacity else {
            throw Failure.queueFull(capacity: limits.queueCapacity)
        }
        try refuseIfBehindTooMuchWork(items, client: client)
        if queues[client] == nil { turns.append(client) }
        queues[client, default: ClientQueue()].items.append(contentsOf: items)
        queuedCount += items.count
        metrics.queueDepth(model: modelName, queuedCount)
        condition.signal()
    }

    // MARK: - The batching thread

    private func run() {
        while let items = nextBatch() { runForward(items) }
    }

    /// Waits for work, then for up to `maxWait` after the oldest arrival unless the token budget
    /// fills sooner; nil once stopped and drained.
    private func nextBatch() -> [Item]? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            while queuedCount == 0 {
                if stopping { return nil }
                condition.wait()
            }
            // A backlog's tail arrived long ago: it does not wait again.
            let oldest = turns.compactMap { queues[$0]?.first?.arrival }.min() ?? .now
            let deadline = oldest + limits.maxWait
            while !stopping, queuedTokens() < limits.maxBatchTokens, ContinuousClock.now < deadline {
                let remaining = ContinuousClock.now.duration(to: deadline)
                _ = condition.wait(until: Date(timeIntervalSinceNow: remaining.seconds))
            }
            let items = takeBatch()
            metrics.queueDepth(model: modelName, queuedCount)
            if !items.isEmpty { return items }
        }
    }

    /// Up to `maxBatchTokens` of waiting sequences (a longer one alone), the clients in turns:
    /// each round takes the next sequence of every client whose next one fits. Requests already
    /// answered (timed out, client gone) are dropped on the way and cost nothing more. The
    /// client after the last one served goes first next time.
    private func takeBatch() -> [Item] {
        var items: [Item] = []
        var tokens = 0
        var served: String?
        var progress = true
        while progress {
            progress = false
            for client in turns {
                while let item = queues[client]?.first, item.request.isFinished {
                    queues[client]!.removeFirst()
                    queuedCount -= 1
                }
                guard let item = queues[client]?.first else { continue }
                if !items.isEmpty, tokens + item.ids.count > limits.maxBatchTokens { continue }
                queues[client]!.removeFirst()
                queuedCount -= 1
                items.append(item)
                tokens += item.ids.count
                served = client
                progress = true
            }
        }
        if let served, let position = turns.firstIndex(of: served) {
            turns = Array(turns[(position + 1)...] + turns[...position])
        }
        turns.removeAll { queues[$0]?.first == nil }
        queues = queues.filter { $0.value.first != nil }
        return items
    }

    private func queuedTokens() -> Int {
        var tokens = 0
        for client in turns {
            guard let queue = queues[client] else { continue }
            for item in queue.items[queue.head...] {
                tokens += item.ids.count
                if tokens >= limits.maxBatchTokens { return tokens }
            }
        }
        return tokens
    }

    private func runForward(_ items: [Item]) {
        let tokens = items.reduce(0) { $0 + $1.ids.count }
        metrics.batch(model: modelName, sequences: items.count, tokens: tokens)
        let started = ContinuousClock.now
        do {
            // Token types only when some request has them (sentence pairs); zeros elsewhere.
            let typeIds = items.contains { $0.typeIds != nil }
                ? items.map { $0.typeIds ?? [Int32](repeating: 0, count: $0.ids.count) } : nil
            // Each sequence's last layer for the rows its request's head reads.
            let output = try model.encode(items.map(\.ids), typeIds: typeIds, profile: nil, reading: items.map(\.request.rowsRead))
            // Before any request hears back: one that follows sees this pass's cost.
            recordPassCost(seconds: started.duration(to: .now).seconds, tokens: tokens)
            // Each request's head over its own sequences of the shared pass.
            var positions: [ObjectIdentifier: [Int]] = [:]
            for (position, item) in items.enumerated() { positions[ObjectIdentifier(item.request), default: []].append(position) }
            for (_, mine) in positions.sorted(by: { $0.value[0] < $1.value[0] }) {
                let request = items[mine[0]].request
                request.deliver(output.selecting(mine), indices: mine.map { items[$0].index })
            }
        } catch {
            for item in items { item.request.finish(error) }
        }
        metrics.forwardSeconds(model: modelName, started.duration(to: .now))
    }

    /// Only passes of at least half the token budget: a request too long for the timeout runs in
    /// full ones, and a small pass costs more per token (its fixed costs, narrower products), so
    /// it would make requests look longer than they are.
    func recordPassCost(seconds: Double, tokens: Int) {
        guard tokens * 2 >= limits.maxBatchTokens else { return }
        let secondsPerToken = seconds / Double(tokens)
        condition.withLock {
            if passCosts.count < Self.passCostsKept { passCosts.append(secondsPerToken) }
            else { passCosts[nextPassCost] = secondsPerToken }
            nextPassCost = (nextPassCost + 1) % Self.passCostsKept
        }
    }
}

/// One HTTP request's sequences as the batching thread sees them: it delivers each encoded
/// batch's share, or an error; the request answers once, by its last output, an error, or its
/// timeout, whichever comes first.
protocol BatchedRequest: AnyObject, Sendable {
    var isFinished: Bool { get }
    /// Runs the request's head over `encoded` (its sequences `indices`, in that order).
    func deliver(_ encoded: EncoderOutput, indices: [Int])
    /// The rows of each of its sequences the head reads.
    var rowsRead: HeadRows { get }
    func finish(_ error: Error)
}

/// A request answered by one head: its outputs in input order.
final class HeadRequest<H: Head>: BatchedRequest, @unchecked Sendable {
    let head: H
    let batch: HeadBatch
    private let lock = NSLock()
    private var slots: [H.Output?]
    private var remaining: Int
    private var finished = false
    /// The error it finished with before anyone waited (cancelled before it was queued).
    private var earlyFailure: Error?
    private var continuation: CheckedContinuation<Void, Error>?

    init(head: H, batch: HeadBatch, count: Int) {
        (self.head, self.batch) = (head, batch)
        slots = [H.Output?](repeating: nil, count: count)
        remaining = count
    }

    var isFinished: Bool { lock.withLock { finished } }

    var rowsRead: HeadRows { head.rowsRead(batch) }

    /// Every output; read once the request has finished without an error.
    var outputs: [H.Output] { lock.withLock { slots.map { $0! } } }

    func deliver(_ encoded: EncoderOutput, indices: [Int]) {
        let outputs: [H.Output]
        do { outputs = try head(encoded, batch) } catch { finish(error); return }
        lock.lock()
        guard !finished else { lock.unlock(); return }
        for (output, index) in zip(outputs, indices) { slots[index] = output }
        remaining -= indices.count
        let done = remaining == 0
        let continuation = done ? self.continuation : nil
        if done { (finished, self.continuation) = (true, nil) }
        lock.unlock()
        continuation?.resume()
    }

    /// Waits for the outputs through `continuation`; false (and resumed) when already finished.
    func wait(_ continuation: CheckedContinuation<Void, Error>) -> Bool {
        lock.lock()
        guard finished else { self.continuation = continuation; lock.unlock(); return true }
        let failure = earlyFailure ?? CancellationError()
        lock.unlock()
        continuation.resume(throwing: failure)
        return false
    }

    func finish(_ error: Error) {
        lock.lock()
        guard !finished else { lock.unlock(); return }
        finished = true
        let continuation = self.continuation
        self.continuation = nil
        if continuation == nil { earlyFailure = error }
        lock.unlock()
        continuation?.resume(throwing: error)
    }

    func scheduleTimeout(_ timeout: Duration) {
        afterTimeout(timeout, of: self) { $0.finish($1) }
    }
}

/// Calls `expire` with the timeout error once `timeout` has passed, unless `owner` is gone by then.
func afterTimeout<Owner: AnyObject & Sendable>(_ timeout: Duration, of owner: Owner,
                                              _ expire: @escaping @Sendable (Owner, RequestTimeout) -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) { [weak owner] in
        if let owner { expire(owner, RequestTimeout()) }
    }
}

/// The request's deadline (--request-timeout) passed before it was answered.
struct RequestTimeout: Error {}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
#endif
