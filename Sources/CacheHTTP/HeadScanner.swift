// The extent and fields of a head, for RequestHeadParser and ResponseHeadParser. Two passes:
// a cheap memchr scan for line ends (an incomplete head, common on a slow socket, costs
// little and limits fire early), then one validating pass once the head is complete.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Absolute offsets of a complete head's parts.
struct HeadLayout {
    var startLine: Range<Int>     // without its terminator
    var fieldsStart: Int          // first byte after the start line's LF
    var end: Int                  // one past the blank line's LF
    var fieldCount: Int
}

enum HeadScanner {
    /// Before the start line (RFC 9112 §2.2: ignore at least one, say a CRLF after a body).
    static let maxLeadingEmptyLines = 2

    @inline(__always)
    static func findLF(_ buf: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard from < buf.count, let base = buf.baseAddress,
              let hit = memchr(base + from, Int32(ASCII.lf), buf.count - from)
        else { return nil }
        return base.distance(to: UnsafeRawPointer(hit))
    }

    /// nil: incomplete. Applies every size limit, including on partial input.
    static func scan(_ buf: UnsafeRawBufferPointer, limits: HeadLimits) -> Result<HeadLayout?, HeadParseError> {
        let n = buf.count
        var pos = 0
        var skipped = 0
        while pos < n, buf[pos] == ASCII.cr || buf[pos] == ASCII.lf {
            if skipped == maxLeadingEmptyLines {
                return .failure(.badRequest("empty line before request line"))
            }
            if buf[pos] == ASCII.lf {
                pos += 1
            } else if pos + 1 == n {
                return .success(nil)
            } else if buf[pos + 1] == ASCII.lf {
                pos += 2
            } else {
                return .failure(.badRequest("bare CR"))
            }
            skipped += 1
        }
        if pos == n { return .success(nil) }

        guard let lineLF = findLF(buf, from: pos) else {
            var have = n - pos
            if buf[n - 1] == ASCII.cr { have -= 1 }
            return have > limits.maxRequestLine ? .failure(.uriTooLong) : .success(nil)
        }
        let lineEnd = buf[lineLF - 1] == ASCII.cr ? lineLF - 1 : lineLF
        if lineEnd - pos > limits.maxRequestLine { return .failure(.uriTooLong) }

        let fieldsStart = lineLF + 1
        var p = fieldsStart
        var count = 0
        while p < n {
            let b = buf[p]
            if b == ASCII.lf {
                return finish(pos..<lineEnd, fieldsStart, p + 1, count, limits)
            }
            if b == ASCII.cr {
                if p + 1 == n { break }
                if buf[p + 1] == ASCII.lf {
                    return finish(pos..<lineEnd, fieldsStart, p + 2, count, limits)
                }
                // A line starting with a bare CR; the validating pass rejects it.
            }
            guard let lf = findLF(buf, from: p) else { break }
            count += 1
            if count > limits.maxHeaderCount { return .failure(.headersTooLarge) }
            p = lf + 1
            if p - fieldsStart > limits.maxHeaderBytes { return .failure(.headersTooLarge) }
        }
        // Incomplete: what is here is a strict prefix of the field section.
        return n - fieldsStart > limits.maxHeaderBytes ? .failure(.headersTooLarge) : .success(nil)
    }

    private static func finish(_ startLine: Range<Int>, _ fieldsStart: Int, _ end: Int, _ count: Int,
                               _ limits: HeadLimits) -> Result<HeadLayout?, HeadParseError> {
        if end - fieldsStart > limits.maxHeaderBytes { return .failure(.headersTooLarge) }
        return .success(HeadLayout(startLine: startLine, fieldsStart: fieldsStart, end: end, fieldCount: count))
    }

    /// Finds line ends again while checking values. A `response` with Transfer-Encoding and
    /// Content-Length is framed by the former (RFC 9112 §6.3 ¶3): Content-Length goes, and
    /// `Connection: close` keeps the suspect connection from reuse. A request with both fails.
    static func parseFields(_ buf: UnsafeRawBufferPointer, _ layout: HeadLayout,
                            response: Bool = false) -> Result<HTTPHeaders, HeadParseError> {
        var headers = HTTPHeaders(reservingCapacity: layout.fieldCount)
        var framing = false
        var p = layout.fieldsStart
        for _ in 0..<layout.fieldCount {
            switch parseField(buf, p, layout.end) {
            case .success(let f):
                headers.add(f.name, f.value)
                framing = framing || f.framing
                p = f.next
            case .failure(let e):
                return .failure(e)
            }
        }
        if framing, response, headers.contains("Transfer-Encoding"), headers.contains("Content-Length") {
            headers.remove("Content-Length")
            headers.add("Connection", "close")
        }
        if framing, let e = checkFraming(headers) { return .failure(e) }
        return .success(headers)
    }

