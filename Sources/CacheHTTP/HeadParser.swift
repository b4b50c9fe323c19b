// Head parsers: nil until the blank line has arrived; `consumed` is where the body (or the
// next pipelined request) starts.

package enum RequestHeadParser {
    package static func parse(_ buffer: UnsafeRawBufferPointer, limits: HeadLimits = HeadLimits())
        -> Result<(head: HTTPRequestHead, consumed: Int)?, HeadParseError>
    {
        Result { () throws(HeadParseError) -> (head: HTTPRequestHead, consumed: Int)? in
            guard let layout = try HeadScanner.scan(buffer, limits: limits).get() else { return nil }
            return try parse(buffer, layout)
        }
    }

    private static func parse(_ buffer: UnsafeRawBufferPointer, _ layout: HeadLayout) throws(HeadParseError)
        -> (head: HTTPRequestHead, consumed: Int)
    {
        let line = layout.startLine
        // RFC 9112 §3. Split at the first and last SP: a target with spaces is a bad target,
        // not a bad version.
        var firstSP = line.lowerBound
        while firstSP < line.upperBound, buffer[firstSP] != ASCII.sp { firstSP += 1 }
        var lastSP = line.upperBound - 1
        while lastSP > firstSP, buffer[lastSP] != ASCII.sp { lastSP -= 1 }
        guard firstSP < line.upperBound, lastSP > firstSP else {
            throw .badRequest(containsCR(buffer, line) ? "bare CR" : "malformed request line")
        }
        if firstSP == line.lowerBound { throw .badRequest("missing method") }
        for i in line.lowerBound..<firstSP where !ASCII.isTokenChar(buffer[i]) {
            throw .badRequest(buffer[i] == ASCII.cr ? "bare CR" : "invalid method")
        }
        if lastSP == firstSP + 1 { throw .badRequest("missing target") }
        // Targets are long and almost always clean: check 8 bytes at a time.
        var i = firstSP + 1
        while i + 8 <= lastSP, !ASCII.mayHoldNonVisible(buffer.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
            i += 8
        }
        while i < lastSP {
            if !(0x21...0x7E).contains(buffer[i]) {
                throw .badRequest(buffer[i] == ASCII.cr ? "bare CR" : "invalid target")
            }
            i += 1
        }
        let version = try parseVersion(buffer, (lastSP + 1)..<line.upperBound)
        let headers = try HeadScanner.parseFields(buffer, layout).get()
        let head = HTTPRequestHead(
            method: string(buffer, line.lowerBound..<firstSP),
            target: string(buffer, (firstSP + 1)..<lastSP),
            version: version, headers: headers)
        return (head, layout.end)
    }
}

package enum ResponseHeadParser {
    package static func parse(_ buffer: UnsafeRawBufferPointer, limits: HeadLimits = HeadLimits())
        -> Result<(head: HTTPResponseHead, consumed: Int)?, HeadParseError>
    {
        Result { () throws(HeadParseError) -> (head: HTTPResponseHead, consumed: Int)? in
            guard let layout = try HeadScanner.scan(buffer, limits: limits).get() else { return nil }
            return try parse(buffer, layout)
        }
    }

    private static func parse(_ buffer: UnsafeRawBufferPointer, _ layout: HeadLayout) throws(HeadParseError)
        -> (head: HTTPResponseHead, consumed: Int)
    {
        // RFC 9112 §4; no SP after the code is tolerated: some servers send "HTTP/1.1 200".
        let line = layout.startLine
        let v = line.lowerBound
        guard line.count >= 12, buffer[v + 8] == ASCII.sp else {
            throw .badRequest(containsCR(buffer, line) ? "bare CR" : "malformed status line")
        }
        let version = try parseVersion(buffer, v..<(v + 8))
        var status = 0
        for i in (v + 9)..<(v + 12) {
            guard ASCII.isDigit(buffer[i]) else { throw .badRequest("invalid status code") }
            status = status * 10 + Int(buffer[i] &- 0x30)
        }
        if status < 100 { throw .badRequest("invalid status code") }
        var reasonStart = v + 12
        if reasonStart < line.upperBound {
            guard buffer[reasonStart] == ASCII.sp else { throw .badRequest("invalid status code") }
            reasonStart += 1
        }
        for i in reasonStart..<line.upperBound where !ASCII.isFieldValueChar(buffer[i]) {
            throw .badRequest(buffer[i] == ASCII.cr ? "bare CR" : "control character in reason")
        }
        let headers = try HeadScanner.parseFields(buffer, layout, response: true).get()
        let head = HTTPResponseHead(
            version: version, status: status,
            reason: string(buffer, reasonStart..<line.upperBound), headers: headers)
        return (head, layout.end)
    }
}

/// Only major version 1; minor versions are compatible (RFC 9110 §2.5).
private func parseVersion(_ buf: UnsafeRawBufferPointer, _ r: Range<Int>) throws(HeadParseError) -> HTTPVersion {
    let s = r.lowerBound
    guard r.count == 8,
          buf[s] == UInt8(ascii: "H"), buf[s + 1] == UInt8(ascii: "T"),
          buf[s + 2] == UInt8(ascii: "T"), buf[s + 3] == UInt8(ascii: "P"),
          buf[s + 4] == UInt8(ascii: "/"), ASCII.isDigit(buf[s + 5]),
          buf[s + 6] == UInt8(ascii: "."), ASCII.isDigit(buf[s + 7])
    else {
        throw .badRequest(containsCR(buf, r) ? "bare CR" : "malformed HTTP version")
    }
    let major = Int(buf[s + 5] &- 0x30), minor = Int(buf[s + 7] &- 0x30)
    if major != 1 { throw .versionNotSupported }
    return HTTPVersion(major: major, minor: minor)
}

private func containsCR(_ buf: UnsafeRawBufferPointer, _ r: Range<Int>) -> Bool {
    buf[r].contains(ASCII.cr)
}

@inline(__always)
private func string(_ buf: UnsafeRawBufferPointer, _ r: Range<Int>) -> String {
    String(decoding: UnsafeRawBufferPointer(rebasing: buf[r]), as: UTF8.self)
}
