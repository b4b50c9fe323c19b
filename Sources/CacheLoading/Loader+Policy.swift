import CacheHTTP
import CacheStorage
import Logging

/// How a stored response may answer a request (RFC 9111 §4), as the loader acts on it.
enum ReuseAction: Equatable {
    /// Fresh, or stale in a way the request accepts: serve it.
    case serve
    /// Serve it, and revalidate in the background (RFC 5861 stale-while-revalidate).
    case serveAndRevalidate
    /// Ask the origin first (a conditional request): for the request's directives (`byRequest`, Cache-Status
    /// `fwd=request`) or for the stored response's state: stale, its own no-cache, invalidated (`fwd=stale`).
    case revalidate(byRequest: Bool)
    /// only-if-cached and the stored response is not usable: 504.
    case refuse
}

extension Loader {
    /// The store's clock in whole seconds (HTTP times have one-second resolution).
    var nowSeconds: Int64 { store.clock() / 1000 }

    /// The stored head; older metadata gets one from its validators, dated at its last validation (or use).
    func storedHead(_ resource: Resource) -> StoredResponseHead {
        let metadata = resource.metadata
        if let head = metadata.head { return head }
        var headers = HTTPHeaders()
        if let type = metadata.contentType { headers.add("Content-Type", type) }
        if let etag = metadata.etag { headers.add("ETag", etag) }
        if let lastModified = metadata.lastModified { headers.add("Last-Modified", lastModified) }
        let time = (resource.validatedAt ?? metadata.lastAccess) / 1000
        return StoredResponseHead(status: 200, headers: headers, requestTime: time, responseTime: time, varyKey: nil)
    }

    /// A cached response's head as the client gets it: stored end-to-end fields, the
    /// current Age (RFC 9111 §5.1), this proxy in Via (RFC 9110 §7.6.3).
    func contentInfo(_ state: ResourceState, transparent: Bool = false) -> ContentInfo {
        var info = state.info
        let resource = state.resource
        let stored = storedHead(resource)
        let head = stored.policyHead
        // A head synthesized from old metadata changes with each validation: not kept.
        let kept = resource.metadata.head != nil
        // The fields are the same for every hit of a stored head: worked out once.
        let serving = resource.derived.serving ?? {
            var fields = head.headers
            fields.remove("Age")
            fields = Intermediary.appendingVia(fields, pseudonym: policy.viaPseudonym)
            let made = (fields: fields, lines: ResponsePlan.replayedLines(fields))
            if kept { resource.derived.serving = made }
            return made
        }()
        let facts = freshnessFacts(resource, head, transparent: transparent)
        let age = facts.age(now: Int(nowSeconds))
        let fields = resource.derived.servingAged.flatMap { $0.age == age ? $0.fields : nil } ?? {
            var withAge = serving.fields
            withAge.add("Age", String(age))
            if kept { resource.derived.servingAged = (age, withAge) }
            return withAge
        }()
        info.setServing(headers: fields, replayedLines: serving.lines, age: age, status: stored.status,
                        ttl: facts.lifetime - age)
        return info
    }

    /// The ttl `contentInfo(state, transparent:)` states, without the rest of it.
    func ttl(_ state: ResourceState, transparent: Bool) -> Int {
        let facts = freshnessFacts(state.resource, storedHead(state.resource).policyHead, transparent: transparent)
        return facts.lifetime - facts.age(now: Int(nowSeconds))
    }

    /// The stored head's part of the freshness decision, under a proxy URL's or the
    /// `transparent` modes' policy, worked out once per kept head.
    func freshnessFacts(_ resource: Resource, _ head: StoredHead, transparent: Bool = false) -> Freshness.Facts {
        let known = transparent ? resource.derived.transparentFreshness : resource.derived.freshness
        if let known { return known }
        let facts = Freshness.Facts(head, options: policy.cache(transparent: transparent))
        if resource.metadata.head != nil {
            if transparent { resource.derived.transparentFreshness = facts } else { resource.derived.freshness = facts }
        }
        return facts
    }

