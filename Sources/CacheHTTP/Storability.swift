package enum StorageDecision: Sendable, Equatable {
    case store
    case doNotStore(NotStorableReason)

    package var isStorable: Bool { self == .store }
}

/// Why a response is not stored; `rawValue` is a short phrase for logs.
package enum NotStorableReason: String, Sendable, Equatable, CaseIterable {
    case method = "request method is not cacheable"  // §3: only GET and HEAD are cached here
    case requestNoStore = "request no-store"  // §5.2.1.5: the request said no-store
    case notFinal = "status is not final"  // §3: 1xx responses are not final
    /// §4.3.4: a 304 updates a stored response, it is not stored itself.
    case notModified = "304 updates, is not stored"
    /// §5.2.2.3: must-understand with a status this cache does not implement.
    case mustUnderstandUnknownStatus = "must-understand with an unknown status"
    case responseNoStore = "response no-store"  // §5.2.2.5
    case `private` = "private"  // §5.2.2.7: unqualified private
    /// §3.5: Authorization without public, s-maxage or must-revalidate.
    case authorization = "request has Authorization"
    /// §7.3: a cookie for one client must not be replayed to another.
    case setCookie = "Set-Cookie without public"
    case varyAll = "Vary: *"  // §4.1: `Vary: *` never matches a later request
    /// §3: no explicit freshness, and the status is not cacheable by default.
    case statusNotCacheable = "status not cacheable by default and no explicit freshness"
}

/// RFC 9111 §3 for a shared cache, with §3.5 (Authorization) and §7.3 (Set-Cookie).
package enum Storability {
    /// Heuristically cacheable (RFC 9110 §15.1).
    package static let cacheableByDefault: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Whose caching rules this cache implements, for must-understand (§5.2.2.3).
    package static let understoodStatuses: Set<Int> = cacheableByDefault.union([302, 303, 307])

    /// The first refusing rule, in §3's order, gives the reason. 206 is storable (partial content
    /// is kept); so are qualified private and no-cache (`StoredHead(storing:)` drops the fields).
    package static func decide(method: String, requestHeaders: HTTPHeaders, status: Int,
                               responseHeaders: HTTPHeaders,
                               options: CachePolicyOptions = CachePolicyOptions()) -> StorageDecision {
        guard method == "GET" || method == "HEAD" else { return .doNotStore(.method) }
        if CacheControl(requestHeaders).noStore { return .doNotStore(.requestNoStore) }
        guard status >= 200 else { return .doNotStore(.notFinal) }
        if status == 304 { return .doNotStore(.notModified) }

        let directives = ResponseDirectives(responseHeaders, options: options)
        let cc = directives.cacheControl
        let understood = understoodStatuses.contains(status)
        if cc.mustUnderstand && !understood { return .doNotStore(.mustUnderstandUnknownStatus) }
        // must-understand lets a cache that knows the status ignore no-store (§5.2.2.3).
        if cc.noStore && !(cc.mustUnderstand && understood) { return .doNotStore(.responseNoStore) }
        if cc.isPrivate { return .doNotStore(.private) }
        if requestHeaders.contains("Authorization"),
           !(cc.isPublic || cc.sharedMaxAge != nil || cc.mustRevalidate) {
            return .doNotStore(.authorization)
        }
        if responseHeaders.contains("Set-Cookie"), !cc.isPublic,
           !cc.privateFields.contains("set-cookie"), !cc.noCacheFields.contains("set-cookie") {
            return .doNotStore(.setCookie)
        }
        if responseHeaders.hasToken("*", in: "Vary") { return .doNotStore(.varyAll) }

        let hasExpires = !directives.isTargeted && responseHeaders.contains("Expires")
        let explicit = cc.isPublic || cc.maxAge != nil || cc.sharedMaxAge != nil || hasExpires
        guard explicit || cacheableByDefault.contains(status) else { return .doNotStore(.statusNotCacheable) }
        return .store
    }
}
