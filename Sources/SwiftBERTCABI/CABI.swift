import Foundation
import SwiftBERT
import SwiftBERTCatalog
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The C ABI of libswiftbert.so (swiftbert.h): what the Python package calls through ctypes.
// A thin shell over the pipelines, as the `bert` command is. Three rules shape it:
//  - ctypes releases the GIL around each call, so any thread may call at any time: state lives
//    in registries behind a mutex, and a call holds its own reference to what it uses.
//  - A Swift trap would kill the interpreter: every argument is checked before the engine sees
//    it, and every error becomes a status code with its message kept per thread.
//  - Handles are numbers looked up in a registry, not pointers, so a freed handle is an error,
//    not a use after free.

// MARK: - Status codes (swiftbert.h's enum swiftbert_status)

enum Status: Int32 {
    case ok = 0, invalidArgument = 1, notFound = 2, invalidModel = 3, invalidInput = 4, unsupported = 5
    case bufferTooSmall = 6, closedHandle = 7, pullFailed = 8, outputFailed = 9, internalError = 99
}

/// A failure of the C layer itself (its arguments), with the status it maps to.
struct CallError: Error {
    let status: Status
    let message: String
    init(_ status: Status, _ message: String) { (self.status, self.message) = (status, message) }
}

func status(of error: any Error) -> Status {
    switch error {
    case let error as CallError: error.status
    case let error as SwiftBERTError:
        switch error {
        case .fileNotFound: .notFound
        case .invalidWeights, .invalidConfig, .invalidTokenizer: .invalidModel
        case .unsupportedCheckpoint: .unsupported
        case .invalidInput: .invalidInput
        case .outputFailed: .outputFailed
        }
    case is PullError: .pullFailed
    default: .internalError
    }
}

func message(of error: any Error) -> String {
    switch error {
    case let error as CallError: error.message
    case let error as CustomStringConvertible: error.description
    default: String(describing: error)
    }
}

// MARK: - The last error, per thread

/// A pthread key whose value is the thread's last message (malloc'd, freed with the thread).
let lastErrorKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { free($0) }
    return key
}()

func setLastError(_ text: String?) {
    let old = pthread_getspecific(lastErrorKey)
    let copy: UnsafeMutableRawPointer? = text.flatMap { text in strdup(text).map { UnsafeMutableRawPointer($0) } }
    pthread_setspecific(lastErrorKey, copy)
    free(old)
}

/// Runs one exported call: clears the thread's last error, maps a thrown error to its status.
func call(_ body: () throws -> Void) -> Int32 {
    setLastError(nil)
    do {
        try body()
        return Status.ok.rawValue
    } catch {
        let error = (try? ModelCatalogue.standard())?.explaining(error) ?? error
        setLastError(message(of: error))
        return status(of: error).rawValue
    }
}

// MARK: - Registries

/// A loaded model and the pipelines made from it on first use (each once, under the lock).
final class ModelSlot: @unchecked Sendable {
    let name: String
    let precision: Precision
    let model: LoadedModel
    private let lock = Mutex<Void>(())
    private var embedder: SentenceEmbedder?
    private var classifier: TextClassifier?
    private var tokenClassifier: TokenClassifier?
    private var fillMask: FillMask?

    init(name: String, precision: Precision, model: LoadedModel) {
        (self.name, self.precision, self.model) = (name, precision, model)
    }

    private func cached<P: Sendable>(_ slot: ReferenceWritableKeyPath<ModelSlot, P?>, _ make: () throws -> P) throws -> P {
        try lock.withLock { _ in
            if let made = self[keyPath: slot] { return made }
            let made = try make()
            self[keyPath: slot] = made
            return made
        }
    }

    func sentenceEmbedder() throws -> SentenceEmbedder { try cached(\.embedder) { try SentenceEmbedder(model) } }
    func textClassifier() throws -> TextClassifier { try cached(\.classifier) { try TextClassifier(model) } }
    func tokenClassifierPipeline() throws -> TokenClassifier { try cached(\.tokenClassifier) { try TokenClassifier(model) } }
    func fillMaskPipeline() throws -> FillMask { try cached(\.fillMask) { try FillMask(model) } }
}

/// A result of a size known only after the run: JSON, floats and int32s, in memory the library
/// owns until `swiftbert_result_free`, so the pointers it hands out stay put.
final class ResultSlot: @unchecked Sendable {
    let json: UnsafeMutableBufferPointer<CChar>
    let floats: UnsafeMutableBufferPointer<Float>
    let ints: UnsafeMutableBufferPointer<Int32>

