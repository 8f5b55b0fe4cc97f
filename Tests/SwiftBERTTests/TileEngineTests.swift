import Foundation
import XCTest
@testable import SwiftBERT

/// Issue 47: the whole engine's tile path, end to end, on any machine: `bert` with
/// SWIFTBERT_ISA=amx-emulator runs every BF16 and INT8 Linear layer through the tile emulator
/// (the same blocking and epilogues as the tiles), and its embeddings keep the accuracy the
/// vector kernels are held to (Int8AccuracyTests, BF16AccuracyTests) against FP32.
final class TileEngineTests: CLITestCase {
    func testEmbeddingsOnEmulatedTilesKeepTheirAccuracy() throws {
        let folder = try quantizedOnce(try convertedModel("all-MiniLM-L6-v2")).path
        let texts = ["A man is eating food.", "The licence grants the right to copy the program.",
                     "Stocks fell sharply on Tuesday after the central bank raised rates.", "¿Dónde está la biblioteca?"]
        let fp32 = try libraryVectors(texts)
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFTBERT_ISA"] = "amx-emulator"
        let scratch = temporaryPath("cwd")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)

        let info = try runProcess(bertPath, ["info", "--json", "--model", folder], currentDirectory: scratch, environment: environment)
        XCTAssertEqual(info.status, 0, info.stderr)
        let kernels = try XCTUnwrap((JSONSerialization.jsonObject(with: info.stdoutData) as? [String: Any])?["kernels"] as? [String: Any])
        XCTAssertEqual(kernels["bf16_linear"] as? String, "tdpbf16ps (AMX tile emulator)")
        XCTAssertEqual(kernels["int8_linear"] as? String, "tdpbusd (AMX tile emulator)")
        XCTAssertTrue((kernels["matrix_unit"] as? String)?.contains("emulator") == true, "\(kernels)")

        for (precision, meanCosine, minCosine) in [("bf16", 0.9999, 0.9998), ("int8", 0.995, 0.98)] {
            let result = try runProcess(bertPath, ["embed", "--model", folder, "--precision", precision, "--format", "jsonl"] + texts,
                                        currentDirectory: scratch, environment: environment)
            XCTAssertEqual(result.status, 0, result.stderr)
            let cosines = zip(try parseJSONLines(result.stdout), fp32).map { cosineSimilarity($0, $1) }
            XCTAssertEqual(cosines.count, texts.count)
            XCTAssertGreaterThanOrEqual(cosines.reduce(0, +) / Float(cosines.count), Float(meanCosine), "\(precision): \(cosines)")
            XCTAssertGreaterThanOrEqual(cosines.min() ?? 0, Float(minCosine), "\(precision): \(cosines)")
            print("tiles | emulated \(precision) against FP32: cosines \(cosines.map { String(format: "%.6f", $0) })")
        }
    }
}
