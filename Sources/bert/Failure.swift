import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCatalog
import SwiftBERTCommandLine

/// Parses and runs a command line, turning every error into one line on stderr and a
/// sysexits-style status. Never lets an error escape as a trap or a stack trace.
func runBert(_ given: [String]) -> Int32 {
    let arguments = Array(given.prefix(1)) + attachingNegativeNumbers(Array(given.dropFirst()))
    do {
        if let unknown = unknownSubcommand(arguments) { throw unknown }
        var command = try Bert.parseAsRoot(Array(arguments.dropFirst()))
        try command.run()
        return 0
    } catch {
        let (message, status) = describeFailure(error, arguments: arguments)
        if let message { writeStandardError(message + "\n") }
        return status
    }
}

/// `bert NAME` or `bert help NAME` for a subcommand there is not: a usage error naming the
/// closest one. ArgumentParser's `help` printed the overview and exited 0, as if it had worked,
/// and `bert NAME` said only "Unexpected argument".
func unknownSubcommand(_ arguments: [String]) -> CLIError? {
    let names = Bert.configuration.subcommands.map { $0._commandName }
    var words = arguments.dropFirst()
    if words.first == "help" { words = words.dropFirst() }
    guard let name = words.first, !name.hasPrefix("-"), !names.contains(name), name != "help" else { return nil }
    let advice = closestName(to: name, among: names).map { "did you mean `bert \($0)`?" }
        ?? "the subcommands are \(names.joined(separator: ", "))"
    return .usage("no subcommand '\(name)'; \(advice) (see `bert --help`)")
}

/// The arguments with each negative number that follows an option attached to it: `--C -1` as
/// `--C=-1`. ArgumentParser reads `-1` as the short option `-1` and then says the option lacks
/// its value; bert has no option named by a digit, so the number can only be the value, and
/// the option's own check then says which values it takes. In the list of an option that takes
/// several (`--C 1 -1`), the number is that option's again: `--C 1 --C=-1`, the same list.
/// After `--`, nothing is changed.
func attachingNegativeNumbers(_ arguments: [String]) -> [String] {
    var result: [String] = []
    var listOption: String?  // the list option whose values the last arguments were
    for argument in arguments {
        let isNegativeNumber = argument.hasPrefix("-") && Double(argument) != nil && !result.contains("--")
        if isNegativeNumber, let option = result.last, option.hasPrefix("--"), option != "--", !option.contains("=") {
            result[result.count - 1] = option + "=" + argument
        } else if isNegativeNumber, let option = listOption {
            result.append(option + "=" + argument)
        } else {
            result.append(argument)
        }
        if optionsTakingLists.contains(argument) { listOption = argument }
        else if argument.hasPrefix("-"), Double(argument) == nil { listOption = nil }
    }
    return result
}

/// bert's options that take several values (`parsing: .upToNextOption`): train-classifier's --C.
let optionsTakingLists: Set<String> = ["--C"]

/// The first command-line argument that is not valid UTF-8 as the process received it: its
/// position (1 for the first after `bert`) and the offset (from 0) of the bad byte. Swift's
/// `CommandLine.arguments` puts U+FFFD in place of such bytes, so a text given as an argument was
/// embedded as another text, where stdin and --input refuse it (exit 65).
func argumentNotInUTF8() -> (position: Int, offset: Int)? {
    for position in 1..<Int(CommandLine.argc) {
        guard let argument = CommandLine.unsafeArgv[position] else { continue }
        let bytes = Array(UnsafeBufferPointer(start: UnsafeRawPointer(argument).assumingMemoryBound(to: UInt8.self), count: strlen(argument)))
        if let offset = firstInvalidUTF8Offset(bytes[...]) { return (position, offset) }
    }
    return nil
}

/// The stderr line (nil for none) and exit status of a failure.
func describeFailure(_ error: Error, arguments: [String]) -> (String?, Int32) {
    switch (try? ModelCatalogue.standard())?.explaining(error) ?? error {
    case let error as SwiftBERTError:
        return ("bert: " + oneLine(error.description), error.exitStatus)
    case StreamError.outputClosed:
        return (nil, 0)  // the reader stopped reading (`| head`): nothing left to do
    case let error as StreamError:
        var message = error.description
        switch error {
        case .invalidUTF8, .invalidJSONLine:
            // Only the commands that read with InputOptions have the flag (not quantize, bench, rerank).
            if (try? Bert.parseAsRoot(Array(arguments.dropFirst()))) is any ReadsTextInput {
                message += ", or pass --skip-invalid to skip such lines (each is reported)"
            }
        case let .interrupted(_, records, output):
            if let embed = (try? Bert.parseAsRoot(Array(arguments.dropFirst()))) as? Embed, !embed.canResume {
                message += "; --chunk, --sparse and --multi-vector do not --resume: embed the rest of the input, from record \(records + 1), on its own"
            } else {
                message += output == "stdout"
                    ? "; to continue long runs later, write them with --output FILE and rerun with --resume"
                    : "; to continue, run the same command with --resume"
            }
        default: break
        }
        return ("bert: " + oneLine(message), error.exitStatus)
    case let error as PullError:
        return ("bert: " + oneLine(error.description), error.exitStatus)
    case let error as CLIError:
        return ("bert: " + oneLine(error.message), error.status)
    default:
        switch Bert.exitCode(for: error) {
        case .success:
            // --help: ArgumentParser prints it to stdout and exits 0.
            Bert.exit(withError: error)
        case .validationFailure:
            // A usage error: ArgumentParser's message, pointing at the right help.
            let command = arguments.dropFirst().first { !$0.hasPrefix("-") }.flatMap { name in
                Bert.configuration.subcommands.first { $0._commandName == name }.map { _ in name }
            }
            return ("bert: \(oneLine(Bert.message(for: error))) (see `bert \(command.map { "\($0) " } ?? "")--help`)", 64)
        default:
            // Every library failure is a SwiftBERTError or StreamError; anything else is a bug in bert.
            return ("bert: internal error: \(oneLine(String(describing: error))); please report it", 70)  // EX_SOFTWARE
        }
    }
}

extension PullError {
    /// sysexits(3): an unknown name is missing input, a bad download is bad data, an unreachable
    /// server or a missing curl is a service unavailable, a bad manifest a configuration error.
    var exitStatus: Int32 {
        switch self {
        case .unknownModel, .notInIndex: return 66                 // EX_NOINPUT
        case .hashMismatch, .invalidArchive, .downloadFailed: return 65  // EX_DATAERR
        case .offline, .missingTool: return 69                     // EX_UNAVAILABLE
        case .invalidManifest: return 78                           // EX_CONFIG
        }
    }
}

/// A failure specific to the command line, with its sysexits status.
struct CLIError: Error {
    let message: String
    let status: Int32

    /// EX_USAGE: the command was used wrongly.
    static func usage(_ message: String) -> CLIError { CLIError(message: message, status: 64) }
}

func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
}
