import CacheHTTP

/// How the end of a response body is found (RFC 9112 §6.3).
enum BodyFraming {
    case none
    case length(remaining: Int64)
    case chunked(ChunkedDecoder)
    case untilClose

    init(for head: HTTPResponseHead, requestMethod: String) throws(UpstreamError) {
        if requestMethod == "HEAD" || head.status == 204 || head.status == 304 || (100..<200).contains(head.status) {
            self = .none
        } else if head.headers["transfer-encoding"] != nil {
            guard head.headers.hasToken("chunked", in: "transfer-encoding") else {
                throw .protocolViolation("unsupported Transfer-Encoding")
            }
            self = .chunked(ChunkedDecoder())
        } else if let text = head.headers["content-length"] {
            guard let length = Int64(text), length >= 0 else {
                throw .protocolViolation("invalid Content-Length \(text)")
            }
            self = length == 0 ? .none : .length(remaining: length)
        } else {
            self = .untilClose
        }
    }
}
