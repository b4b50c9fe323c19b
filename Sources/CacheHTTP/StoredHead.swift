// The part of a response head a cache keeps to replay it later (RFC 9111 §3):
// status, end-to-end fields, and the two clock readings age needs (§4.2.3).

/// A stored response head. Times are the caller's clock in whole seconds
/// since the epoch (HTTP dates and ages have one-second resolution, §1.2.2).
package struct StoredHead: Sendable, Equatable {
    package var status: Int
    /// End-to-end fields as received, including Date and Age: age is
    /// recomputed from them on every use.
    package var headers: HTTPHeaders
    /// When the request that produced this response was sent (§4.2.3 request_time).
    package var requestTime: Int
    /// When the response head was received (§4.2.3 response_time).
    package var responseTime: Int

    /// A head kept as given (e.g. read back from storage).
    package init(status: Int, headers: HTTPHeaders, requestTime: Int, responseTime: Int) {
        self.status = status
        self.headers = headers
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// What to store of `response`: hop-by-hop fields removed (RFC 9110
    /// §7.6.1), and the fields named by `private="..."` (§5.2.2.7) and
    /// `no-cache="..."` (§5.2.2.4) removed, which is how a shared cache may
    /// keep such a response without ever replaying those fields unvalidated.
    package init(storing response: HTTPResponseHead, requestTime: Int, responseTime: Int,
                 options: CachePolicyOptions = CachePolicyOptions()) {
        var headers = Intermediary.removingHopByHop(response.headers)
        let cc = ResponseDirectives(response.headers, options: options).cacheControl
        let dropped = Set(cc.privateFields + cc.noCacheFields)
        if !dropped.isEmpty {
            headers.fields.removeAll { dropped.contains(ASCII.lowercased($0.name)) }
        }
        self.init(status: response.status, headers: headers, requestTime: requestTime,
                  responseTime: responseTime)
    }

    /// The stored fields as sent from the cache at `now`: Age replaced by the
    /// current age (RFC 9111 §5.1), everything else as stored.
    package func headersForServing(now: Int) -> HTTPHeaders {
        headersForServing(age: Freshness.currentAge(self, now: now))
    }

    /// The stored fields with `Age` set to `age` (already worked out).
    package func headersForServing(age: Int) -> HTTPHeaders {
        var out = headers
        out.replace("Age", String(age))
        return out
    }
}
