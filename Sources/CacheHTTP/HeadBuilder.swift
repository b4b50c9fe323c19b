// Builds a response head straight into bytes. The proxy writes one head per
// response, so this is a hot path: no HTTPHeaders array, no String per field,
// numbers written as digits in place. Same output as HTTPResponseHead.serialized().

package struct HeadBuilder {
    package private(set) var bytes: [UInt8]

    /// Starts with the status line, e.g. "HTTP/1.1 206 Partial Content".
    package init(status: Int, reason: String? = nil, capacity: Int = 384) {
        bytes = []
        bytes.reserveCapacity(capacity)
        append("HTTP/1.1 ")
        let s = max(0, min(status, 999))
        bytes.append(UInt8(truncatingIfNeeded: 0x30 + s / 100))
        bytes.append(UInt8(truncatingIfNeeded: 0x30 + s / 10 % 10))
        bytes.append(UInt8(truncatingIfNeeded: 0x30 + s % 10))
        bytes.append(ASCII.sp)
        bytes.append(contentsOf: (reason ?? HTTPStatus.reason(status)).utf8)
        endLine()
    }

    /// "Name: value". Callers must not put CR or LF in either.
    package mutating func add(_ name: StaticString, _ value: String) {
        startField(name)
        bytes.append(contentsOf: value.utf8)
        endLine()
    }

    /// A field whose name is only known at run time (a stored origin field).
    /// Callers must not put CR or LF in either.
    /// Whole field lines ("Name: value\r\n"…) rendered before.
    package mutating func append(lines: [UInt8]) {
        bytes.append(contentsOf: lines)
    }

    package mutating func add(name: String, _ value: String) {
        bytes.append(contentsOf: name.utf8)
        bytes.append(ASCII.colon)
        bytes.append(ASCII.sp)
        bytes.append(contentsOf: value.utf8)
        endLine()
    }

    /// "Name: 1234".
    package mutating func add(_ name: StaticString, decimal value: Int64) {
        startField(name)
        appendDecimal(value, to: &bytes)
        endLine()
    }

    /// "Content-Range: bytes first-last/total".
    package mutating func addContentRange(_ range: Range<Int64>, total: Int64) {
        startField("Content-Range")
        append("bytes ")
        appendDecimal(range.lowerBound, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDecimal(range.upperBound - 1, to: &bytes)
        bytes.append(UInt8(ascii: "/"))
        appendDecimal(total, to: &bytes)
        endLine()
    }

    /// "Content-Range: bytes */total" (416).
    package mutating func addUnsatisfiedRange(total: Int64) {
        startField("Content-Range")
        append("bytes */")
        appendDecimal(total, to: &bytes)
        endLine()
    }

    /// The head with its closing blank line.
    package consuming func finish() -> [UInt8] {
        endLine()
        return bytes
    }

    private mutating func startField(_ name: StaticString) {
        append(name)
        bytes.append(ASCII.colon)
        bytes.append(ASCII.sp)
    }

    private mutating func append(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func endLine() {
        bytes.append(ASCII.cr)
        bytes.append(ASCII.lf)
    }
}
