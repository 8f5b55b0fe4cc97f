// Where the Linear layers' tile blocks run: Intel's AMX, or its emulator in C.
//
// AMX is detected once per process (CPUID, XCR0, and the kernel's permission for tile data,
// which swiftbert_amx_enable asks for): without the permission the first tile instruction is a
// SIGILL, so nothing here runs one unless every step said yes.

import Foundation
import SwiftBERTAMX

/// What runs a block of rows × one 64-channel panel in tile form.
public enum TileBackend: String, Sendable {
    /// The CPU's tiles: tdpbf16ps and tdpbusd.
    case hardware = "AMX tiles (tdpbf16ps, tdpbusd)"
    /// The same blocks in plain C, with the instructions' arithmetic: for tests on machines
    /// without AMX, and to check the tiles against.
    case emulator = "AMX tile emulator (plain C)"

    /// Whether this CPU and kernel let the process run tile instructions (AMX-TILE, -BF16 and
    /// -INT8 all present, and the permission granted).
    public static let hardwareAvailable: Bool = swiftbert_amx_enable() & 0b111 == 0b111

    /// What the Linear layers use: the tiles where the hardware has them, unless
    /// `SWIFTBERT_ISA=avx512` asks for the vector kernels (for comparison, and as an escape
    /// hatch); nil runs the vector kernels. `SWIFTBERT_ISA=amx-emulator` runs the whole engine's
    /// tile path through the emulator on any CPU (slow: for tests and debugging).
    public static let preferred: TileBackend? = {
        switch ProcessInfo.processInfo.environment["SWIFTBERT_ISA"]?.lowercased() {
        case "amx-emulator": return .emulator
        case "avx512", "vector": return nil
        default: return hardwareAvailable ? .hardware : nil
        }
    }()

    /// The matrix unit in words, for `bert info`, `bert bench` and /info.
    public static var matrixUnitDescription: String {
        switch preferred {
        case .hardware: return "AMX tiles (BF16 and INT8 Linear layers, BF16 attention)"
        case .emulator: return "AMX tile emulator in plain C (SWIFTBERT_ISA=amx-emulator; slow, for tests)"
        case nil where hardwareAvailable: return "vector units (AMX present, off by SWIFTBERT_ISA=avx512)"
        case nil: return "vector units (no AMX on this CPU, or the kernel did not grant tile data)"
        }
    }

    /// Rows a Linear layer's block covers: two tiles of 16.
    static let blockRows = 32

    /// The outputs one tile call leaves for the epilogue: 32 KiB, so that they are still in L1
    /// (48 KiB a core on Sapphire and Emerald Rapids) when it reads them.
    static let callOutputBytes = 32 * 1024

    /// c[rows × cols] (+)= a[rows × depth] · b[depth × cols] in 32-bit lanes, strides in bytes,
    /// b's columns in panels of 64 lanes a stride apart (swiftbert_amx.h).
    typealias BF16GEMM = @convention(c) (UnsafePointer<UInt32>?, Int, Int32, UnsafePointer<UInt32>?, Int, Int, Int32, Int32,
                                         UnsafeMutablePointer<Float>?, Int, Int32) -> Void
    typealias Int8GEMM = @convention(c) (UnsafePointer<UInt8>?, Int, Int32, UnsafePointer<Int8>?, Int, Int, Int32, Int32,
                                         UnsafeMutablePointer<Int32>?, Int, Int32) -> Void

    /// b's panel stride for a b whose rows are contiguous lanes: 64 lanes of 4 bytes.
    static let contiguousPanels = 256

    var bf16GEMM: BF16GEMM {
        switch self {
        case .hardware: swiftbert_amx_bf16_gemm
        case .emulator: swiftbert_emulated_bf16_gemm
        }
    }

    var int8GEMM: Int8GEMM {
        switch self {
        case .hardware: swiftbert_amx_int8_gemm
        case .emulator: swiftbert_emulated_int8_gemm
        }
    }
}
