import Foundation

/// Finds a converted model by name or path. Names are folders under a weights directory:
/// `$SWIFTBERT_HOME/weights`, then `./weights`, then the `weights/` of the checkout the
/// `bert` binary was built in (so `.build/release/bert` works from anywhere), then the user's
/// cache, where `bert pull` writes when SWIFTBERT_HOME is not set (so an installed `bert` finds
/// what it pulled from any directory).
public enum ModelLocator {
    public static let defaultEmbeddingModel = "all-MiniLM-L6-v2"
    public static let defaultMaskedLMModel = "splade-tiny"

    /// Weights directories searched for names, in order; only existing ones.
    public static var searchDirectories: [URL] {
        var dirs = [homeWeights()].compactMap { $0 }
        dirs.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("weights"))
        // <checkout>/.build/<triple>/release/bert -> <checkout>/weights
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        var dir = executable.deletingLastPathComponent()
        for _ in 0..<4 {
            if dir.lastPathComponent == ".build" { dirs.append(dir.deletingLastPathComponent().appendingPathComponent("weights")); break }
            dir = dir.deletingLastPathComponent()
        }
        dirs.append(userCacheWeights())
        var seen = Set<String>()
        return dirs.filter { FileManager.default.fileExists(atPath: $0.path) && seen.insert($0.standardizedFileURL.path).inserted }
    }

    /// `$XDG_CACHE_HOME/swiftbert/weights`, or `~/.cache/swiftbert/weights`.
    public static func userCacheWeights(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".cache")
        return cache.appendingPathComponent("swiftbert/weights")
    }

    /// `$SWIFTBERT_HOME/weights`, when SWIFTBERT_HOME is set and not empty.
    public static func homeWeights(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        guard let home = environment["SWIFTBERT_HOME"], !home.isEmpty else { return nil }
        return URL(fileURLWithPath: home).appendingPathComponent("weights")
    }

    /// Where `bert pull` writes: `$SWIFTBERT_HOME/weights`, else the user's cache. Both are
    /// search directories, so a pulled model is found by name from any directory.
    public static func pullDestination(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        homeWeights(environment: environment) ?? userCacheWeights(environment: environment)
    }

    /// Every converted folder (one with config.json) in the search directories, by name; the
    /// first of a name is the one `resolve` gives.
    public static func modelFolders() -> [(name: String, folder: URL)] {
        let fm = FileManager.default
        var seen = Set<String>()
        return searchDirectories.flatMap { dir in
            ((try? fm.contentsOfDirectory(atPath: dir.path)) ?? []).sorted().compactMap { name in
                guard !name.hasPrefix("."), fm.fileExists(atPath: dir.appendingPathComponent("\(name)/config.json").path),
                      seen.insert(name).inserted else { return nil }
                return (name, dir.appendingPathComponent(name))
            }
        }
    }

    /// Names of the converted models found in the search directories.
    public static func availableModels() -> [String] {
        modelFolders().map(\.name).sorted()
    }

    /// A folder for `nameOrPath`: an existing path wins, then a name in the search directories.
    public static func resolve(_ nameOrPath: String) throws -> URL {
        let fm = FileManager.default
        let asPath = URL(fileURLWithPath: (nameOrPath as NSString).expandingTildeInPath)
        if nameOrPath.contains("/") || fm.fileExists(atPath: asPath.appendingPathComponent("config.json").path) {
            guard fm.fileExists(atPath: asPath.path) else {
                throw SwiftBERTError.fileNotFound(path: asPath.path, hint: "Give a converted model folder (see `bert convert`) or a model name.")
            }
            return asPath
        }
        for dir in searchDirectories where fm.fileExists(atPath: dir.appendingPathComponent("\(nameOrPath)/config.json").path) {
            return dir.appendingPathComponent(nameOrPath)
        }
        throw unknownModel(nameOrPath)
    }

    /// The error for a model name that no search directory holds: the closest local name if the
    /// name looks misspelt, the local names, and how to pull more. `pullable` lists the names
    /// `bert pull` fetches (the catalogue, which this module does not see; SwiftBERTCatalog's
    /// `ModelCatalogue.explaining` passes it), so a name from it is told to pull, not "unknown".
    package static func unknownModel(_ name: String, pullable: [String] = []) -> SwiftBERTError {
        let available = availableModels()
        if pullable.contains(name) {
            return .fileNotFound(path: name, hint: "Not pulled yet: fetch it once with `bert pull \(name)` (from Python, `swiftbert.pull(\"\(name)\")`), or set SWIFTBERT_HOME to where it was pulled.")
        }
        let guess = closestName(to: name, among: available + pullable.filter { !available.contains($0) })
        let hint = available.isEmpty
            ? "No converted models found; fetch one with `bert pull NAME` (`bert models` lists them), or set SWIFTBERT_HOME."
            : "Unknown model; available: \(available.joined(separator: ", ")); `bert pull NAME` fetches one of `bert models`."
        return .fileNotFound(path: name, hint: guess.map { "Did you mean \($0)? " + hint } ?? hint)
    }

    /// The folder to load `nameOrPath` from at each of `precisions`, as every front end loads one
    /// (`bert`, the server, the C ABI): `resolve`, then `converted`. A Hugging Face folder's
    /// conversion also gets the INT8 file the dynamic INT8 precisions read, made on first use as
    /// the conversion is; a converted folder of the user's is never written to (`bert quantize`
    /// writes there), and int8-static needs calibration sentences (`bert quantize --calibrate`).
    public static func folder(_ nameOrPath: String, precisions: [Precision]) throws -> URL {
        let given = try resolve(nameOrPath)
        let folder = try converted(given)
        if folder != given, precisions.contains(where: { $0.fileName == WeightFiles.int8 }),
           !FileManager.default.fileExists(atPath: folder.appendingPathComponent(WeightFiles.int8).path) {
            _ = try Quantizer.quantize(folder: folder)  // written whole, then renamed into place
        }
        return folder
    }

    /// A folder the engine loads: `folder` itself when converted, else (a Hugging Face or
    /// sentence-transformers folder, such as `bert train-classifier` writes) its conversion,
    /// made once into a cache under $TMPDIR and made again when the source's files change.
    public static func converted(_ folder: URL) throws -> URL {
        let fm = FileManager.default
        let config = folder.appendingPathComponent("config.json")
        guard let data = try? readBoundedFile(config, limit: 4 << 20, what: "config.json"),
              ModelConfig.isHuggingFaceConfig(data) else { return folder }
        // Key: the source path and the modification times of its config and weights.
        var key = folder.standardizedFileURL.path
        for name in ["config.json", "model.safetensors", "model.safetensors.index.json", "modules.json"] {
            if let date = (try? fm.attributesOfItem(atPath: folder.appendingPathComponent(name).path))?[.modificationDate] as? Date {
                key += "|\(name)=\(date.timeIntervalSince1970)"
            }
        }
        var hash: UInt64 = 0xcbf29ce484222325  // FNV-1a
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
        // <hash>/<name>: messages that name the model folder keep the source's name.
        let cache = fm.temporaryDirectory.appendingPathComponent("swiftbert-converted/\(String(hash, radix: 16))/\(folder.lastPathComponent)")
        let complete = { fm.fileExists(atPath: cache.appendingPathComponent("model.safetensors").path) }
        if !complete() {
            // Processes that start together (Spark or Ray workers on one machine) each convert into
            // a folder of their own; the first to finish renames it into place, and the others
            // keep that one: a complete cache is never removed, as another process may be reading it.
            let partial = cache.deletingLastPathComponent().appendingPathComponent(".partial-\(ProcessInfo.processInfo.processIdentifier)-\(cache.lastPathComponent)")
            try? fm.removeItem(at: partial)
            defer { try? fm.removeItem(at: partial) }
            try? fm.createDirectory(at: cache.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Converter.convert(huggingFaceFolder: folder, to: partial)
            if !complete() {
                do { try fm.moveItem(at: partial, to: cache) }
                catch where complete() {}  // another process won the rename
                catch { throw SwiftBERTError.outputFailed(path: cache.path, reason: error.localizedDescription + "; remove that folder and run again") }
            }
        }
        return cache
    }
}

