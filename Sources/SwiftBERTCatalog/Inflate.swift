import Foundation

/// DEFLATE decoding (RFC 1951), for the members of a wheel. In Swift so that `bert` links no zlib.
/// The output size is known from the zip's directory, so the output is allocated once and a stream
/// that would write past it, or ends short of it, is an error, never a trap.
enum Inflate {
    struct Failure: Error { let reason: String }

    static func decompress(_ input: UnsafeRawBufferPointer, size: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: size)
        let written = try output.withUnsafeMutableBufferPointer { out in
            var decoder = Decoder(input: input, output: out)
            try decoder.run()
            return decoder.written
        }
        guard written == size else { throw Failure(reason: "the stream gives \(written) bytes, the directory says \(size)") }
        return output
    }

    /// Canonical Huffman code: a 9-bit lookup table for short codes, counts and sorted symbols
    /// for the rest (decoded a bit at a time, as zlib's puff does).
    struct Huffman {
        static let fastBits = 9
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int]
        /// Indexed by the next `fastBits` input bits: (length << 16) | symbol, or 0 for a longer code.
        var fast = [UInt32](repeating: 0, count: 1 << fastBits)

        init(lengths: ArraySlice<Int>) throws {
            for length in lengths { counts[length] += 1 }
            var left = 1
            for length in 1...15 {
                left = left * 2 - counts[length]
                guard left >= 0 else { throw Failure(reason: "an over-subscribed Huffman code") }
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            symbols = [Int](repeating: 0, count: lengths.count)
            var nextCode = [Int](repeating: 0, count: 16)
            var code = 0
            for length in 1...15 {
                code = (code + counts[length - 1] * (length > 1 ? 1 : 0)) << 1
                nextCode[length] = code
            }
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
                let code = nextCode[length]
                nextCode[length] += 1
                guard length <= Self.fastBits else { continue }
                // Deflate sends codes most significant bit first into an LSB-first stream.
                var reversed = 0
                for bit in 0..<length { reversed |= ((code >> bit) & 1) << (length - 1 - bit) }
                for index in stride(from: reversed, to: 1 << Self.fastBits, by: 1 << length) {
                    fast[index] = UInt32(length << 16 | symbol)
                }
            }
        }
    }

    struct Decoder {
        let input: UnsafeRawBufferPointer
        let output: UnsafeMutableBufferPointer<UInt8>
        var position = 0
        var bits: UInt64 = 0
        var bitCount = 0
        var written = 0

        init(input: UnsafeRawBufferPointer, output: UnsafeMutableBufferPointer<UInt8>) {
            self.input = input
            self.output = output
        }

        static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
        static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
        static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
        static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
        static let fixedLiterals = try! Huffman(lengths: ArraySlice(
            [Int](repeating: 8, count: 144) + [Int](repeating: 9, count: 112) + [Int](repeating: 7, count: 24) + [Int](repeating: 8, count: 8)))
        static let fixedDistances = try! Huffman(lengths: ArraySlice([Int](repeating: 5, count: 30)))

        /// At least 32 bits in `bits` (zeros past the end; `needMore` notices a read past it).
        @inline(__always) mutating func refill() {
            while bitCount <= 56 {
                let byte: UInt64 = position < input.count ? UInt64(input[position]) : 0
                bits |= byte << UInt64(bitCount)
                position += 1
                bitCount += 8
            }
        }

        @inline(__always) mutating func take(_ count: Int) throws -> Int {
            if bitCount < count { refill() }
            let value = Int(bits & ((1 << UInt64(count)) - 1))
            bits >>= UInt64(count)
            bitCount -= count
            guard position - bitCount / 8 <= input.count else { throw Failure(reason: "the stream ends in the middle of a block") }
            return value
        }

        mutating func decode(_ code: Huffman) throws -> Int {
            if bitCount < 16 { refill() }
            let entry = code.fast[Int(bits & UInt64((1 << Huffman.fastBits) - 1))]
            if entry != 0 {
                _ = try take(Int(entry >> 16))
                return Int(entry & 0xFFFF)
            }
            var value = 0, first = 0, index = 0
            for length in 1...15 {
                value |= try take(1)
                let count = code.counts[length]
                if value - first < count { return code.symbols[index + value - first] }
                index += count
                first = (first + count) << 1
                value <<= 1
            }
            throw Failure(reason: "an invalid Huffman code")
        }

        mutating func run() throws {
            var last = 0
            while last == 0 {
                last = try take(1)
                switch try take(2) {
                case 0: try stored()
                case 1: try block(Self.fixedLiterals, Self.fixedDistances)
                case 2:
                    let (literals, distances) = try dynamicCodes()
                    try block(literals, distances)
                default: throw Failure(reason: "a block of the reserved type 3")
                }
            }
        }

        mutating func stored() throws {
            _ = try take(bitCount % 8)  // to a byte boundary
            let length = try take(16), complement = try take(16)
            guard length == ~complement & 0xFFFF else { throw Failure(reason: "a stored block's length check fails") }
            for _ in 0..<length { try emit(UInt8(try take(8))) }
        }

        @inline(__always) mutating func emit(_ byte: UInt8) throws {
            guard written < output.count else { throw Failure(reason: "the stream gives more bytes than the directory says") }
            output[written] = byte
            written += 1
        }

        mutating func dynamicCodes() throws -> (Huffman, Huffman) {
            let literalCount = try take(5) + 257, distanceCount = try take(5) + 1, codeLengthCount = try take(4) + 4
            guard literalCount <= 286, distanceCount <= 30 else { throw Failure(reason: "too many codes in a dynamic block") }
            let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
            var codeLengths = [Int](repeating: 0, count: 19)
            for i in 0..<codeLengthCount { codeLengths[order[i]] = try take(3) }
            let lengthCode = try Huffman(lengths: codeLengths[...])
            var lengths: [Int] = []
            while lengths.count < literalCount + distanceCount {
                let symbol = try decode(lengthCode)
                switch symbol {
                case 0..<16: lengths.append(symbol)
                case 16:
                    guard let previous = lengths.last else { throw Failure(reason: "a repeat with no length before it") }
                    lengths += repeatElement(previous, count: 3 + (try take(2)))
                case 17: lengths += repeatElement(0, count: 3 + (try take(3)))
                default: lengths += repeatElement(0, count: 11 + (try take(7)))
                }
            }
            guard lengths.count == literalCount + distanceCount else { throw Failure(reason: "code lengths run past their count") }
            guard lengths[256] != 0 else { throw Failure(reason: "no end-of-block code") }
            return (try Huffman(lengths: lengths[..<literalCount]), try Huffman(lengths: lengths[literalCount...]))
        }

        mutating func block(_ literals: Huffman, _ distances: Huffman) throws {
            while true {
                let symbol = try decode(literals)
                if symbol < 256 { try emit(UInt8(symbol)); continue }
                if symbol == 256 { return }
                let lengthIndex = symbol - 257
                guard lengthIndex < 29 else { throw Failure(reason: "an invalid length code") }
                let length = Self.lengthBase[lengthIndex] + (try take(Self.lengthExtra[lengthIndex]))
                let distanceSymbol = try decode(distances)
                guard distanceSymbol < 30 else { throw Failure(reason: "an invalid distance code") }
                let distance = Self.distanceBase[distanceSymbol] + (try take(Self.distanceExtra[distanceSymbol]))
                guard distance <= written else { throw Failure(reason: "a distance before the start of the output") }
                guard length <= output.count - written else { throw Failure(reason: "the stream gives more bytes than the directory says") }
                // Byte by byte: the source may overlap what is being written (a run).
                for i in written..<(written + length) { output[i] = output[i - distance] }
                written += length
            }
        }
    }
}
