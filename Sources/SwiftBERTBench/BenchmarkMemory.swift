import Foundation
import SwiftBERT
import SwiftBERTCommandLine

/// Resident memory of one (model, precision), measured in a fresh child process of the same
/// program so that precisions measured one after the other cannot pollute each other (freed
/// heap kept by malloc, pages of another weights file, OpenBLAS buffers).
///
/// The parent starts `launcher.executable launcher.arguments REQUEST`; the front end sees the
/// request (its `--memory-probe` flag), calls `BenchmarkMemoryProbe.respond(to:)` and prints the
/// one JSON line it returns, which the parent decodes.
package enum BenchmarkMemoryProbe {
    /// How to start a fresh copy of this program in probe mode.
    package struct Launcher: Sendable, Equatable {
        package var executable: String
        /// Arguments before the request, e.g. ["bench", "--memory-probe"].
        package var arguments: [String]
        package init(executable: String, arguments: [String]) { (self.executable, self.arguments) = (executable, arguments) }

        /// This very program (/proc/self/exe on Linux), started with `arguments` before the request.
        package static func currentProgram(arguments: [String]) -> Launcher {
            let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments.first ?? ""
            return Launcher(executable: path, arguments: arguments)
        }
    }

    struct Request: Codable {
        let folder: String
        let precision: String
        /// The largest cell of the plan: the pass whose activations set the peak.
        let batch: Int
        let sequenceLength: Int
        /// The bench's process id: the probe ends when its parent is another (nil: not watched,
        /// as when a test calls `respond` in-process).
        var parent: Int32? = nil
    }

    /// What the child saw, in bytes from /proc/self/status.
    package struct Usage: Codable, Sendable, Equatable {
        /// VmRSS before the model is loaded: the program itself.
        package let residentBeforeLoad: Int
        package let residentAfterLoad: Int
        /// VmRSS after the load and a first forward pass (1 x 16 tokens, and the masked-LM head at
        /// one position when the model has one), once that pass's buffers are freed.
        package let residentAfterFirstPass: Int
        /// VmHWM after a forward pass of the plan's largest batch: the process's peak.
        package let peakResident: Int
        /// The batch of that pass.
        package let batch: Int
        package let sequenceLength: Int

        /// Resident memory the weights cost: RSS after load and first pass minus RSS before load.
        package var weightsResident: Int { residentAfterFirstPass - residentBeforeLoad }
    }

    /// The probe is the bench's child: when the bench ends, even by SIGKILL (a timeout), the
    /// probe must end too, not go on loading and running a model nobody waits for. The bench
    /// names itself in the request, so a bench gone before the probe got here counts too.
    /// (prctl's PR_SET_PDEATHSIG is variadic C, which Swift cannot call: a watcher thread asks
    /// twice a second whether the parent is still the bench.)
    private static func dieWithParent(_ parent: pid_t) {
        if getppid() != parent { _exit(1) }
        Thread.detachNewThread {
            while getppid() == parent { usleep(500_000) }
            _exit(1)
        }
    }

    /// In the child: loads the model, runs the passes, returns one JSON line.
    package static func respond(to requestText: String) throws -> String {
        let request: Request
        do { request = try JSONDecoder().decode(Request.self, from: Data(requestText.utf8)) } catch {
            throw SwiftBERTError.invalidInput(reason: "unreadable memory probe request: \(error)")
        }
        if let parent = request.parent { dieWithParent(parent) }
        guard let precision = Precision(rawValue: request.precision) else {
            throw SwiftBERTError.invalidInput(reason: "memory probe: unknown precision \(request.precision)")
        }
        let usage = try measure(folder: URL(fileURLWithPath: request.folder), precision: precision,
                                largest: .init(batch: request.batch, sequenceLength: request.sequenceLength))
        let data = try JSONEncoder().encode(usage)
        return String(decoding: data, as: UTF8.self)
    }

    /// The measurement itself, in this process (only meaningful in a fresh one).
    static func measure(folder: URL, precision: Precision, largest: BenchmarkPlan.Shape) throws -> Usage {
        let before = ProcessMemory.residentBytes() ?? 0
        let model = try loadTimedModel(folder: folder, threads: 1, precision: precision)
        let afterLoad = ProcessMemory.residentBytes() ?? 0
        do {
            let output = try model.encode([syntheticIDs(16, vocabulary: model.config.encoder.vocabSize)])
            if model.config.heads.hasMaskedLMHead { _ = try model.maskedLMLogits(output, at: [(sequence: 0, position: 1)]) }
        }
        let afterFirstPass = ProcessMemory.residentBytes() ?? 0
        let length = min(largest.sequenceLength, model.config.encoder.positionLimit)
        _ = try model.encode((0..<largest.batch).map { _ in syntheticIDs(length, vocabulary: model.config.encoder.vocabSize) })
        return Usage(residentBeforeLoad: before, residentAfterLoad: afterLoad, residentAfterFirstPass: afterFirstPass,
                     peakResident: ProcessMemory.peakResidentBytes() ?? 0, batch: largest.batch, sequenceLength: length)
    }

    /// In the parent: runs the child and decodes its answer.
    static func run(_ launcher: Launcher, folder: URL, precision: Precision, largest: BenchmarkPlan.Shape) throws -> Usage {
        let request = Request(folder: folder.path, precision: precision.rawValue, batch: largest.batch,
                              sequenceLength: largest.sequenceLength, parent: getpid())
        let process = Process()
        process.executableURL = URL(fileURLWithPath: launcher.executable)
        process.arguments = launcher.arguments + [String(decoding: try JSONEncoder().encode(request), as: UTF8.self)]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Both outputs are a line or two: reading one to the end cannot block the other.
        let answer = output.fileHandleForReading.readDataToEndOfFile()
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let line = String(decoding: answer, as: UTF8.self).split(separator: "\n").last,
              let usage = try? JSONDecoder().decode(Usage.self, from: Data(line.utf8)) else {
            let reason = complaint.trimmingCharacters(in: .whitespacesAndNewlines)
            throw BenchmarkError("memory probe (\(launcher.executable) \(launcher.arguments.joined(separator: " ")) ...) "
                                     + "exited with status \(process.terminationStatus)\(reason.isEmpty ? "" : ": \(reason)")")
        }
        return usage
    }
}

/// Deterministic token ids inside the vocabulary, framed like a real sequence would be; the
/// speed of a pass does not depend on which ids it gets.
func syntheticIDs(_ count: Int, vocabulary: Int, offset: Int = 0) -> [Int32] {
    (0..<count).map { i in Int32((1000 + (i + offset) * 7919) % max(vocabulary, 1)) }
}
