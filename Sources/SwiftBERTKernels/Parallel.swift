#if os(Linux)
import Glibc
import Synchronization
#else
import Dispatch
#endif

// The engine's one threading path: `parallelFor` runs the tasks of one parallel region on the
// calling thread and on helper threads of a small process-wide pool.
//
// Why not DispatchQueue.concurrentPerform: at batch 1 a region is 50–250 µs of work (one INT8
// Linear layer of MiniLM at 128 tokens), and waking a parked GCD worker cost a sizeable part of
// it, 30 times per forward pass. Here a helper that has just finished a region waits for the
// next one for a short, bounded time (`helperSpin`, about the gap a LayerNorm or an activation
// quantisation leaves between two regions) before it parks on a condition variable; the regions
// of one forward pass then hand over without a wake-up, and between passes no thread spins.
//
// Tasks are claimed from a shared counter, not assigned: a helper that has not started when the
// caller has claimed every task is withdrawn, and one that starts late (another process holds the
// core) holds up only the task it took, so callers split work into a few tasks per thread. A caller that finds
// no idle helper (many threads calling into one model at once) runs its tasks itself. Each task
// writes its own outputs and runs the same arithmetic on any thread, so results do not depend on
// who ran what.

/// Runs body(task, worker) for every task in 0..<count on up to `threads` threads, the caller
/// included. `worker` is unique among the threads of this call (0 is the caller), so it can
/// index a per-worker scratch buffer. `work` (multiply-adds in all, when known) caps the threads
/// at one per `parallelWorkPerThread`. Inline when that leaves one thread, or count == 1.
@inline(__always)
public func parallelFor(_ count: Int, threads: Int, work: Int = .max, _ body: (_ task: Int, _ worker: Int) -> Void) {
    let workers = min(threads, count, max(1, work / parallelWorkPerThread))
    if workers <= 1 {
        for task in 0..<count { body(task, 0) }
        return
    }
    #if os(Linux)
    withoutActuallyEscaping(body) { body in HelperPool.shared.run(count, workers: workers, body) }
    #else
    DispatchQueue.concurrentPerform(iterations: workers) { worker in
        for task in stride(from: worker, to: count, by: workers) { body(task, worker) }
    }
    #endif
}

/// Runs body(rows) for one contiguous block of 0..<m per thread, for a row-wise pass over
/// m × columns (each row independent, so the result does not depend on the split): in a
/// forward pass at two threads, the serial LayerNorms and quantisations were a tenth of what
/// kept INT8 from scaling.
public func parallelRows(_ m: Int, columns: Int, threads: Int, _ body: (Range<Int>) -> Void) {
    let blocks = splitRange(m, parts: threads, align: 1)
    parallelFor(blocks.count, threads: threads, work: m * columns * rowPassWorkPerElement) { block, _ in body(blocks[block]) }
}

/// Splits 0..<n into at most `parts` contiguous ranges whose bounds are multiples of `align`
/// (the last ends at n). Their sizes in units of `align` differ by one at most, the larger
/// first. Why not every part rounded up to `align`: that cut EmbeddingGemma's 36 feed-forward
/// panels into 7 parts of 5 and one of 1, so at 2 threads one thread ran 20 panels and the
/// other 16, and the layer scaled 1.78× instead of 2×.
public func splitRange(_ n: Int, parts: Int, align: Int = 16) -> [Range<Int>] {
    guard n > 0 else { return [] }
    let units = (n + align - 1) / align
    let (size, larger) = units.quotientAndRemainder(dividingBy: max(1, min(parts, units)))
    var ranges: [Range<Int>] = [], start = 0
    while start < n {
        let end = min(n, start + (ranges.count < larger ? size + 1 : size) * align)
        ranges.append(start..<end)
        start = end
    }
    return ranges
}

#if os(Linux)
/// Seconds a helper waits for the next region before it parks: longer than the serial steps
/// between the regions of one pass (LayerNorm, INT8 quantisation: 5–40 µs at 16–128 tokens;
/// longer passes have long regions, which amortise a wake-up), far shorter than a pass.
private let helperSpin = 50e-6

/// Seconds the caller, done with its own tasks, waits actively for helpers still running one
/// before it sleeps until they finish.
private let callerSpin = 50e-6

/// One parallel region: a task counter shared by its threads, and how many helpers are still in it.
private final class Region: @unchecked Sendable {
    let count: Int
    /// The tasks. The caller drops it before `run` returns: `parallelFor`'s body must not outlive
    /// the call (Swift checks it), and a helper may hold the region a moment after leaving it.
    private var body: ((Int, Int) -> Void)?
    let next = Atomic<Int>(0)
    let helpersInside = Atomic<Int>(0)
    let done = Signal()

    init(count: Int, body: @escaping (Int, Int) -> Void) { (self.count, self.body) = (count, body) }

    /// Called by the caller once every helper has left: no task can start after this.
    func end() { body = nil }

    /// A helper leaves the region (after its last task, or withdrawn before its first).
    func leave() {
        if helpersInside.wrappingSubtract(1, ordering: .releasing).newValue == 0 { done.notify() }
    }

    /// Returns once every helper has left: a short active wait, then asleep.
    func waitForHelpers() {
        let deadline = monotonicSeconds() + callerSpin
        var spins = 0
        while helpersInside.load(ordering: .acquiring) > 0 {
            spins += 1
            if spins & 63 == 0, monotonicSeconds() > deadline {
                done.wait { self.helpersInside.load(ordering: .acquiring) == 0 }
                return
            }
        }
    }

