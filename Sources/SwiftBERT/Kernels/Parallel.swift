import Dispatch

/// Runs body(task, worker) for every task in 0..<count on `threads` workers, with a static
/// round-robin assignment so each worker can own a scratch buffer. Inline when threads == 1.
@inline(__always)
func parallelFor(_ count: Int, threads: Int, _ body: (_ task: Int, _ worker: Int) -> Void) {
    let workers = min(threads, count)
    if workers <= 1 {
        for task in 0..<count { body(task, 0) }
        return
    }
    DispatchQueue.concurrentPerform(iterations: workers) { worker in
        for task in stride(from: worker, to: count, by: workers) { body(task, worker) }
    }
}

/// Splits 0..<n into `parts` contiguous ranges whose bounds are multiples of `align`.
func splitRange(_ n: Int, parts: Int, align: Int = 16) -> [Range<Int>] {
    let parts = max(1, min(parts, (n + align - 1) / align))
    let chunk = ((n + parts - 1) / parts + align - 1) / align * align
    return stride(from: 0, to: n, by: chunk).map { $0..<min($0 + chunk, n) }
}
