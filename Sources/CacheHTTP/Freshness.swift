// RFC 9111 §4.2 freshness, the request directives of §5.2.1 and RFC 5861's stale
// extensions. Times are the caller's clock in whole epoch seconds; nothing here reads a clock.

/// Where a freshness lifetime came from (RFC 9111 §4.2.1, in precedence order).
package enum FreshnessSource: String, Sendable, Equatable {
    case sharedMaxAge = "s-maxage"
    case maxAge = "max-age"
    case expires = "Expires"
    case heuristic = "heuristic"
    case none = "none"  // no explicit or heuristic freshness: stale from the start
}

/// A freshness lifetime in seconds and the rule that gave it.
package struct FreshnessLifetime: Sendable, Equatable {
    package var seconds: Int
    package var source: FreshnessSource

    package init(seconds: Int, source: FreshnessSource) {
        self.seconds = seconds
        self.source = source
    }
}

/// Can a stored response answer a request as it stands?
package enum ReuseDecision: Sendable, Equatable {
    case fresh  // and within the request's limits
    case staleAcceptedByClient  // by max-stale (§5.2.1.2)
    case staleWhileRevalidate  // RFC 5861 §3: serve, revalidate in the background
    case revalidate(RevalidationReason)  // ask the origin first
    case gatewayTimeout  // only-if-cached, and the origin would be needed: 504 (§5.2.1.7)
}

/// Why the origin must be asked; `rawValue` is a short phrase for logs.
package enum RevalidationReason: String, Sendable, Equatable {
    case responseNoCache = "response no-cache"  // §5.2.2.4
    case requestNoCache = "request no-cache"  // or Pragma: no-cache (§5.2.1.4, §5.4)
    case olderThanRequestMaxAge = "older than request max-age"  // §5.2.1.1
    case notFreshEnough = "fresh for less than min-fresh"  // §5.2.1.3
    case stale = "stale"  // and nothing allows serving it stale (§4.2.4)
}

/// Why a cache would like to serve a stale response it could not revalidate.
package enum StaleCause: Sendable, Equatable {
    case disconnected  // the origin could not be reached (§4.2.4)
    case originError  // 500, 502, 503, 504, or a failed exchange (RFC 5861 §4)
}

