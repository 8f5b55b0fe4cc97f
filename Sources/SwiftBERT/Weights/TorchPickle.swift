import Foundation

/// The element types of torch storages SwiftBERT reads, by the storage class torch pickles.
enum TorchDType: String, Sendable {
    case f32 = "FloatStorage", f16 = "HalfStorage", bf16 = "BFloat16Storage", f64 = "DoubleStorage"
    case i64 = "LongStorage", i32 = "IntStorage", u8 = "ByteStorage", i8 = "CharStorage", bool = "BoolStorage"

    var byteSize: Int {
        switch self {
        case .f64, .i64: return 8
        case .f32, .i32: return 4
        case .f16, .bf16: return 2
        case .u8, .i8, .bool: return 1
        }
    }

    var floatKind: StoredFloatKind? {
        switch self {
        case .f32: return .f32
        case .f16: return .f16
        case .bf16: return .bf16
        case .f64: return .f64
        default: return nil
        }
    }
}

/// A storage as a pickle names it: `('storage', <class>, key, location, numel)`; its bytes are the
/// zip member `<archive>/data/<key>`.
struct TorchStorageReference: Sendable {
    let dtype: TorchDType
    let key: String
    let elementCount: Int
}

/// A tensor as `torch._utils._rebuild_tensor_v2` describes it: a view into a storage.
struct TorchTensorReference: Sendable {
    let storage: TorchStorageReference
    let offset: Int
    let shape: [Int]
    let stride: [Int]
}

/// A minimal unpickler for the `data.pkl` of a `torch.save` zip: it reads the opcodes of pickle
/// protocols 2 to 5 that torch emits and builds only what a state dict is made of (dicts,
/// tuples, lists, strings, numbers, tensors). A pickle is a program: `GLOBAL` names any Python
/// callable and `REDUCE` calls it, so only the few torch and collections names a state dict needs
/// are accepted, and "calling" them only records a tensor or makes an empty dict. Everything else
/// is refused with `SwiftBERTError.invalidWeights`. Nothing here recurses, and the stack, the marks,
/// the memo and the nesting of containers are bounded, so a hostile pickle cannot trap.
struct TorchPickle {
    /// Deepest nesting of containers accepted (a state dict with its `_metadata` needs about 4).
    static let maximumDepth = 32
    static let maximumStack = 1 << 20
    static let maximumMarks = 1 << 12
    static let maximumMemo = 1 << 20

    /// The names a state dict's pickle uses, and the only ones accepted.
    enum Global: Sendable, Equatable {
        case orderedDict, rebuildTensor, rebuildParameter, rebuildParameterWithState
        case storage(TorchDType)

        init?(module: String, name: String) {
            switch (module, name) {
            case ("collections", "OrderedDict"): self = .orderedDict
            case ("torch._utils", "_rebuild_tensor_v2"): self = .rebuildTensor
            case ("torch._utils", "_rebuild_parameter"): self = .rebuildParameter
            case ("torch._utils", "_rebuild_parameter_with_state"): self = .rebuildParameterWithState
            case ("torch", _):
                guard let dtype = TorchDType(rawValue: name) else { return nil }
                self = .storage(dtype)
            default: return nil
            }
        }
    }

    /// A list or dict: a reference, since pickles fill them in place after making them. A container
    /// is sealed once put inside another, and a sealed one is never changed again: so the depth
    /// recorded for each is final, and no container can come to contain itself.
    final class Container {
        var items: [Value] = []
        var pairs: [(key: Value, value: Value)] = []
        let isDict: Bool
        var depth = 1
        var sealed = false
        init(isDict: Bool) { self.isDict = isDict }
    }

    enum Value {
        case none, bool(Bool), int(Int), float(Double), string(String)
        case tuple([Value], depth: Int)
        case container(Container)
        case global(Global)
        case storage(TorchStorageReference)
        case tensor(TorchTensorReference)

        var depth: Int {
            switch self {
            case let .tuple(_, depth): return depth
            case let .container(container): return container.depth
            default: return 0
            }
        }

        var kindName: String {
            switch self {
            case .none: return "None"
            case .bool: return "a bool"
            case .int: return "an int"
            case .float: return "a float"
            case .string: return "a string"
            case .tuple: return "a tuple"
            case let .container(container): return container.isDict ? "a dict" : "a list"
            case .global: return "a class or function"
            case .storage: return "a storage"
            case .tensor: return "a tensor"
            }
        }
    }

