import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine

/// End-to-end tests of the `bert` executable: every command and format, stdin and pipes, and
/// the failures with their exit statuses. Results are checked against the library in-process.
class CLITestCase: XCTestCase {
    /// The built `bert`: $SWIFTBERT_BERT, else beside the test bundle (.build/<triple>/debug/).
    static let executable: String? = {
        if let path = ProcessInfo.processInfo.environment["SWIFTBERT_BERT"] { return path }
        let bundle = Bundle(for: CLITestCase.self).bundleURL
        let candidates = [bundle.deletingLastPathComponent(), bundle, repositoryRoot.appendingPathComponent(".build/debug")]
            .map { $0.appendingPathComponent("bert").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// An object file of bert or the library newer than the executable: `swift test` recompiles
    /// both modules but does not link the executable, so a stale binary would be tested.
    static let staleObject: String? = {
        guard ProcessInfo.processInfo.environment["SWIFTBERT_BERT"] == nil, let executable,
              let built = modificationDate(executable) else { return nil }
        let folder = URL(fileURLWithPath: executable).deletingLastPathComponent()
        for module in ["bert.build", "SwiftBERT.build", "SwiftBERTServer.build"] {
            let objects = (try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent(module).path)) ?? []
            if let newer = objects.first(where: {
                $0.hasSuffix(".o") && (modificationDate(folder.appendingPathComponent("\(module)/\($0)").path) ?? .distantPast) > built
            }) { return "\(module)/\(newer)" }
        }
        return nil
    }()
    nonisolated(unsafe) static var reportedStaleness = false

    var bertPath = ""

    override func setUpWithError() throws {
        guard let path = Self.executable else {
            XCTFail("the bert executable is not built: run `swift build` (or `swift build --product bert`) before `swift test`; `swift test` alone does not link it. Or set SWIFTBERT_BERT")
            throw XCTSkip("no bert executable")
        }
        if let object = Self.staleObject {
            if !Self.reportedStaleness {
                XCTFail("\(path) is older than its \(object): run `swift build` before `swift test` (which does not relink bert)")
                Self.reportedStaleness = true
            }
            throw XCTSkip("stale bert executable")
        }
        bertPath = path
        _ = try convertedModel("all-MiniLM-L6-v2")
    }

    private static func modificationDate(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    /// Runs bert from a scratch folder, so models are found by name from anywhere.
    @discardableResult
    func bert(_ arguments: String..., stdin: String? = nil, stdinData: Data? = nil) throws -> ProcessResult {
        try bert(arguments, stdin: stdin, stdinData: stdinData)
    }

    func bert(_ arguments: [String], stdin: String? = nil, stdinData: Data? = nil) throws -> ProcessResult {
        let folder = temporaryPath("cwd")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return try runProcess(bertPath, arguments, stdin: stdinData ?? stdin.map { Data($0.utf8) }, currentDirectory: folder)
    }

    func fixture(_ name: String) -> String {
        repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/cli/\(name)").path
    }

    /// The library's vectors for the same texts: what the command must print.
    func libraryVectors(_ texts: [String], options: SentenceEmbedder.Options = .init()) throws -> [[Float]] {
        try libraryEmbedder().embed(texts, options: options).vectors
    }

    func libraryEmbedder() throws -> SentenceEmbedder {
        try SentenceEmbedder(model: try loadModel("all-MiniLM-L6-v2"), tokenizer: try libraryTokenizer("all-MiniLM-L6-v2"))
    }

    func libraryTokenizer(_ name: String) throws -> Tokenizer {
        try Tokenizer.load(folder: convertedModel(name))
    }

    /// Vectors from `--format jsonl` output, checking that indices run 0..<n in order.
    func parseJSONLines(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [[Float]] {
        let objects = try text.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        XCTAssertEqual(objects.map { $0["index"] as? Int }, Array(0..<objects.count), file: file, line: line)
        return try objects.map { try XCTUnwrap($0["embedding"] as? [Double]).map(Float.init) }
    }

    func assertClose(_ a: [[Float]], _ b: [[Float]], tolerance: Float = 1e-6, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.count, b.count, "row count", file: file, line: line)
        for (x, y) in zip(a, b) { XCTAssertLessThanOrEqual(maxAbsDifference(x, y), tolerance, file: file, line: line) }
    }

    func assertFailure(_ result: ProcessResult, status: Int32, mentions words: [String],
                       file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, status, result.stderr, file: file, line: line)
        let lines = result.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "one line on stderr: \(result.stderr)", file: file, line: line)
        XCTAssertTrue(result.stderr.hasPrefix("bert: "), result.stderr, file: file, line: line)
        for word in words {
            XCTAssertTrue(result.stderr.contains(word), "stderr should mention '\(word)': \(result.stderr)", file: file, line: line)
        }
        XCTAssertFalse(result.stderr.contains("Fatal error"), file: file, line: line)
    }
}

final class CLIEmbedTests: CLITestCase {
    let texts = ["The cat sat on the mat.", "A considerably longer sentence, so that the batch holds different lengths and gets sorted.", "Dogs bark."]

    func testArgumentsToJSONLinesMatchTheLibrary() throws {
        let result = try bert(["embed"] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "", "no chatter for texts given as arguments")
        assertClose(try parseJSONLines(result.stdout), try libraryVectors(texts))
    }

