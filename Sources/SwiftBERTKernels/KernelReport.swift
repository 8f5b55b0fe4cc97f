import Foundation

// Which kernels this build runs, and whether the CPU could run faster ones. Swift cannot
// choose code by CPU feature at run time (there is no `#if` for the target's features, and an
// AVX-512 intrinsic compiled for a CPU without it does not compile), so the choice is made when
// SwiftBERT is built: the native build line (docs/builds.md) defines SWIFTBERT_NATIVE_ISA.
// What is left to run time is OpenBLAS's own dispatch (the FP32 Linear layers of the portable
// build, and attention) and this report.

/// The kernels this build of SwiftBERT runs, and what the CPU it runs on could run.
///
/// The fast kernels (AVX-512, and AVX-512 VNNI for INT8) are chosen when SwiftBERT is compiled,
/// by the native build line:
///
///     swift build -c release -Xswiftc -target-cpu -Xswiftc native -Xswiftc -DSWIFTBERT_NATIVE_ISA
///
/// A plain `swift build -c release` gives the portable build, which runs on any x86-64 CPU.
/// When a portable build loads a model on a CPU with AVX-512, SwiftBERT prints one warning on
/// stderr saying so (set `SWIFTBERT_NO_BUILD_WARNING=1` to silence it).
public struct KernelReport: Sendable, Equatable, CustomStringConvertible {
    /// How SwiftBERT was compiled.
    public enum Build: String, Sendable, Equatable {
        /// With the native build line: AVX-512 kernels for the CPU it was built on.
        case native
        /// Generic x86-64: runs on any x86-64 CPU, with slower kernels.
        case portable
    }

    /// How this copy of SwiftBERT was compiled.
    public let build: Build
    /// What runs the FP32 Linear layers (most of an FP32 forward pass).
    public let fp32Linear: String
    /// What runs the INT8 Linear layers (INT8 weights and activations).
    public let int8Linear: String
    /// What runs the BF16 Linear layers (`--precision bf16`).
    public let bf16Linear: String
    /// The matrix unit: AMX tiles, or the vector units (and why).
    public let matrixUnit: String
    /// The CPU features, among those SwiftBERT's kernels use, that this CPU has
    /// (from /proc/cpuinfo; empty where it cannot be read).
    public let cpuFeatures: [String]
    /// Whether this is the portable build on a CPU that could run the native kernels.
    public var couldRunFaster: Bool { build == .portable && cpuFeatures.contains("avx512f") }

    /// What to do for the faster kernels, when there is something to do.
    public var advice: String? {
        couldRunFaster
            ? "this CPU has AVX-512: build with `swift build -c release -Xswiftc -target-cpu -Xswiftc native -Xswiftc -DSWIFTBERT_NATIVE_ISA` for SwiftBERT's AVX-512 kernels (README: \"Use SwiftBERT from your package\")"
            : nil
    }

    /// One line: the build and its kernels.
    public var description: String {
        "\(build.rawValue) build: FP32 Linear layers \(fp32Linear); INT8 \(int8Linear); BF16 \(bf16Linear); matrix unit: \(matrixUnit)"
    }

    /// The vectors a native build's kernels run on: the build host's (a native build on a host
    /// without AVX-512 runs the 16-lane kernels as two AVX2 halves).
    #if SWIFTBERT_HOST_AVX512
    static let nativeVectors = "AVX-512"
    #else
    static let nativeVectors = "AVX2"
    #endif

    /// The report for this process.
    public static let current = KernelReport(cpuFeatures: cpuFeatures(cpuinfo: cpuinfo))

    /// /proc/cpuinfo, read once per process (nil where it cannot be read).
    private static let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)

    init(cpuFeatures: [String]) {
        #if SWIFTBERT_NATIVE_ISA
        build = .native
        fp32Linear = "packed FMA kernel (\(Self.nativeVectors))"
        #else
        build = .portable
        fp32Linear = "OpenBLAS sgemm (kernels chosen by OpenBLAS at run time)"
        #endif
        #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
        let vectorInt8 = "vpdpbusd (AVX-512 VNNI)"
        #elseif SWIFTBERT_NATIVE_ISA
        let vectorInt8 = "vpdpwssd (plain Swift, \(Self.nativeVectors))"
        #else
        let vectorInt8 = "plain Swift for generic x86-64 (SSE2)"
        #endif
        // The tiles run the Linear layers of INT8 (with INT8 activations) and BF16 in every build.
        let onTiles = TileBackend.preferred.map { $0 == .hardware ? "AMX tiles" : "AMX tile emulator" }
        int8Linear = onTiles.map { "tdpbusd (\($0))" } ?? vectorInt8
        bf16Linear = onTiles.map { "tdpbf16ps (\($0))" } ?? BF16Product.preferred.rawValue
        matrixUnit = TileBackend.matrixUnitDescription
        self.cpuFeatures = cpuFeatures
    }

    /// Whether /proc/cpuinfo names AMD as the vendor (for `BF16Product.preferred`). Read here,
    /// with the features, and not beside the kernels: the string search's generic code then sits
    /// away from them in the binary, where tools/check_kernels.py does not take it for theirs.
    static let cpuIsAMD = cpuinfo?.contains("AuthenticAMD") ?? false

    /// The features SwiftBERT's kernels use, in /proc/cpuinfo's names, that the first "flags"
    /// line of `cpuinfo` lists.
    static func cpuFeatures(cpuinfo: String?) -> [String] {
        guard let line = cpuinfo?.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) else { return [] }
        let flags = Set(line.split(separator: " ").map(String.init))
        return ["avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"].filter(flags.contains)
    }

    /// Prints the portable-build warning on stderr, the first time only (a model load calls it).
    public static func warnOnceIfSlower() { _ = warnedOnce }

    private static let warnedOnce: Bool = {
        guard let advice = current.advice, ProcessInfo.processInfo.environment["SWIFTBERT_NO_BUILD_WARNING"] != "1" else { return false }
        FileHandle.standardError.write(Data("SwiftBERT: warning: \(current); \(advice). Set SWIFTBERT_NO_BUILD_WARNING=1 to silence.\n".utf8))
        return true
    }()
}
