// swift-tools-version:6.0
import PackageDescription
import Foundation

// No unsafe flags: any package can depend on SwiftBERT by version (SwiftPM refuses
// `unsafeFlags` in versioned dependencies). Speed comes from one build line, the same for this
// package (Makefile, tools/) and for a package that depends on it (README, "Use SwiftBERT from
// your package"; docs/builds.md):
//
//     swift build -c release -Xswiftc -target-cpu -Xswiftc native -Xswiftc -DSWIFTBERT_NATIVE_ISA
//
// `-target-cpu native` lets LLVM use the host's AVX-512; SWIFTBERT_NATIVE_ISA switches on the
// kernels written for it (packed FP32 GEMM; vpdpbusd when the host has VNNI). A plain
// `swift build -c release` is the portable build: generic x86-64, FP32 Linear layers on
// OpenBLAS (which picks its kernels at run time), INT8 on the plain-Swift kernel; it runs on
// any x86-64 CPU and warns once on stderr when the CPU could run the faster build.
//
// The AVX-512 extensions this host has, for the intrinsics of Sources/SwiftBERTVNNI: an
// intrinsic compiles only for a CPU that has it, so code using one needs both its
// SWIFTBERT_HOST_… define and SWIFTBERT_NATIVE_ISA (the build line targets this host).
let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
let hostFeatures: [SwiftSetting] = [("avx512_vnni", "SWIFTBERT_HOST_VNNI"), ("avx512_bf16", "SWIFTBERT_HOST_BF16")]
    .filter { cpuinfo.contains(" \($0.0)") }.map { .define($0.1) }

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
        // `swift package generate-documentation --target SwiftBERT` (DocC, docs/builds.md). A
        // plugin only: packages that depend on SwiftBERT neither fetch nor build it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ] + serverPackages,
    targets: [
        // OpenBLAS's CBLAS interface (Debian: libopenblas-dev).
        .systemLibrary(
            name: "COpenBLAS",
            path: "Sources/COpenBLAS",
            providers: [.apt(["libopenblas-dev"])]
        ),
        // vdpbf16ps as a static inline C function: LLVM's intrinsic takes bfloat operands, which
        // Swift's Builtin module cannot name (docs/bf16.md). A header only; no compiler flags.
        .systemLibrary(name: "CBF16", path: "Sources/CBF16"),
        // One VNNI instruction for the INT8 kernel, through the compiler's Builtin module
        // (an experimental feature, which SwiftPM allows in versioned dependencies), and one
        // BF16 instruction for the BF16 kernel, from CBF16.
        .target(
            name: "SwiftBERTVNNI",
            dependencies: ["CBF16"],
            swiftSettings: hostFeatures + [.enableExperimentalFeature("BuiltinModule")]
        ),
        // The engine: tokenizer, weights, kernels, model, quantization, pipelines.
        .target(
            name: "SwiftBERT",
            dependencies: ["COpenBLAS", "SwiftBERTVNNI"],
            swiftSettings: hostFeatures
        ),
        // The benchmark and typing-simulation harness: what `bert bench` and Benchmarks/ run.
        // Not part of the library product, which holds the engine only.
        .target(
            name: "SwiftBERTBench",
            dependencies: [
                "SwiftBERT",
                "COpenBLAS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The `bert` command: a thin shell over the library.
        .executableTarget(
            name: "bert",
            dependencies: [
                "SwiftBERT",
                "SwiftBERTBench",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ] + serverForBert,
            swiftSettings: serverDefine
        ),
        .executableTarget(
            name: "SwiftBERTBenchmarks",
            dependencies: ["SwiftBERT", "SwiftBERTBench", "SwiftBERTVNNI"],
            path: "Benchmarks",
            swiftSettings: hostFeatures
        ),
        .testTarget(
            name: "SwiftBERTTests",
            dependencies: ["SwiftBERT", "SwiftBERTBench"],
            resources: [.copy("Fixtures")]
        ),
    ] + serverTargets,
    swiftLanguageModes: [.v5]
)