    func testStdinPipeWithSmallBatchesKeepsInputOrder() throws {
        let result = try bert("embed", "--batch-size", "2", "--quiet", stdin: texts.joined(separator: "\n") + "\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        assertClose(try parseJSONLines(result.stdout), try libraryVectors(texts))
    }

    func testCRLFFileWithAnEmptyLineGivesOneRecordPerLine() throws {
        let result = try bert("embed", "--input", fixture("crlf.txt"))
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = ["first line", "second line is a little longer than the first", "", "fourth, after an empty line"]
        assertClose(try parseJSONLines(result.stdout), try libraryVectors(lines))
        XCTAssertTrue(result.stderr.contains("embedded 4 lines"), result.stderr)
    }

    func testJSONLinesInputWithNewlinesInTexts() throws {
        let result = try bert("embed", "--input", "-", "--input-format", "jsonl", "--quiet",
                              stdin: try String(contentsOfFile: fixture("texts.jsonl"), encoding: .utf8))
        XCTAssertEqual(result.status, 0, result.stderr)
        let expected = ["a plain JSON string", "an object with\na newline inside", "the last record"]
        assertClose(try parseJSONLines(result.stdout), try libraryVectors(expected))
    }

    /// A U+FEFF inside a JSON Lines string is part of the text, as in an argument: Foundation's
    /// JSONSerialization on Linux dropped one that starts a string or follows an escape, so the
    /// tokens were not those of the text sent (found by tools/fuzz/tokenizer_differential.py).
    /// BGE-M3's XLM-R tokenizer reads U+FEFF as a space, so dropping it changes the ids.
    func testJSONLinesKeepsZeroWidthNoBreakSpaces() throws {
        let model = try BGEM3Tests.converted().path
        let texts = ["\u{FEFF}x", "\"\u{FEFF}é", "a\\\u{FEFF}b", "\u{FEFF}"]
        let lines = try texts.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }.joined(separator: "\n") + "\n"
        XCTAssertTrue(lines.contains("\u{FEFF}"), "the encoder writes U+FEFF raw, as the failing lines had it")
        let fromLines = try bert("tokenize", "--json", "--quiet", "--model", model, "--input", "-", "--input-format", "jsonl", stdin: lines)
        let fromArguments = try bert(["tokenize", "--json", "--quiet", "--model", model] + texts)
        XCTAssertEqual(fromLines.status, 0, fromLines.stderr)
        XCTAssertEqual(fromArguments.status, 0, fromArguments.stderr)
        let ids = { (result: ProcessResult) throws -> [[Int]] in
            try result.stdout.split(separator: "\n").map { line in
                try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["ids"] as? [Int])
            }
        }
        XCTAssertEqual(try ids(fromLines), try ids(fromArguments))
        XCTAssertEqual(try ids(fromLines).count, texts.count)
    }

    /// An argument that is not UTF-8 is refused as such a line of stdin is (65), not embedded with
    /// U+FFFD in place of its bytes (Swift's CommandLine.arguments repairs them).
    func testArgumentNotInUTF8IsRefused() throws {
        let script = #""$0" tokenize "$(printf 'a\377b')""#
        let refused = try runProcess("/bin/sh", ["-c", script, bertPath], stdin: nil)
        XCTAssertEqual(refused.status, 65, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("argument 2 is not valid UTF-8 (bad byte at offset 1)"), refused.stderr)
        XCTAssertEqual(refused.stdout, "")
        let accepted = try runProcess("/bin/sh", ["-c", #""$0" tokenize --json "$(printf 'a\303\251b')""#, bertPath], stdin: nil)
        XCTAssertEqual(accepted.status, 0, accepted.stderr)
    }

    func testJSONFormatIsOneArray() throws {
        let result = try bert(["embed", "--format", "json"] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        let array = try XCTUnwrap(JSONSerialization.jsonObject(with: result.stdoutData) as? [[String: Any]])
        XCTAssertEqual(array.map { $0["index"] as? Int }, [0, 1, 2])
        assertClose(try array.map { try XCTUnwrap($0["embedding"] as? [Double]).map(Float.init) }, try libraryVectors(texts))
    }

    func testTSVFormat() throws {
        let result = try bert(["embed", "--format", "tsv"] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = result.stdout.split(separator: "\n").map { $0.split(separator: "\t").map { Float(String($0))! } }
        assertClose(rows, try libraryVectors(texts))
    }

    func testNPYFileReadsBackAsTheLibrarysVectors() throws {
        let path = temporaryPath("vectors.npy")
        let result = try bert(["embed", "--format", "npy", "--output", path] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "")
        let npy = try NPYReader(path: path)
        XCTAssertEqual([npy.rows, npy.columns], [3, 384])
        // Binary output: the very same floats.
        XCTAssertEqual(try npy.readAll(), try libraryVectors(texts))
    }

    func testNPYThroughAPipe() throws {
        let result = try bert(["embed", "--format", "npy", "--input", "-"], stdin: texts.joined(separator: "\n"))
        XCTAssertEqual(result.status, 0, result.stderr)
        let path = temporaryPath("piped.npy")
        try result.stdoutData.write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try NPYReader(path: path).readAll(), try libraryVectors(texts))
    }

    func testNumpyLoadsTheOutput() throws {
                let path = temporaryPath("numpy.npy")
        XCTAssertEqual(try bert(["embed", "--format", "npy", "-o", path] + texts).status, 0)
        let check = try runProcess("/usr/bin/env", ["python3", "-c", "import numpy, sys; a = numpy.load(sys.argv[1]); print(a.dtype, a.shape, round(float((a * a).sum(1).min()), 4))", path])
        if check.status != 0 { throw XCTSkip("python3 with numpy is not available: \(check.stderr)") }
        XCTAssertEqual(check.stdout, "float32 (3, 384) 1.0\n", check.stderr)
    }

    func testPoolingNormalizationAndMaxLengthOptions() throws {
        let result = try bert(["embed", "--pooling", "cls", "--no-normalize", "--max-length", "10"] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        let options = SentenceEmbedder.Options(pooling: .cls, normalize: false, maxLength: 10)
        assertClose(try parseJSONLines(result.stdout), try libraryVectors(texts, options: options), tolerance: 1e-5)
        XCTAssertEqual(result.stderr, "bert: 1 of 3 inputs were longer than 10 tokens and were truncated\n")
    }

    /// `--dimensions N` (Matryoshka) keeps each vector's first N values and normalises them
    /// again, as TEI's and OpenAI's `dimensions` do; with --no-normalize the plain prefix.
    func testDimensionsCutTheVectorsAndNormaliseThemAgain() throws {
        let cut = try bert(["embed", "--dimensions", "128"] + texts)
        XCTAssertEqual(cut.status, 0, cut.stderr)
        let expected = try libraryVectors(texts).map { vector -> [Float] in
            let prefix = Array(vector.prefix(128))
            let norm = prefix.reduce(0) { $0 + $1 * $1 }.squareRoot()
            return prefix.map { $0 / norm }
        }
        assertClose(try parseJSONLines(cut.stdout), expected, tolerance: 1e-6)
        let raw = try bert(["embed", "--dimensions", "128", "--no-normalize"] + texts)
        XCTAssertEqual(try parseJSONLines(raw.stdout), try libraryVectors(texts, options: .init(normalize: false)).map { Array($0.prefix(128)) })
        assertFailure(try bert("embed", "--dimensions", "385", "x"), status: 65, mentions: ["between 1 and 384", "got 385"])
        assertFailure(try bert("embed", "--dimensions", "0", "x"), status: 64, mentions: ["--dimensions must be at least 1"])
    }

    /// `--embedding-type` stores what sentence-transformers' `quantize_embeddings` gives for the
    /// same floats (the library's quantizer, checked against its recording in
    /// EmbeddingQuantizationTests): integers in jsonl, int8 or uint8 npy, and --resume continues
    /// a quantised npy.
    func testEmbeddingTypesStoreQuantisedVectors() throws {
        let input = try temporaryFile(texts.joined(separator: "\n") + "\n")
        let floats = try parseJSONLines(try bert("embed", "--input", input, "--quiet").stdout)
        let ubinary = try bert("embed", "--input", input, "--quiet", "--embedding-type", "ubinary")
        XCTAssertEqual(ubinary.status, 0, ubinary.stderr)
        let packed = try EmbeddingQuantizer(.ubinary, dimension: 384)
        let lines = try ubinary.stdout.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        XCTAssertEqual(try lines.map { try XCTUnwrap($0["embedding"] as? [Int]) }, try floats.map { try packed.values($0) })

        func npyBody(_ path: String, descr: String, shape: String) throws -> [UInt8] {
            let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let header = String(decoding: data[10..<npyHeaderSize], as: UTF8.self)
            XCTAssertTrue(header.contains("'descr': '\(descr)'") && header.contains("'shape': \(shape)"), header)
            return Array(data[npyHeaderSize...])
        }
        let binary = temporaryPath("binary.npy")
        XCTAssertEqual(try bert("embed", "--input", input, "--quiet", "--embedding-type", "binary", "--format", "npy", "--output", binary).status, 0)
        let signs = try EmbeddingQuantizer(.binary, dimension: 384)
        XCTAssertEqual(try npyBody(binary, descr: "|i1", shape: "(3, 48)"), try floats.flatMap { try signs.bytes($0) })

        // int8 over ranges from a calibration set: embeddings of other texts, from `bert embed`.
        let calibrationTexts = (0..<40).map { "Calibration sentence \($0) about \(["cats", "rivers", "markets", "trains"][$0 % 4]) and the weather." }
        let calibration = temporaryPath("calibration.npy")
        XCTAssertEqual(try bert(["embed", "--quiet", "--format", "npy", "--output", calibration] + calibrationTexts).status, 0)
        let int8 = try EmbeddingQuantizer(.int8, dimension: 384, ranges: EmbeddingRanges(calibration: NPYReader(path: calibration).readAll()))
        let quantized = temporaryPath("int8.npy")
        let common = ["embed", "--input", input, "--quiet", "--embedding-type", "int8", "--calibration", calibration, "--format", "npy", "--output", quantized]
        XCTAssertEqual(try bert(common).status, 0)
        let expected = try floats.flatMap { try int8.bytes($0) }
        XCTAssertEqual(try npyBody(quantized, descr: "|i1", shape: "(3, 384)"), expected)
        // A hard kill's leftovers: one whole row and half of the next; --resume completes it.
        let whole = try Data(contentsOf: URL(fileURLWithPath: quantized))
        try whole.prefix(npyHeaderSize + 384 + 200).write(to: URL(fileURLWithPath: quantized))
        let resumed = try bert(common + ["--resume"])
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: quantized)), whole)
        // A float32 output is not continued as int8, nor the other way round.
        let floatOutput = temporaryPath("float.npy")
        XCTAssertEqual(try bert("embed", "--input", input, "--quiet", "--format", "npy", "--output", floatOutput).status, 0)
        assertFailure(try bert(common.dropLast() + [floatOutput, "--resume"]), status: 65, mentions: ["int8 npy header", "--embedding-type"])

        assertFailure(try bert("embed", "--embedding-type", "uint8", "x"), status: 64, mentions: ["needs --calibration"])
        assertFailure(try bert("embed", "--embedding-type", "ubinary", "--calibration", calibration, "x"), status: 64, mentions: ["has none"])
        assertFailure(try bert("embed", "--embedding-type", "int8", "--calibration", calibration, "--dimensions", "128", "x"), status: 64,
                      mentions: ["384-dimensional", "writes 128"])
        assertFailure(try bert("embed", "--embedding-type", "int8", "--calibration", input, "x"), status: 65, mentions: [input])
    }

    func testSkipInvalidGoesOnAndListsTheSkippedLines() throws {
        let result = try bert("embed", "--input", fixture("invalid-utf8.txt"), "--skip-invalid", "--quiet")
        XCTAssertEqual(result.status, 0, result.stderr)
        let objects = try result.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        XCTAssertEqual(objects.map { $0["index"] as? Int }, [0, 2], "skipped lines leave a gap in the indices")
        let stderr = result.stderr.split(separator: "\n")
        XCTAssertEqual(stderr.count, 3, result.stderr)
        XCTAssertTrue(stderr[0].contains("line 2") && stderr[1].contains("line 4"), result.stderr)
        XCTAssertTrue(stderr[2].contains("skipped 2 invalid lines") && stderr[2].hasSuffix(": 2, 4"), result.stderr)
    }
}