    /// Runs the pickle and returns its result.
    static func load(_ bytes: UnsafeRawBufferPointer, path: String) throws -> Value {
        var machine = Machine(bytes: bytes, path: path)
        return try machine.run()
    }

    private struct Machine {
        let bytes: UnsafeRawBufferPointer
        let path: String
        var position = 0
        var stack: [Value] = []
        var marks: [Int] = []
        var memo: [Int: Value] = [:]

        init(bytes: UnsafeRawBufferPointer, path: String) {
            self.bytes = bytes
            self.path = path
        }

        func fail(_ reason: String) -> SwiftBERTError {
            .invalidWeights(path: path, reason: "data.pkl \(reason); SwiftBERT reads only state dicts of tensors, saved with torch.save(model.state_dict(), path): re-save the weights so, or as safetensors")
        }

        mutating func take(_ count: Int) throws -> UnsafeRawBufferPointer {
            guard let slice = ZipArchive.slice(bytes, position, count) else { throw fail("ends in the middle of an instruction (at byte \(position)); the file is truncated") }
            position += count
            return slice
        }

        mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
            let raw = try take(MemoryLayout<T>.size)
            return T(littleEndian: raw.loadUnaligned(as: T.self))
        }

        mutating func text(length: UInt64) throws -> String {
            guard let count = Int(exactly: length), count <= bytes.count - position else {
                throw fail("has a string of \(length) bytes running past its end; the file is truncated")
            }
            guard let string = String(validating: try take(count), as: UTF8.self) else { throw fail("has a string that is not UTF-8") }
            return string
        }

        /// A newline-terminated line (the module and name of GLOBAL), at most 256 bytes.
        mutating func line() throws -> String {
            var end = position
            while end < bytes.count, end - position <= 256, bytes[end] != 0x0A { end += 1 }
            guard end < bytes.count, bytes[end] == 0x0A else { throw fail("has a GLOBAL name that is too long or not terminated") }
            let string = String(decoding: try take(end - position), as: UTF8.self)
            position += 1
            return string
        }

        mutating func push(_ value: Value) throws {
            guard stack.count < TorchPickle.maximumStack else { throw fail("holds more than \(TorchPickle.maximumStack) values at once") }
            stack.append(value)
        }

        mutating func pop() throws -> Value {
            guard stack.count > (marks.last ?? 0), let value = stack.popLast() else { throw fail("pops from an empty stack (it is damaged)") }
            return value
        }

        /// The values since the last MARK, removing them and the mark.
        mutating func popToMark() throws -> [Value] {
            guard let mark = marks.popLast(), mark <= stack.count else { throw fail("uses a MARK it never set (it is damaged)") }
            let values = Array(stack[mark...])
            stack.removeSubrange(mark...)
            return values
        }

        /// Seals the containers among `children` (see `Container`) and returns the depth of a
        /// container holding them.
        func adopt(_ children: [Value], into parent: Container?) throws -> Int {
            var depth = 1
            for child in children {
                if case let .container(inner) = child {
                    if let parent, inner === parent { throw fail("puts a container inside itself") }
                    inner.sealed = true
                }
                depth = max(depth, child.depth + 1)
            }
            guard depth <= TorchPickle.maximumDepth else { throw fail("nests containers more than \(TorchPickle.maximumDepth) deep") }
            return depth
        }

        mutating func tuple(_ items: [Value]) throws -> Value {
            .tuple(items, depth: try adopt(items, into: nil))
        }

        /// The container on top of the stack that APPEND(S)/SETITEM(S) fill, checked to be open.
        func openContainer(isDict: Bool, below count: Int) throws -> Container {
            guard stack.count > count, case let .container(container) = stack[stack.count - 1 - count], container.isDict == isDict else {
                throw fail("adds \(isDict ? "items to something that is not a dict" : "elements to something that is not a list")")
            }
            guard !container.sealed else { throw fail("changes a container after putting it inside another") }
            return container
        }

        mutating func memoize(_ index: Int) throws {
            guard let top = stack.last else { throw fail("memoizes from an empty stack") }
            guard memo[index] != nil || memo.count < TorchPickle.maximumMemo else { throw fail("memoizes more than \(TorchPickle.maximumMemo) values") }
            memo[index] = top
        }

        mutating func recall(_ index: Int) throws {
            guard let value = memo[index] else { throw fail("recalls memo entry \(index), which it never stored (it is damaged)") }
            try push(value)
        }

