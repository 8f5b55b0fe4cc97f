// A software prefetch into L2 (prefetcht1), for the Linear kernels that stream weights from
// memory (Kernels/MicroKernel.swift). Swift has no prefetch; LLVM's intrinsic comes through the
// Builtin module, as vpdpbusd does (VNNI.swift). It is a hint: it never faults, and costs a load
// slot.

import Builtin

/// Asks for the cache line at `address` to be brought into L2 (and L3), for reading.
@inlinable @inline(__always)
public func prefetchToL2(_ address: UnsafeRawPointer) {
    // llvm.prefetch(address, read = 0, locality 2 = prefetcht1, data cache = 1)
    Builtin.int_prefetch_RawPointer(address._rawValue, Int32(0)._value, Int32(2)._value, Int32(1)._value)
}