final class CLICommandTests: CLITestCase {
    func testTokenizeTableAndJSONMatchTheTokenizer() throws {
        let tokenizer = try libraryTokenizer("all-MiniLM-L6-v2")
        let texts = ["Unbelievable, isn't it?", "héllo wörld"]
        let json = try bert(["tokenize", "--json"] + texts)
        XCTAssertEqual(json.status, 0, json.stderr)
        let objects = try json.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        for (object, text) in zip(objects, texts) {
            let encoding = tokenizer.encode(text)
            XCTAssertEqual(object["tokens"] as? [String], encoding.tokens)
            XCTAssertEqual((object["ids"] as? [Int])?.map(Int32.init), encoding.ids)
            XCTAssertEqual((object["offsets"] as? [[Int]])?.map { $0[0]..<$0[1] }, encoding.offsets)
        }

        let table = try bert("tokenize", stdin: "Unbelievable, isn't it?\n")
        XCTAssertEqual(table.status, 0, table.stderr)
        let rows = table.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        let encoding = tokenizer.encode(texts[0])
        XCTAssertEqual(rows.map { String($0[0]) }, encoding.tokens)
        XCTAssertEqual(rows.map { Int32($0[1])! }, encoding.ids)
    }

    func testFillTextJSONAndFilters() throws {
        _ = try convertedModel("splade-tiny")
        let text = "The capital of France is [MASK]."
        let json = try bert("fill", "--json", "--top-k", "3", text)
        XCTAssertEqual(json.status, 0, json.stderr)
        let masks = try XCTUnwrap((JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any])?["masks"] as? [[String: Any]])
        let library = try FillMask(model: loadModel("splade-tiny"), tokenizer: libraryTokenizer("splade-tiny")).predict(text, topK: 3)
        XCTAssertEqual(masks.count, 1)
        XCTAssertEqual(masks[0]["position"] as? Int, library[0].position)
        let candidates = try XCTUnwrap(masks[0]["candidates"] as? [[String: Any]])
        XCTAssertEqual(candidates.map { $0["token"] as? String }, library[0].candidates.map(\.token))
        XCTAssertEqual(candidates.map { ($0["id"] as? Int).map(Int32.init) }, library[0].candidates.map(\.id))

        let words = try bert("fill", "--json", "--words-only", "--top-k", "20", text)
        let wordTokens = try tokens(words)
        XCTAssertEqual(wordTokens.count, 20)
        XCTAssertFalse(wordTokens.contains { $0.hasPrefix("##") || $0.hasPrefix("[") || $0.allSatisfy(\.isPunctuation) }, "\(wordTokens)")

        let prefixed = try bert("fill", "--json", "--prefix", "Pa", "--top-k", "4", text)
        let prefixedTokens = try tokens(prefixed)
        XCTAssertFalse(prefixedTokens.isEmpty)
        XCTAssertTrue(prefixedTokens.allSatisfy { $0.hasPrefix("pa") }, "\(prefixedTokens)")

