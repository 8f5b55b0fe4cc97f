// The one libFuzzer entry point of tools/fuzz/run.sh's binary. All four targets are compiled into
// it with the library (one build instead of four: each is a whole-library -O build with
// AddressSanitizer, minutes apiece); SWIFTBERT_FUZZ_TARGET names the one this process fuzzes.
import Foundation

private let target: (UnsafePointer<UInt8>, Int) -> CInt = {
    let name = ProcessInfo.processInfo.environment["SWIFTBERT_FUZZ_TARGET"] ?? ""
    switch name {
    case "safetensors": return fuzzSafeTensors
    case "loaders": return fuzzLoaders
    case "tokenizer": return fuzzTokenizer
    case "torch": return fuzzTorchCheckpoint
    default:
        FileHandle.standardError.write(Data("set SWIFTBERT_FUZZ_TARGET to safetensors, loaders, tokenizer or torch (got \"\(name)\")\n".utf8))
        exit(64)
    }
}()

// Resolved before the first input, so a missing name ends the run instead of counting as a crash.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    _ = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    target(data, size)
}
