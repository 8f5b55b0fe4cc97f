import XCTest
@testable import SwiftBERT
@testable import SwiftBERTKernels

/// What `KernelReport` says about a build and a CPU (docs/builds.md).
final class KernelReportTests: XCTestCase {
    func testFeaturesComeFromTheFlagsLine() {
        let cpuinfo = """
            processor\t: 0
            model name\t: AMD EPYC
            flags\t\t: fpu sse2 avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 xsave
            processor\t: 1
            """
        XCTAssertEqual(KernelReport.cpuFeatures(cpuinfo: cpuinfo), ["avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"])
        XCTAssertEqual(KernelReport.cpuFeatures(cpuinfo: "flags\t: fpu sse2 avx2 fma\n"), ["avx2", "fma"])
        XCTAssertEqual(KernelReport.cpuFeatures(cpuinfo: nil), [])
    }

    /// A native build names the vectors its kernels run on, as the build host has them: AVX-512
    /// only where the CPU has avx512f (an AVX2 EPYC's native build said "AVX-512" before).
    func testNativeBuildNamesTheVectorsItRunsOn() throws {
        let report = KernelReport.current
        guard report.build == .native else { throw XCTSkip("a portable build names OpenBLAS and plain Swift") }
        let hasAVX512 = report.cpuFeatures.contains("avx512f")
        XCTAssertTrue(report.fp32Linear.contains(hasAVX512 ? "AVX-512" : "AVX2"), report.fp32Linear)
        for label in [report.fp32Linear, report.int8Linear, report.bf16Linear] {
            if label.contains("AVX-512") { XCTAssertTrue(hasAVX512, label) }
            if label.contains("AVX2") { XCTAssertFalse(hasAVX512, label) }
        }
    }

    /// Only a portable build on an AVX-512 CPU advises the native build line.
    func testAdviceOnlyForAPortableBuildOnAnAVX512CPU() {
        let avx512 = KernelReport(cpuFeatures: ["avx2", "fma", "avx512f"])
        let avx2 = KernelReport(cpuFeatures: ["avx2", "fma"])
        XCTAssertFalse(avx2.couldRunFaster)
        XCTAssertNil(avx2.advice)
        #if SWIFTBERT_NATIVE_ISA
        XCTAssertEqual(avx512.build, .native)
        XCTAssertFalse(avx512.couldRunFaster)
        XCTAssertNil(avx512.advice)
        #else
        XCTAssertEqual(avx512.build, .portable)
        XCTAssertTrue(avx512.couldRunFaster)
        XCTAssertTrue(avx512.advice?.contains("-DSWIFTBERT_NATIVE_ISA") ?? false)
        #endif
        XCTAssertTrue(avx512.description.hasPrefix(avx512.build.rawValue + " build: FP32 Linear layers "))
    }
}
