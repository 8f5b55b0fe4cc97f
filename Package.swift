// swift-tools-version:6.1
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
// SWIFTBERT_HOST_AVX512 only names the vectors a native build runs on (`KernelReport`): on a
// host without AVX-512 (an AVX2 EPYC) the same 16-lane code runs as two 8-lane halves.
let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
let hostFeatures: [SwiftSetting] = [("avx512f", "SWIFTBERT_HOST_AVX512"), ("avx512_vnni", "SWIFTBERT_HOST_VNNI"),
                                    ("avx512_bf16", "SWIFTBERT_HOST_BF16")]
    .filter { cpuinfo.contains(" \($0.0)") }.map { .define($0.1) }

// `bert serve` (issue 14) is the trait `Server`: the SwiftBERTServer target on Hummingbird,
// swift-metrics, swift-prometheus, swift-log and swift-service-lifecycle. The trait is off by
// default, so a package that depends on SwiftBERT by version fetches none of them (SwiftPM
// leaves out a dependency whose every use is guarded by a trait that is off;
// tools/consumer_test.sh checks the list). This package's own builds turn it on: `make`,
// tools/setup.sh, tools/compare_engines.py and tools/cli_bench.sh pass `--traits Server`.
// Without it SwiftBERTServer compiles to nothing and `bert serve` says how to rebuild.
// The engine target SwiftBERT never depends on the server's packages.
let server = "Server"
// The trait `UnoptimisedTests` compiles the test target without optimisation; tools/sanitize.sh
// turns it on. The sanitizers' tests spend their time in the engine, which stays optimised as
// released, while optimising the test module (its whole-module passes) cost each sanitizer
// build minutes. `make test` leaves it off: the suite's scalar references loop over millions
// of values.
let unoptimisedTests = "UnoptimisedTests"
func whenServer(_ product: String, _ package: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: [server]))
}

let package = Package(
    name: "SwiftBERT",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "SwiftBERT", targets: ["SwiftBERT"]),
        .executable(name: "bert", targets: ["bert"]),
        // The HTTP server as a library, for a Swift service of your own: depend on SwiftBERT with
        // `traits: ["Server"]` (docs/server.md).
        .library(name: "SwiftBERTServer", targets: ["SwiftBERTServer"]),
        // libswiftbert.so: the C ABI of Sources/SwiftBERTCABI/swiftbert.h, for the Python
        // package (python/, docs/python.md) and any other language with a C FFI.
        .library(name: "swiftbert", type: .dynamic, targets: ["SwiftBERTCABI"]),
    ],
    traits: [.trait(name: server, description: "`bert serve` and the SwiftBERTServer library: Hummingbird, swift-metrics, swift-prometheus, swift-log, swift-service-lifecycle"),
             .trait(name: unoptimisedTests, description: "the test target compiled without optimisation (the sanitizer builds of tools/sanitize.sh)")],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // `swift package generate-documentation --target SwiftBERT` (DocC, docs/builds.md). A
        // plugin only: packages that depend on SwiftBERT neither fetch nor build it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Without Hummingbird's default traits (ConfigurationSupport: swift-configuration's
        // readers; FullFoundation: URL-encoded forms), which the server does not use: the build
        // skips swift-configuration, and `--build-tests` no longer recompiled Hummingbird each time.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),  // Hummingbird's own
    ],
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
        // The kernels: GEMM on packed matrices (FP32, INT8, BF16), attention, norms and
        // activations, the thread pool. They know nothing of models or files; the engine uses
        // their public API only, so the compiler keeps the layering (docs/architecture.md).
        // AMX tile kernels and their emulator, in C: Swift cannot emit tile instructions. A
        // target attribute on each tile function, no compiler flags; run only after run-time
        // detection (Sources/SwiftBERTKernels/AMX).
        .target(name: "SwiftBERTAMX"),
        .target(
            name: "SwiftBERTKernels",
            dependencies: ["COpenBLAS", "SwiftBERTVNNI", "SwiftBERTAMX"],
            swiftSettings: hostFeatures
        ),
        // The engine: tokenizer, weights, model families, quantization, pipelines.
        .target(
            name: "SwiftBERT",
            dependencies: ["SwiftBERTKernels"],
            swiftSettings: hostFeatures
        ),
        // The command line's plumbing, out of the engine: input readers and output writers,
        // streaming with progress and signals, terminal checks, reports, sysexits statuses.
        .target(
            name: "SwiftBERTCommandLine",
            dependencies: ["SwiftBERT", "SwiftBERTKernels"]
        ),
        // `bert pull`: the model catalogue, downloads (through the curl program), sha256, inflate.
        .target(
            name: "SwiftBERTCatalog",
            dependencies: ["SwiftBERT"]
        ),
        // The benchmark and typing-simulation harness: what `bert bench` and Benchmarks/ run.
        // Not part of the library product, which holds the engine only.
        .target(
            name: "SwiftBERTBench",
            dependencies: [
                "SwiftBERT",
                "SwiftBERTKernels",
                "SwiftBERTCommandLine",
                "COpenBLAS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The `bert` command: a thin shell over the library.
        .executableTarget(
            name: "bert",
            dependencies: [
                "SwiftBERT",
                "SwiftBERTCommandLine",
                "SwiftBERTBench",
                "SwiftBERTCatalog",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .target(name: "SwiftBERTServer", condition: .when(traits: [server])),
            ]
        ),
        .executableTarget(
            name: "SwiftBERTBenchmarks",
            dependencies: ["SwiftBERT", "SwiftBERTKernels", "SwiftBERTCommandLine", "SwiftBERTBench", "SwiftBERTVNNI", "SwiftBERTAMX"],
            path: "Benchmarks",
            swiftSettings: hostFeatures
        ),
        .testTarget(
            name: "SwiftBERTTests",
            dependencies: ["SwiftBERT", "SwiftBERTKernels", "SwiftBERTCommandLine", "SwiftBERTBench", "SwiftBERTCatalog",
                           // The batcher in-process (BatcherTests); the rest of the server is tested over HTTP.
                           .target(name: "SwiftBERTServer", condition: .when(traits: [server]))],
            resources: [.copy("Fixtures")],
            swiftSettings: [.unsafeFlags(["-Onone"], .when(traits: [unoptimisedTests]))]
        ),
        // The C ABI (`@_cdecl` functions over the pipelines) of the `swiftbert` dynamic library.
        // Its linker version script exports `swiftbert_*` alone, so the Swift runtime and the
        // engine inside stay private to the library. The only unsafe flag of the package: it
        // belongs to this target, which only the `swiftbert` product holds, so a package that
        // depends on the SwiftBERT library by version never meets it.
        .target(
            name: "SwiftBERTCABI",
            dependencies: ["SwiftBERT", "SwiftBERTCatalog"],
            exclude: ["swiftbert.h", "swiftbert.map"],
            linkerSettings: [.unsafeFlags(["-Xlinker", "--version-script=\(Context.packageDirectory)/Sources/SwiftBERTCABI/swiftbert.map"])]
        ),
        // The HTTP server: OpenAI and TEI routes, dynamic batching, Prometheus metrics. Its files
        // are `#if Server`: empty without the trait.
        .target(
            name: "SwiftBERTServer",
            dependencies: [
                "SwiftBERT",
                whenServer("Hummingbird", "hummingbird"),
                whenServer("Logging", "swift-log"),
                whenServer("Metrics", "swift-metrics"),
                whenServer("Prometheus", "swift-prometheus"),
                whenServer("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
