#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import Synchronization
#else
import Foundation
#endif
import SwiftBERT

/// A request to stop a long job cleanly: set by the SIGINT/SIGTERM handlers that
/// `installSignalHandlers()` puts in place (or by a caller, from any thread), and polled by
/// `EmbeddingStream` between batches, which then completes its output with the records done so
/// far and throws `StreamError.interrupted`.
package final class Interruption: @unchecked Sendable {
    /// The process-wide request the signal handlers set.
    package static let process = Interruption()

    #if os(Linux)
    private let state = Atomic<Int32>(0)
    #else
    private var state: Int32 = 0
    private let lock = NSLock()
    #endif

    package init() {}

    /// Asks the job to stop; `signal` is the reason (SIGINT, SIGTERM). Only the first request counts.
    /// Async-signal-safe: a single atomic compare-and-exchange.
    package func request(signal: Int32) {
        #if os(Linux)
        _ = state.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
        #else
        lock.lock(); if state == 0 { state = signal }; lock.unlock()
        #endif
    }

    /// The signal that asked for a stop, or nil while none has.
    package var signal: Int32? {
        #if os(Linux)
        let value = state.load(ordering: .relaxed)
        #else
        lock.lock(); let value = state; lock.unlock()
        #endif
        return value == 0 ? nil : value
    }

    package var isRequested: Bool { signal != nil }

    /// SIGINT and SIGTERM request a stop of `Interruption.process` instead of killing the process;
    /// a second one of either kills it at once (the default action), for when a clean stop is not
    /// wanted. The handlers do not set SA_RESTART, so a read blocked on a pipe returns EINTR and
    /// the reader can stop too. Install them only around the work that polls the request.
    package static func installSignalHandlers(_ signals: [Int32] = [SIGINT, SIGTERM]) {
        _ = process.signal  // initialise the global before a handler can touch it
        for sig in signals {
            var action = sigaction()
            #if os(Linux)
            action.__sigaction_handler.sa_handler = interruptionHandler
            #else
            action.__sigaction_u.__sa_handler = interruptionHandler
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(sig, &action, nil)
        }
    }

    /// Puts the default action back (the job is over, or the next phase cannot stop cleanly).
    package static func removeSignalHandlers(_ signals: [Int32] = [SIGINT, SIGTERM]) {
        for sig in signals { setDefaultAction(sig) }
    }

    /// The conventional exit status of a process stopped by `signal`: 128 + its number.
    package static func exitStatus(for signal: Int32) -> Int32 { 128 + signal }

    /// "SIGINT", "SIGTERM", or "signal N".
    package static func name(of signal: Int32) -> String {
        switch signal {
        case SIGINT: return "SIGINT"
        case SIGTERM: return "SIGTERM"
        case SIGHUP: return "SIGHUP"
        default: return "signal \(signal)"
        }
    }
}

private func setDefaultAction(_ sig: Int32) { signal(sig, SIG_DFL) }

/// The handler: the first signal requests a stop, a second one takes the default action.
private func interruptionHandler(_ sig: Int32) {
    if Interruption.process.isRequested {
        signal(sig, SIG_DFL)
        raise(sig)
        return
    }
    Interruption.process.request(signal: sig)
}
