// What the origin's answer to a revalidation means for the stored response:
// RFC 9111 §4.3.3 (handling a validation response) and §4.3.4 (freshening
// stored responses upon validation).

/// What to do with the stored response once the origin answered the
/// conditional request that revalidates it.
package enum RevalidationOutcome: Sendable, Equatable {
    /// 304 Not Modified (§4.3.4): the stored response is still the
    /// origin's; its fields are freshened, its body kept.
    case notModified
    /// A full response of the stored status: the stored version is
    /// compared with it (length and validators) and kept or replaced.
    case compare
    /// A full response of another status (§4.3.3): it replaces the stored
    /// response, whatever that was (a stored 404 answered by a 200 now is
    /// the 200; a stored 200 answered by a 404, the 404).
    case replace
    /// A 5xx (§4.3.3): the origin failed; the stored response may stand in
    /// for it (§4.2.4, RFC 5861 §4), else the error is forwarded. The stored
    /// response stays.
    case error
}

/// RFC 9111 §4.3.3 as one decision.
package enum Revalidation {
    /// The status of the representation a response describes: a 206, a 304
    /// and a 416 to a ranged request speak of a 200's (RFC 9111 §3.3,
    /// §4.3.4); any other is its own (a 404, a redirect…).
    package static func representationStatus(_ status: Int) -> Int {
        status == 206 || status == 304 || status == 416 ? 200 : status
    }

    /// The outcome of a revalidation of a stored response of `storedStatus`
    /// answered with `responseStatus`. `storesAnyStatus`: the cache stores
    /// any storable status (the forward and reverse modes); without it only
    /// 200s are stored, and another status is forwarded without touching
    /// the stored 200 (the proxy URLs' media policy).
    package static func outcome(storedStatus: Int, responseStatus: Int, storesAnyStatus: Bool) -> RevalidationOutcome {
        if responseStatus == 304 { return .notModified }
        if representationStatus(responseStatus) == storedStatus { return .compare }
        if responseStatus >= 500 { return .error }
        return storesAnyStatus ? .replace : .error
    }
}
