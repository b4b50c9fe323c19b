// Shared by every fuzz target: the libFuzzer entry adapter, invariant
// checks that abort with a message, and a reader that turns fuzzer bytes
// into choices (split points, lengths, small numbers).

#if canImport(Glibc)
import Glibc
#endif

/// Calls `body` with the fuzzer's input; every target's
/// `LLVMFuzzerTestOneInput` is one line that forwards here.
func fuzzRun(_ data: UnsafePointer<UInt8>?, _ size: Int, _ body: (UnsafeRawBufferPointer) -> Void) -> CInt {
    body(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

/// An invariant of the code under test. A failure prints where and why, then
/// aborts, so libFuzzer records the input as a crash.
func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
               file: StaticString = #fileID, line: UInt = #line) {
    if condition() { return }
    // write(2), not print: stdout is buffered and lost on abort.
    let text = Array("fuzz invariant failed at \(file):\(line): \(message())\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}

/// Byte-exact equality: String's == is Unicode canonical equivalence, which
/// would hide a parser that changes bytes.
func sameBytes(_ a: String, _ b: String) -> Bool {
    a.utf8.elementsEqual(b.utf8)
}

/// Consumes fuzzer bytes from the front as choices; reads past the end give 0.
struct FuzzChoices {
    private var bytes: [UInt8]
    private var index = 0

    init<C: Collection<UInt8>>(_ bytes: C) { self.bytes = Array(bytes) }

    var isAtEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        defer { index += 1 }
        return index < bytes.count ? bytes[index] : 0
    }

    /// A value in 0..<bound (bound > 0), from two bytes.
    mutating func below(_ bound: Int) -> Int {
        (Int(byte()) << 8 | Int(byte())) % bound
    }

    /// The remaining bytes, leaving none.
    mutating func rest() -> [UInt8] {
        defer { index = bytes.count }
        return index < bytes.count ? Array(bytes[index...]) : []
    }
}

/// Splits `count` bytes into consecutive pieces whose lengths come from
/// `choices` (1...max each; the rest in one piece once the choices run out),
/// so a target can feed input in fuzzer-chosen parts.
func pieceRanges(count: Int, maxPiece: Int, _ choices: inout FuzzChoices) -> [Range<Int>] {
    var out: [Range<Int>] = []
    var start = 0
    while start < count {
        let length = choices.isAtEnd ? count - start : min(count - start, 1 + Int(choices.byte()) % maxPiece)
        out.append(start..<(start + length))
        start += length
    }
    return out
}