/// RFC 9111 §4.2 as pure functions of a stored head, a request and the time.
package enum Freshness {
    /// A shared cache's lifetime (§4.2.1): s-maxage, max-age, Expires minus Date (or receipt
    /// time), then the §4.2.2 heuristic. Invalid or disagreeing Expires give 0. The heuristic
    /// (heuristically cacheable statuses only) is 10% of Date minus Last-Modified, capped by
    /// `heuristicCap`, floored by `heuristicMinimum`, which also applies without Last-Modified
    /// unless `heuristicNeedsLastModified`. Targeted CDN-Cache-Control voids Expires (RFC 9213 §2.2).
    package static func lifetime(status: Int, headers: HTTPHeaders, responseTime: Int,
                                 options: CachePolicyOptions = CachePolicyOptions(),
                                 directives parsed: ResponseDirectives? = nil) -> FreshnessLifetime {
        let directives = parsed ?? ResponseDirectives(headers, options: options)
        let cc = directives.cacheControl
        if let s = cc.sharedMaxAge { return FreshnessLifetime(seconds: s, source: .sharedMaxAge) }
        if let s = cc.maxAge { return FreshnessLifetime(seconds: s, source: .maxAge) }
        let date = dateValue(headers, responseTime: responseTime)
        let expires = directives.isTargeted ? [] : headers.values("Expires").map(HTTPDate.epochSeconds)
        if let first = expires.first {
            let agreed = first.flatMap { f in expires.allSatisfy { $0 == f } ? f : nil }
            return FreshnessLifetime(seconds: agreed.map { max(0, $0 - date) } ?? 0, source: .expires)
        }
        guard Storability.cacheableByDefault.contains(status) else { return FreshnessLifetime(seconds: 0, source: .none) }
        let cap = max(0, options.heuristicCap)
        let floor = min(max(0, options.heuristicMinimum), cap)
        if let lastModifiedText = headers["Last-Modified"],
           let lastModified = HTTPDate.epochSeconds(lastModifiedText), date > lastModified {
            let seconds = max(floor, min((date - lastModified) / 10, cap))
            return FreshnessLifetime(seconds: seconds, source: .heuristic)
        }
        if floor > 0 && !options.heuristicNeedsLastModified {
            return FreshnessLifetime(seconds: floor, source: .heuristic)
        }
        return FreshnessLifetime(seconds: 0, source: .none)
    }

    /// `lifetime(status:headers:responseTime:options:)` of a stored head.
    package static func lifetime(_ stored: StoredHead, options: CachePolicyOptions = CachePolicyOptions(),
                                 directives: ResponseDirectives? = nil) -> FreshnessLifetime {
        lifetime(status: stored.status, headers: stored.headers, responseTime: stored.responseTime,
                 options: options, directives: directives)
    }

    /// current_age of §4.2.3 in seconds, never negative. A missing or invalid Date counts as
    /// `responseTime` (RFC 9110 §6.6.1); of Age only a valid first member counts (§5.1); clocks
    /// running backwards count as no time passed.
    package static func currentAge(headers: HTTPHeaders, requestTime: Int, responseTime: Int, now: Int) -> Int {
        let apparentAge = max(0, responseTime - dateValue(headers, responseTime: responseTime))
        let responseDelay = max(0, responseTime - requestTime)
        let correctedAgeValue = ageValue(headers) + responseDelay
        let residentTime = max(0, now - responseTime)
        return max(apparentAge, correctedAgeValue) + residentTime
    }

    /// `currentAge(headers:requestTime:responseTime:now:)` of a stored head.
    package static func currentAge(_ stored: StoredHead, now: Int) -> Int {
        currentAge(headers: stored.headers, requestTime: stored.requestTime, responseTime: stored.responseTime,
                   now: now)
    }

    /// freshness_lifetime > current_age (RFC 9111 §4.2).
    package static func isFresh(_ stored: StoredHead, now: Int,
                                options: CachePolicyOptions = CachePolicyOptions()) -> Bool {
        lifetime(stored, options: options).seconds > currentAge(stored, now: now)
    }

    /// Whether `stored` may answer without the origin (§4.2, §5.2). No-cache (either side, or
    /// Pragma) forces validation; request max-age bounds the age; min-fresh must remain; stale
    /// is served only under max-stale or stale-while-revalidate, never against must-/proxy-
    /// revalidate. s-maxage implies proxy-revalidate (§5.2.2.10), which the origin's explicit
    /// stale-while-revalidate lifts. With only-if-cached, "ask the origin" is `.gatewayTimeout`.
    package static func reuse(_ stored: StoredHead, requestHeaders: HTTPHeaders, now: Int,
                              options: CachePolicyOptions = CachePolicyOptions()) -> ReuseDecision {
        reuse(Facts(stored, options: options), requestHeaders: requestHeaders, now: now)
    }

    /// What reuse needs of a stored head, worked out once; only the resident time changes.
    package struct Facts: Sendable {
        package let response: CacheControl
        package let lifetime: Int
        package let correctedInitialAge: Int  // max(apparent_age, corrected_age_value) (RFC 9111 §4.2.3)
        package let responseTime: Int

        package init(_ stored: StoredHead, options: CachePolicyOptions = CachePolicyOptions()) {
            let directives = ResponseDirectives(stored.headers, options: options)
            response = directives.cacheControl
            lifetime = Freshness.lifetime(stored, options: options, directives: directives).seconds
            correctedInitialAge = Freshness.currentAge(stored, now: stored.responseTime)
            responseTime = stored.responseTime
        }

        package func age(now: Int) -> Int { correctedInitialAge + max(0, now - responseTime) }
    }

    /// `reuse` with the facts ready; the request's directives are parsed only when present.
    package static func reuse(_ facts: Facts, requestHeaders: HTTPHeaders, now: Int) -> ReuseDecision {
        let hasDirectives = requestHeaders.contains("Cache-Control") || requestHeaders.contains("Pragma")
        let request = hasDirectives ? CacheControl(request: requestHeaders) : CacheControl()
        let decision = reuse(facts, request: request, now: now)
        if case .revalidate = decision, request.onlyIfCached { return .gatewayTimeout }
        return decision
    }

    /// False for only-if-cached, whose miss gets 504 (§5.2.1.7).
    package static func mayForwardMiss(requestHeaders: HTTPHeaders) -> Bool {
        !requestHeaders.contains("Cache-Control") || !CacheControl(request: requestHeaders).onlyIfCached
    }

    private static func reuse(_ facts: Facts, request: CacheControl, now: Int) -> ReuseDecision {
        let response = facts.response
        if response.noCache { return .revalidate(.responseNoCache) }
        if request.noCache { return .revalidate(.requestNoCache) }
        let age = facts.age(now: now)
        if let maxAge = request.maxAge, age > maxAge { return .revalidate(.olderThanRequestMaxAge) }
        let lifetime = facts.lifetime
        if lifetime > age {
            // Compare without adding: min-fresh may be as large as 2^31.
            let remaining = lifetime - age
            return remaining > (request.minFresh ?? 0) ? .fresh : .revalidate(.notFreshEnough)
        }
        let staleness = age - lifetime
        if !explicitlyForbidsStale(response) {
            if let maxStale = request.maxStale, staleness <= maxStale, response.sharedMaxAge == nil {
                return .staleAcceptedByClient
            }
            if let window = response.staleWhileRevalidate, staleness <= window { return .staleWhileRevalidate }
        }
        return .revalidate(.stale)
    }

    /// Whether `stored` may be served stale because the origin failed. Fresh: always. Never
    /// against no-cache (either side) or must-/proxy-revalidate (§4.2.4). `.originError`: within
    /// either side's stale-if-error (RFC 5861 §4) or max-stale. `.disconnected`: always, but
    /// with s-maxage (implied proxy-revalidate, §5.2.2.10) only within stale-if-error.
    package static func mayServeStale(_ stored: StoredHead, requestHeaders: HTTPHeaders, now: Int,
                                      cause: StaleCause,
                                      options: CachePolicyOptions = CachePolicyOptions()) -> Bool {
        let age = currentAge(stored, now: now)
        let lifetime = lifetime(stored, options: options).seconds
        if lifetime > age { return true }
        let response = ResponseDirectives(stored.headers, options: options).cacheControl
        let request = CacheControl(request: requestHeaders)
        if explicitlyForbidsStale(response) || response.noCache || request.noCache { return false }
        let staleness = age - lifetime
        // The origin's own stale-if-error lifts the revalidation s-maxage implies.
        if let window = response.staleIfError, staleness <= window { return true }
        if response.sharedMaxAge != nil { return false }
        if let window = request.staleIfError, staleness <= window { return true }
        switch cause {
        case .originError: return request.maxStale.map { staleness <= $0 } ?? false
        case .disconnected: return true
        }
    }

    /// must-revalidate (§5.2.2.2), proxy-revalidate for a shared cache (§5.2.2.8).
    private static func explicitlyForbidsStale(_ cc: CacheControl) -> Bool {
        cc.mustRevalidate || cc.proxyRevalidate
    }

    /// date_value: Date when valid, else the receipt time (RFC 9110 §6.6.1).
    private static func dateValue(_ headers: HTTPHeaders, responseTime: Int) -> Int {
        headers["Date"].flatMap(HTTPDate.epochSeconds) ?? responseTime
    }

    /// age_value (RFC 9111 §5.1): the first member of Age, 0 when invalid.
    private static func ageValue(_ headers: HTTPHeaders) -> Int {
        guard let value = headers["Age"] else { return 0 }
        let first = value.split(separator: ",", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return CacheControl.seconds(String(trimmedOWS(first))) ?? 0
    }
}
