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
    }

    enum Failure: Error, Equatable {
        /// Waiting helps: the queue has no room now.
        case queueFull(capacity: Int)
        /// Waiting never helps: the request alone holds more sequences than the queue.
        case largerThanQueue(sequences: Int, capacity: Int)
        case stopped
    }

    /// One queued sequence of a request.
    private struct Item {
        let ids: [Int32]
        let typeIds: [Int32]?
        let request: any BatchedRequest
        let index: Int
    }

    let model: any EncoderModel
    let limits: Limits
    let metrics: ServerMetrics
    let modelName: String
    private let condition = NSCondition()
    private var queue: [Item] = []
    private var head = 0
    private var oldestArrival: ContinuousClock.Instant?
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
        return queue.count - head
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
        let request = HeadRequest(head: head, batch: batch, count: sequences.count)
        // Cancelled (its client has gone: Handler.respond), the request is finished, and its
        // queued sequences are skipped, not computed for no one.
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                guard request.wait(continuation) else { return }
                do {
                    try enqueue(sequences.indices.map {
                        Item(ids: sequences[$0], typeIds: typeIds?[$0], request: request, index: $0)
                    })
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

    private func enqueue(_ items: [Item]) throws {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { throw Failure.stopped }
        guard items.count <= limits.queueCapacity else {
            throw Failure.largerThanQueue(sequences: items.count, capacity: limits.queueCapacity)
        }
        guard queue.count - head + items.count <= limits.queueCapacity else {
            throw Failure.queueFull(capacity: limits.queueCapacity)
        }
        if queue.count == head { oldestArrival = .now }
        queue.append(contentsOf: items)
        metrics.queueDepth(model: modelName, queue.count - head)
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
            while queue.count == head {
                if stopping { return nil }
                condition.wait()
            }
            let deadline = (oldestArrival ?? .now) + limits.maxWait
            while !stopping, queuedTokens() < limits.maxBatchTokens, ContinuousClock.now < deadline {
                let remaining = ContinuousClock.now.duration(to: deadline)
                _ = condition.wait(until: Date(timeIntervalSinceNow: remaining.seconds))
            }
            var items: [Item] = []
            var tokens = 0
            var taken = 0
            for item in queue[head...] {
                if !items.isEmpty, tokens + item.ids.count > limits.maxBatchTokens { break }
                taken += 1
                // Requests already answered (timed out, client gone) cost nothing more.
                if item.request.isFinished { continue }
                tokens += item.ids.count
                items.append(item)
            }
            take(taken)
            if !items.isEmpty { return items }
        }
    }

    private func queuedTokens() -> Int {
        var tokens = 0
        for item in queue[head...] {
            tokens += item.ids.count
            if tokens >= limits.maxBatchTokens { break }
        }
        return tokens
    }

    /// Drops `count` items from the head; compacts the array now and then.
    private func take(_ count: Int) {
        head += count
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
            oldestArrival = nil
        } else {
            if head > 1024, head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            // The rest arrived after the old oldest: keeping its instant bounds their wait by
            // maxWait too (restarting the clock here made a backlog's tail wait again).
        }
        metrics.queueDepth(model: modelName, queue.count - head)
    }

    private func runForward(_ items: [Item]) {
        metrics.batch(model: modelName, sequences: items.count, tokens: items.reduce(0) { $0 + $1.ids.count })
        let started = ContinuousClock.now
        do {
            // Token types only when some request has them (sentence pairs); zeros elsewhere.
            let typeIds = items.contains { $0.typeIds != nil }
                ? items.map { $0.typeIds ?? [Int32](repeating: 0, count: $0.ids.count) } : nil
            // Each sequence's last layer for the rows its request's head reads.
            let output = try model.encode(items.map(\.ids), typeIds: typeIds, profile: nil, reading: items.map(\.request.rowsRead))
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
