import CacheHTTP
import CacheUpstream

/// The client fields a reader's downloads send on to the origin, worked out only when a download starts: a
/// hit never needs them, and filtering a request's fields (hop-by-hop, the forwarding list) costs more than
/// the rest of a hit's routing.
package struct OriginFields: Sendable {
    private let client: HTTPHeaders
    /// Names forwarded besides the defaults; nil when `client` is final already.
    private let extra: [String]?

    /// The fields of a client request, filtered when needed.
    package init(forwarding client: HTTPHeaders, extra: [String]) {
        self.client = client
        self.extra = extra
    }

    /// Fields to send as they are (none by default).
    package init(_ fields: HTTPHeaders = HTTPHeaders()) {
        client = fields
        extra = nil
    }

    package var headers: HTTPHeaders {
        guard let extra else { return client }
        return UpstreamHeaders.forwarded(from: client, extra: extra)
    }
}
