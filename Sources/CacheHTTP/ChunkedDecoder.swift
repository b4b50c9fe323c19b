package enum ChunkedError: Error, Sendable, Equatable {
    case badSize  // missing, non-hex, or past Int64
    case badFraming
    case lineTooLong  // a chunk-size line or the trailer section
}

/// RFC 9112 §7.1 chunked coding, decoded incrementally (input split anywhere, data handed out
/// as slices of it). Strict CRLF: lenient chunk parsing is a classic smuggling vector.
package struct ChunkedDecoder: Sendable {
    static let maxSizeLine = 1024  // size and extensions, without CRLF
    static let maxTrailerBytes = 16384  // trailers are skipped: this only bounds work

    private enum State: Sendable {
        case size           // reading hex digits
        case ext            // after the digits: BWS and extensions, to CR
        case sizeLF         // CR seen, LF expected
        case data           // `remaining` bytes of chunk data
        case dataCR, dataLF // CRLF closing the chunk data
        case trailerStart   // at the start of a trailer line (or the final CRLF)
        case trailerLine    // inside a trailer field line, to CR
        case trailerLF      // CR ending a trailer field line seen
        case endLF          // CR of the final blank line seen
        case done
    }

    private var state = State.size
    private var size: Int64 = 0
    private var digits = 0
    private var lineLength = 0
    private var remaining: Int64 = 0
    private var trailerBytes = 0

    package init() {}

    package var isDone: Bool { if case .done = state { return true } else { return false } }

    /// Bytes past the end of the body are left unconsumed. After a throw the state is
    /// unspecified; the message is unusable anyway.
    package mutating func feed(_ input: UnsafeRawBufferPointer,
                               onData: (UnsafeRawBufferPointer) -> Void) throws(ChunkedError) -> (consumed: Int, done: Bool)
    {
        let n = input.count
        var i = 0
        while i < n {
            switch state {
            case .data:
                let take = Int(min(remaining, Int64(n - i)))
                onData(UnsafeRawBufferPointer(rebasing: input[i..<(i + take)]))
                i += take
                remaining -= Int64(take)
                if remaining == 0 { state = .dataCR }
                continue
            case .done:
                return (i, true)
            default:
                break
            }
            let b = input[i]
            i += 1
            switch state {
            case .size:
                if let h = ASCII.hexValue(b) {
                    // Leading zeros are fine; only significant digits can overflow.
                    if size > (Int64.max >> 4) { throw .badSize }
                    size = size << 4 | Int64(h)
                    digits += 1
                    try countSizeLine()
                } else {
                    guard digits > 0 else { throw .badSize }
                    try sizeDelimiter(b)
                }
            case .ext:
                try sizeDelimiter(b)
            case .sizeLF:
                guard b == ASCII.lf else { throw .badFraming }
                state = size == 0 ? .trailerStart : .data
                remaining = size
                size = 0
                digits = 0
                lineLength = 0
            case .dataCR:
                guard b == ASCII.cr else { throw .badFraming }
                state = .dataLF
            case .dataLF:
                guard b == ASCII.lf else { throw .badFraming }
                state = .size
            case .trailerStart:
                if b == ASCII.cr {
                    state = .endLF
                } else if b == ASCII.lf {
                    throw .badFraming
                } else {
                    try countTrailer()
                    state = .trailerLine
                }
            case .trailerLine:
                try countTrailer()
                if b == ASCII.cr { state = .trailerLF } else if b == ASCII.lf { throw .badFraming }
            case .trailerLF:
                guard b == ASCII.lf else { throw .badFraming }
                try countTrailer()
                state = .trailerStart
            case .endLF:
                guard b == ASCII.lf else { throw .badFraming }
                state = .done
                return (i, true)
            case .data, .done:
                break // handled above
            }
        }
        return (i, isDone)
    }

    /// After the size digits: CR ends the line, bare LF is wrong, the rest is ignored BWS and
    /// extensions.
    private mutating func sizeDelimiter(_ b: UInt8) throws(ChunkedError) {
        if b == ASCII.cr {
            state = .sizeLF
            return
        }
        if b == ASCII.lf { throw .badFraming }
        if state == .size && !(ASCII.isOWS(b) || b == UInt8(ascii: ";")) { throw .badSize }
        state = .ext
        try countSizeLine()
    }

    @inline(__always)
    private mutating func countSizeLine() throws(ChunkedError) {
        lineLength += 1
        if lineLength > Self.maxSizeLine { throw .lineTooLong }
    }

    @inline(__always)
    private mutating func countTrailer() throws(ChunkedError) {
        trailerBytes += 1
        if trailerBytes > Self.maxTrailerBytes { throw .lineTooLong }
    }
}