    init(json: String, floats: [Float] = [], ints: [Int32] = []) {
        let utf8 = Array(json.utf8CString)
        self.json = .allocate(capacity: utf8.count)
        _ = self.json.initialize(from: utf8)
        self.floats = .allocate(capacity: max(1, floats.count))
        _ = self.floats.initialize(from: floats)
        self.ints = .allocate(capacity: max(1, ints.count))
        _ = self.ints.initialize(from: ints)
        floatCount = floats.count
        intCount = ints.count
    }
    let floatCount: Int
    let intCount: Int

    deinit {
        json.deallocate()
        floats.deallocate()
        ints.deallocate()
    }
}

/// Objects by handle. Handles count up from 1 and are never reused, so a stale one stays invalid.
final class Registry<Object: AnyObject & Sendable>: Sendable {
    private struct State { var next: UInt64 = 1; var objects: [UInt64: Object] = [:] }
    private let state = Mutex(State())
    let what: String
    init(what: String) { self.what = what }

    func add(_ object: Object) -> UInt64 {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            state.objects[handle] = object
            return handle
        }
    }

    func get(_ handle: UInt64) throws -> Object {
        guard let object = state.withLock({ $0.objects[handle] }) else {
            throw CallError(.closedHandle, "\(what) handle \(handle) is closed or was never opened")
        }
        return object
    }

    func remove(_ handle: UInt64) throws {
        guard state.withLock({ $0.objects.removeValue(forKey: handle) }) != nil else {
            throw CallError(.closedHandle, "\(what) handle \(handle) is closed or was never opened")
        }
    }
}

let models = Registry<ModelSlot>(what: "model")
let results = Registry<ResultSlot>(what: "result")

// MARK: - Arguments

func text(_ pointer: UnsafePointer<CChar>?, length: Int, what: String) throws -> String {
    guard length >= 0, length < Int.max / 2 else { throw CallError(.invalidArgument, "\(what): length \(length) is not a byte count") }
    if length == 0 { return "" }
    guard let pointer else { throw CallError(.invalidArgument, "\(what) is NULL") }
    let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: length)
    guard let string = String(validating: bytes, as: UTF8.self) else {
        throw CallError(.invalidArgument, "\(what) is not valid UTF-8 (a lone surrogate or a broken sequence)")
    }
    return string
}

/// A NUL-terminated UTF-8 argument; nil when the pointer is NULL.
func optionalCString(_ pointer: UnsafePointer<CChar>?, what: String) throws -> String? {
    guard let pointer else { return nil }
    return try text(pointer, length: strlen(pointer), what: what)
}

func texts(_ pointers: UnsafePointer<UnsafePointer<CChar>?>?, _ lengths: UnsafePointer<Int>?, count: Int, what: String) throws -> [String] {
    guard count >= 0, count < Int32.max else { throw CallError(.invalidArgument, "\(what): count \(count) is out of range") }
    if count == 0 { return [] }
    guard let pointers, let lengths else { throw CallError(.invalidArgument, "\(what) or their lengths are NULL") }
    return try (0..<count).map { try text(pointers[$0], length: lengths[$0], what: "\(what)[\($0)]") }
}

func out<T>(_ pointer: UnsafeMutablePointer<T>?, what: String) throws -> UnsafeMutablePointer<T> {
    guard let pointer else { throw CallError(.invalidArgument, "\(what) is NULL") }
    return pointer
}

func batchSize(_ value: Int32) throws -> Int {
    guard value >= 0 else { throw CallError(.invalidArgument, "batch size \(value) is negative") }
    return value == 0 ? 32 : Int(value)
}

func maxLength(_ value: Int32) throws -> Int? {
    guard value == 0 || value >= 2 else { throw CallError(.invalidArgument, "max length \(value) leaves no room for [CLS] and [SEP]; use 2 or more, or 0 for the model's limit") }
    return value == 0 ? nil : Int(value)
}

/// Copies `values` into a caller's buffer of `capacity` elements.
func write(_ values: [Float], to buffer: UnsafeMutablePointer<Float>?, capacity: Int, what: String) throws {
    guard values.count <= capacity else {
        throw CallError(.bufferTooSmall, "\(what): the output needs \(values.count) floats; the buffer holds \(capacity)")
    }
    if values.isEmpty { return }
    let buffer = try out(buffer, what: what)
    values.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: values.count) }
}

func encodeJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

func returnResult(_ slot: ResultSlot, _ pointer: UnsafeMutablePointer<UInt64>?) throws {
    let pointer = try out(pointer, what: "result")
    pointer.pointee = results.add(slot)
}