        let human = try bert("fill", "Paris is the [MASK] of [MASK].")
        XCTAssertEqual(human.status, 0, human.stderr)
        XCTAssertTrue(human.stdout.hasPrefix("[MASK] 1 of 2"), human.stdout)
        XCTAssertTrue(human.stdout.contains("[MASK] 2 of 2"), human.stdout)
    }

    private func tokens(_ result: ProcessResult) throws -> [String] {
        XCTAssertEqual(result.status, 0, result.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any])
        let masks = try XCTUnwrap(object["masks"] as? [[String: Any]])
        return try XCTUnwrap(masks[0]["candidates"] as? [[String: Any]]).compactMap { $0["token"] as? String }
    }

    func testSimilarityMatrix() throws {
        let texts = ["A man is eating food.", "A man is eating pasta.", "The sky is blue."]
        let result = try bert(["similarity", "--json"] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any])
        XCTAssertEqual(object["texts"] as? [String], texts)
        let matrix = try XCTUnwrap(object["matrix"] as? [[Double]]).map { $0.map(Float.init) }
        let vectors = try libraryVectors(texts)
        assertClose(matrix, vectors.map { a in vectors.map { b in cosineSimilarity(a, b) } })
        XCTAssertGreaterThan(matrix[0][1], matrix[0][2])

        let table = try bert(["similarity"] + texts)
        XCTAssertEqual(table.stdout.split(separator: "\n").count, 4, table.stdout)
        XCTAssertEqual(try bert("similarity", "only one").status, 64)
    }

    func testSearchStreamsTheCorpusAndMatchesPrecomputedVectors() throws {
        let corpus = fixture("corpus.txt")
        let result = try bert("search", "--corpus", corpus, "--top-k", "2", "--json", "--quiet", "a sleepy cat")
        XCTAssertEqual(result.status, 0, result.stderr)
        let hits = try XCTUnwrap((JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any])?["results"] as? [[String: Any]])
        XCTAssertEqual(hits.map { $0["line"] as? Int }, [4, 1])
        let lines = try String(contentsOfFile: corpus, encoding: .utf8).split(separator: "\n").map(String.init)
        let expected = try libraryVectors(["a sleepy cat", lines[3]])
        XCTAssertEqual(Float(hits[0]["score"] as! Double), cosineSimilarity(expected[0], expected[1]), accuracy: 1e-5)
        XCTAssertEqual(hits[0]["text"] as? String, lines[3])

        let npy = temporaryPath("corpus.npy")
        XCTAssertEqual(try bert("embed", "--input", corpus, "--format", "npy", "--output", npy, "--quiet").status, 0)
        let precomputed = try bert("search", "--corpus", corpus, "--embeddings", npy, "--top-k", "2", "--json", "--quiet", "a sleepy cat")
        XCTAssertEqual(precomputed.stdout, result.stdout)

        let text = try bert("search", "--corpus", corpus, "--top-k", "3", "bread")
        let rows = text.stdout.split(separator: "\n").map { $0.split(separator: "\t") }
        XCTAssertEqual(rows.count, 3)
        XCTAssertEqual(rows[0][1], "3")
        XCTAssertTrue(text.stderr.contains("searched 10 lines"), text.stderr)

        let other = temporaryPath("short.npy")
        XCTAssertEqual(try bert("embed", "--format", "npy", "--output", other, "one", "two").status, 0)
        assertFailure(try bert("search", "--corpus", corpus, "--embeddings", other, "--quiet", "x"), status: 65, mentions: ["re-embed"])
    }

    func testInfo() throws {
        let text = try bert("info")
        XCTAssertEqual(text.status, 0, text.stderr)
        for field in ["layers", "hidden size", "attention heads", "vocabulary", "parameters", "model.safetensors", "precisions", "pooling", "load time", "resident memory"] {
            XCTAssertTrue(text.stdout.contains(field), "info shows \(field)")
        }
        let json = try bert("info", "--json", "--model", "splade-tiny")
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any])
        let model = try loadModel("splade-tiny")
        XCTAssertEqual(object["layers"] as? Int, model.config.encoder.numHiddenLayers)
        XCTAssertEqual(object["parameters"] as? Int, model.parameterCount)
        XCTAssertEqual(object["masked_lm_head"] as? Bool, true)
        XCTAssertGreaterThan(object["resident_bytes"] as? Int ?? 0, 1 << 20)
        XCTAssertEqual((object["precisions"] as? [String])?.first, "fp32")
    }

    /// info's precisions row gives why each missing precision is missing and what makes it;
    /// it said "not available in this build" of a file that was simply not made yet.
    func testInfoSaysWhyAPrecisionIsMissing() throws {
        let source = try convertedModel("splade-tiny"), folder = temporaryPath("splade-tiny-fp32-only")
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for file in ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"]
        where FileManager.default.fileExists(atPath: source.appendingPathComponent(file).path) {
            try FileManager.default.createSymbolicLink(atPath: folder + "/" + file, withDestinationPath: source.appendingPathComponent(file).path)
        }
        let info = try bert("info", "--model", folder)
        XCTAssertEqual(info.status, 0, info.stderr)
        let row = try XCTUnwrap(info.stdout.split(separator: "\n").first { $0.hasPrefix("precisions") })
        XCTAssertTrue(row.contains("fp32, bf16; int8, int8-attention, int8-weights: not quantized (make model.int8.safetensors with `bert quantize \(folder)`)"), String(row))
        XCTAssertTrue(row.contains("int8-static: not calibrated (make model.int8-static.safetensors with `bert quantize --calibrate SENTENCES.txt \(folder)`)"), String(row))
        XCTAssertFalse(info.stdout.contains("not available in this build"), info.stdout)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: try bert("info", "--json", "--model", folder).stdoutData) as? [String: Any])
        XCTAssertEqual((json["precisions_unavailable"] as? [String: String])?["int8"]?.contains("model.int8.safetensors: not found"), true)
    }

    func testEveryCommandHasHelpWithAnExample() throws {
        for command in ["embed", "fill", "tokenize", "similarity", "search", "info", "convert"] {
            let result = try bert(command, "--help")
            XCTAssertEqual(result.status, 0, command)
            XCTAssertTrue(result.stdout.contains("Example"), "\(command) --help has an example")
        }
        XCTAssertTrue(try bert("--help").stdout.contains("embed"))
    }
}

