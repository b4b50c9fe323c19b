/// What a cache keeps of a response head to replay it (RFC 9111 §3). Times are the caller's
/// clock in whole epoch seconds (HTTP's resolution, §1.2.2).
package struct StoredHead: Sendable, Equatable {
    package var status: Int
    /// End-to-end fields as received, Date and Age included: age is recomputed on every use.
    package var headers: HTTPHeaders
    package var requestTime: Int  // §4.2.3 request_time
    package var responseTime: Int  // §4.2.3 response_time

    package init(status: Int, headers: HTTPHeaders, requestTime: Int, responseTime: Int) {
        self.status = status
        self.headers = headers
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// Without hop-by-hop fields (RFC 9110 §7.6.1) and those `private="..."` (§5.2.2.7) and
    /// `no-cache="..."` (§5.2.2.4) name: so a shared cache never replays them unvalidated.
    package init(storing response: HTTPResponseHead, requestTime: Int, responseTime: Int,
                 options: CachePolicyOptions = CachePolicyOptions()) {
        var headers = Intermediary.removingHopByHop(response.headers)
        let cc = ResponseDirectives(response.headers, options: options).cacheControl
        let dropped = Set(cc.privateFields + cc.noCacheFields)
        if !dropped.isEmpty { headers.fields.removeAll { dropped.contains(ASCII.lowercased($0.name)) } }
        self.init(status: response.status, headers: headers, requestTime: requestTime,
                  responseTime: responseTime)
    }

    /// Age replaced by the current age (§5.1), the rest as stored.
    package func headersForServing(now: Int) -> HTTPHeaders {
        var out = headers
        out.replace("Age", String(Freshness.currentAge(self, now: now)))
        return out
    }
}
