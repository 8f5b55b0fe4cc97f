// swift-tools-version:6.0
import PackageDescription
import Foundation

// Release builds use the host CPU's vector instructions (AVX-512/VNNI on the
// machines we measured): LLVM only emits SSE2 for generic x86-64, which makes the
// INT8 and elementwise kernels 5x slower. Set SWIFTBERT_PORTABLE=1 when building a
// binary that must run on other x86-64 CPUs.
let portable = ProcessInfo.processInfo.environment["SWIFTBERT_PORTABLE"] == "1"
let hostISA: [SwiftSetting] = portable ? [] : [
    .unsafeFlags(["-Xcc", "-march=native", "-target-cpu", "native"], .when(configuration: .release)),
    .define("SWIFTBERT_NATIVE_ISA", .when(configuration: .release)),
]
let fastMath: [SwiftSetting] = [.unsafeFlags(["-Ounchecked"], .when(configuration: .release))]
// vpdpbusd (AVX-512 VNNI) for the INT8 kernel, when this host has it and the build is native.
let hostHasVNNI = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.contains(" avx512_vnni") ?? false
let vnni: [SwiftSetting] = portable || !hostHasVNNI ? [] : [.define("SWIFTBERT_VNNI", .when(configuration: .release))]
// vdpbf16ps (AVX512_BF16) for the BF16 kernel, likewise; without it BF16 runs in plain Swift.
let hostHasBF16 = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.contains(" avx512_bf16") ?? false
let bf16: [SwiftSetting] = portable || !hostHasBF16 ? [] : [.define("SWIFTBERT_BF16", .when(configuration: .release))]

// `bert serve` (issue 14): the SwiftBERTServer target and product on Hummingbird, swift-metrics,
// swift-prometheus and swift-log; the engine target SwiftBERT never depends on them.
// SWIFTBERT_NO_SERVER=1 leaves the server out (tools/sanitize.sh sets it: the sanitizer builds
// would otherwise compile Hummingbird and SwiftNIO twice more in CI); `bert serve` then says so.
let withServer = ProcessInfo.processInfo.environment["SWIFTBERT_NO_SERVER"] != "1"
let serverPackages: [Package.Dependency] = withServer ? [
    .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
] : []
let serverTargets: [Target] = withServer ? [
    // The HTTP server: OpenAI and TEI routes, dynamic batching, Prometheus metrics.
    .target(
        name: "SwiftBERTServer",
        dependencies: [
            "SwiftBERT",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ],
        swiftSettings: hostISA
    ),
] : []
let serverProducts: [Product] = withServer ? [.library(name: "SwiftBERTServer", targets: ["SwiftBERTServer"])] : []
let serverForBert: [Target.Dependency] = withServer ? ["SwiftBERTServer"] : []
let serverDefine: [SwiftSetting] = withServer ? [.define("SWIFTBERT_SERVER")] : []

let package = Package(
    name: "SwiftBERT",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "SwiftBERT", targets: ["SwiftBERT"]),
        .executable(name: "bert", targets: ["bert"]),
    ] + serverProducts,
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ] + serverPackages,
    targets: [
        // OpenBLAS's CBLAS interface (Debian: libopenblas-dev).
        .systemLibrary(
            name: "COpenBLAS",
            path: "Sources/COpenBLAS",
            providers: [.apt(["libopenblas-dev"])]
        ),
        // vdpbf16ps as a static inline C function (Swift's Builtin has no bfloat type).
        .systemLibrary(name: "CBF16", path: "Sources/CBF16"),
        // One VNNI instruction for the INT8 kernel; -parse-stdlib reaches LLVM's intrinsic.
        // And one BF16 instruction for the BF16 kernel, from CBF16.
        .target(
            name: "SwiftBERTVNNI",
            dependencies: ["CBF16"],
            swiftSettings: hostISA + fastMath + vnni + bf16 + [.unsafeFlags(["-parse-stdlib"])]
        ),
        // The engine: tokenizer, weights, kernels, model, quantization, pipelines.
        .target(
            name: "SwiftBERT",
            dependencies: ["COpenBLAS", "SwiftBERTVNNI"],
            swiftSettings: hostISA + fastMath + vnni + bf16
        ),
        // The benchmark and typing-simulation harness: what `bert bench` and Benchmarks/ run.
        // Not part of the library product, which holds the engine only.
        .target(
            name: "SwiftBERTBench",
            dependencies: [
                "SwiftBERT",
                "COpenBLAS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: hostISA
        ),
        // The `bert` command: a thin shell over the library.
        .executableTarget(
            name: "bert",
            dependencies: [
                "SwiftBERT",
                "SwiftBERTBench",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ] + serverForBert,
            swiftSettings: hostISA + serverDefine
        ),
        .executableTarget(
            name: "SwiftBERTBenchmarks",
            dependencies: ["SwiftBERT", "SwiftBERTBench", "SwiftBERTVNNI"],
            path: "Benchmarks",
            swiftSettings: hostISA + fastMath + vnni + bf16
        ),
        .testTarget(
            name: "SwiftBERTTests",
            dependencies: ["SwiftBERT", "SwiftBERTBench"],
            resources: [.copy("Fixtures")]
        ),
    ] + serverTargets,
    swiftLanguageModes: [.v5]
)
