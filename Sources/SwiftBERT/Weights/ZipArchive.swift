import Foundation

/// The table of contents of a zip archive: member name -> where its data lies in the image.
/// `torch.save` stores members uncompressed (the default: a deflated member is refused); a wheel
/// deflates them (`acceptsDeflate`, for `bert pull`). Only the central directory is trusted for
/// sizes (torch writes zeros in the local headers and puts the sizes in data descriptors); zip64
/// archives (members or archives past 4 GiB) are read too. Every range is checked to lie inside
/// the image; nothing is allocated in proportion to a count the archive claims rather than holds.
package struct ZipArchive: Sendable {
    package struct Member: Sendable {
        /// 0 stored, 8 deflated.
        package let method: UInt16
        /// The member's bytes in the image, as stored (compressed when deflated).
        package let data: Range<Int>
        package let uncompressedSize: Int
        package let crc32: UInt32
    }
    package let members: [String: Member]
    /// Member names in the order of the central directory.
    package let names: [String]

    private static let endOfCentralDirectory: UInt32 = 0x0605_4b50
    private static let zip64Locator: UInt32 = 0x0706_4b50
    private static let zip64End: UInt32 = 0x0606_4b50
    private static let centralHeader: UInt32 = 0x0201_4b50
    private static let localHeader: UInt32 = 0x0403_4b50
    package static let resave = "re-save it with torch.save (torch ≥ 1.6) or as safetensors"

    /// True when the image starts as a zip archive does (a local header, or an empty archive).
    static func looksLikeZip(_ image: UnsafeRawBufferPointer) -> Bool {
        guard let magic = read(image, 0, as: UInt32.self) else { return false }
        return magic == localHeader || magic == endOfCentralDirectory
    }

    /// `remedy` ends each message: what to do about a damaged archive.
    package init(_ image: UnsafeRawBufferPointer, path: String, acceptsDeflate: Bool = false, remedy: String = ZipArchive.resave) throws {
        func fail(_ reason: String) -> SwiftBERTError {
            .invalidWeights(path: path, reason: "\(reason); the file is truncated or damaged: \(remedy)")
        }
        // The end record is 22 bytes plus a comment of at most 65535 bytes, at the end of the file.
        let size = image.count
        var end: Int?
        var candidate = size - 22
        while candidate >= max(0, size - 22 - 65535) {
            if Self.read(image, candidate, as: UInt32.self) == Self.endOfCentralDirectory { end = candidate; break }
            candidate -= 1
        }
        guard let end else { throw fail("no zip end-of-central-directory record") }
        guard let count16 = Self.read(image, end + 10, as: UInt16.self),
              let directorySize32 = Self.read(image, end + 12, as: UInt32.self),
              let directoryOffset32 = Self.read(image, end + 16, as: UInt32.self) else {
            throw fail("the zip end record is cut short")
        }
        var entryCount = UInt64(count16), directorySize = UInt64(directorySize32), directoryOffset = UInt64(directoryOffset32)
        // A zip64 archive says so with a locator just before the end record.
        if end >= 20, Self.read(image, end - 20, as: UInt32.self) == Self.zip64Locator {
            guard let recordOffset = Self.read(image, end - 20 + 8, as: UInt64.self), let record = Int(exactly: recordOffset),
                  Self.read(image, record, as: UInt32.self) == Self.zip64End,
                  let count64 = Self.read(image, record + 32, as: UInt64.self),
                  let size64 = Self.read(image, record + 40, as: UInt64.self),
                  let offset64 = Self.read(image, record + 48, as: UInt64.self) else {
                throw fail("the zip64 end record is missing or cut short")
            }
            (entryCount, directorySize, directoryOffset) = (count64, size64, offset64)
        }
        guard let directoryStart = Int(exactly: directoryOffset), let directoryLength = Int(exactly: directorySize),
              directoryStart <= size, directoryLength <= size - directoryStart else {
            throw fail("the zip central directory lies outside the file")
        }
        // Each central header is at least 46 bytes: a count beyond that is a lie.
        guard entryCount <= UInt64(directoryLength / 46) else {
            throw fail("the zip claims \(entryCount) members, more than its central directory holds")
        }
        var members: [String: Member] = [:]
        var names: [String] = []
        var cursor = directoryStart
        for _ in 0..<Int(entryCount) {
            guard Self.read(image, cursor, as: UInt32.self) == Self.centralHeader,
                  let flags = Self.read(image, cursor + 8, as: UInt16.self),
                  let method = Self.read(image, cursor + 10, as: UInt16.self),
                  let compressed32 = Self.read(image, cursor + 20, as: UInt32.self),
                  let uncompressed32 = Self.read(image, cursor + 24, as: UInt32.self),
                  let nameLength = Self.read(image, cursor + 28, as: UInt16.self),
                  let extraLength = Self.read(image, cursor + 30, as: UInt16.self),
                  let commentLength = Self.read(image, cursor + 32, as: UInt16.self),
                  let localOffset32 = Self.read(image, cursor + 42, as: UInt32.self),
                  let crc32 = Self.read(image, cursor + 16, as: UInt32.self),
                  let nameBytes = Self.slice(image, cursor + 46, Int(nameLength)),
                  let extra = Self.slice(image, cursor + 46 + Int(nameLength), Int(extraLength)) else {
                throw fail("a zip central directory header is malformed or cut short")
            }
            guard let name = String(validating: nameBytes, as: UTF8.self) else {
                throw fail("a zip member name is not UTF-8")
            }
            var uncompressed = UInt64(uncompressed32), compressed = UInt64(compressed32), localOffset = UInt64(localOffset32)
            // zip64 extra field (id 1): the 64-bit values of the fields saturated at 0xFFFFFFFF, in order.
            if uncompressed32 == .max || compressed32 == .max || localOffset32 == .max {
                guard let zip64 = Self.zip64Field(extra) else {
                    throw fail("zip member '\(printable(name))' has 32-bit fields at their maximum but no zip64 extra field")
                }
                var field = 0
                func next() throws -> UInt64 {
                    guard let value = Self.read(zip64, field, as: UInt64.self) else {
                        throw fail("zip member '\(printable(name))' has a short zip64 extra field")
                    }
                    field += 8
                    return value
                }
                if uncompressed32 == .max { uncompressed = try next() }
                if compressed32 == .max { compressed = try next() }
                if localOffset32 == .max { localOffset = try next() }
            }
            guard flags & 1 == 0 else {
                throw SwiftBERTError.invalidWeights(path: path, reason: "zip member '\(printable(name))' is encrypted; SwiftBERT reads only plain checkpoints: \(Self.resave)")
            }
            guard method == 0 || (method == 8 && acceptsDeflate) else {
                throw SwiftBERTError.invalidWeights(path: path, reason: "zip member '\(printable(name))' is compressed (method \(method)); torch.save stores members uncompressed, so the file was repacked by another tool: \(Self.resave)")
            }
            guard method != 0 || compressed == uncompressed else {
                throw fail("stored zip member '\(printable(name))' has \(compressed) stored bytes for \(uncompressed) bytes of data")
            }
            // The data follows the local header, whose name and extra field may differ in length
            // from the central directory's.
            guard let local = Int(exactly: localOffset), Self.read(image, local, as: UInt32.self) == Self.localHeader,
                  let localName = Self.read(image, local + 26, as: UInt16.self),
                  let localExtra = Self.read(image, local + 28, as: UInt16.self),
                  let length = Int(exactly: compressed), let uncompressedSize = Int(exactly: uncompressed) else {
                throw fail("zip member '\(printable(name))' has no local header where the directory says")
            }
            let start = local + 30 + Int(localName) + Int(localExtra)
            guard start <= size, length <= size - start else {
                throw fail("zip member '\(printable(name))' (\(length) bytes) runs past the end of the \(size)-byte file")
            }
            guard members[name] == nil else { throw fail("the zip holds two members named '\(printable(name))'") }
            members[name] = Member(method: method, data: start..<(start + length), uncompressedSize: uncompressedSize, crc32: crc32)
            names.append(name)
            cursor += 46 + Int(nameLength) + Int(extraLength) + Int(commentLength)
        }
        self.members = members
        self.names = names
    }

    /// The data of the zip64 extra field (id 1) among the extra fields, if present.
    private static func zip64Field(_ extra: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        var offset = 0
        while let id = read(extra, offset, as: UInt16.self), let length = read(extra, offset + 2, as: UInt16.self) {
            guard let data = slice(extra, offset + 4, Int(length)) else { return nil }
            if id == 1 { return data }
            offset += 4 + Int(length)
        }
        return nil
    }

    /// A little-endian integer at `offset`, or nil when it does not lie wholly inside `image`.
    static func read<T: FixedWidthInteger>(_ image: UnsafeRawBufferPointer, _ offset: Int, as type: T.Type) -> T? {
        guard offset >= 0, offset <= image.count - MemoryLayout<T>.size, let base = image.baseAddress else { return nil }
        return T(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// `count` bytes at `offset`, or nil when they do not lie wholly inside `image`.
    static func slice(_ image: UnsafeRawBufferPointer, _ offset: Int, _ count: Int) -> UnsafeRawBufferPointer? {
        guard offset >= 0, count >= 0, offset <= image.count, count <= image.count - offset else { return nil }
        return UnsafeRawBufferPointer(rebasing: image[offset..<(offset + count)])
    }
}
