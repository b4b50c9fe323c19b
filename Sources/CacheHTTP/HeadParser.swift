// Request and response head parsers. Both take the bytes received so far and
// return nil until the blank line ending the head has arrived; `consumed`
// then says where the body (or the next pipelined request) starts.

package enum RequestHeadParser {
    package static func parse(_ buffer: UnsafeRawBufferPointer, limits: HeadLimits = HeadLimits())
        -> Result<(head: HTTPRequestHead, consumed: Int)?, HeadParseError>
    {
        let layout: HeadLayout
        switch HeadScanner.scan(buffer, limits: limits) {
        case .success(nil): return .success(nil)
        case .success(let l?): layout = l
        case .failure(let e): return .failure(e)
        }
        let line = layout.startLine
        // method SP request-target SP HTTP-version (RFC 9112 §3). Splitting at
        // the first and last SP lets a target containing spaces be reported
        // as a bad target rather than a bad version.
        var firstSP = line.lowerBound
        while firstSP < line.upperBound, buffer[firstSP] != ASCII.sp { firstSP += 1 }
        var lastSP = line.upperBound - 1
        while lastSP > firstSP, buffer[lastSP] != ASCII.sp { lastSP -= 1 }
        guard firstSP < line.upperBound, lastSP > firstSP else {
            return .failure(.badRequest(containsCR(buffer, line) ? "bare CR" : "malformed request line"))
        }
        if firstSP == line.lowerBound { return .failure(.badRequest("missing method")) }
        for i in line.lowerBound..<firstSP where !ASCII.isTokenChar(buffer[i]) {
            return .failure(.badRequest(buffer[i] == ASCII.cr ? "bare CR" : "invalid method"))
        }
        if lastSP == firstSP + 1 { return .failure(.badRequest("missing target")) }
        // Targets are long and almost always clean: check 8 bytes at a time.
        var i = firstSP + 1
        while i + 8 <= lastSP, !ASCII.mayHoldNonVisible(buffer.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
            i += 8
        }
        while i < lastSP {
            if !(0x21...0x7E).contains(buffer[i]) {
                return .failure(.badRequest(buffer[i] == ASCII.cr ? "bare CR" : "invalid target"))
            }
            i += 1
        }
        let version: HTTPVersion
        switch parseVersion(buffer, (lastSP + 1)..<line.upperBound) {
        case .success(let v): version = v
        case .failure(let e): return .failure(e)
        }
        let headers: HTTPHeaders
        switch HeadScanner.parseFields(buffer, layout) {
        case .success(let h): headers = h
        case .failure(let e): return .failure(e)
        }
        let head = HTTPRequestHead(
            method: string(buffer, line.lowerBound..<firstSP),
            target: string(buffer, (firstSP + 1)..<lastSP),
            version: version, headers: headers)
        return .success((head, layout.end))
    }
}

package enum ResponseHeadParser {
    package static func parse(_ buffer: UnsafeRawBufferPointer, limits: HeadLimits = HeadLimits())
        -> Result<(head: HTTPResponseHead, consumed: Int)?, HeadParseError>
    {
        let layout: HeadLayout
        switch HeadScanner.scan(buffer, limits: limits) {
        case .success(nil): return .success(nil)
        case .success(let l?): layout = l
        case .failure(let e): return .failure(e)
        }
        // HTTP-version SP 3DIGIT SP [reason] (RFC 9112 §4). A missing SP after
        // the code is tolerated: some servers send "HTTP/1.1 200".
        let line = layout.startLine
        let v = line.lowerBound
        guard line.count >= 12, buffer[v + 8] == ASCII.sp else {
            return .failure(.badRequest(containsCR(buffer, line) ? "bare CR" : "malformed status line"))
        }
        let version: HTTPVersion
        switch parseVersion(buffer, v..<(v + 8)) {
        case .success(let x): version = x
        case .failure(let e): return .failure(e)
        }
        var status = 0
        for i in (v + 9)..<(v + 12) {
            guard ASCII.isDigit(buffer[i]) else { return .failure(.badRequest("invalid status code")) }
            status = status * 10 + Int(buffer[i] &- 0x30)
        }
        if status < 100 { return .failure(.badRequest("invalid status code")) }
        var reasonStart = v + 12
        if reasonStart < line.upperBound {
            guard buffer[reasonStart] == ASCII.sp else { return .failure(.badRequest("invalid status code")) }
            reasonStart += 1
        }
        for i in reasonStart..<line.upperBound where !ASCII.isFieldValueChar(buffer[i]) {
            return .failure(.badRequest(buffer[i] == ASCII.cr ? "bare CR" : "control character in reason"))
        }
        let headers: HTTPHeaders
        switch HeadScanner.parseFields(buffer, layout, response: true) {
        case .success(let h): headers = h
        case .failure(let e): return .failure(e)
        }
        let head = HTTPResponseHead(
            version: version, status: status,
            reason: string(buffer, reasonStart..<line.upperBound), headers: headers)
        return .success((head, layout.end))
    }
}

/// "HTTP/" DIGIT "." DIGIT. Only major version 1 is served; 1.2 and up are
/// read as 1.1-compatible (RFC 9110 §2.5 minor versions are compatible).
private func parseVersion(_ buf: UnsafeRawBufferPointer, _ r: Range<Int>) -> Result<HTTPVersion, HeadParseError> {
    let s = r.lowerBound
    guard r.count == 8,
          buf[s] == UInt8(ascii: "H"), buf[s + 1] == UInt8(ascii: "T"),
          buf[s + 2] == UInt8(ascii: "T"), buf[s + 3] == UInt8(ascii: "P"),
          buf[s + 4] == UInt8(ascii: "/"), ASCII.isDigit(buf[s + 5]),
          buf[s + 6] == UInt8(ascii: "."), ASCII.isDigit(buf[s + 7])
    else {
        return .failure(.badRequest(containsCR(buf, r) ? "bare CR" : "malformed HTTP version"))
    }
    let major = Int(buf[s + 5] &- 0x30), minor = Int(buf[s + 7] &- 0x30)
    if major != 1 { return .failure(.versionNotSupported) }
    return .success(HTTPVersion(major: major, minor: minor))
}

private func containsCR(_ buf: UnsafeRawBufferPointer, _ r: Range<Int>) -> Bool {
    buf[r].contains(ASCII.cr)
}

@inline(__always)
private func string(_ buf: UnsafeRawBufferPointer, _ r: Range<Int>) -> String {
    String(decoding: UnsafeRawBufferPointer(rebasing: buf[r]), as: UTF8.self)
}
