#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation

/// Serial worker threads shared among clients by share, not by arrival: each client's jobs wait
/// in a queue of their own, and a worker that comes free takes the next job of the waiting
/// client that runs the fewest jobs at that moment (the one waiting longest among equals). So a
/// client with many requests queued holds at most its share of the workers once another client
/// waits, and the other waits for one job to end, not for the whole queue ahead of it; alone, a
/// client still gets every worker (no worker idles while a job waits).
///
/// Serial DispatchQueues, because libdispatch gives them threads of their own (overcommit) even
/// when every core is busy: a concurrent queue shares the cores' threads with Swift's
/// cooperative pool, which the HTTP handlers need free.
final class FairLanes: @unchecked Sendable {
    typealias Job = @Sendable () -> Void
    private let workers: [DispatchQueue]
    private let lock = NSLock()
    private var idle: [Int]
    /// The jobs waiting, per client.
    private var waiting: [String: [Job]] = [:]
    /// Clients with jobs waiting, longest waiting first.
    private var order: [String] = []
    /// Jobs running, per client.
    private var running: [String: Int] = [:]
    /// Jobs waiting, all clients'; told to `waitingChanged` (under the lock, so in order).
    private var waitingCount = 0
    private let waitingChanged: @Sendable (Int) -> Void

    init(label: String, count: Int, waitingChanged: @escaping @Sendable (Int) -> Void = { _ in }) {
        workers = (0..<count).map { DispatchQueue(label: "\(label)-\($0)") }
        idle = Array((0..<count).reversed())
        self.waitingChanged = waitingChanged
    }

    /// Queues `job` for `client`; it runs on one of the workers.
    func submit(client: String, _ job: @escaping Job) {
        let worker: Int? = lock.withLock {
            if waiting[client, default: []].isEmpty { order.append(client) }
            waiting[client, default: []].append(job)
            waitingCount += 1
            waitingChanged(waitingCount)
            return idle.popLast()
        }
        if let worker { drain(worker) }
    }

    /// Runs jobs on `worker` until none waits.
    private func drain(_ worker: Int) {
        workers[worker].async { [self] in
            var finished: String?
            while let (client, job) = next(worker: worker, finished: finished) {
                job()
                finished = client
            }
        }
    }

    /// The next job for a free worker (after `finished`'s job ended), or nil when none waits:
    /// the worker is then idle.
    private func next(worker: Int, finished: String?) -> (String, Job)? {
        lock.withLock {
            if let finished {
                running[finished, default: 1] -= 1
                if running[finished] == 0 { running[finished] = nil }
            }
            guard let index = order.indices.min(by: { running[order[$0], default: 0] < running[order[$1], default: 0] }) else {
                idle.append(worker)
                return nil
            }
            let client = order[index]
            let job = waiting[client]!.removeFirst()
            waitingCount -= 1
            waitingChanged(waitingCount)
            if waiting[client]!.isEmpty {
                waiting[client] = nil
                order.remove(at: index)
            } else {
                order.append(order.remove(at: index))  // its next job waits behind the others'
            }
            running[client, default: 0] += 1
            return (client, job)
        }
    }
}
#endif