    /// Whether `state`'s stored response is fresh now (RFC 9111 §4.2).
    func isFresh(_ state: ResourceState, transparent: Bool = false) -> Bool {
        let stored = storedHead(state.resource)
        guard !stored.invalidated else { return false }
        let facts = freshnessFacts(state.resource, stored.policyHead, transparent: transparent)
        return facts.lifetime > facts.age(now: Int(nowSeconds))
    }

    /// RFC 9111 §4.2 and §5.2.1 for the stored response and `request`, under a proxy
    /// URL's or the `transparent` modes' policy (`LoaderPolicy.transparentCache`).
    func reuse(_ state: ResourceState, request: HTTPHeaders, transparent: Bool = false) -> ReuseAction {
        let stored = storedHead(state.resource)
        if stored.invalidated {
            return CacheControl(request: request).onlyIfCached ? .refuse : .revalidate(byRequest: false)
        }
        let facts = freshnessFacts(state.resource, stored.policyHead, transparent: transparent)
        switch Freshness.reuse(facts, requestHeaders: request, now: Int(nowSeconds)) {
        case .fresh, .staleAcceptedByClient:
            return .serve
        case .staleWhileRevalidate:
            return .serveAndRevalidate
        case .revalidate(let reason):
            logger.debug("revalidating", metadata: ["url": "\(state.resource.url)", "reason": "\(reason.rawValue)"])
            // RFC 9211 §2.2: `request` only for a fresh response the request would not take.
            let fresh = facts.lifetime > facts.age(now: Int(nowSeconds))
            return .revalidate(byRequest: fresh && reason != .responseNoCache && reason != .stale)
        case .gatewayTimeout:
            return .refuse
        }
    }

    /// May the stored response stand in for a failed revalidation (RFC 9111 §4.2.4, 5861 §4)?
    func mayServeStale(_ state: ResourceState, request: HTTPHeaders, failure: LoadError,
                       transparent: Bool = false) -> Bool {
        let cause: StaleCause
        switch failure {
        case .upstream: cause = .disconnected
        case .originStatus(let status, _, _) where [500, 502, 503, 504].contains(status): cause = .originError
        default: return false
        }
        return Freshness.mayServeStale(storedHead(state.resource).policyHead, requestHeaders: request,
                                       now: Int(nowSeconds), cause: cause,
                                       options: policy.cache(transparent: transparent))
    }

    /// The store key of the variant a request selects (RFC 9111 §4.1): the primary key
    /// (`stored` is under it) without Vary or when the values match, else a key per
    /// secondary key, so variants never mix; an unaccepted Content-Encoding selects too.
    func variantStoreKey(primary: String, stored: Resource?, request: HTTPHeaders) -> String {
        guard let stored, let head = stored.metadata.head else { return primary }
        let variance = stored.derived.variance ?? {
            let facts = (varies: head.headers.contains("Vary"), coding: head.headers["Content-Encoding"])
            stored.derived.variance = facts
            return facts
        }()
        var suffix = ""
        if variance.varies {
            let wanted = VaryKey(vary: head.headers, request: request)
            if wanted == nil || wanted != head.varyKey {
                suffix += "\nvary\n" + (wanted?.text ?? "*")
            }
        }
        if let coding = variance.coding, !ContentCoding.accepts(request, coding: coding) {
            suffix += "\naccept-encoding\n" + (request.values("Accept-Encoding").joined(separator: ","))
        }
        return suffix.isEmpty ? primary : store.storeKey(for: primary + suffix)
    }

