// Parsed request/response heads and the response serializer.

package struct HTTPVersion: Sendable, Equatable {
    package var major: Int
    package var minor: Int

    package init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    package static let http10 = HTTPVersion(major: 1, minor: 0)
    package static let http11 = HTTPVersion(major: 1, minor: 1)
}

/// RFC 9112 §9.3: persistence defaults to on from 1.1 and off before it.
/// Any 1.x above 1.1 is treated like 1.1.
private func persistent(_ version: HTTPVersion, _ headers: HTTPHeaders) -> Bool {
    if version.major == 1 && version.minor >= 1 {
        return !headers.hasToken("close", in: "Connection")
    }
    return headers.hasToken("keep-alive", in: "Connection")
        && !headers.hasToken("close", in: "Connection")
}

package struct HTTPRequestHead: Sendable, Equatable {
    package var method: String
    package var target: String
    package var version: HTTPVersion
    package var headers: HTTPHeaders

    package init(method: String, target: String, version: HTTPVersion = .http11,
                 headers: HTTPHeaders = HTTPHeaders()) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    package var keepAlive: Bool { persistent(version, headers) }
}

package struct HTTPResponseHead: Sendable, Equatable {
    package var version: HTTPVersion
    package var status: Int
    package var reason: String
    package var headers: HTTPHeaders

    /// `reason` defaults to the standard phrase for `status`.
    package init(version: HTTPVersion = .http11, status: Int, reason: String? = nil,
                 headers: HTTPHeaders = HTTPHeaders()) {
        self.version = version
        self.status = status
        self.reason = reason ?? HTTPStatus.reason(status)
        self.headers = headers
    }

    package var keepAlive: Bool { persistent(version, headers) }

    /// Status line, fields and the blank line, ready for the socket. Names and
    /// values are written as given; callers must not put CR/LF in them.
    package func serialized() -> [UInt8] {
        var size = 17 + reason.utf8.count
        for f in headers.fields { size += f.name.utf8.count + f.value.utf8.count + 4 }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        out.append(contentsOf: "HTTP/".utf8)
        appendDecimal(version.major, to: &out)
        out.append(UInt8(ascii: "."))
        appendDecimal(version.minor, to: &out)
        out.append(ASCII.sp)
        // Status codes are three digits (RFC 9110 §15); pad just in case.
        let s = max(0, min(status, 999))
        out.append(UInt8(truncatingIfNeeded: 0x30 + s / 100))
        out.append(UInt8(truncatingIfNeeded: 0x30 + s / 10 % 10))
        out.append(UInt8(truncatingIfNeeded: 0x30 + s % 10))
        out.append(ASCII.sp)
        out.append(contentsOf: reason.utf8)
        out.append(ASCII.cr); out.append(ASCII.lf)
        for f in headers.fields {
            out.append(contentsOf: f.name.utf8)
            out.append(ASCII.colon); out.append(ASCII.sp)
            out.append(contentsOf: f.value.utf8)
            out.append(ASCII.cr); out.append(ASCII.lf)
        }
        out.append(ASCII.cr); out.append(ASCII.lf)
        return out
    }
}

/// Appends a non-negative decimal without going through String.
func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
    let v = max(value, 0)
    var div: Int64 = 1
    while div <= v / 10 { div *= 10 }
    var rest = v
    while div > 0 {
        out.append(UInt8(truncatingIfNeeded: 0x30 + rest / div))
        rest %= div
        div /= 10
    }
}

func appendDecimal(_ value: Int, to out: inout [UInt8]) {
    appendDecimal(Int64(value), to: &out)
}

package enum HTTPStatus {
    /// Standard reason phrase; unknown codes get their class's generic phrase.
    package static func reason(_ code: Int) -> String {
        switch code {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 203: return "Non-Authoritative Information"
        case 204: return "No Content"
        case 205: return "Reset Content"
        case 206: return "Partial Content"
        case 300: return "Multiple Choices"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 416: return "Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 421: return "Misdirected Request"
        case 422: return "Unprocessable Content"
        case 426: return "Upgrade Required"
        case 428: return "Precondition Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        case 100..<200: return "Informational"
        case 200..<300: return "Success"
        case 300..<400: return "Redirection"
        case 400..<500: return "Client Error"
        case 500..<600: return "Server Error"
        default: return ""
        }
    }
}