    /// The scan guaranteed an LF before `limit`, so the loops need no other bound.
    private static func parseField(_ buf: UnsafeRawBufferPointer, _ start: Int, _ limit: Int)
        -> Result<(name: String, value: String, framing: Bool, next: Int), HeadParseError>
    {
        if ASCII.isOWS(buf[start]) { return .failure(.badRequest("obsolete line folding")) }
        var i = start
        while ASCII.isTokenChar(buf[i]) { i += 1 }
        let stop = buf[i]
        if stop != ASCII.colon {
            if ASCII.isOWS(stop) { return .failure(.badRequest("whitespace before colon")) }
            if stop == ASCII.cr && buf[i + 1] != ASCII.lf { return .failure(.badRequest("bare CR")) }
            if stop == ASCII.cr || stop == ASCII.lf { return .failure(.badRequest("field without colon")) }
            return .failure(.badRequest("invalid field name"))
        }
        if i == start { return .failure(.badRequest("empty field name")) }
        let nameBytes = UnsafeRawBufferPointer(rebasing: buf[start..<i])
        // Only these two names need the framing check; spot them by length.
        let framing = (nameBytes.count == 14 && ASCII.equalsIgnoringCase(buf[start..<i], "content-length"))
            || (nameBytes.count == 17 && ASCII.equalsIgnoringCase(buf[start..<i], "transfer-encoding"))

        i += 1
        while ASCII.isOWS(buf[i]) { i += 1 }
        let valueStart = i
        // To the line end, rejecting controls: 8 bytes at a time while clean.
        var end = -1
        while end < 0 {
            if i + 8 <= limit, !ASCII.mayHoldControl(buf.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
                i += 8
                continue
            }
            let stopAt = min(i + 8, limit)
            while i < stopAt {
                let b = buf[i]
                if b < 0x20 || b == 0x7F {
                    if b == ASCII.lf { end = i; break }
                    if b == ASCII.cr {
                        guard buf[i + 1] == ASCII.lf else { return .failure(.badRequest("bare CR")) }
                        end = i
                        break
                    }
                    if b != ASCII.ht { return .failure(.badRequest("control character in field value")) }
                }
                i += 1
            }
        }
        let next = buf[end] == ASCII.cr ? end + 2 : end + 1
        var hi = end
        while hi > valueStart, ASCII.isOWS(buf[hi - 1]) { hi -= 1 }
        let name = String(decoding: nameBytes, as: UTF8.self)
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: buf[valueStart..<hi]), as: UTF8.self)
        return .success((name, value, framing, next))
    }

    /// RFC 9112 §6.3: conflicting Content-Lengths, or one with Transfer-Encoding, smuggle.
    private static func checkFraming(_ headers: HTTPHeaders) -> HeadParseError? {
        var length: Int64? = nil
        var sawTE = false
        for f in headers.fields {
            if ASCII.equalsIgnoringCase(f.name, "Content-Length") {
                // A list of identical values ("5, 5") is allowed (§8.6).
                guard let v = parseContentLength(f.value) else {
                    return .badRequest("invalid Content-Length")
                }
                if let l = length, l != v { return .badRequest("conflicting Content-Length") }
                length = v
            } else if ASCII.equalsIgnoringCase(f.name, "Transfer-Encoding") {
                sawTE = true
            }
        }
        if sawTE && length != nil { return .badRequest("Transfer-Encoding with Content-Length") }
        return nil
    }

    private static func parseContentLength(_ value: String) -> Int64? {
        var result: Int64? = nil
        for element in value.utf8.split(separator: ASCII.comma, omittingEmptySubsequences: false) {
            let digits = element.trimmingOWS()
            guard !digits.isEmpty else { return nil }
            var v: Int64 = 0
            for b in digits {
                guard ASCII.isDigit(b) else { return nil }
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(Int64(b &- 0x30))
                if o1 || o2 { return nil }
                v = s
            }
            if let r = result, r != v { return nil }
            result = v
        }
        return result
    }
}
