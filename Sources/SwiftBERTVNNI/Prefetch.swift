// A software prefetch into L2 (prefetcht1), for the Linear kernels that stream weights from
// memory (SwiftBERTKernels/MicroKernel.swift). Swift has no prefetch; it comes from a static inline C
// function (Sources/CBF16), inlined here as vdpbf16ps is (BF16.swift). It is a hint: it never
// faults, and costs a load slot.

import CBF16

/// Asks for the cache line at `address` to be brought into L2 (and L3), for reading.
@inlinable @inline(__always)
public func prefetchToL2(_ address: UnsafeRawPointer) {
    swiftbert_prefetch_l2(address)
}
