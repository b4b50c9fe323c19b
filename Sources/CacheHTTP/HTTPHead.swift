package struct HTTPVersion: Sendable, Equatable {
    package var major: Int
    package var minor: Int

    package static let http10 = HTTPVersion(major: 1, minor: 0)
    package static let http11 = HTTPVersion(major: 1, minor: 1)
}

/// RFC 9112 §9.3: persistent by default from 1.1 (any 1.x above too), not before.
private func persistent(_ version: HTTPVersion, _ headers: HTTPHeaders) -> Bool {
    ((version.major == 1 && version.minor >= 1) || headers.hasToken("keep-alive", in: "Connection"))
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

    /// Ready for the socket; names and values as given (callers put no CR/LF in them).
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

/// Non-negative, without going through String.
func appendDecimal(_ value: some BinaryInteger, to out: inout [UInt8]) {
    let v = max(Int64(value), 0)
    var div: Int64 = 1
    while div <= v / 10 { div *= 10 }
    var rest = v
    while div > 0 {
        out.append(UInt8(truncatingIfNeeded: 0x30 + rest / div))
        rest %= div
        div /= 10
    }
}

package enum HTTPStatus {
    /// Unknown codes get their class's phrase.
    package static func reason(_ code: Int) -> String {
        if let phrase = phrases[code] { return phrase }
        return (100..<600).contains(code) ? classes[code / 100 - 1] : ""
    }

    private static let classes = ["Informational", "Success", "Redirection", "Client Error", "Server Error"]

    private static let phrases: [Int: String] = [
        100: "Continue", 101: "Switching Protocols",
        200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content",
        205: "Reset Content", 206: "Partial Content",
        300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
        307: "Temporary Redirect", 308: "Permanent Redirect",
        400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required",
        412: "Precondition Failed", 413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type",
        416: "Range Not Satisfiable", 417: "Expectation Failed", 421: "Misdirected Request",
        422: "Unprocessable Content", 426: "Upgrade Required", 428: "Precondition Required",
        429: "Too Many Requests", 431: "Request Header Fields Too Large",
        500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
        504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    ]
}
