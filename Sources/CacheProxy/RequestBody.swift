import CacheHTTP

/// Collects one request body as its head's framing says (RFC 9112 §6), bounded by `limit`. A value.
struct RequestBody {
    enum Framing: Equatable { case length(Int64), chunked }

    private(set) var bytes: [UInt8] = []
    private var remaining: Int64
    private var decoder: ChunkedDecoder?
    private let limit: Int

    /// nil: no body. Refused (RFC 9112 §6.1, §6.3): a coding but a final chunked, Transfer-Encoding with
    /// Content-Length (smuggling), a bad Content-Length, a length over `limit`.
    static func framing(of head: HTTPRequestHead, limit: Int) -> Result<Framing?, HeadParseError> {
        let codings = head.headers.values("Transfer-Encoding")
        if !codings.isEmpty {
            // HTTP/1.0 has no transfer codings (RFC 9112 §6.1): a 1.0 message with one is not to be trusted.
            if head.version == .http10 { return .failure(.badRequest("Transfer-Encoding in an HTTP/1.0 request")) }
            if head.headers.contains("Content-Length") {
                return .failure(.badRequest("both Transfer-Encoding and Content-Length"))
            }
            let list = codings.joined(separator: ",").split(separator: ",", omittingEmptySubsequences: false).map {
                String($0.filter { $0 != " " && $0 != "\t" }).lowercased()
            }
            // Not chunked last: the length cannot be known (§6.3: 400). Chunked after another
            // coding: the proxy would forward the body without its decoding (§6.1: 501).
            guard list.last == "chunked" else { return .failure(.badRequest("request transfer coding is not chunked")) }
            guard list.count == 1 else { return .failure(.codingNotImplemented) }
            return .success(.chunked)
        }
        let lengths = head.headers.values("Content-Length").flatMap { $0.split(separator: ",") }
            .map { String($0.filter { $0 != " " && $0 != "\t" }) }
        guard let first = lengths.first else { return .success(nil) }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.count <= 18,
              first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let length = Int64(first) else {
            return .failure(.badRequest("invalid Content-Length"))
        }
        if length > Int64(limit) { return .failure(.contentTooLarge) }
        return .success(length == 0 ? nil : .length(length))
    }

    init(_ framing: Framing, limit: Int) {
        self.limit = limit
        switch framing {
        case .length(let n):
            remaining = n
            bytes.reserveCapacity(Int(n))
        case .chunked:
            remaining = 0
            decoder = ChunkedDecoder()
        }
    }

    /// How many bytes of `input` were used and whether the body is complete (the rest is the next request's).
    mutating func feed(_ input: UnsafeRawBufferPointer) -> Result<(consumed: Int, done: Bool), HeadParseError> {
        guard var decoder else {
            let take = Int(min(remaining, Int64(input.count)))
            bytes.append(contentsOf: input.prefix(take))
            remaining -= Int64(take)
            return .success((take, remaining == 0))
        }
        var collected: [UInt8] = []
        swap(&collected, &bytes)  // moved, not copied, while the decoder appends
        defer { bytes = collected }
        let limit = self.limit
        var tooLarge = false
        let result: (consumed: Int, done: Bool)
        do {
            result = try decoder.feed(input) { data in
                if collected.count + data.count > limit { tooLarge = true } else { collected.append(contentsOf: data) }
            }
        } catch {
            return .failure(.badRequest("malformed chunked request body"))
        }
        if tooLarge { return .failure(.contentTooLarge) }
        self.decoder = decoder
        return .success(result)
    }
}

extension HTTPRequestHead {
    /// Transfer-Encoding, or a Content-Length other than 0: routes that take no body refuse it unread.
    var announcesBody: Bool {
        headers.contains("transfer-encoding") || (headers["content-length"].map { $0 != "0" } ?? false)
    }
}
