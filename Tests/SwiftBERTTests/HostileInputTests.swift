import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine

/// The table of bad inputs in docs/robustness.md, as tests. Each row builds a damaged model
/// folder (or input file) in a temporary directory from the real converted weights/splade-tiny,
/// then checks two things: the library throws the typed error, and `bert` exits with the
/// sysexits status and one line on stderr that names the problem and says what to do.
/// Set SWIFTBERT_HOSTILE_TABLE=path to also write the table as Markdown.
final class HostileInputTests: CLITestCase {
    /// What a row expects.
    struct Expectation {
        /// "invalidWeights", "invalidConfig", "invalidTokenizer", "invalidUTF8", … or "ok".
        var kind: String
        var status: Int32
        /// Words the message must hold (what is wrong), and one that says what to do.
        var mentions: [String]
        var advice: String?
    }
    struct Row {
        var input: String
        var build: (Folder) throws -> Void
        var expect: Expectation
        /// The command's arguments after `bert`; nil: `embed --model FOLDER --quiet "a text"`.
        var arguments: ((Folder) -> [String])? = nil
    }

    /// A model folder made of links to splade-tiny's files; a row replaces the ones it damages.
    struct Folder {
        let url: URL
        var path: String { url.path }
        func file(_ name: String) -> String { url.appendingPathComponent(name).path }

        func replace(_ name: String, with data: Data) throws {
            try? FileManager.default.removeItem(atPath: file(name))
            try data.write(to: url.appendingPathComponent(name))
        }
        func remove(_ name: String) { try? FileManager.default.removeItem(atPath: file(name)) }