    /// Claims and runs tasks until none is left.
    func work(as worker: Int) {
        guard let body else { return }
        while true {
            let task = next.wrappingAdd(1, ordering: .relaxed).oldValue
            if task >= count { return }
            body(task, worker)
        }
    }
}

/// A helper thread. `state` says what it is doing; the caller that claims it moves it from
/// waiting (or parked) to claimed, hands it a region, then to ready; the helper moves it from
/// ready to running, and back to waiting when the region is done.
private final class Helper: @unchecked Sendable {
    enum State: Int { case waiting, parked, claimed, ready, running }
    let state = Atomic<Int>(State.waiting.rawValue)
    var region: Region?
    var worker = 0
    let wake = Signal()

    func compareExchange(_ from: State, _ to: State) -> Bool {
        state.compareExchange(expected: from.rawValue, desired: to.rawValue, ordering: .acquiringAndReleasing).exchanged
    }

    var current: State { State(rawValue: state.load(ordering: .acquiring))! }

    /// The helper's life: wait briefly for a region, park if none comes, run it, and again.
    func loop() {
        while true {
            let deadline = monotonicSeconds() + helperSpin
            var spins = 0
            while current == .waiting {
                spins += 1
                if spins & 63 == 0, monotonicSeconds() > deadline {
                    wake.wait(parkingIf: { self.compareExchange(.waiting, .parked) }) { self.current != .parked }
                }
            }
            // Claimed: the caller is about to set `region` and mark it ready.
            while current == .claimed {}
            guard compareExchange(.ready, .running), let region else { continue }  // withdrawn
            region.work(as: worker)
            self.region = nil
            state.store(State.waiting.rawValue, ordering: .releasing)
            region.leave()
        }
    }

    /// Hands `region` to this helper if it is idle; false if another caller has it.
    func offer(_ region: Region, worker: Int) -> Bool {
        let wasParked: Bool
        if compareExchange(.waiting, .claimed) { wasParked = false }
        else if compareExchange(.parked, .claimed) { wasParked = true }
        else { return false }
        (self.region, self.worker) = (region, worker)
        _ = region.helpersInside.wrappingAdd(1, ordering: .relaxed)
        if wasParked {
            wake.notify { self.state.store(State.ready.rawValue, ordering: .releasing) }
        } else {
            state.store(State.ready.rawValue, ordering: .releasing)
        }
        return true
    }

    /// Takes `region` back if the helper has not started it (its caller has run every task).
    /// The helper may have finished it already and been handed another caller's region: that
    /// one is left alone.
    func withdraw(_ region: Region) -> Bool {
        guard compareExchange(.ready, .claimed) else { return false }
        guard self.region === region else {
            state.store(State.ready.rawValue, ordering: .releasing)
            return false
        }
        self.region = nil
        state.store(State.waiting.rawValue, ordering: .releasing)
        return true
    }
}

/// The process-wide helpers, started on first use: as many as the largest `threads` asked for,
/// minus the caller, at least the machine's cores minus one.
private final class HelperPool: @unchecked Sendable {
    static let shared = HelperPool()
    private let lock = Mutex<[Helper]>([])
    /// Read once: glibc's sysconf opens and reads /sys/devices/system/cpu/online on every call,
    /// about 7 µs that every region spent before its helpers could start (3 % of a two-thread
    /// MiniLM 1x128 pass, 30 regions).
    private let onlineCores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

    private func helpers(_ wanted: Int) -> [Helper] {
        lock.withLock { helpers in
            let target = max(wanted, onlineCores - 1)
            while helpers.count < target {
                let helper = Helper()
                helpers.append(helper)
                var thread = pthread_t()
                let box = Unmanaged.passRetained(helper).toOpaque()
                let created = pthread_create(&thread, nil, { raw in
                    Unmanaged<Helper>.fromOpaque(raw!).takeRetainedValue().loop()
                    return nil
                }, box)
                precondition(created == 0, "could not start a worker thread (pthread_create: \(created))")
                pthread_detach(thread)
            }
            return helpers
        }
    }

    func run(_ count: Int, workers: Int, _ body: @escaping (Int, Int) -> Void) {
        let region = Region(count: count, body: body)
        var enlisted: [Helper] = []
        enlisted.reserveCapacity(workers - 1)
        for helper in helpers(workers - 1) where enlisted.count < workers - 1 {
            if helper.offer(region, worker: enlisted.count + 1) { enlisted.append(helper) }
        }
        region.work(as: 0)
        // Every task is claimed; helpers that have not started give the region back, the
        // others finish the task they hold (body must not outlive this call).
        for helper in enlisted where helper.withdraw(region) { region.leave() }
        region.waitForHelpers()
        region.end()
    }
}

/// A condition variable with its mutex, at fixed addresses.
private final class Signal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Sleeps until `done()` holds, checked under the mutex; when `parkingIf` is given, sleeps
    /// only if it returns true (also under the mutex).
    func wait(parkingIf park: () -> Bool = { true }, until done: () -> Bool) {
        pthread_mutex_lock(mutex)
        if park() {
            while !done() { pthread_cond_wait(condition, mutex) }
        }
        pthread_mutex_unlock(mutex)
    }

    /// Runs `change` (what the sleeper waits for) under the mutex, then wakes the sleeper.
    func notify(_ change: () -> Void = {}) {
        pthread_mutex_lock(mutex)
        change()
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }
}

private func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
}
#endif
