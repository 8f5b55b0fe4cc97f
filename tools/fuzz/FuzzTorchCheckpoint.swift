// libFuzzer target: the torch.save checkpoint reader (stored zip, pickle, tensor table) on
// arbitrary bytes. Built by tools/fuzz/run.sh into one binary with the library's sources and the
// other targets (FuzzMain.swift picks one; one module, so internal API is reachable). Any trap,
// out-of-bounds read (AddressSanitizer) or broken invariant is a crash.
import Foundation

func fuzzTorchCheckpoint(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let image = UnsafeRawBufferPointer(start: data, count: size)
    // The parser alone, on the fuzzer's own buffer: ASan sees any read past its end.
    guard let parsed = try? TorchCheckpoint.parse(image, path: "fuzz.pt") else { return 0 }
    precondition(parsed.order.count == parsed.tensors.count, "names and tensors disagree")
    for (_, info) in parsed.tensors {
        precondition(info.range.lowerBound >= 0 && info.range.upperBound <= size, "tensor outside the image")
        precondition(info.range.count == info.count * info.dtype.byteSize, "size disagrees with shape")
    }

    // The whole reader API on the same bytes, through the in-memory mapping.
    guard let checkpoint = try? TorchCheckpoint(image: image, path: "fuzz.pt") else {
        preconditionFailure("parse accepted what init(image:) refused")
    }
    for name in checkpoint.names {
        guard let shape = checkpoint.shape(name) else { preconditionFailure("a listed name has no shape") }
        if let values = try? checkpoint.floatArray(name) {
            precondition(values.count == shape.reduce(1, *))
        } else {
            precondition(checkpoint.dtype(name)?.floatKind == nil, "a float tensor was not read")
        }
    }
    return 0
}