        /// config.json with some fields changed.
        func config(_ change: (inout [String: Any]) -> Void) throws {
            var json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file("config.json")))) as? [String: Any])
            change(&json)
            try replace("config.json", with: JSONSerialization.data(withJSONObject: json))
        }

        /// model.safetensors rebuilt with a changed header and/or data section.
        func weights(_ change: (inout [String: Any], inout Data) throws -> Void) throws {
            var image = try SafeTensorsImage(path: file("model.safetensors"))
            try change(&image.header, &image.data)
            try replace("model.safetensors", with: image.serialized())
        }

        /// tokenizer.json with its JSON changed.
        func tokenizerJSON(_ change: (inout [String: Any]) -> Void) throws {
            var json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file("tokenizer.json")))) as? [String: Any])
            change(&json)
            try replace("tokenizer.json", with: JSONSerialization.data(withJSONObject: json))
        }
    }

    /// A safetensors file split into its JSON header and data section.
    struct SafeTensorsImage {
        var header: [String: Any]
        var data: Data
        init(path: String) throws {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            let length = Int(bytes.prefix(8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
            header = try XCTUnwrap(JSONSerialization.jsonObject(with: bytes.subdata(in: 8..<8 + length)) as? [String: Any])
            data = bytes.subdata(in: 8 + length..<bytes.count)
        }
        /// Header padded so the data section stays 64-byte aligned.
        func serialized() throws -> Data {
            var json = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
            json.append(contentsOf: [UInt8](repeating: 0x20, count: (64 - (8 + json.count) % 64) % 64))
            var out = Data()
            withUnsafeBytes(of: UInt64(json.count).littleEndian) { out.append(contentsOf: $0) }
            return out + json + data
        }
        func offsets(_ name: String) throws -> [Int] {
            try XCTUnwrap((header[name] as? [String: Any])?["data_offsets"] as? [Int], name)
        }
    }

    static let damagedTensor = "encoder.layer.1.output.dense.weight"

    /// Every row of the table. The order is the table's.
    var rows: [Row] {
        let reconvert = "bert convert"
        func weights(_ input: String, _ mentions: [String], advice: String = reconvert, _ change: @escaping (inout [String: Any], inout Data) throws -> Void) -> Row {
            Row(input: input, build: { try $0.weights(change) }, expect: .init(kind: "invalidWeights", status: 65, mentions: ["model.safetensors"] + mentions, advice: advice))
        }
        func config(_ input: String, _ mentions: [String], _ change: @escaping (inout [String: Any]) -> Void) -> Row {
            Row(input: input, build: { try $0.config(change) }, expect: .init(kind: "invalidConfig", status: 65, mentions: ["config.json"] + mentions, advice: "fix config.json"))
        }
        return [
            Row(input: "model.safetensors: empty file", build: { try $0.replace("model.safetensors", with: Data()) },
                expect: .init(kind: "invalidWeights", status: 65, mentions: ["0 bytes", "too short"], advice: reconvert)),
            Row(input: "model.safetensors: truncated to half", build: { folder in
                let data = try Data(contentsOf: URL(fileURLWithPath: folder.file("model.safetensors")))
                try folder.replace("model.safetensors", with: data.prefix(data.count / 2))
            }, expect: .init(kind: "invalidWeights", status: 65, mentions: ["outside the file", "truncated"], advice: reconvert)),
            Row(input: "model.safetensors: header length beyond the file", build: { folder in
                var data = try Data(contentsOf: URL(fileURLWithPath: folder.file("model.safetensors")))
                let length = UInt64(data.count) + 100
                withUnsafeBytes(of: length.littleEndian) { data.replaceSubrange(0..<8, with: $0) }
                try folder.replace("model.safetensors", with: data)
            }, expect: .init(kind: "invalidWeights", status: 65, mentions: ["header length", "runs past the end"], advice: reconvert)),
            Row(input: "model.safetensors: header length 2^64 - 1", build: { folder in
                var data = try Data(contentsOf: URL(fileURLWithPath: folder.file("model.safetensors")))
                data.replaceSubrange(0..<8, with: [UInt8](repeating: 0xFF, count: 8))
                try folder.replace("model.safetensors", with: data)
            }, expect: .init(kind: "invalidWeights", status: 65, mentions: ["18446744073709551615", "runs past the end"], advice: reconvert)),
            Row(input: "model.safetensors: header is not JSON", build: { folder in
                var data = try Data(contentsOf: URL(fileURLWithPath: folder.file("model.safetensors")))
                data.replaceSubrange(9..<40, with: [UInt8](repeating: UInt8(ascii: "x"), count: 31))
                try folder.replace("model.safetensors", with: data)
            }, expect: .init(kind: "invalidWeights", status: 65, mentions: ["not valid JSON"], advice: reconvert)),
            Row(input: "model.safetensors: not safetensors at all (text)", build: { try $0.replace("model.safetensors", with: Data("this is not safetensors, just text".utf8)) },
                expect: .init(kind: "invalidWeights", status: 65, mentions: ["runs past the end"], advice: reconvert)),
            weights("model.safetensors: two tensors overlap", ["overlap"]) { header, _ in
                var entry = header[Self.damagedTensor] as! [String: Any]
                let other = (header["encoder.layer.1.output.dense.bias"] as! [String: Any])["data_offsets"] as! [Int]
                let size = (entry["data_offsets"] as! [Int]).reduce(0) { $1 - $0 }
                entry["data_offsets"] = [other[0], other[0] + size]
                header[Self.damagedTensor] = entry
            },
            weights("model.safetensors: offsets beyond the data section", ["outside the file", Self.damagedTensor]) { header, data in
                var entry = header[Self.damagedTensor] as! [String: Any]
                let offsets = entry["data_offsets"] as! [Int]
                entry["data_offsets"] = [data.count - 4, data.count - 4 + offsets[1] - offsets[0]]
                header[Self.damagedTensor] = entry
            },
            weights("model.safetensors: negative offset", ["outside the file", Self.damagedTensor]) { header, _ in
                var entry = header[Self.damagedTensor] as! [String: Any]
                entry["data_offsets"] = [-64, 0]
                header[Self.damagedTensor] = entry
            },
            weights("model.safetensors: offset 1e30 (not an integer)", ["malformed", "not an integer", Self.damagedTensor]) { header, _ in
                var entry = header[Self.damagedTensor] as! [String: Any]
                entry["data_offsets"] = [0, 1e30]
                header[Self.damagedTensor] = entry
            },
            weights("model.safetensors: unknown dtype", ["dtype F13", Self.damagedTensor]) { header, _ in
                var entry = header[Self.damagedTensor] as! [String: Any]
                entry["dtype"] = "F13"
                header[Self.damagedTensor] = entry
            },
            weights("model.safetensors: shape disagrees with its byte count", ["bytes for shape", Self.damagedTensor]) { header, _ in
                var entry = header[Self.damagedTensor] as! [String: Any]
                entry["shape"] = [129, 512]
                header[Self.damagedTensor] = entry
            },
            weights("model.safetensors: missing tensor", ["missing tensor", Self.damagedTensor]) { header, _ in
                header[Self.damagedTensor + ".renamed"] = header.removeValue(forKey: Self.damagedTensor)
            },
            weights("model.safetensors: a NaN weight", ["nan", Self.damagedTensor], advice: "intact checkpoint") { header, data in
                let start = try SafeTensorsImage.offset(header, Self.damagedTensor) + 4 * 1000
                withUnsafeBytes(of: Float.nan.bitPattern.littleEndian) { data.replaceSubrange(start..<start + 4, with: $0) }
            },
            weights("model.safetensors: an infinite weight", ["inf", "embeddings.word_embeddings.weight"], advice: "intact checkpoint") { header, data in
                let start = try SafeTensorsImage.offset(header, "embeddings.word_embeddings.weight") + 4 * 123_456
                withUnsafeBytes(of: (-Float.infinity).bitPattern.littleEndian) { data.replaceSubrange(start..<start + 4, with: $0) }
            },
            Row(input: "config.json: shape disagrees with the weights (intermediate_size 256, weights 512)", build: { try $0.config { $0["intermediate_size"] = 256 } },
                expect: .init(kind: "invalidWeights", status: 65, mentions: ["encoder.layer.0.intermediate.dense.weight", "[512, 128]", "config.json implies [256, 128]"], advice: "bert convert")),
            config("config.json: hidden_size 0", ["hidden_size is 0", "positive"]) { $0["hidden_size"] = 0 },
            config("config.json: num_hidden_layers -1", ["num_hidden_layers is -1"]) { $0["num_hidden_layers"] = -1 },
            config("config.json: heads do not divide the hidden size", ["not divisible", "num_attention_heads 3"]) { $0["num_attention_heads"] = 3 },
            config("config.json: vocab_size 2^40", ["vocab_size is 1099511627776", "limit"]) { $0["vocab_size"] = 1 << 40 },
            config("config.json: hidden_size 2.5", ["hidden_size is 2.5, not an integer"]) { $0["hidden_size"] = 2.5 },
            config("config.json: field missing", ["missing field", "vocab_size"]) { $0.removeValue(forKey: "vocab_size") },
            Row(input: "config.json: transformers' own (a checkpoint not converted)", build: {
                try $0.replace("config.json", with: Data(contentsOf: HeadFixtureTests.fixtures.appendingPathComponent("bert-classifier/config.json")))
            }, expect: .init(kind: "invalidConfig", status: 65, mentions: ["config.json", "Hugging Face checkpoint's config.json"], advice: "bert convert"),
                // `quantize` writes into a converted folder; the other commands convert such a folder themselves.
                arguments: { ["quantize", $0.path] }),
            Row(input: "config.json: empty file", build: { try $0.replace("config.json", with: Data()) },
                expect: .init(kind: "invalidConfig", status: 65, mentions: ["config.json", "not valid JSON"], advice: "fix config.json")),
            Row(input: "config.json: 5 MB (not a config)", build: { try $0.replace("config.json", with: Data(count: 5 << 20)) },
                expect: .init(kind: "invalidConfig", status: 65, mentions: ["config.json", "too large"], advice: "give the model's own")),
            Row(input: "tokenizer.json: empty vocabulary", build: { try $0.tokenizerJSON { json in
                var model = json["model"] as! [String: Any]; model["vocab"] = [String: Int](); json["model"] = model; json["added_tokens"] = []
            } }, expect: .init(kind: "invalidTokenizer", status: 65, mentions: ["tokenizer.json", "vocabulary is empty"], advice: "give the tokenizer.json")),
            Row(input: "vocab.txt: empty file (no tokenizer.json)", build: { folder in
                folder.remove("tokenizer.json"); try folder.replace("vocab.txt", with: Data())
            }, expect: .init(kind: "invalidTokenizer", status: 65, mentions: ["vocab.txt", "vocabulary is empty"], advice: "give the model's own vocab.txt")),
            Row(input: "tokenizer.json: unsupported kind (WordLevel)", build: { try $0.tokenizerJSON { json in
                json["model"] = ["type": "WordLevel", "vocab": ["a": 0], "unk_token": "a"]
            } }, expect: .init(kind: "invalidTokenizer", status: 65, mentions: ["tokenizer.json", "WordLevel", "WordPiece"], advice: "give a BERT, XLM-RoBERTa or RoBERTa tokenizer.json")),
            Row(input: "tokenizer.json: unsupported normalizer", build: { try $0.tokenizerJSON { json in
                json["normalizer"] = ["type": "Sequence", "normalizers": [["type": "NFKD"], ["type": "ByteLevel"]]]
            } }, expect: .init(kind: "invalidTokenizer", status: 65, mentions: ["Sequence[NFKD, ByteLevel]"], advice: "use a BERT, XLM-RoBERTa or RoBERTa tokenizer.json")),
            Row(input: "tokenizer.json: not JSON", build: { try $0.replace("tokenizer.json", with: Data("{\"model\": [".utf8)) },
                expect: .init(kind: "invalidTokenizer", status: 65, mentions: ["tokenizer.json", "not valid JSON"], advice: "give the model's own")),
            Row(input: "tokenizer.json: invalid UTF-8", build: { folder in
                var data = try Data(contentsOf: URL(fileURLWithPath: folder.file("tokenizer.json")))
                data.replaceSubrange(200..<202, with: [0xC3, 0x28])
                try folder.replace("tokenizer.json", with: data)
            }, expect: .init(kind: "invalidTokenizer", status: 65, mentions: ["tokenizer.json"], advice: "give the model's own")),
            Row(input: "vocab.txt: invalid UTF-8", build: { folder in
                folder.remove("tokenizer.json"); try folder.replace("vocab.txt", with: Data("[PAD]\n[UNK]\n[CLS]\n[SEP]\ncaf\u{E9}\n".utf8) + Data([0xE9, 0x0A]))
            }, expect: .init(kind: "invalidTokenizer", status: 65, mentions: ["vocab.txt", "not UTF-8", "offset 30"], advice: "give the model's own vocab.txt")),
            Row(input: "vocab.txt: a duplicated token (accepted as Hugging Face does: the later line wins)", build: { folder in
                folder.remove("tokenizer.json")
                try folder.replace("vocab.txt", with: Data(try Self.vocabularyWithDuplicate().utf8))
            }, expect: .init(kind: "ok", status: 0, mentions: [])),
        ]
    }

    /// Inputs to `bert embed`: the text side of the table.
    var textRows: [Row] {
        func embed(_ file: String) -> (Folder) -> [String] { { ["embed", "--model", "splade-tiny", "--quiet", "--input", $0.file(file)] } }
        return [
            Row(input: "input: invalid UTF-8 on line 2", build: { try $0.replace("in.txt", with: Data("fine\nbad \u{FF}".utf8) + Data([0xFF, 0x0A])) },
                expect: .init(kind: "invalidUTF8", status: 65, mentions: ["line 2", "UTF-8"], advice: "--skip-invalid"), arguments: embed("in.txt")),
            Row(input: "input: NUL bytes inside a line (embedded; the normalizer drops them as HF does)", build: { try $0.replace("in.txt", with: Data("a\u{0}b\u{0}\u{0}c\nplain\n".utf8)) },
                expect: .init(kind: "ok", status: 0, mentions: []), arguments: embed("in.txt")),
            Row(input: "input: one 10 MB line (embedded, truncated to the model's limit)", build: { folder in
                let line = String(repeating: "lorem ipsum dolor sit amet ", count: 10 << 20 / 27)
                try folder.replace("in.txt", with: Data((line + "\n").utf8))
            }, expect: .init(kind: "ok", status: 0, mentions: []), arguments: embed("in.txt")),
            Row(input: "input: one 17 MB line (over the 16 MiB record limit)", build: { folder in
                try folder.replace("in.txt", with: Data(repeating: UInt8(ascii: "a"), count: 17 << 20))
            }, expect: .init(kind: "recordTooLong", status: 65, mentions: ["line 1", "16 MiB"], advice: "split the text"), arguments: embed("in.txt")),
            Row(input: "input: empty file", build: { try $0.replace("in.txt", with: Data()) },
                expect: .init(kind: "emptyInput", status: 65, mentions: ["empty"], advice: "give at least one text"), arguments: embed("in.txt")),
        ]
    }

    func makeFolder(_ name: String) throws -> Folder {
        let source = try convertedModel("splade-tiny")
        let url = URL(fileURLWithPath: temporaryPath("hostile-\(name)"))
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: source.path) where !file.hasPrefix(".") {
            try FileManager.default.createSymbolicLink(atPath: url.appendingPathComponent(file).path,
                                                       withDestinationPath: source.appendingPathComponent(file).path)
        }
        return Folder(url: url)
    }

    /// The library's side: load the folder as `bert` does, or read the input file; the error's kind.
    func libraryOutcome(_ folder: Folder, isText: Bool) -> (kind: String, message: String) {
        do {
            if isText {
                let reader = try TextRecordReader(.file(folder.file("in.txt")))
                let tokenizer = try Tokenizer.load(folder: convertedModel("splade-tiny"))
                var count = 0
                while let record = try reader.next() { _ = tokenizer.encode(record.text, maxLength: 512); count += 1 }
                if count == 0 { throw StreamError.emptyInput(source: reader.sourceName, skipped: 0) }
            } else {
                _ = try Tokenizer.load(folder: folder.url)
                _ = try BertModel(folder: folder.url, threads: 1)
            }
            return ("ok", "")
        } catch let error as SwiftBERTError {
            switch error {
            case .invalidWeights: return ("invalidWeights", error.description)
            case .invalidConfig: return ("invalidConfig", error.description)
            case .invalidTokenizer: return ("invalidTokenizer", error.description)
            case .unsupportedCheckpoint: return ("unsupportedCheckpoint", error.description)
            case .fileNotFound: return ("fileNotFound", error.description)
            case .invalidInput: return ("invalidInput", error.description)
            case .outputFailed: return ("outputFailed", error.description)
            }
        } catch let error as StreamError {
            let kind: String
            switch error {
            case .invalidUTF8: kind = "invalidUTF8"
            case .recordTooLong: kind = "recordTooLong"
            case .emptyInput: kind = "emptyInput"
            default: kind = "\(error)"
            }
            return (kind, error.description)
        } catch {
            return ("untyped: \(error)", "\(error)")
        }
    }

    func testEveryBadInputHasItsTypedErrorAndExitStatus() throws {
        var table = "| bad input | typed error | exit status | message (abridged) |\n|---|---|---|---|\n"
        for (number, row) in (rows.map { ($0, false) } + textRows.map { ($0, true) }).enumerated() {
            let (row, isText) = row
            let folder = try makeFolder("\(number)")
            try row.build(folder)
            let started = Date()
            let library = libraryOutcome(folder, isText: isText)
            XCTAssertEqual(library.kind, row.expect.kind, "\(row.input): \(library.message)")
            XCTAssertLessThan(Date().timeIntervalSince(started), 60, "\(row.input) takes too long")

            let arguments = row.arguments?(folder) ?? ["embed", "--model", folder.path, "--quiet", "a short text"]
            let result = try bert(arguments)
            if row.expect.status == 0 {
                XCTAssertEqual(result.status, 0, "\(row.input): \(result.stderr)")
                XCTAssertFalse(result.stdout.isEmpty, row.input)
            } else {
                assertFailure(result, status: row.expect.status, mentions: row.expect.mentions)
                if let advice = row.expect.advice {
                    XCTAssertTrue(result.stderr.contains(advice), "\(row.input): the message should say what to do (\(advice)): \(result.stderr)")
                }
                XCTAssertLessThanOrEqual(result.stderr.count, 400, "\(row.input): a short message: \(result.stderr)")
            }
            let message = result.status == 0 ? "(none)" : Self.abridged(result.stderr)
            table += "| \(row.input) | \(library.kind == "ok" ? "none" : "`\(library.kind)`") | \(result.status) | \(message) |\n"
        }
        print(table)
        if let path = ProcessInfo.processInfo.environment["SWIFTBERT_HOSTILE_TABLE"] {
            try table.write(toFile: path, atomically: true, encoding: .utf8)
        }
    }

    /// The stderr line without the temporary folder's path, for the docs.
    static func abridged(_ stderr: String) -> String {
        var line = stderr.trimmingCharacters(in: .newlines)
        if let range = line.range(of: #"/[^ :]*hostile-[0-9]+/"#, options: .regularExpression) { line.replaceSubrange(range, with: "…/") }
        return line.replacingOccurrences(of: "|", with: "\\|")
    }

    /// What the NaN/infinity scan at load costs: load time with and without it, and one scan of
    /// the mapped weights, per model (printed for docs/robustness.md). The bound is loose: it
    /// guards against the scan losing its vectorisation (ten times slower), not against a busy machine.
    func testFiniteWeightsScanCost() throws {
        var report = ""
        for name in ["splade-tiny", "all-MiniLM-L6-v2", "bert-base-random"] {
            let folder = repositoryRoot.appendingPathComponent("weights/\(name)")
            guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("model.safetensors").path) else { continue }
            func best(_ body: () throws -> Void) rethrows -> Double {
                var times: [Double] = []
                for _ in 0..<5 { let t = Date(); try body(); times.append(Date().timeIntervalSince(t)) }
                return times.min()! * 1000
            }
            let unchecked = try best { _ = try BertModel(folder: folder, threads: 1, checksFiniteWeights: false) }
            let checked = try best { _ = try BertModel(folder: folder, threads: 1) }
            let file = try SafeTensorsFile(path: folder.appendingPathComponent("model.safetensors").path)
            let firstScan = try best { XCTAssertNil(file.firstNonFiniteValue()) }  // min of 5: pages mapped after the first
            let megabytes = Double(file.fileSize) / 1e6
            report += String(format: "%@: %.0f MB, load %.1f ms without the scan, %.1f ms with it; one scan of the mapped file %.1f ms (%.1f GB/s)\n",
                             name, megabytes, unchecked, checked, firstScan, megabytes / firstScan)
            // Sanitizers instrument every load (ThreadSanitizer makes it 40 times slower): no bound there.
            if ProcessInfo.processInfo.environment["SWIFTBERT_SANITIZER"] == nil {
                XCTAssertLessThan(firstScan, megabytes * 2, "\(name): the scan should run at well over 0.5 GB/s")
            }
        }
        print(report)
    }

    /// all-MiniLM-L6-v2's vocab.txt with line 2 ([unused0], id 1) replaced by "the" (id 1996).
    static func vocabularyWithDuplicate() throws -> String {
        let vocab = try String(contentsOf: convertedModel("all-MiniLM-L6-v2").appendingPathComponent("vocab.txt"), encoding: .utf8)
        var lines = vocab.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines[1], "[unused0]")
        XCTAssertEqual(lines[1996], "the")
        lines[1] = "the"
        return lines.joined(separator: "\n")
    }

    /// Duplicates are not errors in Hugging Face's tokenizers, so not here either; what they do
    /// is pinned down. vocab.txt: a token on two lines takes the later line's id, and the earlier
    /// id decodes to nothing (as tokenizers' WordPiece: its id-to-token map is built from the
    /// token-to-id map). tokenizer.json: two tokens with one id encode as that id, and decode
    /// picks the first in code-point order every time (HF picks by hash order, which varies).
    func testDuplicatedVocabularyEntriesBehaveAsHuggingFace() throws {
        let duplicated = try Tokenizer(configuration: TokenizerConfiguration(vocabTXT: Data(Self.vocabularyWithDuplicate().utf8), path: "vocab.txt", lowercase: true), path: "vocab.txt")
        let original = try Tokenizer.load(folder: convertedModel("all-MiniLM-L6-v2"))
        XCTAssertEqual(duplicated.id(of: "the"), 1996)
        XCTAssertNil(duplicated.token(of: 1))
        XCTAssertEqual(duplicated.decode([1, 1996, 4937]), "the cat")
        let text = "The cat sat on the mat, then the dog came."
        XCTAssertEqual(duplicated.encode(text).ids, original.encode(text).ids)

        var json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: convertedModel("splade-tiny").appendingPathComponent("tokenizer.json"))) as? [String: Any])
        var model = json["model"] as! [String: Any]
        var vocab = model["vocab"] as! [String: Int]
        vocab["zzz-alias-of-cat"] = vocab["cat"]
        vocab["aaa-alias-of-cat"] = vocab["cat"]
        model["vocab"] = vocab
        json["model"] = model
        let data = try JSONSerialization.data(withJSONObject: json)
        for _ in 0..<3 {
            let tokenizer = try Tokenizer(configuration: TokenizerConfiguration(tokenizerJSON: data, path: "tokenizer.json"), path: "tokenizer.json")
            XCTAssertEqual(tokenizer.encode("cat").ids, [101, 4937, 102])
            XCTAssertEqual(tokenizer.token(of: 4937), "aaa-alias-of-cat")
        }
    }

    /// A config that claims a 2^40-row vocabulary must fail before anything is sized from it:
    /// quickly, and without the process growing (2^40 floats would be 4 TiB).
    func testHugeVocabularyFailsFastWithoutAllocating() throws {
        let folder = try makeFolder("huge-vocab")
        try folder.config { $0["vocab_size"] = 1 << 40; $0["max_position_embeddings"] = 1 << 30 }
        let before = residentBytes()
        let started = Date()
        XCTAssertThrowsError(try BertModel(folder: folder.url)) { error in
            XCTAssertTrue("\(error)".contains("vocab_size is 1099511627776"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
        XCTAssertLessThan(residentBytes() - before, 64 << 20)
        // Within the limit but not backed by the file: the shape check against the file refuses it.
        try folder.config { $0["vocab_size"] = ModelConfig.maximumSize; $0["max_position_embeddings"] = 512 }
        XCTAssertThrowsError(try BertModel(folder: folder.url)) { error in
            XCTAssertTrue("\(error)".contains("has shape [30522, 128], but config.json implies [16777216, 128]"), "\(error)")
        }
    }

    /// The converter reads Hugging Face's config.json: a negative layer count used to crash it
    /// (a range with a negative bound) before the config was validated.
    func testConverterValidatesTheConfigBeforeReadingTensors() throws {
        let source = URL(fileURLWithPath: temporaryPath("hf-negative-layers"))
        try? FileManager.default.removeItem(at: source)
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        let config: [String: Any] = ["model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": -3,
                                     "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 8]
        try JSONSerialization.data(withJSONObject: config).write(to: source.appendingPathComponent("config.json"))
        try SafeTensorsWriter.write([], to: source.appendingPathComponent("model.safetensors").path)
        XCTAssertThrowsError(try Converter.convert(huggingFaceFolder: source, to: URL(fileURLWithPath: temporaryPath("hf-out")))) { error in
            XCTAssertEqual(error as? SwiftBERTError, .invalidConfig(path: source.appendingPathComponent("config.json").path,
                                                                reason: "num_hidden_layers is -3; it must be a positive integer: fix config.json or convert the checkpoint again with `bert convert`"))
        }
    }

    /// Inputs the fuzzers found or that crashed the loaders before they were hardened, replayed
    /// through the entry points the fuzzers use (tools/fuzz/Fuzz*.swift). Each must fail with a
    /// typed error or load; none may trap.
    func testRegressionFixturesFromFuzzing() throws {
        let folder = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/hostile")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted()
        XCTAssertFalse(files.isEmpty)
        for name in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(name))
            let outcome: Result<Void, Error>
            switch name.split(separator: "-").first {
            case "safetensors":
                outcome = Result { _ = try data.withUnsafeBytes { try SafeTensorsFile(image: $0, path: name) } }
            case "config":
                outcome = Result { _ = try ModelConfig.decode(data, path: name) }
            case "hfconfig":
                outcome = Result { _ = try Converter.readConfig(data, path: name, folder: name) }
            case "tokenizerjson":
                outcome = Result {
                    let tokenizer = try Tokenizer(configuration: TokenizerConfiguration(tokenizerJSON: data, path: name), path: name)
                    for pair in [nil, "again"] as [String?] {
                        let encoding = tokenizer.encode("Hello [MASK] world", pair: pair)
                        XCTAssertLessThanOrEqual(tokenizer.encode("Hello [MASK] world", pair: pair, maxLength: 5).count, 5, name)
                        for count in [encoding.typeIds.count, encoding.attentionMask.count, encoding.tokens.count, encoding.offsets.count] {
                            XCTAssertEqual(count, encoding.ids.count, "\(name): the encoding's arrays must have one length")
                        }
                        _ = tokenizer.decode(encoding.ids)
                    }
                }
            case "vocabtxt":
                outcome = Result {
                    let tokenizer = try Tokenizer(configuration: TokenizerConfiguration(vocabTXT: data, path: name, lowercase: true), path: name)
                    _ = tokenizer.decode(tokenizer.encode("Hello [MASK] world").ids)
                }
            case "text":
                let tokenizer = try libraryTokenizer("all-MiniLM-L6-v2")
                let encoding = tokenizer.encode(String(decoding: data, as: UTF8.self), maxLength: 16)
                XCTAssertLessThanOrEqual(encoding.count, 16, name)
                outcome = .success(())
            default:
                XCTFail("\(name): fixture names start with safetensors-, config-, hfconfig-, tokenizerjson-, vocabtxt- or text-")
                continue
            }
            if case let .failure(error) = outcome {
                XCTAssertTrue(error is SwiftBERTError, "\(name): \(error)")
                XCTAssertFalse("\(error)".contains("\n"), "\(name): one line: \(error)")
            }
        }
    }
}

extension HostileInputTests.SafeTensorsImage {
    static func offset(_ header: [String: Any], _ name: String) throws -> Int {
        try XCTUnwrap((header[name] as? [String: Any])?["data_offsets"] as? [Int], name)[0]
    }
}

/// Resident set size of this process, from /proc/self/statm.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}