        mutating func global(module: String, name: String) throws {
            guard let global = Global(module: module, name: name) else {
                throw SwiftBERTError.invalidWeights(path: path, reason: "data.pkl names '\(printable(module)).\(printable(name))', which a state dict of tensors does not use; a pickle can run any code it names, so SwiftBERT accepts only collections.OrderedDict, torch._utils._rebuild_tensor_v2/_rebuild_parameter and the torch storage classes: load the file in Python only if you trust it, and re-save its state dict as safetensors")
            }
            try push(.global(global))
        }

        mutating func run() throws -> Value {
            while true {
                let opcode = try integer(UInt8.self)
                switch opcode {
                case 0x80: // PROTO
                    let version = try integer(UInt8.self)
                    guard version >= 2, version <= 5 else { throw fail("uses pickle protocol \(version); torch.save writes 2") }
                case 0x95: _ = try integer(UInt64.self)  // FRAME: a length hint, ignored
                case 0x2E: // STOP
                    guard marks.isEmpty, stack.count == 1, let result = stack.last else { throw fail("stops with \(stack.count) values on its stack instead of 1 (it is damaged)") }
                    return result
                case 0x28: // MARK
                    guard marks.count < TorchPickle.maximumMarks else { throw fail("sets more than \(TorchPickle.maximumMarks) MARKs") }
                    marks.append(stack.count)
                case 0x4E: try push(.none)
                case 0x88: try push(.bool(true))
                case 0x89: try push(.bool(false))
                case 0x4B: try push(.int(Int(try integer(UInt8.self))))   // BININT1
                case 0x4D: try push(.int(Int(try integer(UInt16.self))))  // BININT2
                case 0x4A: try push(.int(Int(try integer(Int32.self))))   // BININT
                case 0x8A: // LONG1: little-endian two's complement of up to 8 bytes here
                    let count = Int(try integer(UInt8.self))
                    guard count <= 8 else { throw fail("holds an integer of \(count) bytes, too large for a tensor size") }
                    let raw = try take(count)
                    var value: UInt64 = 0
                    for (index, byte) in raw.enumerated() { value |= UInt64(byte) << (8 * UInt64(index)) }
                    if count > 0, count < 8, raw[count - 1] & 0x80 != 0 { value |= ~0 << (8 * UInt64(count)) }  // sign-extend
                    try push(.int(Int(Int64(bitPattern: value))))
                case 0x47: // BINFLOAT, big-endian
                    try push(.float(Double(bitPattern: UInt64(bigEndian: try take(8).loadUnaligned(as: UInt64.self)))))
                case 0x58: try push(.string(try text(length: UInt64(try integer(UInt32.self)))))  // BINUNICODE
                case 0x8C: try push(.string(try text(length: UInt64(try integer(UInt8.self)))))   // SHORT_BINUNICODE
                case 0x8D: try push(.string(try text(length: try integer(UInt64.self))))           // BINUNICODE8
                case 0x29: try push(.tuple([], depth: 1))                                          // EMPTY_TUPLE
                case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
                    let count = Int(opcode - 0x84)
                    guard stack.count - (marks.last ?? 0) >= count else { throw fail("makes a tuple of more values than its stack holds") }
                    let items = Array(stack.suffix(count))
                    stack.removeLast(count)
                    try push(try tuple(items))
                case 0x74: try push(try tuple(try popToMark()))  // TUPLE
                case 0x5D: try push(.container(Container(isDict: false)))  // EMPTY_LIST
                case 0x7D: try push(.container(Container(isDict: true)))   // EMPTY_DICT
                case 0x61: // APPEND
                    let item = try pop()
                    let list = try openContainer(isDict: false, below: 0)
                    list.depth = max(list.depth, try adopt([item], into: list))
                    list.items.append(item)
                case 0x65: // APPENDS
                    let items = try popToMark()
                    let list = try openContainer(isDict: false, below: 0)
                    list.depth = max(list.depth, try adopt(items, into: list))
                    list.items += items
                case 0x73: // SETITEM
                    let value = try pop(), key = try pop()
                    let dict = try openContainer(isDict: true, below: 0)
                    dict.depth = max(dict.depth, try adopt([key, value], into: dict))
                    dict.pairs.append((key, value))
                case 0x75: // SETITEMS
                    let items = try popToMark()
                    guard items.count % 2 == 0 else { throw fail("sets dict items from an odd number of values") }
                    let dict = try openContainer(isDict: true, below: 0)
                    dict.depth = max(dict.depth, try adopt(items, into: dict))
                    for index in stride(from: 0, to: items.count, by: 2) { dict.pairs.append((items[index], items[index + 1])) }
                case 0x71: try memoize(Int(try integer(UInt8.self)))   // BINPUT
                case 0x72: try memoize(Int(try integer(UInt32.self)))  // LONG_BINPUT
                case 0x94: try memoize(memo.count)                     // MEMOIZE
                case 0x68: try recall(Int(try integer(UInt8.self)))    // BINGET
                case 0x6A: try recall(Int(try integer(UInt32.self)))   // LONG_BINGET
                case 0x30: _ = try pop()  // POP
                case 0x31: _ = try popToMark()  // POP_MARK
                case 0x32: // DUP
                    guard let top = stack.last else { throw fail("duplicates from an empty stack") }
                    try push(top)
                case 0x63: // GLOBAL
                    let module = try line(), name = try line()
                    try global(module: module, name: name)
                case 0x93: // STACK_GLOBAL
                    let name = try pop(), module = try pop()
                    guard case let .string(moduleName) = module, case let .string(globalName) = name else {
                        throw fail("names a global with \(module.kindName) and \(name.kindName) instead of two strings")
                    }
                    try global(module: moduleName, name: globalName)
                case 0x51: // BINPERSID
                    try push(.storage(try storage(try pop())))
                case 0x52: // REDUCE
                    let arguments = try pop(), callable = try pop()
                    try push(try call(callable, arguments))
                case 0x62: // BUILD
                    let state = try pop()
                    // Only a state dict's attributes (its `_metadata` of module versions), ignored.
                    guard let target = stack.last, case let .container(dict) = target, dict.isDict else {
                        throw fail("sets the state of \(stack.last?.kindName ?? "nothing"), which a state dict does not do")
                    }
                    switch state {
                    case .none: break
                    case let .container(attributes) where attributes.isDict: _ = try adopt([state], into: dict)
                    default: throw fail("sets the state of a dict from \(state.kindName)")
                    }
                default:
                    throw fail("holds opcode 0x\(String(opcode, radix: 16)) at byte \(position - 1), which a torch state dict does not use")
                }
            }
        }

