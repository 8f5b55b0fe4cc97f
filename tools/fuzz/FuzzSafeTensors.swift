// libFuzzer target: the safetensors header and tensor-table parser on arbitrary bytes.
// Built by tools/fuzz/run.sh into one binary with the library's sources and the other targets
// (FuzzMain.swift picks one; one module, so internal API is reachable). Any trap, out-of-bounds
// read (AddressSanitizer) or broken invariant is a crash.
import Foundation

func fuzzSafeTensors(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let image = UnsafeRawBufferPointer(start: data, count: size)
    // The parser alone, on the fuzzer's own buffer: ASan sees any read past its end.
    guard let header = try? SafeTensorsFile.parseHeader(image, path: "fuzz.safetensors") else { return 0 }
    precondition(header.dataStart >= 8 && header.dataStart <= size)
    var ranges: [Range<Int>] = []
    for (_, info) in header.tensors {
        precondition(info.range.lowerBound >= 0 && header.dataStart + info.range.upperBound <= size, "tensor outside the image")
        precondition(info.range.count == info.count * info.dtype.byteSize, "size disagrees with shape")
        if !info.range.isEmpty { ranges.append(info.range) }
    }
    ranges.sort { $0.lowerBound < $1.lowerBound }
    for (a, b) in zip(ranges, ranges.dropFirst()) { precondition(a.upperBound <= b.lowerBound, "overlap accepted") }

    // The whole reader API on the same bytes, through the in-memory mapping.
    guard let file = try? SafeTensorsFile(image: image, path: "fuzz.safetensors") else {
        preconditionFailure("parseHeader accepted what init(image:) refused")
    }
    for (name, info) in file.tensors {
        let raw = try! file.bytes(name, dtype: info.dtype, shape: info.shape)
        precondition(raw.count == info.range.count)
        if let first = raw.first, let last = raw.last { _ = first &+ last }
        if info.dtype == .f32 || info.dtype == .f16 || info.dtype == .bf16 {
            let values = try! file.floatArray(name)
            precondition(values.count == info.count)
        }
        _ = try? file.floats(name, shape: info.shape)
        _ = try? file.bytes(name, dtype: .f32, shape: [1, 2])
    }
    _ = file.firstNonFiniteValue()
    _ = try? file.checkFinite()
    return 0
}