final class CLIFailureTests: CLITestCase {
    /// `quantize --calibrate` and `bench --sentences` read their file as `embed --input` does:
    /// invalid UTF-8 is named by line (65), not "not found" (66), which it was.
    func testSentenceFilesNameTheirInvalidUTF8() throws {
        let bad = temporaryPath("bad.txt")
        var bytes = [UInt8]("fine\nbad ".utf8); bytes += [0xFF, 0xFE]; bytes += [UInt8](" here\n".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: bad))
        assertFailure(try bert("quantize", "--calibrate", bad, "all-MiniLM-L6-v2"), status: 65, mentions: ["line 2"])
        let bench = try bert("bench", "--model", "all-MiniLM-L6-v2", "--sentences", bad, "--seconds", "0")
        XCTAssertEqual(bench.status, 65, bench.stderr)
        XCTAssertTrue(bench.stderr.contains("line 2"), bench.stderr)
        // Neither command has --skip-invalid, so neither offers it; embed does.
        XCTAssertFalse(bench.stderr.contains("--skip-invalid"), bench.stderr)
        XCTAssertTrue(try bert("embed", "--input", bad).stderr.contains("--skip-invalid"))
        assertFailure(try bert("quantize", "--calibrate", temporaryPath("missing.txt"), "all-MiniLM-L6-v2"), status: 66, mentions: ["missing.txt"])
    }

    /// Huge counts were traps (an allocation of batch-size records, thread counts and top-k
    /// multiplied past Int.max, word counts summed past it): now a usage error, or the most
    /// there is.
    func testHugeNumbersAreUsageErrorsNotTraps() throws {
        let huge = String(Int.max)
        assertFailure(try bert("embed", "--batch-size", "100000000", "x"), status: 64, mentions: ["--batch-size", "4096"])
        assertFailure(try bert("embed", "--batch-size", huge, "x"), status: 64, mentions: ["--batch-size", "4096"])
        assertFailure(try bert("embed", "--threads", huge, "x"), status: 64, mentions: ["--threads", "1024"])
        assertFailure(try bert("similarity", "--threads", "1000000000", "a", "b"), status: 64, mentions: ["--threads", "1024"])
        assertFailure(try bert("bench", "--model", "splade-tiny", "--batch", huge, "--seconds", "0"), status: 64, mentions: ["--batch", "4096"])
        let fill = try bert("fill", "--model", "splade-tiny", "--top-k", huge, "--json", "The cat [MASK] on the mat.")
        XCTAssertEqual(fill.status, 0, fill.stderr)
        let suggest = try bert("suggest", "--top-k", huge, "the")
        XCTAssertEqual(suggest.status, 0, suggest.stderr)
        let words = temporaryPath("counts.txt")
        try "wa \(huge)\nwb \(huge)\n".write(toFile: words, atomically: true, encoding: .utf8)
        let counted = try bert("suggest", "--words", words, "w")
        XCTAssertEqual(counted.status, 0, counted.stderr)
        XCTAssertTrue(counted.stdout.contains("wa") && counted.stdout.contains("wb"), counted.stdout)
    }

    /// A negative number after an option is that option's value, checked as any other: before,
    /// ArgumentParser took `-1` for an option and said "Missing value for '--C <C>'".
    func testNegativeNumbersAreValuesTheirOptionsCheck() throws {
        assertFailure(try bert("train-classifier", "--train", "x", "--output", "y", "--C", "-1"), status: 64, mentions: ["--C values must be positive"])
        // In the middle of a list too: before, "Unknown option '-1'".
        assertFailure(try bert("train-classifier", "--train", "x", "--output", "y", "--C", "1", "-1", "10"), status: 64, mentions: ["--C values must be positive"])
        assertFailure(try bert("fill", "--top-k", "-1", "[MASK]"), status: 64, mentions: ["--top-k must be at least 1"])
        assertFailure(try bert("embed", "--max-length", "-5", "x"), status: 64, mentions: ["--max-length must be at least 2"])
        assertFailure(try bert("embed", "--threads", "-0.5", "x"), status: 64, mentions: ["--threads", "-0.5"])
        XCTAssertFalse(try bert("fill", "--top-k", "-1", "[MASK]").stderr.contains("Missing value"))
        // After `--`, a negative number is a text like any other.
        let text = try bert("tokenize", "--json", "--", "-1")
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains(#""tokens":["[CLS]","-","1","[SEP]"]"#), text.stdout)
    }

    /// The list options `attachingNegativeNumbers` knows (`optionsTakingLists` in
    /// Sources/bert/Failure.swift) are every option that takes several values, read from
    /// ArgumentParser's own description of the commands: a new one must join that set.
    func testTheListOptionsAreTheOnesNegativeNumbersJoin() throws {
        let dump = try bert("--experimental-dump-help")
        XCTAssertEqual(dump.status, 0, dump.stderr)
        var lists: [String] = []
        func walk(_ command: [String: Any]) {
            for argument in command["arguments"] as? [[String: Any]] ?? [] where argument["parsingStrategy"] as? String == "upToNextOption" {
                for name in argument["names"] as? [[String: Any]] ?? [] where name["kind"] as? String == "long" {
                    lists.append("--" + (name["name"] as? String ?? ""))
                }
            }
            for subcommand in command["subcommands"] as? [[String: Any]] ?? [] { walk(subcommand) }
        }
        let root = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        walk(try XCTUnwrap(root["command"] as? [String: Any]))
        XCTAssertEqual(lists, ["--C"], "add the new list options to optionsTakingLists in Sources/bert/Failure.swift")
    }

    /// `bert help NAME` for a subcommand there is not printed the overview and exited 0; now it
    /// is a usage error naming the closest subcommand, as `bert NAME` is.
    func testUnknownSubcommandsNameTheClosest() throws {
        assertFailure(try bert("help", "embd"), status: 64, mentions: ["no subcommand 'embd'", "did you mean `bert embed`?"])
        assertFailure(try bert("tokenise", "x"), status: 64, mentions: ["did you mean `bert tokenize`?"])
        assertFailure(try bert("help", "nosuch"), status: 64, mentions: ["no subcommand 'nosuch'", "the subcommands are embed, fill"])
        let help = try bert("help", "embed")
        XCTAssertEqual(help.status, 0, help.stderr)
        XCTAssertTrue(help.stdout.contains("Sentence embeddings"), help.stdout)
    }

    /// `tokenize --max-length 1` printed the whole text untruncated (a limit below [CLS] and
    /// [SEP] truncates nothing, as in Hugging Face): now a usage error saying the least it takes.
    func testTokenizeMaxLengthBelowTheFramingIsAUsageError() throws {
        assertFailure(try bert("tokenize", "--max-length", "1", "hello world"), status: 64,
                      mentions: ["--max-length 1", "2 tokens", "[CLS] [SEP]", "at least 2", "--no-special-tokens"])
        let framing = try bert("tokenize", "--json", "--max-length", "2", "hello world")
        XCTAssertEqual(framing.status, 0, framing.stderr)
        XCTAssertTrue(framing.stdout.contains(#""tokens":["[CLS]","[SEP]"]"#), framing.stdout)
        let bare = try bert("tokenize", "--json", "--max-length", "1", "--no-special-tokens", "hello world")
        XCTAssertEqual(bare.status, 0, bare.stderr)
        XCTAssertTrue(bare.stdout.contains(#""tokens":["hello"]"#), bare.stdout)
    }

    func testUnknownModelListsTheAvailableOnes() throws {
        assertFailure(try bert("embed", "--model", "no-such-model", "x"), status: 66, mentions: ["no-such-model", "all-MiniLM-L6-v2", "splade-tiny"])
        XCTAssertFalse(try bert("embed", "--model", "no-such-model", "x").stderr.contains("Did you mean"))
    }

    /// A misspelt or wrongly cased name gets the closest local name; a catalogue model that is not
    /// pulled is told to pull it (a catalogue entry of $SWIFTBERT_MANIFEST's, so that no machine
    /// has it), and its misspelling gets the catalogue name.
    func testMisspeltNamesGetTheClosestAndCatalogueModelsAreToldToPull() throws {
        assertFailure(try bert("embed", "--model", "all-minilm-l6-v2", "x"), status: 66, mentions: ["Did you mean all-MiniLM-L6-v2?"])
        assertFailure(try bert("fill", "--model", "splade-tny", "[MASK]"), status: 66, mentions: ["Did you mean splade-tiny?"])
        let manifest = temporaryPath("manifest.tsv")
        try "never-pulled-model\tnever-pulled==1\t\(String(repeating: "a", count: 64))\t5\tx\ta test entry\n"
            .write(toFile: manifest, atomically: true, encoding: .utf8)
        let environment = ProcessInfo.processInfo.environment.merging(["SWIFTBERT_MANIFEST": manifest]) { $1 }
        let notPulled = try runProcess(bertPath, ["embed", "--model", "never-pulled-model", "x"], environment: environment)
        assertFailure(notPulled, status: 66, mentions: ["never-pulled-model: not found", "Not pulled yet", "`bert pull never-pulled-model`"])
        XCTAssertFalse(notPulled.stderr.contains("Unknown model"), notPulled.stderr)
        assertFailure(try runProcess(bertPath, ["embed", "--model", "never-puled-model", "x"], environment: environment),
                      status: 66, mentions: ["Did you mean never-pulled-model?", "Unknown model"])
    }

    func testMissingAndCorruptWeights() throws {
        let folder = temporaryPath("broken-model")
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let source = try convertedModel("all-MiniLM-L6-v2")
        for file in ["config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json"]
        where FileManager.default.fileExists(atPath: source.appendingPathComponent(file).path) {
            try FileManager.default.copyItem(atPath: source.appendingPathComponent(file).path, toPath: folder + "/" + file)
        }
        assertFailure(try bert("embed", "--model", folder, "x"), status: 66, mentions: ["model.safetensors"])
        try Data("this is not safetensors".utf8).write(to: URL(fileURLWithPath: folder + "/model.safetensors"))
        assertFailure(try bert("embed", "--model", folder, "x"), status: 65, mentions: ["model.safetensors"])
        assertFailure(try bert("embed", "--model", "/nonexistent/model", "x"), status: 66, mentions: ["/nonexistent/model"])
    }

    /// `bert convert` into a file, or into the checkpoint's own folder (which would write
    /// model.safetensors over the weights it reads), refuses before it writes (found by
    /// tools/fuzz/cli_fuzz.py: a file destination was an internal error, exit 70).
    func testConvertRefusesAFileOrTheCheckpointsOwnFolderAsDestination() throws {
        let source = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/heads/bert-classifier").path
        let file = temporaryPath("convert-destination-file")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: file))
        assertFailure(try bert("convert", source, file), status: 73, mentions: [file, "is a file, not a folder"])
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), "keep me")
        let weights = try Data(contentsOf: URL(fileURLWithPath: source + "/model-00001-of-00002.safetensors"))
        assertFailure(try bert("convert", source, source + "/."), status: 74, mentions: ["the checkpoint's own folder"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: source + "/model.safetensors"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: source + "/model-00001-of-00002.safetensors")), weights)
    }

    /// A destination bert cannot make is a failure to create the output (73), found before the
    /// conversion: a file as its parent, a parent that is not writable (a folder of mode 555 for
    /// a user other than root, who may write anywhere; /proc/sys for everyone). Before, the
    /// first was a write error (74) and the second converted into the folder anyway as root.
    func testConvertIntoAPlaceItCannotCreateIsCantCreate() throws {
        let source = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/heads/bert-classifier").path
        let file = temporaryPath("convert-parent-file")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: file))
        assertFailure(try bert("convert", source, file + "/model"), status: 73, mentions: ["cannot create output", "\(file) is a file"])
        if FileManager.default.fileExists(atPath: "/proc/sys") {
            assertFailure(try bert("convert", source, "/proc/sys/swiftbert-model"), status: 73, mentions: ["no folder can be made in /proc/sys"])
        }
        if getuid() != 0 {
            let readOnly = temporaryPath("read-only-parent")
            try FileManager.default.createDirectory(atPath: readOnly, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: readOnly)
            defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: readOnly) }
            assertFailure(try bert("convert", source, readOnly + "/model"), status: 73, mentions: ["no folder can be made in \(readOnly)", "Permission denied"])
        }
    }

    /// A fresh copy of the classifier fixture (a Hugging Face folder), under a name no cache knows.
    func copyOfClassifierCheckpoint(_ name: String) throws -> String {
        let copy = temporaryPath(name)
        let source = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/heads/bert-classifier")
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: source.path) {  // the files, not their links
            try FileManager.default.copyItem(at: source.appendingPathComponent(file).resolvingSymlinksInPath(), to: URL(fileURLWithPath: copy + "/" + file))
        }
        return copy
    }

    /// A Hugging Face folder runs at the dynamic INT8 precisions: its conversion gets the INT8
    /// file on first use, as it gets converted. A converted folder of the user's is not written
    /// to: it still says to run `bert quantize`.
    func testHuggingFaceFolderRunsInt8WithoutQuantizeAndAConvertedOneAsksForIt() throws {
        let copy = try copyOfClassifierCheckpoint("hf-int8-\(UUID().uuidString)")
        for precision in ["int8", "int8-attention", "int8-weights"] {
            let result = try bert("classify", "--model", copy, "--precision", precision, "--json", "a fine day")
            XCTAssertEqual(result.status, 0, "\(precision): \(result.stderr)")
            XCTAssertTrue(result.stdout.contains("\"label\""), result.stdout)
        }
        assertFailure(try bert("classify", "--model", copy, "--precision", "int8-static", "x"), status: 66, mentions: ["--calibrate"])
        let converted = temporaryPath("converted-no-int8-\(UUID().uuidString)")
        XCTAssertEqual(try bert("convert", copy, converted).status, 0)
        assertFailure(try bert("classify", "--model", converted, "--precision", "int8", "x"), status: 66, mentions: ["bert quantize \(converted)"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: converted + "/model.int8.safetensors"))
    }

    /// Workers that start together on one Hugging Face folder (Spark or Ray executors on one
    /// machine) each convert it on first use: every one answers the same, one conversion lands in
    /// the cache, and no work folder is left behind.
    func testConcurrentFirstUsesOfAHuggingFaceFolderAllAnswer() throws {
        let name = "hf-concurrent-\(UUID().uuidString)"
        let copy = try copyOfClassifierCheckpoint(name)
        let workers = 6
        let results = Locked([Int: ProcessResult]())
        let (executable, folder) = (bertPath, temporaryPath("cwd"))
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        DispatchQueue.concurrentPerform(iterations: workers) { index in
            if let result = try? runProcess(executable, ["classify", "--model", copy, "--json", "a fine day"], currentDirectory: folder) {
                results.update { $0[index] = result }
            }
        }
        let answers = results.value
        XCTAssertEqual(answers.count, workers)
        for (_, result) in answers {
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout, answers[0]?.stdout)
        }
        let caches = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-converted")
        var complete = 0, partial = 0
        for hash in try FileManager.default.contentsOfDirectory(atPath: caches.path) {
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: caches.appendingPathComponent(hash).path)) ?? [] where entry.hasSuffix(name) {
                if entry == name { complete += 1 } else { partial += 1 }
            }
        }
        XCTAssertEqual(complete, 1)
        XCTAssertEqual(partial, 0, "work folders left in \(caches.path)")
    }

    /// `bert quantize --calibrate`: a missing or empty text is a typed error; the calibrated file
    /// runs under `--precision int8-static`; a model without it says how to make it.
    func testQuantizeCalibrateWritesTheStaticFile() throws {
        let folder = temporaryPath("calibrated-model")
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let source = try convertedModel("all-MiniLM-L6-v2")
        for file in try FileManager.default.contentsOfDirectory(atPath: source.path)
        where !file.hasPrefix("model.int8") && !file.hasPrefix(".") {
            try FileManager.default.createSymbolicLink(atPath: folder + "/" + file, withDestinationPath: source.appendingPathComponent(file).path)
        }
        assertFailure(try bert("embed", "--model", folder, "--precision", "int8-static", "x"), status: 66,
                      mentions: ["model.int8-static.safetensors", "--calibrate"])
        assertFailure(try bert("quantize", "--calibrate", "/nonexistent/text.txt", folder), status: 66, mentions: ["/nonexistent/text.txt"])
        let empty = temporaryPath("empty.txt")
        try Data("\n \n".utf8).write(to: URL(fileURLWithPath: empty))
        assertFailure(try bert("quantize", "--calibrate", empty, folder), status: 65, mentions: ["no sentences"])

        let calibration = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/calibration.txt").path
        let made = try bert("quantize", "--calibrate", calibration, folder)
        XCTAssertEqual(made.status, 0, made.stderr)
        XCTAssertTrue(made.stdout.contains("model.int8-static.safetensors"), made.stdout)
        let texts = ["A man is eating food.", "The licence grants the right to copy the program."]
        let result = try bert(["embed", "--model", folder, "--precision", "int8-static", "--format", "jsonl"] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        for (a, b) in zip(try parseJSONLines(result.stdout), try libraryVectors(texts)) {
            XCTAssertGreaterThanOrEqual(cosineSimilarity(a, b), 0.98)  // issue 28's smallest cosine
        }
    }

    /// A [MASK] past the model's limit is cut with the text's end: fill says how many have no
    /// predictions (it printed the others as if the text held no more).
    func testFillSaysWhichMasksWereCutOff() throws {
        let limit = try loadModel("splade-tiny").config.encoder.maxSequenceLength
        let text = "The [MASK] sat on the mat. " + String(repeating: "the ", count: limit) + "A [MASK] was here."
        let result = try bert("fill", "--model", "splade-tiny", "--json", text)
        XCTAssertEqual(result.status, 0, result.stderr)
        let masks = try XCTUnwrap(JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any])["masks"] as? [Any]
        XCTAssertEqual(masks?.count, 1)
        XCTAssertEqual(result.stderr, "bert: 1 of 2 [MASK] tokens were cut off with the text past the model's limit of \(limit) tokens, so they have no predictions; shorten the text\n")
        XCTAssertEqual(try bert("fill", "--model", "splade-tiny", "The [MASK] sat on the [MASK].").stderr, "")
    }

    func testFillWithoutMask() throws {
        _ = try convertedModel("splade-tiny")
        assertFailure(try bert("fill", "There is nothing to predict here."), status: 65, mentions: ["[MASK]"])
    }

    func testInvalidUTF8SaysWhichLine() throws {
        let result = try bert("embed", "--input", fixture("invalid-utf8.txt"))
        assertFailure(result, status: 65, mentions: ["line 2", "UTF-8", "--skip-invalid"])
        // From stdin too, and for tokenize.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: fixture("invalid-utf8.txt")))
        assertFailure(try bert(["tokenize"], stdinData: bytes), status: 65, mentions: ["stdin", "line 2"])
    }

    func testBadJSONLine() throws {
        assertFailure(try bert("embed", "--input-format", "jsonl", stdin: "\"ok\"\n{\"body\": 1}\n"), status: 65, mentions: ["line 2", "text"])
    }

    /// Each command that reads texts says, of an empty input, what it wanted and how to give it.
    /// Before, search and rerank told to give "arguments, --input FILE, or lines on stdin", which
    /// they do not read; train-classifier said "holds no records"; bench ran on no sentences.
    func testEmptyInput() throws {
        let advice = "give at least one text: as an argument, with --input FILE, or as a line on stdin"
        assertFailure(try bert("embed", stdin: ""), status: 65, mentions: ["stdin: the input is empty: no texts to embed; " + advice])
        let empty = try temporaryFile("")
        assertFailure(try bert("tokenize", "--input", empty), status: 65, mentions: [empty, "no texts to tokenize; " + advice])
        let classifier = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/heads/bert-classifier").path
        assertFailure(try bert("classify", "--model", classifier, stdin: ""), status: 65, mentions: ["no texts to classify; " + advice])
        // Found before the model is looked for, as embed does.
        assertFailure(try bert("classify", "--model", "/nonexistent/model", stdin: ""), status: 65, mentions: ["no texts to classify"])
        let ner = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/heads/bert-ner").path
        assertFailure(try bert("ner", "--model", ner, "--input", empty), status: 65, mentions: ["no texts to find entities in"])
        assertFailure(try bert("search", "--corpus", empty, "q"), status: 65, mentions: ["no corpus lines to search; give --corpus a file"])
        let reranker = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/heads/bert-cross-encoder").path
        assertFailure(try bert("rerank", "--model", reranker, "--documents", empty, "q"), status: 65,
                      mentions: ["no documents to rerank; give --documents a file"])
        assertFailure(try bert("train-classifier", "--train", empty, "--output", temporaryPath("never-made")), status: 65,
                      mentions: ["no labelled examples; give JSON Lines"])
        assertFailure(try bert("quantize", "--calibrate", empty, "splade-tiny"), status: 65, mentions: ["no sentences; give a file of real text"])
        let bench = try bert("bench", "--model", "splade-tiny", "--sentences", empty, "--seconds", "0")
        XCTAssertEqual(bench.status, 65, bench.stderr)
        XCTAssertTrue(bench.stderr.contains("no sentences; give a file of real text"), bench.stderr)
        // Nothing left once invalid lines are skipped: each skip reported, then the failure.
        let allSkipped = try bert("embed", "--input", fixture("invalid-utf8.txt"), "--skip-invalid", "--input-format", "jsonl")
        XCTAssertEqual(allSkipped.status, 65)
        XCTAssertEqual(allSkipped.stderr.split(separator: "\n").count, 5, allSkipped.stderr)
        XCTAssertTrue(allSkipped.stderr.hasSuffix("no texts to embed: all 4 lines were skipped as invalid\n"), allSkipped.stderr)
    }

    /// --resume checks that its output belongs to the run before it says it resumes: an output
    /// holding more records than the input has was announced as resumed, then refused; a short
    /// file that does not start as npy was taken for a header cut short and overwritten.
    func testResumeChecksItsFileBeforeAnnouncingIt() throws {
        let output = temporaryPath("resume-longer.jsonl")
        let three = try temporaryFile("a\nb\nc\n")
        XCTAssertEqual(try bert("embed", "--input", three, "--output", output).status, 0)
        assertFailure(try bert("embed", "--input", try temporaryFile("a\n"), "--output", output, "--resume"), status: 65,
                      mentions: ["holds 3 records but", "give the same input to resume"])
        let foreign = temporaryPath("foreign.npy")
        try Data("not numpy".utf8).write(to: URL(fileURLWithPath: foreign))
        assertFailure(try bert("embed", "--input", three, "--format", "npy", "--output", foreign, "--resume"), status: 65,
                      mentions: ["not a npy output of bert embed", "it does not start as an npy file"])
        XCTAssertEqual(try String(contentsOfFile: foreign, encoding: .utf8), "not numpy")
        let resumed = try bert("embed", "--input", try temporaryFile("a\nb\nc\nd\ne\n"), "--output", output, "--resume")
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        XCTAssertTrue(resumed.stderr.hasPrefix("bert: \(output) holds 3 records; resuming with record 4 of the input\n"), resumed.stderr)
        XCTAssertEqual(try parseJSONLines(try String(contentsOfFile: output, encoding: .utf8)).count, 5)
    }

    func testMissingInputAndUncreatableOutput() throws {
        assertFailure(try bert("embed", "--input", "/nonexistent/input.txt"), status: 66, mentions: ["/nonexistent/input.txt"])
        assertFailure(try bert("search", "--corpus", "/nonexistent/corpus.txt", "q"), status: 66, mentions: ["corpus.txt"])
        assertFailure(try bert("embed", "--output", "/nonexistent/dir/out.jsonl", "x"), status: 73, mentions: ["out.jsonl"])
        // A folder given as a file of words is input that cannot be read (66), as for --input; it was "not readable UTF-8 text" (65).
        let folder = temporaryPath("words-folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        assertFailure(try bert("suggest", "--words", folder, "hello wor"), status: 66, mentions: [folder, "it is a directory", "word list"])
        assertFailure(try bert("embed", "--input", folder), status: 66, mentions: [folder, "it is a directory"])
    }

    func testFullDiskIsAnIOError() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { throw XCTSkip("no /dev/full") }
        assertFailure(try bert("embed", "--output", "/dev/full", "x"), status: 74, mentions: ["No space left"])
    }

    func testClosedPipeIsACleanStop() throws {
        // The reader of stdout is gone before bert writes: EPIPE, no message, status 0.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bertPath)
        process.arguments = ["embed", "one", "two"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try out.fileHandleForReading.close()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit, "not killed by SIGPIPE")
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(String(decoding: stderr, as: UTF8.self), "")
    }

    func testUsageErrors() throws {
        assertFailure(try bert("embed", "--input", fixture("corpus.txt"), "also a text"), status: 64, mentions: ["not both"])
        assertFailure(try bert("embed", "--format", "xml", "x"), status: 64, mentions: ["xml", "bert embed --help"])
        assertFailure(try bert("fill"), status: 64, mentions: ["text"])
        assertFailure(try bert("embed", "--batch-size", "0", "x"), status: 64, mentions: ["batch-size"])
        assertFailure(try bert("no-such-command"), status: 64, mentions: ["no-such-command"])
        // Numbers a parser takes but no run can (found by tools/fuzz/cli_fuzz.py): an infinite
        // timeout trapped converting to milliseconds, an infinite bench never ended.
        for value in ["inf", "nan", "1e300"] {
            assertFailure(try bert("serve", "--port", "0", "--request-timeout", value), status: 64, mentions: ["--request-timeout", "a year"])
            assertFailure(try bert("serve", "--port", "0", "--shutdown-grace", value), status: 64, mentions: ["--shutdown-grace", "0 or more"])
        }
        assertFailure(try bert("bench", "--seconds", "inf"), status: 64, mentions: ["--seconds must be a number"])
        assertFailure(try bert("train-classifier", "--train", "x", "--output", "y", "--learning-rate", "inf"), status: 64, mentions: ["--learning-rate"])
    }
}

