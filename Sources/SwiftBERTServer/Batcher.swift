#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// Dynamic batching for one model: requests from any connection queue their sequences here, and
/// one dedicated thread takes them in batches (bounded by tokens per batch and by how long the
/// first waiting sequence may wait), runs the forward pass off the NIO event loops, and answers
/// each request once all its sequences are done. The queue is bounded: a request that does not
/// fit is refused at once (the route answers 503), so memory never grows with the load.
final class Batcher: @unchecked Sendable {
    struct Limits: Sendable {
        /// Tokens per forward pass (a single longer sequence still runs alone).
        var maxBatchTokens: Int
        /// How long the oldest queued sequence may wait for others to join its batch.
        var maxWait: Duration
        /// Sequences (or fill-mask jobs) waiting at most.
        var queueCapacity: Int
    }

    enum Failure: Error, Equatable {
        case queueFull(capacity: Int)
        case stopped
    }

    /// One queued unit of work: a sequence of a request, or a job run alone (fill-mask).
    private enum Work {
        case sequence(ids: [Int32], request: EmbeddingRequest, index: Int)
        case job(() -> Void)

        var tokens: Int {
            if case let .sequence(ids, _, _) = self { return ids.count }
            return 0
        }
    }

    let model: BertModel
    let limits: Limits
    let metrics: ServerMetrics
    let modelName: String
    private let condition = NSCondition()
    private var queue: [Work] = []
    private var head = 0
    private var oldestArrival: ContinuousClock.Instant?
    private var stopping = false
    private var thread: Thread?

    init(model: BertModel, name: String, limits: Limits, metrics: ServerMetrics) {
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

    /// Vectors for pre-tokenised sequences, pooled as asked (not normalised: callers do it after
    /// any dimension cut). Throws `Failure.queueFull` at once when the queue has no room.
    func embed(_ sequences: [[Int32]], pooling: Pooling?, timeout: Duration) async throws -> [[Float]] {
        let request = EmbeddingRequest(count: sequences.count, pooling: pooling)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            request.continuation = continuation
            do {
                try enqueue(sequences.enumerated().map { .sequence(ids: $1, request: request, index: $0) })
            } catch {
                request.finish(error)
                return
            }
            request.scheduleTimeout(timeout)
        }
        return request.vectors
    }

    /// Runs `body` on the batching thread, between batches (for fill-mask), queued like a sequence.
    func run<T: Sendable>(timeout: Duration, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let box = JobBox<T>()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            box.continuation = continuation
            do {
                try enqueue([.job { box.finish(Result { try body() }) }])
            } catch {
                box.finish(.failure(error))
                return
            }
            box.scheduleTimeout(timeout)
        }
    }

    private func enqueue(_ items: [Work]) throws {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { throw Failure.stopped }
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
        while let batch = nextBatch() {
            switch batch {
            case let .job(body): body()
            case let .sequences(items): runForward(items)
            }
        }
    }

    private enum Batch {
        case job(() -> Void)
        case sequences([(ids: [Int32], request: EmbeddingRequest, index: Int)])
    }

    /// Waits for work, then for up to `maxWait` after the oldest arrival unless the token budget
    /// fills sooner; nil once stopped and drained.
    private func nextBatch() -> Batch? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            while queue.count == head {
                if stopping { return nil }
                condition.wait()
            }
            // A job at the head runs alone.
            if case let .job(body) = queue[head] {
                take(1)
                return .job(body)
            }
            let deadline = (oldestArrival ?? .now) + limits.maxWait
            while !stopping, queuedTokens() < limits.maxBatchTokens, ContinuousClock.now < deadline {
                let remaining = ContinuousClock.now.duration(to: deadline)
                _ = condition.wait(until: Date(timeIntervalSinceNow: remaining.seconds))
            }
            var items: [(ids: [Int32], request: EmbeddingRequest, index: Int)] = []
            var tokens = 0
            var taken = 0
            for work in queue[head...] {
                guard case let .sequence(ids, request, index) = work else { break }
                if !items.isEmpty, tokens + ids.count > limits.maxBatchTokens { break }
                taken += 1
                // Requests already answered (timed out, client gone) cost nothing more.
                if request.isFinished { continue }
                tokens += ids.count
                items.append((ids, request, index))
            }
            take(taken)
            if !items.isEmpty { return .sequences(items) }
        }
    }

    private func queuedTokens() -> Int {
        var tokens = 0
        for work in queue[head...] {
            tokens += work.tokens
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

    private func runForward(_ items: [(ids: [Int32], request: EmbeddingRequest, index: Int)]) {
        metrics.batch(model: modelName, sequences: items.count, tokens: items.reduce(0) { $0 + $1.ids.count })
        // Group by pooling so one forward pass serves requests asking for different poolings.
        let started = ContinuousClock.now
        do {
            let output = try model.encode(items.map(\.ids))
            var byPooling: [Pooling?: [Int]] = [:]
            for (position, item) in items.enumerated() { byPooling[item.request.pooling, default: []].append(position) }
            var vectors = [[Float]](repeating: [], count: items.count)
            for (pooling, _) in byPooling {
                let pooled = model.pool(output, pooling: pooling, normalize: false)
                for position in byPooling[pooling]! { vectors[position] = pooled[position] }
            }
            for (position, item) in items.enumerated() {
                item.request.deliver(vectors[position], at: item.index)
            }
        } catch {
            for item in items { item.request.finish(error) }
        }
        metrics.forwardSeconds(model: modelName, started.duration(to: .now))
    }
}

/// The sequences of one HTTP request, filled in by the batching thread; answered once, by the
/// last vector, an error, or the timeout, whichever comes first.
final class EmbeddingRequest: @unchecked Sendable {
    let pooling: Pooling?
    private let lock = NSLock()
    private(set) var vectors: [[Float]]
    private var remaining: Int
    private var finished = false
    var continuation: CheckedContinuation<Void, Error>?

    init(count: Int, pooling: Pooling?) {
        self.pooling = pooling
        vectors = [[Float]](repeating: [], count: count)
        remaining = count
    }

    var isFinished: Bool { lock.lock(); defer { lock.unlock() }; return finished }

    func deliver(_ vector: [Float], at index: Int) {
        lock.lock()
        guard !finished else { lock.unlock(); return }
        vectors[index] = vector
        remaining -= 1
        let done = remaining == 0
        if done { finished = true }
        let continuation = done ? self.continuation : nil
        if done { self.continuation = nil }
        lock.unlock()
        continuation?.resume()
    }

    func finish(_ error: Error) {
        lock.lock()
        guard !finished else { lock.unlock(); return }
        finished = true
        let continuation = self.continuation
        self.continuation = nil
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
        if let owner { expire(owner, RequestTimeout(seconds: timeout.seconds)) }
    }
}

/// A job's continuation, resumed once.
final class JobBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    var continuation: CheckedContinuation<T, Error>?

    func finish(_ result: Result<T, Error>) {
        lock.lock()
        let continuation = self.continuation
        self.continuation = nil
        lock.unlock()
        continuation?.resume(with: result)
    }

    func scheduleTimeout(_ timeout: Duration) {
        afterTimeout(timeout, of: self) { $0.finish(.failure($1)) }
    }
}

struct RequestTimeout: Error {
    let seconds: Double
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
#endif
