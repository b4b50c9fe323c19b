/// A response head straight into bytes, on the hot path: no HTTPHeaders, no String per field,
/// digits written in place, runs copied into a buffer sized up front (an Array append per piece
/// costs a capacity and uniqueness check). Same output as HTTPResponseHead.serialized().
package struct HeadBuilder {
    private var storage: [UInt8]  // written up to `used`; the rest is room
    private var used = 0

    /// Without the closing blank line.
    package var bytes: [UInt8] { Array(storage[..<used]) }

    package init(status: Int, reason: String? = nil, capacity: Int = 384) {
        storage = [UInt8](repeating: 0, count: max(capacity, 64))
        append("HTTP/1.1 ")
        let s = max(0, min(status, 999))
        storage[used] = UInt8(truncatingIfNeeded: 0x30 + s / 100)
        storage[used + 1] = UInt8(truncatingIfNeeded: 0x30 + s / 10 % 10)
        storage[used + 2] = UInt8(truncatingIfNeeded: 0x30 + s % 10)
        storage[used + 3] = ASCII.sp
        used += 4
        append(reason ?? HTTPStatus.reason(status))
        endLine()
    }

    /// Field lines only: a part rendered once, used in many heads.
    package init(fieldsCapacity: Int) { storage = [UInt8](repeating: 0, count: max(fieldsCapacity, 64)) }

    /// "Name: value". Callers must not put CR or LF in either.
    package mutating func add(_ name: StaticString, _ value: String) {
        let n = Self.bytes(of: name)
        if value.utf8.withContiguousStorageIfAvailable({ line(n, UnsafeRawBufferPointer($0)) }) == nil {
            Array(value.utf8).withUnsafeBytes { line(n, $0) }
        }
    }

    /// Whole field lines ("Name: value\r\n"…) rendered before.
    package mutating func append(lines: [UInt8]) { lines.withUnsafeBytes { write($0) } }

    /// A name known only at run time (a stored origin field). No CR or LF in either.
    package mutating func add(name: String, _ value: String) {
        append(name)
        pair(ASCII.colon, ASCII.sp)
        append(value)
        endLine()
    }

    package mutating func add(_ name: StaticString, decimal value: Int64) {
        var digits = Digits()
        digits.append(value)
        digits.withBytes { line(Self.bytes(of: name), $0) }
    }

    /// "Content-Range: bytes first-last/total".
    package mutating func addContentRange(_ range: Range<Int64>, total: Int64) {
        var value = Digits()
        value.append("bytes ")
        value.append(range.lowerBound)
        value.append("-")
        value.append(range.upperBound - 1)
        value.append("/")
        value.append(total)
        value.withBytes { line(Self.bytes(of: "Content-Range"), $0) }
    }

    /// "Content-Range: bytes */total" (416).
    package mutating func addUnsatisfiedRange(total: Int64) {
        var value = Digits()
        value.append("bytes */")
        value.append(total)
        value.withBytes { line(Self.bytes(of: "Content-Range"), $0) }
    }

    package consuming func finish() -> [UInt8] {
        endLine()
        storage.removeLast(storage.count - used)
        return storage
    }

    private mutating func endLine() { pair(ASCII.cr, ASCII.lf) }

    private mutating func append(_ text: StaticString) {
        write(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func append(_ text: String) {
        if text.utf8.withContiguousStorageIfAvailable({ write(UnsafeRawBufferPointer($0)) }) == nil {
            Array(text.utf8).withUnsafeBytes { write($0) }
        }
    }

    /// One or two single bytes.
    private mutating func pair(_ a: UInt8, _ b: UInt8?) {
        reserve(2)
        let at = used
        storage.withUnsafeMutableBufferPointer { bytes in
            bytes[at] = a
            if let b { bytes[at + 1] = b }
        }
        used += b == nil ? 1 : 2
    }

    private static func bytes(of text: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// "Name: value\r\n" in one storage access (piece by piece cost ~4 checks a line).
    private mutating func line(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        let total = name.count + value.count + 4
        reserve(total)
        let at = used
        storage.withUnsafeMutableBytes { out in
            var p = out.baseAddress! + at
            if let from = name.baseAddress, name.count > 0 { p.copyMemory(from: from, byteCount: name.count) }
            p += name.count
            p.storeBytes(of: ASCII.colon, as: UInt8.self)
            (p + 1).storeBytes(of: ASCII.sp, as: UInt8.self)
            p += 2
            if let from = value.baseAddress, value.count > 0 { p.copyMemory(from: from, byteCount: value.count) }
            p += value.count
            p.storeBytes(of: ASCII.cr, as: UInt8.self)
            (p + 1).storeBytes(of: ASCII.lf, as: UInt8.self)
        }
        used += total
    }

    private mutating func write(_ source: UnsafeRawBufferPointer) {
        guard let from = source.baseAddress, source.count > 0 else { return }
        reserve(source.count)
        let at = used
        storage.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: at).copyMemory(from: from, byteCount: source.count) }
        used += source.count
    }

    private mutating func reserve(_ count: Int) {
        if used + count > storage.count {
            storage.append(contentsOf: repeatElement(0, count: max(storage.count, used + count - storage.count)))
        }
    }
}

/// Up to 72 bytes of text and decimals on the stack, two digits per division ("1048575": four,
/// not seven). Longer text is cut (users write at most "bytes " and three 20-digit numbers).
private struct Digits {
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0)
    private var count = 0
    private static let capacity = 72

    mutating func append(_ text: StaticString) {
        let n = min(text.utf8CodeUnitCount, Self.capacity - count)
        let at = count
        withUnsafeMutableBytes(of: &storage) { out in
            out.baseAddress!.advanced(by: at).copyMemory(from: text.utf8Start, byteCount: n)
        }
        count += n
    }

    /// Negative values are written as 0.
    mutating func append(_ value: Int64) {
        guard count + 20 <= Self.capacity else { return }
        var v = UInt64(max(value, 0))
        // Written backwards into a scratch of 20, then moved into place.
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)
        let length = withUnsafeMutableBytes(of: &scratch) { buffer -> Int in
            var at = 24
            Self.pairs.withUnsafeBufferPointer { pairs in
                while v >= 100 {
                    let two = Int(v % 100) &* 2
                    v /= 100
                    at &-= 2
                    buffer[at] = pairs[two]
                    buffer[at &+ 1] = pairs[two &+ 1]
                }
                if v >= 10 {
                    let two = Int(v) &* 2
                    at &-= 2
                    buffer[at] = pairs[two]
                    buffer[at &+ 1] = pairs[two &+ 1]
                } else {
                    at &-= 1
                    buffer[at] = UInt8(truncatingIfNeeded: 0x30 &+ v)
                }
            }
            return 24 &- at
        }
        let at = count
        withUnsafeBytes(of: &scratch) { digits in
            withUnsafeMutableBytes(of: &storage) { out in
                out.baseAddress!.advanced(by: at).copyMemory(from: digits.baseAddress! + (24 - length), byteCount: length)
            }
        }
        count += length
    }

    mutating func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        let n = count
        return withUnsafeBytes(of: &storage) { body(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
    }

    /// "00" "01" … "99".
    private static let pairs: [UInt8] = (0..<100).flatMap { (n: Int) -> [UInt8] in [UInt8(48 + n / 10), UInt8(48 + n % 10)] }
}