/// TEI's truncation semantics on the command line: --truncation-direction and --no-truncate.
final class CLITruncationTests: CLITestCase {
    // Every word is one token of MiniLM's vocabulary, so [CLS] + the last five + [SEP] is 7 tokens.
    let tail = "cat sat on the mat"
    var long: String { String(repeating: "the ", count: 50) + tail }

    func testLeftTruncationKeepsTheEnd() throws {
        let left = try bert("embed", "--max-length", "7", "--truncation-direction", "left", long)
        XCTAssertEqual(left.status, 0, left.stderr)
        XCTAssertTrue(left.stderr.contains("1 of 1 inputs were longer than 7 tokens"), left.stderr)
        assertClose(try parseJSONLines(left.stdout), try libraryVectors([tail]))
        let right = try bert("embed", "--max-length", "7", long)
        XCTAssertEqual(right.status, 0, right.stderr)
        assertClose(try parseJSONLines(right.stdout), try libraryVectors(["the the the the the"]))
    }

    func testNoTruncateRefusesALongInput() throws {
        assertFailure(try bert("embed", "--max-length", "7", "--no-truncate", long), status: 65, mentions: ["longer than 7 tokens"])
        let short = try bert("embed", "--max-length", "7", "--no-truncate", tail)
        XCTAssertEqual(short.status, 0, short.stderr)
        assertClose(try parseJSONLines(short.stdout), try libraryVectors([tail]))
    }
}