        /// A persistent id: `('storage', <storage class>, key, location, numel)`.
        func storage(_ id: Value) throws -> TorchStorageReference {
            guard case let .tuple(fields, _) = id, fields.count == 5, case .string("storage") = fields[0],
                  case let .global(.storage(dtype)) = fields[1], case let .string(key) = fields[2],
                  case .string = fields[3], case let .int(count) = fields[4], count >= 0 else {
                throw fail("holds a persistent id that is not ('storage', <torch storage class>, key, location, size)")
            }
            return TorchStorageReference(dtype: dtype, key: key, elementCount: count)
        }

        /// REDUCE: "calls" one of the accepted globals, which only records what it describes.
        func call(_ callable: Value, _ arguments: Value) throws -> Value {
            guard case let .global(global) = callable, case let .tuple(args, _) = arguments else {
                throw fail("calls \(callable.kindName) with \(arguments.kindName); only torch's tensor rebuilders and OrderedDict may be called")
            }
            switch global {
            case .orderedDict:
                guard args.isEmpty else { throw fail("calls OrderedDict with arguments") }
                return .container(Container(isDict: true))
            case .rebuildTensor:
                // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
                guard args.count == 6 || args.count == 7, case let .storage(storage) = args[0], case let .int(offset) = args[1],
                      let shape = integers(args[2]), let stride = integers(args[3]) else {
                    throw fail("calls _rebuild_tensor_v2 with arguments other than (storage, offset, size, stride, requires_grad, hooks)")
                }
                return .tensor(TorchTensorReference(storage: storage, offset: offset, shape: shape, stride: stride))
            case .rebuildParameter, .rebuildParameterWithState:
                // (tensor, requires_grad, backward_hooks[, state]): a Parameter is its tensor here.
                guard args.count == (global == .rebuildParameter ? 3 : 4), case .tensor = args[0] else {
                    throw fail("calls _rebuild_parameter with arguments other than (tensor, requires_grad, hooks)")
                }
                return args[0]
            case .storage:
                throw fail("calls a storage class, which torch.save does not do")
            }
        }

        func integers(_ value: Value) -> [Int]? {
            guard case let .tuple(items, _) = value else { return nil }
            var result: [Int] = []
            for item in items {
                guard case let .int(number) = item else { return nil }
                result.append(number)
            }
            return result
        }
    }
}