    /// Records a new head's stored form and whether it may be stored and shared (RFC 9111 §3).
    func adoptHead(_ state: ResourceState, response: HTTPResponseHead, request: HTTPHeaders, requestTime: Int64) {
        let stored = Self.storedForm(response, request: request, requestTime: requestTime, responseTime: nowSeconds,
                                     options: policy.cache)
        state.resource.setStoredHead(stored)
        let decision = Storability.decide(method: "GET", requestHeaders: request,
                                          status: Revalidation.representationStatus(response.status),
                                          responseHeaders: response.headers, options: policy.cache)
        if case .doNotStore(let reason) = decision {
            logger.info("not storing", metadata: ["url": "\(state.resource.url)", "reason": "\(reason.rawValue)"])
            state.notShared = true
            state.resource.makeTransient()
        }
    }

    /// Whether a shared cache may store `response` to a GET with `request` (RFC 9111 §3).
    func mayStore(_ response: HTTPResponseHead, request: HTTPHeaders) -> Bool {
        Storability.decide(method: "GET", requestHeaders: request, status: response.status,
                           responseHeaders: response.headers, options: policy.cache).isStorable
    }

    /// A 304 (or unchanged response) to a revalidation: every field it carries replaces
    /// the stored one (RFC 9111 §4.3.4, §3.2) except framing, hop-by-hop and private ones
    /// (`storedForm` drops them); clock readings renewed, bytes untouched.
    func refreshHead(_ state: ResourceState, with response: HTTPResponseHead, requestTime: Int64) {
        var stored = storedHead(state.resource)
        let fresh = Self.storedForm(response, request: HTTPHeaders(), requestTime: requestTime,
                                    responseTime: nowSeconds, options: policy.cache)
        var names = Set<String>()
        for field in fresh.headers where names.insert(field.name.lowercased()).inserted {
            let name = field.name.lowercased()
            stored.headers.remove(name)
            for value in fresh.headers.values(name) { stored.headers.add(name, value) }
        }
        stored.requestTime = requestTime
        stored.responseTime = nowSeconds
        stored.invalidated = false
        // The resource's validators and type follow (the next validation sends the new ETag).
        let metadata = state.resource.metadata
        let type = stored.headers["Content-Type"] ?? metadata.contentType
        let etag = stored.headers["ETag"] ?? metadata.etag
        let lastModified = stored.headers["Last-Modified"] ?? metadata.lastModified
        if type != metadata.contentType || etag != metadata.etag || lastModified != metadata.lastModified {
            state.resource.setInfo(totalLength: metadata.totalLength, contentType: type, etag: etag,
                                   lastModified: lastModified)
        }
        state.resource.setStoredHead(stored)
    }

    /// The stored form of a response: hop-by-hop, framing and private fields removed.
    static func storedForm(_ response: HTTPResponseHead, request: HTTPHeaders, requestTime: Int64,
                           responseTime: Int64, options: CachePolicyOptions) -> StoredResponseHead {
        let head = StoredHead(storing: response, requestTime: Int(requestTime), responseTime: Int(responseTime),
                              options: options)
        var headers = head.headers
        for name in StoredResponseHead.framingFields { headers.remove(name) }
        return StoredResponseHead(status: Revalidation.representationStatus(response.status), headers: headers,
                                  requestTime: requestTime, responseTime: responseTime,
                                  varyKey: VaryKey(vary: response.headers, request: request))
    }

    /// Marks every stored response (each variant) of these URLs stale (RFC 9111 §4.4): revalidated next.
    package func invalidate(urls: Set<String>) {
        for resource in urls.flatMap(store.entries(ofURL:)) {
            logger.debug("invalidated by an unsafe request", metadata: ["url": "\(resource.url)"])
            var head = storedHead(resource)
            head.invalidated = true
            resource.setStoredHead(head)
            resource.flush()
        }
    }

    /// Whether a response for this request is stored, so a HEAD is answered from the cache.
    package func hasStoredHead(storeKey: String, request: HTTPHeaders) -> Bool {
        let key = variantStoreKey(primary: storeKey, stored: store.existing(storeKey: storeKey), request: request)
        guard let resource = store.existing(storeKey: key), !resource.isTransient else { return false }
        return resource.totalLength != nil
    }
}
