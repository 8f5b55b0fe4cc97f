import Foundation
import XCTest
#if Server
@testable import SwiftBERTServer
#endif

/// `FairLanes`' policy on its own, without a server or a clock: each job holds its worker until
/// the test opens its gate, so the order in which jobs start is the policy's whatever the load.
/// (The server's tests `testAClientWithManyLargeRequestsHoldsOnlyItsShareOfTheLanes` and
/// `testClientsBehindATrustedProxyTakeSeparateTurns` check that requests reach the lanes as
/// their clients' jobs.)
final class FairLanesTests: XCTestCase {
    #if Server
    /// Client A queues three jobs per worker, then B queues one: B's takes the first worker that
    /// comes free, A's the rest. Alone, A had every worker.
    func testAWaitingClientTakesTheFirstWorkerThatComesFree() {
        let jobs = GatedJobs(workers: 2)
        jobs.submit("A1", client: "A")
        XCTAssertTrue(jobs.waitForStarts(1))  // one at a time: two free workers start in either order
        for i in 2...6 { jobs.submit("A\(i)", client: "A") }
        XCTAssertTrue(jobs.waitForStarts(1))
        XCTAssertEqual(jobs.starts, ["A1", "A2"], "alone, a client gets every worker")
        jobs.submit("B1", client: "B")
        // A1 ends: B runs none, so B1; after that only A waits.
        jobs.finishOneByOne(["A1", "A2", "B1", "A3"])
        XCTAssertEqual(jobs.starts, ["A1", "A2", "B1", "A3", "A4", "A5"])
        jobs.finishAll()
    }

    /// Two clients with jobs waiting share the workers: a worker that comes free takes the next
    /// job of the client running fewer jobs at that moment.
    func testAFreeWorkerGoesToTheClientRunningFewerJobs() {
        let jobs = GatedJobs(workers: 2)
        for name in ["A1", "A2"] {  // one at a time: two free workers start in either order
            jobs.submit(name, client: "A")
            XCTAssertTrue(jobs.waitForStarts(1))
        }
        for name in ["B1", "B2", "B3"] { jobs.submit(name, client: "B") }
        jobs.submit("A3", client: "A")
        // A1 ends: A runs 1, B 0, so B1. A2 ends: A 0, B 1, so A3. B1 ends: only B waits.
        jobs.finishOneByOne(["A1", "A2", "B1", "A3"])
        XCTAssertEqual(jobs.starts, ["A1", "A2", "B1", "A3", "B2", "B3"])
        jobs.finishAll()
    }

    /// Among clients running as many jobs, the one waiting longest goes first, and a client's
    /// next job waits behind the others' (round robin, not one client's whole queue).
    func testAmongEqualsTheClientWaitingLongestGoesFirst() {
        let jobs = GatedJobs(workers: 1)
        jobs.submit("A1", client: "A")
        XCTAssertTrue(jobs.waitForStarts(1))
        for (name, client) in [("A2", "A"), ("B1", "B"), ("C1", "C"), ("A3", "A"), ("B2", "B")] { jobs.submit(name, client: client) }
        jobs.finishOneByOne(["A1", "A2", "B1", "C1", "A3"])
        XCTAssertEqual(jobs.starts, ["A1", "A2", "B1", "C1", "A3", "B2"])
        jobs.finishAll()
    }

    /// Jobs on a `FairLanes` that each wait for their gate; `starts` is the order they began in.
    final class GatedJobs: @unchecked Sendable {
        private let lanes: FairLanes
        private let lock = NSLock()
        private var gates: [String: DispatchSemaphore] = [:]
        private var started: [String] = []
        private let began = DispatchSemaphore(value: 0)

        init(workers: Int) { lanes = FairLanes(label: "fair-lanes-test", count: workers) }

        func submit(_ name: String, client: String) {
            let gate = DispatchSemaphore(value: 0)
            lock.withLock { gates[name] = gate }
            lanes.submit(client: client) { [self] in
                lock.withLock { started.append(name) }
                began.signal()
                gate.wait()
            }
        }

        /// Waits until `count` more jobs have begun; 10 s each at most (a hang fails the test,
        /// nothing is timed).
        func waitForStarts(_ count: Int) -> Bool {
            (0..<count).allSatisfy { _ in began.wait(timeout: .now() + 10) == .success }
        }

        func finish(_ name: String) { lock.withLock { gates[name] }?.signal() }

        /// Ends each job of `names` in turn, each time waiting for the job that takes its worker.
        func finishOneByOne(_ names: [String], file: StaticString = #filePath, line: UInt = #line) {
            for name in names {
                finish(name)
                XCTAssertTrue(waitForStarts(1), "after \(name) ended: \(starts)", file: file, line: line)
            }
        }

        /// Opens every gate, so that no worker is left waiting after the test.
        func finishAll() { lock.withLock { Array(gates.values) }.forEach { $0.signal() } }

        var starts: [String] { lock.withLock { started } }
    }
    #endif
}
